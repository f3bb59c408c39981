"""Admission and caching of API requests, against a scripted ASGI app: places are counted per
process, per client and per tenant's share, and always given back; public reads are computed
once per URL and interval; nothing private is kept."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from app.kit.fair_share.requesters import Requesters
from app.kit.fair_share.shares import Shares
from app.kit.middleware import AdmissionControl, ApiCaching, RequestObservability

Message = dict[str, Any]


def _scope(
    path: str = "/v1/public/t/challenges/c/leaderboard",
    *,
    method: str = "GET",
    client: str = "10.0.0.1",
    headers: list[tuple[bytes, bytes]] | None = None,
    query: bytes = b"",
) -> dict[str, Any]:
    return {
        "type": "http",
        "method": method,
        "path": path,
        "query_string": query,
        "headers": headers or [],
        "client": (client, 5000),
    }


async def _call(app: Any, scope: dict[str, Any]) -> tuple[int, dict[bytes, bytes], bytes]:
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    await app(scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], dict(start.get("headers", [])), body


class Scripted:
    """An app answering 200 with a counter, after `gate` opens (when given)."""

    def __init__(self, status: int = 200, gate: asyncio.Event | None = None) -> None:
        self.status, self.gate, self.calls = status, gate, 0

    async def __call__(
        self, scope: dict[str, Any], receive: Any, send: Callable[[Message], Awaitable[None]]
    ) -> None:
        self.calls += 1
        number = self.calls
        if self.gate is not None:
            await self.gate.wait()
        body = json.dumps({"call": number}).encode()
        await send({"type": "http.response.start", "status": self.status, "headers": []})
        await send({"type": "http.response.body", "body": body})


def test_admission_refuses_past_the_process_and_client_limits_and_gives_places_back() -> None:
    async def scenario() -> None:
        gate = asyncio.Event()
        admission = AdmissionControl(Scripted(gate=gate), max_in_flight=3, per_client=2)
        held = [
            asyncio.create_task(_call(admission, _scope(client=client)))
            for client in ("a", "a", "b")
        ]
        await asyncio.sleep(0.01)
        status, headers, body = await _call(admission, _scope(client="a"))
        assert status == 429 and headers[b"retry-after"] == b"1"
        assert json.loads(body)["error"]["code"] == "rate_limited"
        status, headers, body = await _call(admission, _scope(client="c"))
        assert status == 503 and headers[b"retry-after"] == b"1"
        assert json.loads(body)["error"]["code"] == "unavailable"
        exempt = AdmissionControl(Scripted(), max_in_flight=0, per_client=0, exempt=("/healthz",))
        assert (await _call(exempt, _scope("/healthz")))[0] == 200
        gate.set()
        assert [answer[0] for answer in await asyncio.gather(*held)] == [200, 200, 200]
        assert admission.in_flight == 0 and admission.by_client == {}

    asyncio.run(scenario())


def test_admission_gives_the_place_back_when_the_app_raises() -> None:
    async def failing(scope: Any, receive: Any, send: Any) -> None:
        raise RuntimeError("boom")

    async def scenario() -> None:
        admission = AdmissionControl(failing, max_in_flight=1, per_client=1)
        for _ in range(3):
            with pytest.raises(RuntimeError):
                await _call(admission, _scope())
        assert admission.in_flight == 0 and admission.by_client == {}

    asyncio.run(scenario())


def test_concurrent_anonymous_public_reads_are_computed_once_per_url_and_interval() -> None:
    now = [100.0]

    async def scenario() -> None:
        gate = asyncio.Event()
        app = Scripted(gate=gate)
        caching = ApiCaching(app, public_seconds=1.0, clock=lambda: now[0])
        crowd = [asyncio.create_task(_call(caching, _scope())) for _ in range(50)]
        await asyncio.sleep(0.01)
        gate.set()
        answers = await asyncio.gather(*crowd)
        assert app.calls == 1
        assert {body for _, _, body in answers} == {b'{"call": 1}'}
        assert all(headers[b"cache-control"] == b"public, max-age=1" for _, headers, _ in answers)
        # Another URL is another computation; the same one is kept until the interval ends.
        await _call(caching, _scope(query=b"offset=50"))
        assert app.calls == 2
        now[0] += 0.9
        assert (await _call(caching, _scope()))[2] == b'{"call": 1}'
        now[0] += 0.2
        assert (await _call(caching, _scope()))[2] == b'{"call": 3}'

    asyncio.run(scenario())


@pytest.mark.parametrize(
    "scope",
    [
        _scope(headers=[(b"authorization", b"Bearer gk_x")]),
        _scope(headers=[(b"cookie", b"gauntlet_session=x")]),
        _scope(method="POST"),
        _scope(method="HEAD"),
    ],
    ids=["credential", "cookie", "post", "head"],
)
def test_reads_with_a_credential_or_a_cookie_and_writes_are_never_served_from_the_copy(
    scope: dict[str, Any],
) -> None:
    async def scenario() -> None:
        app = Scripted()
        caching = ApiCaching(app, public_seconds=5.0)
        await _call(caching, scope)
        await _call(caching, scope)
        assert app.calls == 2

    asyncio.run(scenario())


def test_errors_are_not_kept_and_private_answers_say_no_store() -> None:
    async def scenario() -> None:
        failing = Scripted(status=500)
        caching = ApiCaching(failing, public_seconds=5.0)
        await _call(caching, _scope())
        await _call(caching, _scope())
        assert failing.calls == 2
        private = ApiCaching(Scripted(), public_seconds=5.0)
        _, headers, _ = await _call(private, _scope("/v1/attempts/x"))
        assert headers[b"cache-control"] == b"no-store"
        _, headers, _ = await _call(private, _scope("/t/demo/"))
        assert b"cache-control" not in headers  # pages set their own

    asyncio.run(scenario())


def test_a_copy_larger_than_the_bound_is_not_kept() -> None:
    async def scenario() -> None:
        app = Scripted()
        caching = ApiCaching(app, public_seconds=5.0, max_body_bytes=5)
        await _call(caching, _scope())
        await _call(caching, _scope())
        assert app.calls == 2

    asyncio.run(scenario())


def test_every_refusal_carries_its_own_request_id_alone() -> None:
    """The refusals are built once; the request id added on the way out must not pile up in
    the shared answer (it did: each 503 carried the ids of every earlier one)."""

    async def scenario() -> None:
        gate = asyncio.Event()
        admission = AdmissionControl(Scripted(gate=gate), max_in_flight=1, per_client=5)
        app = RequestObservability(admission)
        held = asyncio.create_task(_call(app, _scope(client="a")))
        await asyncio.sleep(0.01)
        for client in ("b", "c", "d"):
            sent: list[Message] = []

            async def receive() -> Message:
                return {"type": "http.request", "body": b"", "more_body": False}

            async def send(message: Message, sent: list[Message] = sent) -> None:
                sent.append(message)

            await app(_scope(client=client), receive, send)
            start = sent[0]
            assert start["status"] == 503
            names = [name for name, _ in start["headers"]]
            assert names.count(b"x-request-id") == 1, start["headers"]
        gate.set()
        await held

    asyncio.run(scenario())


def _tenant_requesters() -> Requesters:
    owners = {"gk_a": "tenant:a", "gk_b": "tenant:b"}
    return Requesters(lambda kind, secret: owners.get(secret), bearer=lambda token: token)


def _keyed(key: str, client: str = "10.0.0.1", path: str = "/v1/attempts") -> dict[str, Any]:
    return _scope(path, client=client, headers=[(b"authorization", f"Bearer {key}".encode())])


def test_a_tenant_past_its_share_gets_429_at_once_and_the_others_are_served() -> None:
    async def scenario() -> None:
        gate = asyncio.Event()
        shares = Shares(2)
        admission = AdmissionControl(
            Scripted(gate=gate),
            max_in_flight=10,
            per_client=10,
            shares=shares,
            requesters=_tenant_requesters(),
        )
        held = [
            asyncio.create_task(_call(admission, _keyed("gk_a", client)))
            for client in ("10.0.0.1", "10.0.0.2")
        ]
        await asyncio.sleep(0.05)
        # From any address: the share is the tenant's.
        status, headers, body = await _call(admission, _keyed("gk_a", "10.0.0.3"))
        assert status == 429
        assert headers[b"retry-after"] == b"1"
        assert headers[b"ratelimit-limit"] == b"2"
        assert headers[b"ratelimit-remaining"] == b"0"
        assert headers[b"ratelimit-reset"] == b"1"
        error = json.loads(body)["error"]
        assert error["code"] == "rate_limited"
        assert error["details"] == {"limit": "tenant_in_flight", "share": 2}
        # Another tenant, and the anonymous readers of tenant a's public pages, have their own.
        other = asyncio.create_task(_call(admission, _keyed("gk_b", "10.0.0.3")))
        public = asyncio.create_task(_call(admission, _scope("/v1/public/a/challenges/c")))
        await asyncio.sleep(0.05)
        assert not other.done() and not public.done()  # admitted, waiting for the app
        gate.set()
        assert [answer[0] for answer in await asyncio.gather(*held, other, public)] == [200] * 4
        assert shares.held_here("tenant:a") == shares.held_here("tenant:b") == 0
        assert admission.in_flight == 0 and admission.by_client == {}

    asyncio.run(scenario())


def test_anonymous_readers_past_a_tenants_public_share_get_429_naming_it() -> None:
    async def scenario() -> None:
        gate = asyncio.Event()
        shares = Shares(1)
        admission = AdmissionControl(
            Scripted(gate=gate),
            max_in_flight=10,
            per_client=10,
            shares=shares,
            requesters=_tenant_requesters(),
        )
        held = asyncio.create_task(_call(admission, _scope("/t/a/challenges/c", client="b")))
        await asyncio.sleep(0.05)
        status, headers, body = await _call(admission, _scope("/v1/public/a/x", client="c"))
        assert status == 429 and headers[b"ratelimit-limit"] == b"1"
        assert json.loads(body)["error"]["details"]["limit"] == "public_in_flight"
        # The tenant's own key is not among them.
        assert (await asyncio.wait_for(_call_after(gate, admission, _keyed("gk_a")), 5))[0] == 200
        await held
        assert shares.held_here("public:a") == 0

    asyncio.run(scenario())


async def _call_after(
    gate: asyncio.Event, app: Any, scope: dict[str, Any]
) -> tuple[int, dict[bytes, bytes], bytes]:
    task = asyncio.create_task(_call(app, scope))
    await asyncio.sleep(0.05)
    gate.set()
    return await task


def test_a_request_the_process_refuses_gives_its_share_place_back() -> None:
    async def scenario() -> None:
        gate = asyncio.Event()
        shares = Shares(5)
        admission = AdmissionControl(
            Scripted(gate=gate),
            max_in_flight=1,
            per_client=10,
            shares=shares,
            requesters=_tenant_requesters(),
        )
        held = asyncio.create_task(_call(admission, _keyed("gk_b")))
        await asyncio.sleep(0.05)
        for _ in range(3):
            assert (await _call(admission, _keyed("gk_a", "10.0.0.9")))[0] == 503
        assert shares.held_here("tenant:a") == 0
        assert admission.by_client == {"10.0.0.1": 1}
        gate.set()
        await held
        assert shares.held_here("tenant:b") == 0 and admission.by_client == {}

    asyncio.run(scenario())


def test_a_refused_request_gives_its_client_place_back_and_a_failing_one_its_share() -> None:
    async def failing(scope: Any, receive: Any, send: Any) -> None:
        raise RuntimeError("boom")

    async def scenario() -> None:
        shares = Shares(1)
        admission = AdmissionControl(
            failing, max_in_flight=5, per_client=5, shares=shares, requesters=_tenant_requesters()
        )
        for _ in range(3):
            with pytest.raises(RuntimeError):
                await _call(admission, _keyed("gk_a"))
        assert shares.held_here("tenant:a") == 0 and admission.by_client == {}

    asyncio.run(scenario())


def test_a_connection_that_ignores_retry_after_is_refused_when_it_passes_holding_no_place() -> None:
    async def scenario() -> None:
        now = [100.0]
        waits: list[tuple[float, int]] = []
        gate = asyncio.Event()
        admission: AdmissionControl

        async def sleep(seconds: float) -> None:
            waits.append((round(seconds, 3), admission.in_flight))
            now[0] += seconds

        admission = AdmissionControl(
            Scripted(gate=gate),
            max_in_flight=10,
            per_client=10,
            shares=Shares(1),
            requesters=_tenant_requesters(),
            clock=lambda: now[0],
            sleep=sleep,
        )

        def on(connection: tuple[str, int], key: str) -> dict[str, Any]:
            return {**_keyed(key), "client": connection}

        held = asyncio.create_task(_call(admission, on(("10.0.0.1", 5000), "gk_a")))
        await asyncio.sleep(0.05)
        hammering = ("10.0.0.2", 6000)
        assert (await _call(admission, on(hammering, "gk_a")))[0] == 429
        assert waits == []  # the first refusal at once
        now[0] += 0.2
        assert (await _call(admission, on(hammering, "gk_a")))[0] == 429
        assert waits == [(0.8, 1)]  # when its Retry-After passed; only the held request's place
        assert (await _call(admission, on(hammering, "gk_a")))[0] == 429
        assert waits[1:] == [(1.0, 1)]  # and the next a whole Retry-After after that answer
        # Another connection, or another tenant on this one, is not held back.
        assert (await _call(admission, on(("10.0.0.2", 6001), "gk_a")))[0] == 429
        other = asyncio.create_task(_call(admission, on(hammering, "gk_b")))
        await asyncio.sleep(0.05)
        assert len(waits) == 2
        # Once its Retry-After passed, the connection is answered at once again.
        now[0] += 5
        assert (await _call(admission, on(hammering, "gk_a")))[0] == 429
        assert len(waits) == 2
        gate.set()
        assert (await held)[0] == 200 and (await other)[0] == 200
        assert admission.in_flight == 0 and admission.by_client == {}

    asyncio.run(scenario())
