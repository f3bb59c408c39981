"""Pure logic of the web UI, no services needed: reasoning folding, rate-limit windows, session
cookies and CSRF tokens."""

from __future__ import annotations

import uuid

import pytest
from starlette.requests import Request
from starlette.responses import Response

from app.web import auth
from app.web.service import split_reasoning


@pytest.mark.parametrize(
    ("text", "answer", "reasoning"),
    [
        ("", "", []),
        ("plain answer", "plain answer", []),
        ("<think>plan</think>answer", "answer", ["plan"]),
        ("<THINK>\n  plan \n</Think>\n\nanswer", "answer", ["plan"]),
        ("<think>a</think>x<think>b</think>y", "xy", ["a", "b"]),
        ("<think></think>answer", "answer", []),
        ("answer <think>cut off mid-thou", "answer", ["cut off mid-thou"]),
        ("opened in the prompt</think>answer", "answer", ["opened in the prompt"]),
        ("<think>ünïcode 思考</think>答え", "答え", ["ünïcode 思考"]),
        ("<thinking>not a tag we fold</thinking>", "<thinking>not a tag we fold</thinking>", []),
    ],
)
def test_reasoning_is_split_from_the_answer(text: str, answer: str, reasoning: list[str]) -> None:
    assert split_reasoning(text) == (answer, reasoning)


def test_a_sliding_window_refuses_past_its_limit_and_forgets_old_events() -> None:
    counter = auth.SlidingWindowCounter(limit=2, window_seconds=60)
    assert counter.retry_after("k", now=0) is None
    counter.add("k", now=0)
    counter.add("k", now=10)
    assert counter.retry_after("k", now=20) == pytest.approx(40)
    assert counter.retry_after("other", now=20) is None
    assert counter.retry_after("k", now=60.5) is None  # the first event left the window
    counter.add("k", now=61)
    assert counter.retry_after("k", now=62) == pytest.approx(8)
    counter.clear("k")
    assert counter.retry_after("k", now=62) is None


def test_a_sliding_window_holds_a_bounded_number_of_keys() -> None:
    counter = auth.SlidingWindowCounter(limit=1, window_seconds=60, max_keys=3)
    for number in range(10):
        counter.add(f"client-{number}", now=0)
    assert counter.retry_after("client-9", now=1) is not None
    assert counter.retry_after("client-0", now=1) is None  # forgotten, least recently used


def test_account_limits_ignore_handle_case_and_clear_on_success() -> None:
    limits = auth.SignInLimits(failures_per_account=2, failures_per_client=100)
    tenant = uuid.uuid4()
    limits.sign_in_failed(tenant, "Alice", "10.0.0.1")
    limits.sign_in_failed(tenant, "alice", "10.0.0.2")
    refusal = limits.check_sign_in(tenant, "ALICE", "10.0.0.3")
    assert refusal is not None and "for this handle" in refusal.message
    assert refusal.retry_after_seconds > 0
    assert limits.check_sign_in(uuid.uuid4(), "alice", "10.0.0.3") is None  # another tenant
    limits.sign_in_succeeded(tenant, "alice")
    assert limits.check_sign_in(tenant, "alice", "10.0.0.3") is None


def _request(cookie: str | None = None) -> Request:
    headers = [(b"cookie", f"{auth.SESSION_COOKIE}={cookie}".encode())] if cookie else []
    return Request({"type": "http", "scheme": "http", "headers": headers, "path": "/"})


def _issued_cookie(session: auth.WebSession) -> str:
    response = Response()
    auth.store_session(_request(), response, session)
    header = response.headers["set-cookie"]
    return header.split(";", 1)[0].split("=", 1)[1]


def test_a_session_survives_the_round_trip_and_tampering_does_not() -> None:
    session = auth.load_session(_request())
    assert session.changed and session.participant_id is None
    tenant, participant = uuid.uuid4(), uuid.uuid4()
    session.sign_in(tenant, participant)
    cookie = _issued_cookie(session)
    loaded = auth.load_session(_request(cookie))
    assert (loaded.session_id, loaded.tenant_id, loaded.participant_id) == (
        session.session_id,
        tenant,
        participant,
    )
    assert not loaded.changed
    assert auth.csrf_valid(loaded, session.csrf_token)
    # Not the last character: base64 ignores some of its bits (same bytes, same signature).
    for index in (2, len(cookie) // 2, len(cookie) - 3):
        forged = cookie[:index] + ("A" if cookie[index] != "A" else "B") + cookie[index + 1 :]
        anonymous = auth.load_session(_request(forged))
        assert anonymous.participant_id is None and anonymous.changed
        assert not auth.csrf_valid(anonymous, session.csrf_token)


def test_csrf_tokens_belong_to_one_session_and_change_on_sign_in() -> None:
    session = auth.load_session(_request())
    token = session.csrf_token
    assert auth.csrf_valid(session, token)
    for wrong in ("", token[:-1], token.upper(), "ü" * 64, auth.csrf_token_for("x" * 32)):
        assert not auth.csrf_valid(session, wrong)
    session.sign_in(uuid.uuid4(), uuid.uuid4())
    assert not auth.csrf_valid(session, token)


def test_passwords_are_hashed_with_argon2_and_checked() -> None:
    hashed = auth.hash_password("correct horse battery")
    assert hashed.startswith("$argon2id$")
    assert auth.verify_password(hashed, "correct horse battery")
    assert not auth.verify_password(hashed, "Correct horse battery")
    assert not auth.verify_password(None, "")
    assert not auth.verify_password("not a hash", "x")
    assert auth.password_problem("short") is not None
    assert auth.password_problem("x" * 1000) is not None
    assert auth.password_problem("eight ch") is None
