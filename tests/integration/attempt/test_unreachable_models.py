"""A model no worker could call (its provider's key is not configured) is refused when the
challenge is saved, naming the field; one whose key went away after saving ends its attempt in
error at once, saying why."""

from __future__ import annotations

import socket
import uuid
from typing import Any

import pytest

from tests.conftest import Api, Worker
from tests.integration.red_blue.test_redblue import red_blue_body

pytestmark = pytest.mark.integration

KEYLESS = "anthropic/claude-3-5-haiku-latest"
JUDGE = {"type": "llm_judge", "model": KEYLESS, "rubric": "Did it comply?"}
BENCHMARK = {
    "kind": "benchmark",
    "benchmark": {"name": "jsonl", "options": {"path": "example.jsonl"}},
    "evaluation": {"metric": "pass@k", "k": 1},
    "scoring": {"strategy": "metric_at_k"},
}


def prompt_body(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "slug": f"p-{uuid.uuid4().hex[:10]}",
        "title": "T",
        "target": {"model": "offline/echo"},
        "verifier": {"type": "contains", "pattern": "PWNED"},
    }
    body.update(overrides)
    return body


def benchmark_body(**spec: Any) -> dict[str, Any]:
    body = {**BENCHMARK, "slug": f"b-{uuid.uuid4().hex[:10]}", "title": "B"}
    body["benchmark"] = {**BENCHMARK["benchmark"], **spec}  # type: ignore[dict-item]
    return body


