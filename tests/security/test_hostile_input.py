"""Hostile input replayed as attacks through HTTP against PostgreSQL, Redis and a real worker.

- A tenant's catastrophic regex held a worker for minutes (and its lease heartbeat, so the
   sweep re-sent it); now it runs on RE2 and finishes at once, run once.
- NUL (and lone surrogates) failed writes: in requests they answered 500, from a model or a
   scorer they ended the attempt in `DataError`. Now requests get a 422 naming the field, and
   what models and plugins produce is stored escaped.
- Huge offsets and indexes, Infinity, 1e400 and dates at the ends of the calendar answered
   500. Now 422, naming the parameter.
- NaN in `scoring.config` was stored as null. Now 422.
"""

from __future__ import annotations

import asyncio
import json
import socket
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from app.main import create_app
from tests.conftest import ADMIN_TOKEN, Api, Worker
from tests.e2e.conftest import WebClient
from tests.fixtures.fake_openai import Behaviour, FakeOpenAIServer

pytestmark = pytest.mark.integration

NUL = "\x00"
HUGE = str(2**63)


def _run_count(attempt_id: str) -> int:
    from app.attempt.models import Attempt
    from app.kit.db import session_scope

    with session_scope() as session:
        attempt = session.get(Attempt, uuid.UUID(attempt_id))
        assert attempt is not None
        return attempt.run_count


def _refused_at(response: httpx.Response, *location: str | int) -> None:
    """A 422 in the error shape whose first detail names `location`."""
    assert response.status_code == 422, (location, response.status_code, response.text[:500])
    error = response.json()["error"]
    assert error["code"] == "validation_error", error
    assert error["details"][0]["loc"][: len(location)] == list(location), (location, error)
    assert ".".join(str(part) for part in location[1:]) in error["message"], error


def _with_number(body: dict[str, Any], literal: str) -> str:
    """`body` as JSON text with the placeholder NUMBER replaced by `literal` as written."""
    return json.dumps(body).replace('"NUMBER"', literal)


def _raw_json(api: Api, method: str, path: str, token: str, text: str) -> httpx.Response:
    """Sends `text` as the JSON body, verbatim: NaN, Infinity, 1e400 and lone-surrogate escapes
    are what a hostile client sends, and what a JSON encoder would not."""
    return api.request(
        method, path, token, content=text.encode(), headers={"Content-Type": "application/json"}
    )


# Regexes ------------------------------------------------------------------------------------

CATASTROPHIC = {
    r"^(a+)+$": "a" * 31 + "!",  # the pattern and input that once held a worker for minutes
    r"^(a|aa)*$": "a" * 40 + "!",
    r"^(\w+\s?)*$": "an input that ends in a bang " * 4 + "!",
    r"(x+x+)+y": "x" * 5000,
}


