"""Attacks on sessions and accounts, over HTTP: a real API server
(and a second API process where limits must be shared), PostgreSQL and Redis, through the web
UI's forms with their CSRF tokens.

Every client speaks from an address of its own in 127.0.0.0/8: a real peer address (not a
header), so the per-address limits of one test never meet another's; where an attacker would
come from 127.0.0.1 (which uvicorn once trusted by default), so does the test.
"""

from __future__ import annotations

import html
import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.auth.rate_limits import AccountLimits
from tests import http
from tests.conftest import ROOT, Api, Stack
from tests.e2e.conftest import PASSWORD, WebClient, create_tenant
from tests.services import free_port

pytestmark = pytest.mark.integration

Clients = Callable[..., WebClient]
DEFAULT_LIMITS = AccountLimits()
LOCKOUT_AFTER = DEFAULT_LIMITS.lockout_after
ADDRESS_BUDGET = min(item.amount for item in DEFAULT_LIMITS.address_failures)
# The second API process believes proxy headers from this address only.
TRUSTED_PROXY = "127.0.0.5"
NEW_PASSWORD = "seven purple otters sing"
XFF = "X-Forwarded-For"


def _address() -> str:
    """A loopback address no other test uses (never 127.0.x.x: the servers and the proxy)."""
    return f"127.{random.randint(1, 254)}.{random.randint(0, 255)}.{random.randint(1, 254)}"


def _forwarded_client() -> str:
    """A client address as a proxy would name it (198.18.0.0/15: benchmarking, never routed)."""
    return f"198.{random.randint(18, 19)}.{random.randint(0, 255)}.{random.randint(1, 254)}"


def _accept_secure_cookies_over_http(client: WebClient) -> None:
    """Like a browser on localhost: send Secure cookies back over plain HTTP (the second API
    process marks its cookies Secure, as production does by default). httpx copies its jar
    for each request with the default policy, so the cookies are added by a request hook."""

    def add_secure_cookies(request: httpx.Request) -> None:
        secure = [
            f"{cookie.name}={cookie.value}"
            for cookie in client.http.cookies.jar
            if cookie.secure and request.url.path.startswith(cookie.path)
        ]
        if secure:
            sent = request.headers.get("cookie")
            request.headers["cookie"] = "; ".join([sent, *secure] if sent else secure)

    client.http.event_hooks["request"].append(add_secure_cookies)


@pytest.fixture
def clients(api_url: str) -> Iterator[Clients]:
    made: list[WebClient] = []

    def make(address: str | None = None, base_url: str | None = None) -> WebClient:
        client = WebClient(base_url or api_url, local_address=address or _address())
        if base_url is not None:
            _accept_secure_cookies_over_http(client)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


@pytest.fixture
def from_localhost() -> Iterator[str]:
    """127.0.0.1, the address uvicorn believed proxy headers from by default, as an attacker
    would use it; the e2e tests count sign-ins from it too, so its counts start and end
    empty (this run's keys only)."""
    from app.web import auth

    auth.limits.reset()
    yield "127.0.0.1"
    auth.limits.reset()


@pytest.fixture
def owner(api: Api) -> dict[str, Any]:
    return create_tenant(api)


