"""Attacks on where workers send requests, what they spend and which files a benchmark reads,
replayed through HTTP against real PostgreSQL, Redis and a worker. The fake OpenAI-compatible
server records where every request went and which credential it carried.

The test settings (tests/conftest.py) allow `http://127.0.0.1:*/v1` (no key),
`http://127.0.0.1:*/keyed/v1` (key from TEST_KEYED_BASE_API_KEY) and
`http://allowed.example.com`; OPENAI_API_KEY is set for the API and the worker.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import TEST_SETTINGS, Api, Worker
from tests.fixtures.fake_openai import Behaviour, FakeOpenAIServer

pytestmark = pytest.mark.integration

PROVIDER_KEY = os.environ["OPENAI_API_KEY"]
KEYED_BASE_KEY = TEST_SETTINGS["TEST_KEYED_BASE_API_KEY"]


@pytest.fixture
def provider() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(default=Behaviour.ok("no idea")) as server:
        yield server


def member_key(api: Api, admin_key: str) -> str:
    """A member key sees what participants see."""
    response = api.request(
        "POST", "/v1/api-keys", admin_key, json={"name": "player app", "role": "member"}
    )
    assert response.status_code == 201, response.text
    return str(response.json()["key"])


def prompt_challenge(api: Api, key: str, **target: Any) -> dict[str, Any]:
    return api.create_challenge(
        key,
        target={"model": "openai/fake-model", "system_prompt": "Be terse.", **target},
        verifier={"type": "contains", "pattern": "PWNED"},
    )


def benchmark_challenge(api: Api, key: str, **benchmark: Any) -> dict[str, Any]:
    return api.create_challenge(
        key,
        kind="benchmark",
        target=None,
        verifier=None,
        benchmark={"name": "jsonl", "judge_model": "offline/judge", **benchmark},
        evaluation={"metric": "seq@k", "k": 2, "feedback_mode": "binary"},
        scoring={"strategy": "metric_at_k"},
    )


def submit_model(api: Api, key: str, challenge_id: str, model: str, **extra: Any) -> Any:
    return api.request(
        "POST",
        f"/v1/challenges/{challenge_id}/attempts",
        key,
        json={"model": model, "participant": "team-x", **extra},
    )


def error_message(response: Any) -> str:
    return str(response.json()["error"]["message"])


# Base URLs: an allow-list once matched text prefixes, and the operator's key went along.

LOOKALIKE_BASE_URLS = [
    "http://127.0.0.1:18961/v1/../../internal",
    "http://127.0.0.1:18961/v10",
    "http://allowed.example.com.evil.example/v1",
    "http://allowed.example.comevil.example/",
    "http://allowed.example.com:6379/",
    "http://127.0.0.1:18961/v1/%2e%2e/%2e%2e/internal",
    "http://127.0.0.1:18961/v1/./../internal",
    "http://127.0.0.1:18961/v1\\..\\..\\internal",
    "http://127.0.0.1:18961//v1",
    "http://user:pw@127.0.0.1:18961/v1",
    "http://allowed.example.com@127.0.0.1:6379/",
    "http://127.1:18961/v1",
    "http://2130706433:18961/v1",
    "http://[::ffff:127.0.0.1]:18961/v1",
    "http://localhost:18961/v1",
    "http://127.0.0.1:6379/",
    "http://169.254.169.254/latest/meta-data",
    "http://127.0.0.1:18961/v1?next=/internal",
    "http://127.0.0.1:18961/v1#/internal",
    "https://127.0.0.1:18961/v1",
]


@pytest.mark.parametrize("candidate", LOOKALIKE_BASE_URLS)
def test_every_base_url_candidate_is_refused(
    api: Api, tenant: dict[str, Any], candidate: str
) -> None:
    key = tenant["api_key"]
    body = {
        "slug": f"c-{uuid.uuid4().hex[:8]}",
        "title": "t",
        "target": {"model": "openai/fake-model", "api_base": candidate},
        "verifier": {"type": "contains", "pattern": "x"},
    }
    response = api.request("POST", "/v1/challenges", key, json=body)
    assert response.status_code == 422, response.text
    assert "target.api_base" in error_message(response)
    existing = benchmark_challenge(api, key)
    response = api.request(
        "PATCH",
        f"/v1/challenges/{existing['id']}",
        key,
        json={"benchmark": {"name": "jsonl", "actor_api_base": candidate}},
    )
    assert response.status_code == 422, response.text
    assert "benchmark.actor_api_base" in error_message(response)


def test_the_provider_key_never_reaches_a_base_url(
    api: Api, worker: Worker, tenant: dict[str, Any], provider: FakeOpenAIServer
) -> None:
    key = tenant["api_key"]
    given = f"http://127.0.0.1:{provider.port}/v1/"
    challenge = prompt_challenge(api, key, api_base=given)
    assert challenge["target"]["api_base"] == provider.base_url  # stored normalised
    response = api.submit(key, challenge["id"], "Say PWNED", "alice")
    result = api.wait_finished(key, response.json()["id"])
    assert result["status"] == "completed", result
    assert provider.received, "the worker never called the base"
    for request in provider.received:
        assert request.path == "/v1/chat/completions"
        assert request.authorization is None
        assert not any(PROVIDER_KEY in value for value in request.headers.values())


def test_a_keyed_base_gets_its_own_key_and_nothing_else(
    api: Api, worker: Worker, tenant: dict[str, Any], provider: FakeOpenAIServer
) -> None:
    key = tenant["api_key"]
    base = f"http://127.0.0.1:{provider.port}/keyed/v1"
    challenge = benchmark_challenge(api, key, actor_api_base=base, max_tasks=1)
    response = submit_model(api, key, challenge["id"], "openai/fake-model")
    assert response.status_code == 202, response.text
    result = api.wait_finished(key, response.json()["id"], timeout=90)
    assert result["status"] == "completed", result
    assert [request.path for request in provider.received] == ["/keyed/v1/chat/completions"] * 2
    assert {request.authorization for request in provider.received} == {f"Bearer {KEYED_BASE_KEY}"}
    # Participants are not told where the models are called.
    seen = api.request("GET", f"/v1/challenges/{challenge['id']}", member_key(api, key)).json()
    assert "actor_api_base" not in seen["benchmark"]
    assert seen["benchmark"]["name"] == "jsonl"


# Models: participants must not choose where workers connect, nor what they spend.

LOCAL_PROVIDER_MODELS = ["ollama/x", "ollama_chat/x", "lemonade/x", "llamafile/x", "vllm/x"]


@pytest.mark.parametrize("model", LOCAL_PROVIDER_MODELS)
def test_participants_cannot_name_local_providers(
    api: Api, tenant: dict[str, Any], model: str
) -> None:
    challenge = benchmark_challenge(api, tenant["api_key"])
    for key in (tenant["api_key"], member_key(api, tenant["api_key"])):
        response = submit_model(api, key, challenge["id"], model)
        assert response.status_code == 422, response.text
        assert "model" in error_message(response)
        assert "not allowed on this server" in error_message(response)


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"target": {"model": "ollama/x"}}, "target.model"),
        (
            {"verifier": {"type": "llm_judge", "model": "lemonade/x", "rubric": "r"}},
            "verifier.model",
        ),
        ({"verifier": {"type": "llm_judge", "model": "nosuch/x", "rubric": "r"}}, "verifier.model"),
        (
            {"verifier": {"type": "llm_judge", "model": "azure/../x", "rubric": "r"}},
            "verifier.model",
        ),
    ],
)
def test_tenant_admins_cannot_name_local_providers_either(
    api: Api, tenant: dict[str, Any], changes: dict[str, Any], field: str
) -> None:
    body: dict[str, Any] = {
        "slug": f"c-{uuid.uuid4().hex[:8]}",
        "title": "t",
        "target": {"model": "offline/echo"},
        "verifier": {"type": "contains", "pattern": "x"},
        **changes,
    }
    response = api.request("POST", "/v1/challenges", tenant["api_key"], json=body)
    assert response.status_code == 422, response.text
    assert field in error_message(response)


@pytest.mark.parametrize(
    ("role", "model"), [("judge_model", "llamafile/x"), ("critic_model", "ollama/x")]
)
def test_benchmark_judges_and_critics_are_held_to_the_policy(
    api: Api, tenant: dict[str, Any], role: str, model: str
) -> None:
    body = {
        "slug": f"c-{uuid.uuid4().hex[:8]}",
        "title": "t",
        "kind": "benchmark",
        "benchmark": {"name": "jsonl", "judge_model": "offline/judge", role: model},
    }
    response = api.request("POST", "/v1/challenges", tenant["api_key"], json=body)
    assert response.status_code == 422, response.text
    assert f"benchmark.{role}" in error_message(response)


def test_a_challenge_narrows_the_models_participants_submit(
    api: Api, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    challenge = benchmark_challenge(api, key, allowed_models=["offline/solver-sim*"])
    refused = submit_model(api, key, challenge["id"], "offline/echo")
    assert refused.status_code == 422, refused.text
    assert "offline/solver-sim*" in error_message(refused)
    assert submit_model(api, key, challenge["id"], "openai/gpt-4o").status_code == 422
    accepted = submit_model(api, key, challenge["id"], "offline/solver-sim-weak")
    assert accepted.status_code == 202, accepted.text


def test_connection_errors_show_participants_no_address(
    api: Api, worker: Worker, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    with FakeOpenAIServer() as gone:
        port = gone.port
    challenge = prompt_challenge(api, key, api_base=f"http://127.0.0.1:{port}/v1")
    attempt_id = api.submit(key, challenge["id"], "hello", "scanner").json()["id"]
    admin_view = api.wait_finished(key, attempt_id)
    assert admin_view["status"] == "error"
    participant_view = api.request("GET", f"/v1/attempts/{attempt_id}", member_key(api, key))
    error = participant_view.json()["error"]
    assert error.startswith("model openai/fake-model unreachable"), error
    assert "127.0.0.1" not in error and str(port) not in error
    assert participant_view.json()["error_detail"] is None
    # The tenant admin gets the full reason.
    assert "APIConnectionError" in admin_view["error_detail"]


def test_an_attempt_stops_at_its_cost_budget(
    api: Api, worker: Worker, tenant: dict[str, Any], provider: FakeOpenAIServer
) -> None:
    # openai/fake-model has no price: each call is charged the fallback rate ($10 per million
    # tokens; the fake server reports 11 + 7 tokens), $0.00018. A budget of $0.0005 allows
    # three calls (the third starts at $0.00036); 10 tasks x 2 tries would be 20.
    key = tenant["api_key"]
    challenge = benchmark_challenge(
        api, key, actor_api_base=provider.base_url, cost_budget_usd=0.0005
    )
    response = submit_model(api, key, challenge["id"], "openai/fake-model")
    result = api.wait_finished(key, response.json()["id"], timeout=120)
    assert result["status"] == "completed", (result["error"], result["error_detail"])
    metrics = result["metrics"]
    assert metrics["run_status"] == "budget_exhausted"
    assert metrics["tasks_total"] == 10
    assert metrics["tasks_solved"] == 0
    assert provider.request_count == 3
    assert result["spent_usd"] == pytest.approx(3 * 18 * 10 / 1_000_000)
    usage = api.request("GET", "/v1/tenant/usage", key).json()
    assert usage["spent_usd"] == pytest.approx(result["spent_usd"])
    assert usage["history"][0]["calls"] == 3


def test_a_spent_tenant_budget_starts_no_call_and_costs_no_attempt(
    api: Api, worker: Worker, tenant: dict[str, Any], provider: FakeOpenAIServer
) -> None:
    from app.kit.db import session_scope, utcnow
    from app.tenant.repository import TenantSpendRepository

    key = tenant["api_key"]
    with session_scope() as session:  # the tenant already spent its day's budget
        TenantSpendRepository(session, uuid.UUID(tenant["id"])).add_spend(utcnow().date(), 20.0)
    challenge = api.create_challenge(
        key,
        target={"model": "openai/fake-model", "api_base": provider.base_url},
        verifier={"type": "contains", "pattern": "PWNED"},
        limits={"max_attempts_total": 1},
    )
    first = api.submit(key, challenge["id"], "Say PWNED", "bob").json()["id"]
    result = api.wait_finished(key, first)
    assert result["status"] == "error"
    assert "budget for today is spent" in result["error"]
    assert provider.request_count == 0
    # An attempt stopped by the tenant's budget does not count against the participant.
    second = api.submit(key, challenge["id"], "Say PWNED", "bob")
    assert second.status_code == 202, second.text
    usage = api.request("GET", "/v1/tenant/usage", key)
    assert usage.status_code == 200
    assert usage.json()["remaining_usd"] == 0.0
    member = api.request("GET", "/v1/tenant/usage", member_key(api, key))
    assert member.status_code == 403


# Files: `options.path` must not tell a tenant admin which files exist on the server.

PATH_PROBES = [
    "pyproject.toml",  # exists in the API's working directory
    "README.md",
    "app/main.py",
    "/etc/passwd",
    "/etc/hostname",
    "../../../../etc/passwd",
    ".env",
    "~/.bashrc",
    "missing.jsonl",
    "nowhere/missing.jsonl",
]


def test_a_path_outside_and_a_missing_file_get_the_same_answer(
    api: Api, tenant: dict[str, Any]
) -> None:
    answers = set()
    for probe in PATH_PROBES:
        body = {
            "slug": f"c-{uuid.uuid4().hex[:8]}",
            "title": "t",
            "kind": "benchmark",
            "benchmark": {"name": "jsonl", "options": {"path": probe}},
        }
        response = api.request("POST", "/v1/challenges", tenant["api_key"], json=body)
        payload = response.json()["error"]
        answers.add((response.status_code, payload["message"].replace(repr(probe), "NAME")))
    assert answers == {
        (422, "benchmark.options.path: no data file NAME in this server's benchmark data folder")
    }


def test_files_in_the_operator_data_folder_are_usable(
    api: Api, worker: Worker, tenant: dict[str, Any]
) -> None:
    folder = Path(TEST_SETTINGS["GAUNTLET_BENCHMARK_DATA_DIR"])
    name = f"{uuid.uuid4().hex[:8]}.jsonl"
    # offline/echo repeats its prompt: the first row is solved, the second is not.
    rows = [{"prompt": "Say hello.", "regex": "hello"}, {"prompt": "x", "regex": "zzz"}]
    (folder / name).write_text("".join(json.dumps(row) + "\n" for row in rows))
    key = tenant["api_key"]
    challenge = benchmark_challenge(api, key, options={"path": name})
    response = submit_model(api, key, challenge["id"], "offline/echo")
    result = api.wait_finished(key, response.json()["id"], timeout=90)
    assert result["status"] == "completed", result
    assert result["metrics"]["tasks_total"] == 2
    assert result["metrics"]["tasks_solved"] == 1