def test_catastrophic_patterns_finish_at_once_and_run_once(
    api: Api, worker: Worker, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    other = api.create_tenant()
    submitted: list[tuple[str, str]] = []
    for pattern, text in CATASTROPHIC.items():
        challenge = api.create_challenge(
            key,
            verifier={"type": "regex", "pattern": pattern},
            evaluation={"metric": "pass@k", "k": 3},
        )
        attempt = api.submit(key, challenge["id"], text, "mallory")
        assert attempt.status_code == 202, attempt.text
        submitted.append((pattern, attempt.json()["id"]))
    # Another tenant's attempt, queued behind them on the same workers.
    bystander = api.create_challenge(other["api_key"])
    innocent = api.submit(other["api_key"], bystander["id"], "PWNED", "bob").json()["id"]

    for pattern, attempt_id in submitted:
        result = api.wait_finished(key, attempt_id, timeout=60)
        assert result["status"] == "completed", (pattern, result)
        assert result["metrics"]["succeeded"] is False, pattern
        assert [trial["judge"]["raw_eval_output"] for trial in result["trials"]] == [
            "pattern not matched"
        ] * 3
        # The lease heartbeat kept running: the sweep never handed it to a second run.
        assert _run_count(attempt_id) == 1, pattern
    result = api.wait_finished(other["api_key"], innocent, timeout=60)
    assert result["status"] == "completed" and result["metrics"]["succeeded"] is True
    assert _run_count(innocent) == 1


def test_patterns_re2_cannot_run_are_refused_naming_the_field(
    api: Api, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    for pattern in (r"(a)\1", r"(?=PWNED)PWNED", r"(?<!x)PWNED", r"(?>a+)b", r"a++"):
        body = {"slug": f"c-{uuid.uuid4().hex[:8]}", "title": "t", "kind": "prompt"}
        body["target"] = {"model": "offline/echo"}
        body["verifier"] = {"type": "regex", "pattern": pattern}
        response = api.request("POST", "/v1/challenges", key, json=body)
        assert response.status_code == 422, (pattern, response.text)
        error = response.json()["error"]
        location = error["details"][0]["loc"]
        assert location[:2] == ["body", "verifier"] and location[-1] == "pattern", error
        assert "RE2" in error["message"] or "regular expression" in error["message"], error
    challenge = api.create_challenge(key, verifier={"type": "regex", "pattern": "PWNED$"})
    response = api.request(
        "PATCH",
        f"/v1/challenges/{challenge['id']}",
        key,
        json={"verifier": {"type": "regex", "pattern": r"(P)\1"}},
    )
    assert response.status_code == 422 and "pattern" in response.json()["error"]["message"]


def test_regex_keeps_its_meaning_on_re2(api: Api, worker: Worker, tenant: dict[str, Any]) -> None:
    """Case-insensitive, `$` before a final newline, Unicode classes, as with Python's re."""
    key = tenant["api_key"]
    cases = {
        r"^pwned$": ("PWNED\n", True),
        r"\bord-\d{5}\b": ("your order ORD-48213, thanks", True),
        r"^\w+$": ("résumé", True),
        r"^\d+$": ("١٩٦٩", True),
        r"^PWNED$": ("PWNED!", False),
    }
    for pattern, (prompt, succeeds) in cases.items():
        challenge = api.create_challenge(key, verifier={"type": "regex", "pattern": pattern})
        attempt = api.submit(key, challenge["id"], prompt, "amy").json()
        result = api.wait_finished(key, attempt["id"])
        assert result["status"] == "completed", (pattern, result)
        assert result["metrics"]["succeeded"] is succeeds, (pattern, prompt)


# Text the database cannot store --------------------------------------------------------------


def test_nul_and_lone_surrogates_in_bodies_answer_422_naming_the_field(
    api: Api, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    challenge = api.create_challenge(key)
    base: dict[str, Any] = {
        "slug": "ok-slug",
        "title": "A title",
        "kind": "prompt",
        "target": {"model": "offline/echo"},
        "verifier": {"type": "contains", "pattern": "PWNED"},
    }

    def with_changes(**changes: Any) -> dict[str, Any]:
        return {**base, "slug": f"c-{uuid.uuid4().hex[:8]}", **changes}

    cases: list[tuple[dict[str, Any], tuple[str | int, ...]]] = [
        (with_changes(title=f"A{NUL}"), ("body", "title")),
        (with_changes(goal=f"goal {NUL}"), ("body", "goal")),
        (
            with_changes(target={"model": "offline/echo", "system_prompt": f"Never{NUL}"}),
            ("body", "target", "system_prompt"),
        ),
        (
            with_changes(target={"model": "offline/echo", "user_template": f"{{prompt}}{NUL}"}),
            ("body", "target", "user_template"),
        ),
        (
            with_changes(verifier={"type": "contains", "pattern": f"PW{NUL}"}),
            ("body", "verifier", "pattern"),
        ),
        (
            with_changes(scoring={"strategy": "first", "config": {f"k{NUL}": 1}}),
            ("body", "scoring", "config"),
        ),
        (
            with_changes(scoring={"strategy": "first", "config": {"a": [{"b": NUL}]}}),
            ("body", "scoring", "config", "a", 0, "b"),
        ),
    ]
    for body, location in cases:
        _refused_at(api.request("POST", "/v1/challenges", key, json=body), *location)
    _refused_at(
        api.request("PATCH", f"/v1/challenges/{challenge['id']}", key, json={"goal": NUL}),
        "body",
        "goal",
    )
    _refused_at(
        api.request("POST", "/v1/api-keys", key, json={"name": f"k{NUL}", "role": "member"}),
        "body",
        "name",
    )
    _refused_at(
        api.request("POST", "/v1/tenants", ADMIN_TOKEN, json={"slug": "x", "name": NUL}),
        "body",
        "name",
    )
    _refused_at(
        api.request(
            "POST",
            "/v1/scorers",
            ADMIN_TOKEN,
            json={
                "plugin_id": "p.nul",
                "entrypoint": "scorers.testing:EchoScorer",
                "default_config": {"x": {f"y{NUL}": 1}},
            },
        ),
        "body",
        "default_config",
        "x",
    )
    attempts = f"/v1/challenges/{challenge['id']}/attempts"
    _refused_at(api.submit(key, challenge["id"], f"PWNED{NUL}", "amy"), "body", "prompt")
    # A JSON encoder would never write a lone surrogate; a hostile client does.
    _refused_at(
        _raw_json(api, "POST", attempts, key, '{"prompt": "PWNED \\udc80", "participant": "amy"}'),
        "body",
        "prompt",
    )
    _refused_at(
        _raw_json(
            api, "POST", "/v1/challenges", key, json.dumps(base)[:-1] + ', "goal": "\\ud800"}'
        ),
        "body",
        "goal",
    )
    # A surrogate pair is valid Unicode (an emoji), and is stored.
    emoji = api.request(
        "PATCH",
        f"/v1/challenges/{challenge['id']}",
        key,
        content=b'{"goal": "Say it \\ud83d\\ude00"}',
        headers={"Content-Type": "application/json"},
    )
    assert emoji.status_code == 200 and emoji.json()["goal"] == "Say it \U0001f600"


def test_nul_in_paths_queries_and_headers_never_answers_500(
    api: Api, api_url: str, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    challenge = api.create_challenge(key, visibility="public")
    _refused_at(api.request("GET", "/v1/scorers/%00", key), "path", "plugin_id")
    _refused_at(
        api.request("GET", f"/v1/public/{tenant['slug']}/challenges/%00/leaderboard"),
        "path",
        "challenge_slug",
    )
    _refused_at(api.request("GET", "/v1/attempts?participant=%00", key), "query", "participant")
    _refused_at(
        api.request("GET", f"/v1/challenges/{challenge['id']}/attempts?participant=a%00b", key),
        "query",
        "participant",
    )
    # The HTTP server itself refuses a NUL in a header, before the app sees it.
    host = urlsplit(api_url)
    with socket.create_connection((host.hostname, host.port), timeout=10) as connection:
        connection.sendall(
            f"POST /v1/challenges/{challenge['id']}/attempts HTTP/1.1\r\n".encode()
            + b"Host: x\r\nIdempotency-Key: a\x00b\r\nContent-Length: 2\r\n"
            + b"Connection: close\r\n\r\n{}"
        )
        status_line = connection.recv(4096).split(b"\r\n", 1)[0]
    assert status_line.startswith(b"HTTP/1.1 400"), status_line

    # Behind a server that lets it through, the app refuses it, naming the header.
    async def through_asgi() -> httpx.Response:
        transport = httpx.ASGITransport(app=create_app())
        async with httpx.AsyncClient(transport=transport, base_url="http://app") as client:
            return await client.post(
                f"/v1/challenges/{challenge['id']}/attempts",
                headers={"Authorization": f"Bearer {key}", "Idempotency-Key": f"a{NUL}b"},
                json={"prompt": "PWNED", "participant": "amy"},
            )

    response = asyncio.run(through_asgi())
    _refused_at(response, "header", "idempotency-key")


def test_nul_in_web_pages_and_forms_answers_422_pages(api_url: str, tenant: dict[str, Any]) -> None:
    web = WebClient(api_url)
    try:
        for path in (
            "/t/%00/",
            f"/t/{tenant['slug']}/challenges/%00",
            f"/t/{tenant['slug']}/?notice=%00",
            f"/t/{tenant['slug']}/attempts/%00",
        ):
            response = web.get(path)
            assert response.status_code == 422, (path, response.status_code)
            assert response.headers["content-type"].startswith("text/html"), path
            assert "NUL" in response.text, path
        sign_up = web.post_form(
            f"/t/{tenant['slug']}/sign-up", {"handle": f"eve{NUL}", "password": "x" * 12}
        )
        assert sign_up.status_code == 422 and "handle" in sign_up.text
    finally:
        web.close()


@pytest.fixture
def provider() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(default=Behaviour.ok(f"PWNED{NUL} then a lone \ud800.")) as server:
        yield server


def test_model_output_with_nul_is_stored_escaped_and_the_attempt_completes(
    api: Api, worker: Worker, tenant: dict[str, Any], provider: FakeOpenAIServer
) -> None:
    key = tenant["api_key"]
    challenge = api.create_challenge(
        key,
        target={"model": "openai/fake-model", "api_base": provider.base_url},
        # Both trials fail, so the second one's prompt carries the first output back.
        verifier={"type": "regex", "pattern": "^never$"},
        evaluation={"metric": "seq@k", "k": 2, "feedback_mode": "raw"},
    )
    attempt = api.submit(key, challenge["id"], "say it", "amy").json()
    result = api.wait_finished(key, attempt["id"])
    assert result["status"] == "completed", result
    escaped = "PWNED\\u0000 then a lone \\ud800."
    assert [trial["actor"]["output"] for trial in result["trials"]] == [escaped, escaped]
    second_prompt = json.dumps(result["trials"][1]["actor"]["prompt"])
    assert json.dumps(escaped)[1:-1] in second_prompt
    assert _run_count(attempt["id"]) == 1


def test_scorer_details_and_reasons_with_nul_are_stored_escaped(
    api: Api, worker: Worker, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    outcomes = {}
    for name in ("UnstorableDetailsScorer", "UnstorableErrorScorer"):
        plugin_id = f"test.{name.lower()}.{uuid.uuid4().hex[:6]}"
        registered = api.request(
            "POST",
            "/v1/scorers",
            ADMIN_TOKEN,
            json={"plugin_id": plugin_id, "entrypoint": f"scorers.testing:{name}"},
        )
        assert registered.status_code == 201, registered.text
        challenge = api.create_challenge(
            key, scoring={"strategy": "custom", "plugin_id": plugin_id}
        )
        attempt = api.submit(key, challenge["id"], "PWNED", "amy").json()
        outcomes[name] = api.wait_finished(key, attempt["id"])
    details = outcomes["UnstorableDetailsScorer"]
    assert details["status"] == "completed" and details["score"] == 3.0, details
    assert details["score_details"] == {
        "note": "before\\u0000after",
        "key\\u0000": "lone \\ud800 surrogate",
        "figures": ["NaN", "Infinity", 1.5],
    }
    failed = outcomes["UnstorableErrorScorer"]
    assert failed["status"] == "completed" and failed["score"] is None, failed
    assert "broken\\u0000scorer" in failed["score_details"]["error"]


# Numbers and dates --------------------------------------------------------------


def test_out_of_range_parameters_answer_422_naming_them(api: Api, tenant: dict[str, Any]) -> None:
    key = tenant["api_key"]
    challenge = api.create_challenge(key, visibility="public")
    attempt = api.submit(key, challenge["id"], "PWNED", "amy").json()
    lists = [
        ("/v1/attempts", key),
        ("/v1/challenges", key),
        (f"/v1/challenges/{challenge['id']}/attempts", key),
        (f"/v1/challenges/{challenge['id']}/leaderboard", key),
        (f"/v1/public/{tenant['slug']}/challenges/{challenge['slug']}/leaderboard", None),
        (f"/v1/attempts/{attempt['id']}/trials", key),
        ("/v1/participants", key),
        ("/v1/tenants", ADMIN_TOKEN),
    ]
    for path, token in lists:
        for name in ("offset", "limit"):
            for value in (HUGE, "-1", "1e3", str(10**30)):
                response = api.request("GET", f"{path}?{name}={value}", token)
                _refused_at(response, "query", name)
    for value in (str(2**31), HUGE, "-1"):
        response = api.request(
            "GET", f"/v1/attempts/{attempt['id']}/trials?task_index={value}", key
        )
        _refused_at(response, "query", "task_index")


def test_non_finite_numbers_and_far_dates_answer_422_naming_them(
    api: Api, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    for value in ("Infinity", "-Infinity", "NaN", "1e400"):
        benchmark = {
            "slug": f"b-{uuid.uuid4().hex[:8]}",
            "title": "b",
            "kind": "benchmark",
            "benchmark": {"name": "jsonl", "cost_budget_usd": "NUMBER"},
        }
        response = _raw_json(api, "POST", "/v1/challenges", key, _with_number(benchmark, value))
        _refused_at(response, "body", "benchmark", "cost_budget_usd")
    prompt = {
        "slug": "p-nan",
        "title": "p",
        "target": {"model": "offline/echo", "temperature": "NUMBER"},
        "verifier": {"type": "contains", "pattern": "x"},
    }
    response = _raw_json(api, "POST", "/v1/challenges", key, _with_number(prompt, "NaN"))
    _refused_at(response, "body", "target", "temperature")
    # A number beyond a float is refused; beyond the allowed range, named by the schema.
    response = api.request(
        "POST",
        "/v1/challenges",
        key,
        json={
            "slug": f"b-{uuid.uuid4().hex[:8]}",
            "title": "b",
            "kind": "benchmark",
            "benchmark": {"name": "jsonl", "cost_budget_usd": 1e300},
        },
    )
    _refused_at(response, "body", "benchmark", "cost_budget_usd")

    challenge = api.create_challenge(key)
    far = {
        "opens_at": ["0001-01-01T00:00:00+01:00", "0001-01-01T00:00:00Z", "1969-12-31T23:59:59Z"],
        "closes_at": ["9999-12-31T23:59:59-01:00", "9999-12-31T23:59:59Z"],
    }
    for field, values in far.items():
        for value in values:
            response = api.request(
                "PATCH", f"/v1/challenges/{challenge['id']}", key, json={field: value}
            )
            _refused_at(response, "body", field)
            create = api.request(
                "POST",
                "/v1/challenges",
                key,
                json={
                    "slug": f"d-{uuid.uuid4().hex[:8]}",
                    "title": "d",
                    "target": {"model": "offline/echo"},
                    "verifier": {"type": "contains", "pattern": "x"},
                    field: value,
                },
            )
            _refused_at(create, "body", field)
    ok = api.request(
        "PATCH",
        f"/v1/challenges/{challenge['id']}",
        key,
        json={"closes_at": "9998-12-31T23:59:59+14:00"},
    )
    assert ok.status_code == 200, ok.text


def test_nan_in_scoring_config_is_refused_not_stored_as_null(
    api: Api, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    challenge = api.create_challenge(key)
    for value in ("NaN", "Infinity", "-Infinity", "1e400"):
        scoring = {
            "scoring": {
                "strategy": "custom",
                "plugin_id": "builtin.weighted_scorer",
                "config": {"time_penalty": "NUMBER"},
            }
        }
        body = _with_number(scoring, value)
        response = _raw_json(api, "PATCH", f"/v1/challenges/{challenge['id']}", key, body)
        _refused_at(response, "body", "scoring", "config", "time_penalty")
    stored = api.request("GET", f"/v1/challenges/{challenge['id']}", key).json()
    assert stored["scoring"]["strategy"] == "fewest_tokens", stored["scoring"]
    refused = _raw_json(
        api,
        "POST",
        "/v1/scorers",
        ADMIN_TOKEN,
        '{"plugin_id": "p.nan", "entrypoint": "scorers.testing:EchoScorer", '
        '"default_config": {"score": NaN}}',
    )
    _refused_at(refused, "body", "default_config", "score")