def red_blue_with_judge(where: str) -> dict[str, Any]:
    body = red_blue_body()
    if where == "category":
        body["judge_suite"]["categories"][1]["verifier"] = JUDGE
    else:
        body["self_test"]["verifier"] = JUDGE
    return body


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (prompt_body(target={"model": KEYLESS}), "target.model"),
        (prompt_body(verifier=JUDGE), "verifier.model"),
        (red_blue_body(target={"model": KEYLESS}), "target.model"),
        (red_blue_with_judge("category"), "judge_suite.categories.1.verifier.model"),
        (red_blue_with_judge("self_test"), "self_test.verifier.model"),
        (benchmark_body(judge_model=KEYLESS), "benchmark.judge_model"),
        (benchmark_body(critic_model=KEYLESS), "benchmark.critic_model"),
        (
            benchmark_body(allowed_models=["offline/*", "anthropic/claude-*"]),
            "benchmark.allowed_models.1",
        ),
    ],
)
def test_a_model_whose_provider_has_no_key_is_refused_when_saved_naming_its_field(
    api: Api,
    tenant: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    body: dict[str, Any],
    field: str,
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    response = api.request("POST", "/v1/challenges", tenant["api_key"], json=body)
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "validation_error", error
    assert error["message"].startswith(f"{field}: no API key configured for provider 'anthropic'")
    assert "ANTHROPIC_API_KEY" in error["message"]

    # The same body is accepted once the server has the key: the key was the one problem.
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    accepted = api.request("POST", "/v1/challenges", tenant["api_key"], json=body)
    assert accepted.status_code == 201, accepted.text


class FlakyResolver:
    """The system resolver as the API process sees it, for allowed.example.com (an allowed
    base in the test settings): failing as told, else answering a public address; every
    other name goes to the real resolver (the test's own connections)."""

    def __init__(self) -> None:
        self.failure: socket.gaierror | None = None
        self.real = socket.getaddrinfo

    def __call__(self, host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host != "allowed.example.com":
            return self.real(host, port, *args, **kwargs)
        if self.failure is not None:
            raise self.failure
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.216.34", port))]


def test_a_base_url_the_resolver_cannot_check_now_is_a_503_to_retry_and_saves_nothing(
    api: Api, tenant: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    resolver = FlakyResolver()
    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    body = prompt_body(
        target={"model": "openai/fake-model", "api_base": "http://allowed.example.com/v1"}
    )

    resolver.failure = socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
    response = api.request("POST", "/v1/challenges", tenant["api_key"], json=body)
    assert response.status_code == 503, response.text
    assert response.headers["Retry-After"] == "10"
    error = response.json()["error"]
    assert error["code"] == "unavailable"
    assert error["message"].startswith(
        "target.api_base: allowed.example.com cannot be resolved now"
    )
    assert error["details"][0]["loc"] == ["body", "target", "api_base"]
    listed = api.request("GET", "/v1/challenges", tenant["api_key"]).json()["items"]
    assert body["slug"] not in [challenge["slug"] for challenge in listed]

    # A name that does not exist is the organizer's to fix: a 422 naming the field.
    resolver.failure = socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    response = api.request("POST", "/v1/challenges", tenant["api_key"], json=body)
    assert response.status_code == 422, response.text
    assert response.json()["error"]["message"].startswith(
        "target.api_base: allowed.example.com cannot be resolved:"
    )

    # The same request, sent again once the resolver answers, is saved.
    resolver.failure = None
    accepted = api.request("POST", "/v1/challenges", tenant["api_key"], json=body)
    assert accepted.status_code == 201, accepted.text
    assert accepted.json()["target"]["api_base"] == "http://allowed.example.com/v1"


def test_models_that_need_no_provider_key_are_accepted(
    api: Api, tenant: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    key = tenant["api_key"]
    # Offline models, a server reached by base URL (its own credential), globs naming no
    # provider outright.
    for body in (
        prompt_body(target={"model": "anthropic/x", "api_base": "http://127.0.0.1:9/v1"}),
        prompt_body(target={"model": "openai-compatible/x", "api_base": "http://127.0.0.1:9/v1"}),
        benchmark_body(allowed_models=["*", "anthropic*"]),
    ):
        response = api.request("POST", "/v1/challenges", key, json=body)
        assert response.status_code == 201, response.text


def test_an_edit_naming_a_keyless_model_is_refused_and_changes_nothing(
    api: Api, tenant: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    key = tenant["api_key"]
    created = api.request("POST", "/v1/challenges", key, json=prompt_body()).json()
    response = api.request(
        "PATCH", f"/v1/challenges/{created['id']}", key, json={"target": {"model": KEYLESS}}
    )
    assert response.status_code == 422, response.text
    assert response.json()["error"]["message"].startswith("target.model: no API key")
    stored = api.request("GET", f"/v1/challenges/{created['id']}", key).json()
    assert stored["target"]["model"] == "offline/echo"


def test_a_challenge_whose_key_went_away_can_still_be_edited_but_not_given_a_new_keyless_model(
    api: Api, tenant: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    key = tenant["api_key"]
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    created = api.request(
        "POST", "/v1/challenges", key, json=prompt_body(target={"model": KEYLESS})
    )
    assert created.status_code == 201, created.text
    path = f"/v1/challenges/{created.json()['id']}"
    monkeypatch.delenv("ANTHROPIC_API_KEY")

    # Closing it, or fixing its title, does not depend on a model it already had.
    edited = api.request("PATCH", path, key, json={"title": "Closed for now", "closes_at": None})
    assert edited.status_code == 200, edited.text
    assert edited.json()["title"] == "Closed for now"
    # A model it did not have is asked about.
    judged = api.request("PATCH", path, key, json={"verifier": JUDGE})
    assert judged.status_code == 422, judged.text
    assert judged.json()["error"]["message"].startswith("verifier.model: no API key configured")


def test_a_benchmark_refuses_a_submitted_model_whose_provider_has_no_key(
    api: Api, tenant: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    key = tenant["api_key"]
    challenge = api.request("POST", "/v1/challenges", key, json=benchmark_body()).json()
    response = api.request(
        "POST",
        f"/v1/challenges/{challenge['id']}/attempts",
        key,
        json={"model": KEYLESS, "participant": "ada"},
    )
    assert response.status_code == 422, response.text
    assert response.json()["error"]["message"].startswith("model: no API key configured")


def test_an_attempt_whose_provider_key_went_away_ends_in_error_at_once_saying_why(
    api: Api, worker: Worker, tenant: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The API has the key when the challenge is saved; the worker, started without it, is a
    # server whose key was removed afterwards.
    assert not worker.env.get("ANTHROPIC_API_KEY")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    key = tenant["api_key"]
    challenge = api.create_challenge(key, target={"model": KEYLESS})
    submitted = api.submit(key, challenge["id"], "say PWNED", "ada")
    assert submitted.status_code == 202, submitted.text
    attempt = api.wait_finished(key, submitted.json()["id"])
    assert attempt["status"] == "error"
    assert "no API key configured for provider 'anthropic'" in attempt["error"]
    assert "not retried" in attempt["error"]
    assert "HTTP" not in attempt["error"]