@pytest.fixture(scope="module")
def second_api(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Another API process on the same PostgreSQL and Redis, started as production starts it:
    `gauntlet serve`, with production's default cookies (Secure) and one trusted proxy."""
    port = free_port()
    env = stack.env()
    env.pop("GAUNTLET_SECURE_COOKIES", None)
    env["GAUNTLET_TRUSTED_PROXIES"] = TRUSTED_PROXY
    log_path = tmp_path_factory.mktemp("second-api") / "api.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "serve", "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    base_url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if http.get(f"{base_url}/healthz", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"second API did not start:\n{log_path.read_text()[-3000:]}")
        time.sleep(0.1)
    yield base_url
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


def _sign_in_post(
    client: WebClient, slug: str, handle: str, password: str, token: str, **headers: str
) -> httpx.Response:
    return client.http.post(
        f"/t/{slug}/sign-in",
        data={"handle": handle, "password": password, "csrf_token": token},
        headers=headers,
    )


def _set_cookie(client: WebClient, name: str, value: str, path: str = "/") -> None:
    client.http.cookies.clear()
    client.http.cookies.set(name, value, path=path)


# Sessions -------------------------------------------------------------------------------------


def test_signing_out_ends_the_session_for_every_copy_of_the_cookie(
    api: Api, clients: Clients, owner: dict[str, Any]
) -> None:
    key, slug = owner["api_key"], owner["slug"]
    challenge = api.create_challenge(key, visibility="unlisted")
    page = f"/t/{slug}/challenges/{challenge['slug']}"
    victim = clients()
    assert victim.sign_up(slug, "victim").status_code == 303
    stolen = victim.http.cookies["gauntlet_session"]

    thief = clients()
    _set_cookie(thief, "gauntlet_session", stolen)
    assert thief.get(page).status_code == 200  # the copy works while the session lives
    stolen_token = thief.csrf(page)

    assert victim.post_form(f"/t/{slug}/sign-out", {}, token_from=page).status_code == 303
    assert victim.get(page).status_code == 404

    _set_cookie(thief, "gauntlet_session", stolen)
    assert thief.get(page).status_code == 404  # signed out: the unlisted challenge is hidden
    assert thief.get(f"/t/{slug}/account").status_code == 303  # to the sign-in page
    _set_cookie(thief, "gauntlet_session", stolen)
    refused = thief.http.post(
        f"{page}/attempts",
        data={"prompt": "PWNED", "csrf_token": stolen_token, "submission_id": uuid.uuid4().hex},
    )
    assert refused.status_code == 404
    assert api.request("GET", "/v1/attempts", key).json()["total"] == 0


def test_a_password_change_ends_every_session_of_the_participant(
    clients: Clients, owner: dict[str, Any]
) -> None:
    slug = owner["slug"]
    account = f"/t/{slug}/account"
    laptop = clients()
    assert laptop.sign_up(slug, "changer").status_code == 303
    phone = clients()
    assert phone.sign_in(slug, "changer").status_code == 303
    assert phone.get(account).status_code == 200
    copied = laptop.http.cookies["gauntlet_session"]

    wrong = laptop.post_form(
        f"{account}/password",
        {"current_password": "not my password", "new_password": NEW_PASSWORD},
        token_from=account,
    )
    assert wrong.status_code == 401 and "current password is not right" in wrong.text
    weak = laptop.post_form(
        f"{account}/password",
        {"current_password": PASSWORD, "new_password": "password"},
        token_from=account,
    )
    assert weak.status_code == 422 and "most common passwords" in weak.text
    assert phone.get(account).status_code == 200  # refused changes end nothing

    changed = laptop.post_form(
        f"{account}/password",
        {"current_password": PASSWORD, "new_password": NEW_PASSWORD},
        token_from=account,
    )
    assert changed.status_code == 303
    assert changed.headers["location"] == f"{account}?notice=password-changed"
    # This browser goes on with a new session; every other one, and every copy, has ended.
    assert laptop.get(account).status_code == 200
    assert laptop.http.cookies["gauntlet_session"] != copied
    assert phone.get(account).status_code == 303
    copy = clients()
    _set_cookie(copy, "gauntlet_session", copied)
    assert copy.get(account).status_code == 303
    assert clients().sign_in(slug, "changer").status_code == 401  # the old password
    assert clients().sign_in(slug, "changer", NEW_PASSWORD).status_code == 303


def test_sessions_expire_on_the_server_whatever_the_cookie_says(
    clients: Clients, owner: dict[str, Any]
) -> None:
    from sqlalchemy import update

    from app.auth.models import BrowserSession
    from app.kit.db import session_scope, utcnow

    slug = owner["slug"]
    client = clients()
    assert client.sign_up(slug, "expiring").status_code == 303
    assert client.get(f"/t/{slug}/account").status_code == 200
    with session_scope() as session:
        session.execute(
            update(BrowserSession)
            .where(BrowserSession.tenant_id == uuid.UUID(owner["id"]))
            .values(expires_at=utcnow() - timedelta(seconds=1))
        )
    # The cookie is still genuine and within its max age; the server says no.
    assert client.get(f"/t/{slug}/account").status_code == 303


def test_the_admin_session_ends_at_sign_out(clients: Clients, owner: dict[str, Any]) -> None:
    slug = owner["slug"]
    admin_path = f"/t/{slug}/admin"
    admin = clients()
    assert admin.post_form(f"{admin_path}/sign-in", {"api_key": owner["api_key"]}).status_code == (
        303
    )
    stolen = admin.http.cookies["gauntlet_admin"]
    assert admin.get(admin_path).status_code == 200
    thief = clients()
    _set_cookie(thief, "gauntlet_admin", stolen, path=admin_path)
    assert thief.get(admin_path).status_code == 200  # the copy works while the session lives

    signed_out = admin.post_form(f"{admin_path}/sign-out", {}, token_from=admin_path)
    assert signed_out.status_code == 303
    _set_cookie(thief, "gauntlet_admin", stolen, path=admin_path)
    refused = thief.get(admin_path)
    assert refused.status_code == 303
    assert refused.headers["location"] == f"{admin_path}/sign-in?notice=key-invalid"


# Handles --------------------------------------------------------------------------------------


def test_concurrent_sign_ups_of_case_variants_make_one_account(
    api: Api, clients: Clients, owner: dict[str, Any]
) -> None:
    key, slug = owner["api_key"], owner["slug"]
    variants = ["CaseRace", "caserace", "CASERACE", "casErace"] * 5
    address = _address()
    racers = [clients(address) for _ in variants]
    tokens = [racer.csrf(f"/t/{slug}/sign-up") for racer in racers]
    start = threading.Barrier(len(racers))

    def sign_up(index: int) -> int:
        start.wait()
        response = racers[index].http.post(
            f"/t/{slug}/sign-up",
            data={"handle": variants[index], "password": PASSWORD, "csrf_token": tokens[index]},
        )
        return response.status_code

    with ThreadPoolExecutor(len(racers)) as pool:
        statuses = list(pool.map(sign_up, range(len(racers))))
    assert statuses.count(303) == 1, statuses
    assert statuses.count(409) == len(racers) - 1, statuses
    listed = api.request("GET", "/v1/participants", key).json()
    assert listed["total"] == 1
    assert listed["items"][0]["handle"].lower() == "caserace"
    # Every spelling signs in to the one account.
    for spelling in ("CaseRace", "CASERACE", "caseRACE"):
        assert clients().sign_in(slug, spelling).status_code == 303


def test_participants_named_by_api_keys_follow_the_same_rule(
    api: Api, api_url: str, clients: Clients, owner: dict[str, Any]
) -> None:
    key, slug = owner["api_key"], owner["slug"]
    challenge = api.create_challenge(key)
    variants = ["Zed", "zed", "ZED", "zeD"] * 3

    def submit(handle: str) -> httpx.Response:
        with http.client(base_url=api_url, timeout=30) as client:
            return client.post(
                f"/v1/challenges/{challenge['id']}/attempts",
                json={"prompt": "hello", "participant": handle},
                headers={"Authorization": f"Bearer {key}"},
            )

    with ThreadPoolExecutor(len(variants)) as pool:
        responses = list(pool.map(submit, variants))
    assert [r.status_code for r in responses] == [202] * len(variants)
    assert len({r.json()["participant_id"] for r in responses}) == 1
    listed = api.request("GET", "/v1/participants", key).json()
    assert listed["total"] == 1
    first_spelling = listed["items"][0]["handle"]
    # Every answer shows the handle as first spelled, whatever spelling the request used.
    assert {r.json()["participant"] for r in responses} == {first_spelling}
    later = api.submit(key, challenge["id"], "hello", "zEd").json()
    assert later["participant"] == first_spelling
    filtered = api.request("GET", "/v1/attempts", key, params={"participant": "ZED"}).json()
    assert filtered["total"] == len(variants) + 1
    # Nobody can sign up as a spelling of the API's participant (and take over its results).
    taken = clients().sign_up(slug, "zEd")
    assert taken.status_code == 409 and "This handle is taken" in taken.text


# Sign-in limits -------------------------------------------------------------------------------


def test_failed_sign_ins_lock_the_attacker_out_not_the_owner(
    clients: Clients, owner: dict[str, Any]
) -> None:
    slug = owner["slug"]
    assert clients().sign_up(slug, "target").status_code == 303
    attacker = clients()
    for number in range(LOCKOUT_AFTER):
        guess = attacker.sign_in(slug, "target", f"guess number {number}")
        assert guess.status_code == 401
    refused = attacker.sign_in(slug, "target")  # even the right password, from there
    assert refused.status_code == 429
    assert "for this handle from your network" in refused.text
    assert 0 < int(refused.headers["retry-after"]) <= 60
    # The owner, from any other address, is not locked out.
    assert clients().sign_in(slug, "TARGET").status_code == 303
    assert clients().sign_in(slug, "target").status_code == 303
    assert attacker.sign_in(slug, "target").status_code == 429


def test_forged_forwarding_headers_do_not_escape_the_limits(
    clients: Clients, owner: dict[str, Any], from_localhost: str
) -> None:
    slug = owner["slug"]
    address = from_localhost
    attacker = clients(address)
    token = attacker.csrf(f"/t/{slug}/sign-in")
    statuses = []
    for number in range(60):
        forged = f"198.51.100.{number + 1}"
        response = _sign_in_post(
            attacker,
            slug,
            f"victim{number}",  # a new handle each time: only the per-address limit can bite
            "a wrong guess",
            token,
            **{"X-Forwarded-For": forged, "X-Real-IP": forged, "Forwarded": f"for={forged}"},
        )
        statuses.append(response.status_code)
    assert statuses[:ADDRESS_BUDGET] == [401] * ADDRESS_BUDGET
    assert statuses[ADDRESS_BUDGET:] == [429] * (60 - ADDRESS_BUDGET)
    # The address itself is refused, with a fresh session and without headers.
    assert clients(address).sign_in(slug, "anyone", "a wrong guess").status_code == 429


def test_limits_are_shared_by_two_api_processes(
    clients: Clients, owner: dict[str, Any], second_api: str
) -> None:
    slug = owner["slug"]
    assert clients().sign_up(slug, "shared").status_code == 303
    address = _address()
    first = clients(address)
    second = clients(address, base_url=second_api)
    for _ in range(3):
        assert first.sign_in(slug, "shared", "a wrong guess").status_code == 401
    for _ in range(LOCKOUT_AFTER - 3):
        assert second.sign_in(slug, "shared", "a wrong guess").status_code == 401
    assert first.sign_in(slug, "shared").status_code == 429
    assert second.sign_in(slug, "shared").status_code == 429
    # Sessions are shared too: one signed in through one process, signed out through the other.
    elsewhere = clients()
    assert elsewhere.sign_in(slug, "shared").status_code == 303
    cookie = elsewhere.http.cookies["gauntlet_session"]
    through_second = clients(base_url=second_api)
    _set_cookie(through_second, "gauntlet_session", cookie)
    account = f"/t/{slug}/account"
    assert through_second.get(account).status_code == 200
    out = through_second.post_form(f"/t/{slug}/sign-out", {}, token_from=account)
    assert out.status_code == 303
    assert elsewhere.get(account).status_code == 303


def test_proxy_headers_are_believed_only_from_trusted_proxies(
    clients: Clients, owner: dict[str, Any], second_api: str, from_localhost: str
) -> None:
    slug = owner["slug"]
    assert clients().sign_up(slug, "proxied").status_code == 303
    proxy = clients(TRUSTED_PROXY, base_url=second_api)
    token = proxy.csrf(f"/t/{slug}/sign-in")
    client_a = {XFF: _forwarded_client()}
    client_b = {XFF: _forwarded_client()}
    # Through the trusted proxy, failures count against the client it names (the address it
    # appended; what the client wrote in front of it is ignored)...
    for number in range(LOCKOUT_AFTER):
        forged_then_appended = {"X-Forwarded-For": f"192.0.2.{number + 1}, {client_a[XFF]}"}
        response = _sign_in_post(
            proxy, slug, "proxied", "a wrong guess", token, **forged_then_appended
        )
        assert response.status_code == 401
    assert _sign_in_post(proxy, slug, "proxied", PASSWORD, token, **client_a).status_code == 429
    # ...so another client behind the same proxy is not locked out.
    assert _sign_in_post(proxy, slug, "proxied", PASSWORD, token, **client_b).status_code == 303

    # From any other address (loopback included) the header is ignored: rotating it changes
    # nothing.
    direct = clients(from_localhost, base_url=second_api)
    token = direct.csrf(f"/t/{slug}/sign-in")
    for number in range(LOCKOUT_AFTER):
        forged = {"X-Forwarded-For": f"192.0.2.{number + 1}"}
        response = _sign_in_post(direct, slug, "proxied", "a wrong guess", token, **forged)
        assert response.status_code == 401
    forged = {"X-Forwarded-For": "192.0.2.200"}
    assert _sign_in_post(direct, slug, "proxied", PASSWORD, token, **forged).status_code == 429


def test_the_secure_cookie_flag_comes_from_the_settings_not_from_headers(
    clients: Clients, owner: dict[str, Any], second_api: str, from_localhost: str
) -> None:
    slug = owner["slug"]
    sign_in = f"/t/{slug}/sign-in"
    # The test server is configured for plain HTTP; a header claiming HTTPS changes nothing.
    plain = clients(from_localhost).get(sign_in, headers={"X-Forwarded-Proto": "https"})
    assert "secure" not in plain.headers["set-cookie"].lower()
    # Production's default is Secure, and a header claiming plain HTTP changes nothing either.
    for headers in ({}, {"X-Forwarded-Proto": "http"}):
        production = clients(from_localhost, base_url=second_api).get(sign_in, headers=headers)
        attributes = [a.strip().lower() for a in production.headers["set-cookie"].split(";")]
        assert "secure" in attributes and "httponly" in attributes


# Passwords and secrets ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("password", "message"),
    [
        ("password", "one of the most common passwords"),
        ("12345678", "one of the most common passwords"),
        ("Password1", "one of the most common passwords"),
        (" " * 8, "must not be blank"),
        # Refused at the door, before the password policy sees it (app/kit/input_guard.py).
        ("\x00" * 8, "must not contain NUL (U+0000) characters"),
        ("tab\tinside it", "must not contain control characters (U+0009"),
        ("short", "at least 8 characters"),
        ("aaaaaaaaaaaa", 'too easy to guess (Repeats like "aaa" are easy to guess)'),
        ("weakling", "must not be your handle"),
    ],
)
def test_weak_passwords_are_refused_with_a_reason(
    api: Api, clients: Clients, owner: dict[str, Any], password: str, message: str
) -> None:
    response = clients().sign_up(owner["slug"], "weakling", password)
    assert response.status_code == 422
    assert message in html.unescape(response.text)
    if "\x00" not in password:  # a NUL is refused at the door, before any form is drawn
        assert 'value="weakling"' in response.text  # the form keeps the handle
    assert api.request("GET", "/v1/participants", owner["api_key"]).json()["total"] == 0


def test_production_refuses_weak_secrets_at_start_up(stack: Stack, tmp_path: Path) -> None:
    env = {
        **stack.env(),
        "GAUNTLET_ADMIN_TOKEN": "a" * 24,
        "GAUNTLET_SECRET_KEY": "a" * 40,
    }
    started = subprocess.run(
        [sys.executable, "-m", "app.cli", "serve", "--port", str(free_port())],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert started.returncode != 0
    error = started.stderr
    assert "GAUNTLET_ADMIN_TOKEN must be at least 32 characters long" in error
    assert "GAUNTLET_SECRET_KEY is too easy to guess" in error
    assert "secrets.token_urlsafe(32)" in error
    assert "a" * 24 not in error  # the values themselves are never printed
    assert "Traceback" not in error
