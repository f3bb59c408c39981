"""Whose share a request counts against: a tenant's key or web session names its tenant (looked
up once, then kept), the platform admin counts against none, and without a credential that
names a tenant a path naming a tenant's slug counts against that tenant's anonymous share."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from app.kit.fair_share import requesters as requesters_module
from app.kit.fair_share.requesters import Requesters, public_bucket

KEYS = {"gk_alpha": "tenant:a", "gk_beta": "tenant:b"}
SESSIONS = {"session-of-a": "tenant:a"}


class Owners:
    """The database: who owns each secret, and how often it was asked (from the thread pool)."""

    def __init__(self, fail: bool = False, gate: threading.Event | None = None) -> None:
        self.asked: list[tuple[str, str]] = []
        self.fail = fail
        self.gate = gate

    def __call__(self, kind: str, secret: str) -> str | None:
        self.asked.append((kind, secret))
        if self.gate is not None:
            self.gate.wait(5)
        if self.fail:
            raise RuntimeError("the database is away")
        return KEYS.get(secret) if kind == "bearer" else SESSIONS.get(secret)


def _requesters(owners: Owners, now: list[float] | None = None) -> Requesters:
    clock = (lambda: now[0]) if now is not None else None
    return Requesters(
        owners,
        bearer=lambda token: token if token.startswith("gk_") else None,
        # A cookie holds a signed session; here "signed:" plays the signature.
        cookies={
            "session": lambda raw: (
                raw.removeprefix("signed:") if raw.startswith("signed:") else None
            )
        },
        unlimited=("platform-token",),
        **({"clock": clock} if clock else {}),
    )


def _scope(
    path: str = "/v1/attempts",
    *,
    bearer: str | None = None,
    cookie: str | None = None,
) -> dict[str, Any]:
    headers = []
    if bearer is not None:
        headers.append((b"authorization", f"Bearer {bearer}".encode()))
    if cookie is not None:
        headers.append((b"cookie", cookie.encode()))
    return {"type": "http", "path": path, "headers": headers}


@pytest.mark.parametrize(
    ("path", "bucket"),
    [
        ("/v1/public/acme/challenges/c/leaderboard", "public:acme"),
        ("/v1/public/acme", "public:acme"),
        ("/t/acme/challenges/c", "public:acme"),
        ("/t/acme", "public:acme"),
        ("/t/ACME/", None),  # not a slug: no tenant has it
        ("/t/" + "a" * 65 + "/", None),
        ("/t/-acme/", None),
        ("/t//", None),
        ("/v1/challenges", None),
        ("/", None),
        ("/docs", None),
        ("/tenants/acme", None),
    ],
)
def test_a_path_names_a_tenant_only_by_a_slug_in_its_place(path: str, bucket: str | None) -> None:
    assert public_bucket(path) == bucket


def test_a_key_counts_against_its_tenant_looked_up_once() -> None:
    async def scenario() -> None:
        owners = Owners()
        requesters = _requesters(owners)
        for _ in range(3):
            assert await requesters.bucket(_scope(bearer="gk_alpha")) == "tenant:a"
        # Whatever the path: a tenant's key reading another tenant's public board is its own.
        assert await requesters.bucket(_scope("/v1/public/other/x", bearer="gk_beta")) == (
            "tenant:b"
        )
        assert owners.asked == [("bearer", "gk_alpha"), ("bearer", "gk_beta")]

    asyncio.run(scenario())


def test_concurrent_requests_with_a_new_key_wait_for_one_lookup() -> None:
    async def scenario() -> None:
        gate = threading.Event()
        owners = Owners(gate=gate)
        requesters = _requesters(owners)
        waiting = [
            asyncio.create_task(requesters.bucket(_scope(bearer="gk_alpha"))) for _ in range(20)
        ]
        await asyncio.sleep(0.05)
        gate.set()
        assert await asyncio.gather(*waiting) == ["tenant:a"] * 20
        assert owners.asked == [("bearer", "gk_alpha")]

    asyncio.run(scenario())


def test_an_answer_is_kept_for_a_while_an_unknown_one_for_less() -> None:
    async def scenario() -> None:
        now = [0.0]
        owners = Owners()
        requesters = _requesters(owners, now)
        unknown = _scope("/v1/public/acme/x", bearer="gk_nobody")
        assert await requesters.bucket(unknown) == "public:acme"  # unknown: the path decides
        assert await requesters.bucket(_scope(bearer="gk_alpha")) == "tenant:a"
        assert len(owners.asked) == 2
        now[0] += requesters_module.UNKNOWN_SECONDS + 1
        await requesters.bucket(unknown)
        await requesters.bucket(_scope(bearer="gk_alpha"))
        assert owners.asked[2:] == [("bearer", "gk_nobody")]
        now[0] += requesters_module.KNOWN_SECONDS
        await requesters.bucket(_scope(bearer="gk_alpha"))
        assert owners.asked[3:] == [("bearer", "gk_alpha")]

    asyncio.run(scenario())


def test_at_most_so_many_answers_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(requesters_module, "MAX_KEPT", 3)

    async def scenario() -> None:
        owners = Owners()
        requesters = _requesters(owners)
        for number in range(10):
            await requesters.bucket(_scope(bearer=f"gk_{number}"))
        assert len(requesters._kept) == 3

    asyncio.run(scenario())


def test_the_platform_admin_and_tokens_that_are_no_key_are_not_looked_up() -> None:
    async def scenario() -> None:
        owners = Owners()
        requesters = _requesters(owners)
        assert await requesters.bucket(_scope("/v1/tenants", bearer="platform-token")) is None
        assert await requesters.bucket(_scope("/t/acme/x", bearer="platform-token")) is None
        assert await requesters.bucket(_scope("/v1/public/acme/x", bearer="junk")) == "public:acme"
        assert await requesters.bucket(_scope("/v1/tenants", bearer="junk")) is None
        assert await requesters.bucket(_scope(cookie="")) is None
        headers = {"type": "http", "path": "/t/acme", "headers": [(b"authorization", b"Basic x")]}
        assert await requesters.bucket(headers) == "public:acme"
        assert owners.asked == []

    asyncio.run(scenario())


def test_a_signed_in_session_counts_against_its_tenant_and_a_visitor_against_the_path() -> None:
    async def scenario() -> None:
        owners = Owners()
        requesters = _requesters(owners)
        signed_in = "theme=dark; session=signed:session-of-a"
        assert await requesters.bucket(_scope("/t/other/challenges", cookie=signed_in)) == (
            "tenant:a"
        )
        # A forged cookie (no signature), an ended session, no session: anonymous visitors.
        for cookie in ("session=session-of-a", "session=signed:ended", "theme=dark", "=;;"):
            assert await requesters.bucket(_scope("/t/other/x", cookie=cookie)) == "public:other"
        assert owners.asked == [("session", "session-of-a"), ("session", "ended")]
        # A key wins over a cookie.
        both = _scope("/t/other/x", bearer="gk_beta", cookie=signed_in)
        assert await requesters.bucket(both) == "tenant:b"

    asyncio.run(scenario())


def test_a_failed_lookup_counts_against_no_tenant_and_is_asked_again() -> None:
    async def scenario() -> None:
        owners = Owners(fail=True)
        requesters = _requesters(owners)
        assert await requesters.bucket(_scope(bearer="gk_alpha")) is None
        assert await requesters.bucket(_scope("/v1/public/acme/x", bearer="gk_alpha")) == (
            "public:acme"
        )
        owners.fail = False
        assert await requesters.bucket(_scope(bearer="gk_alpha")) == "tenant:a"
        assert len(owners.asked) == 3

    asyncio.run(scenario())
