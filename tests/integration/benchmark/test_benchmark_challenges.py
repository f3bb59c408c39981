"""Benchmark challenges in the service: a model spec is run by the engine on a real worker,
with the database as the store, and ranked by its curve at k."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.conftest import Api, Worker
from tests.fixtures.fake_openai import Behaviour, FakeOpenAIServer

pytestmark = pytest.mark.integration


def benchmark_challenge(api: Api, key: str, **overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "benchmark",
        "target": None,
        "verifier": None,
        "benchmark": {
            "name": "jsonl",
            "options": {"path": "example.jsonl"},
            "judge_model": "offline/judge",
        },
        "evaluation": {"metric": "pass@k", "k": 2},
        "scoring": {"strategy": "metric_at_k"},
    }
    body.update(overrides)
    return api.create_challenge(key, **body)


def test_benchmark_attempts_run_and_rank_by_the_curve(
    api: Api, worker: Worker, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    challenge = benchmark_challenge(api, key)
    assert challenge["benchmark"]["name"] == "jsonl"
    response = api.request(
        "POST",
        f"/v1/challenges/{challenge['id']}/attempts",
        key,
        json={"model": "offline/echo", "temperature": 0.2, "participant": "echo-team"},
    )
    assert response.status_code == 202, response.text
    result = api.wait_finished(key, response.json()["id"], timeout=120)
    assert result["status"] == "completed", result
    metrics = result["metrics"]
    assert metrics["tasks_total"] == 10
    assert len(metrics["metric_at"]) == 2
    assert 0 < metrics["metric_at_k"] < 1
    assert metrics["metric_at_k"] == metrics["metric_at"][1]
    assert result["score"] == metrics["metric_at_k"]
    assert result["progress"]["curves"]["metric"] == "pass@k"
    assert result["trials"] is None
    trials = api.request("GET", f"/v1/attempts/{result['id']}/trials?limit=500", key).json()
    assert trials["total"] == 20  # 10 tasks, k = 2, pass@k never stops early
    assert {t["task_index"] for t in trials["items"]} == set(range(1, 11))
    one_task = api.request("GET", f"/v1/attempts/{result['id']}/trials?task_index=3", key).json()
    assert [t["index"] for t in one_task["items"]] == [1, 2]
    board = api.request("GET", f"/v1/challenges/{challenge['id']}/leaderboard", key).json()
    assert board["items"][0]["participant"] == "echo-team"
    assert board["items"][0]["score"] == pytest.approx(metrics["metric_at_k"])


def test_benchmark_attempt_validation(api: Api, tenant: dict[str, Any]) -> None:
    key = tenant["api_key"]
    challenge = benchmark_challenge(api, key)
    path = f"/v1/challenges/{challenge['id']}/attempts"
    cases = [
        ({"prompt": "hi", "participant": "a"}, "model"),
        ({"model": "offline/echo", "prompt": "hi", "participant": "a"}, "prompt"),
        ({"model": "nosuch/thing", "participant": "a"}, "model"),
        # The challenge names no actor_api_base: such a model could never be called.
        ({"model": "openai-compatible/llama", "participant": "a"}, "actor_api_base"),
        ({"model": "offline/echo", "temperature": 9, "participant": "a"}, "temperature"),
    ]
    for body, field in cases:
        response = api.request("POST", path, key, json=body)
        assert response.status_code == 422, (body, response.text)
        assert field in response.json()["error"]["message"]
    prompt_challenge = api.create_challenge(key)
    response = api.request(
        "POST",
        f"/v1/challenges/{prompt_challenge['id']}/attempts",
        key,
        json={"prompt": "PWNED", "model": "offline/echo", "participant": "a"},
    )
    assert response.status_code == 422 and "model" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    ("benchmark", "field"),
    [
        ({"name": "no_such_benchmark"}, "benchmark.name"),
        ({"name": "jsonl", "options": {"path": "/etc/passwd"}}, "benchmark.options.path"),
        ({"name": "jsonl", "options": {"path": "../secrets.jsonl"}}, "benchmark.options.path"),
        ({"name": "jsonl", "options": {"path": "missing.jsonl"}}, "benchmark.options"),
        ({"name": "jsonl", "judge_model": "nosuch/judge"}, "benchmark.judge_model"),
        ({"name": "jsonl", "judge_model": "openai-compatible/j"}, "benchmark.judge_model"),
        ({"name": "jsonl", "critic_model": "openai-compatible/c"}, "benchmark.critic_model"),
    ],
)
def test_benchmark_challenge_validation(
    api: Api, tenant: dict[str, Any], benchmark: dict[str, Any], field: str
) -> None:
    response = api.request(
        "POST",
        "/v1/challenges",
        tenant["api_key"],
        json={"slug": "bench-x", "title": "B", "kind": "benchmark", "benchmark": benchmark},
    )
    assert response.status_code == 422, response.text
    assert field in response.json()["error"]["message"]


def test_kind_rules(api: Api, tenant: dict[str, Any]) -> None:
    key = tenant["api_key"]
    base = {"slug": "kinds", "title": "K"}
    bad = [
        {
            **base,
            "kind": "benchmark",
            "benchmark": {"name": "jsonl"},
            "target": {"model": "offline/echo"},
        },
        {
            **base,
            "kind": "benchmark",
            "benchmark": {"name": "jsonl"},
            "scoring": {"strategy": "fewest_tokens"},
        },
        {
            **base,
            "kind": "prompt",
            "target": {"model": "offline/echo"},
            "verifier": {"type": "contains", "pattern": "x"},
            "scoring": {"strategy": "metric_at_k"},
        },
        {**base, "kind": "prompt", "target": {"model": "offline/echo"}},
    ]
    for body in bad:
        response = api.request("POST", "/v1/challenges", key, json=body)
        assert response.status_code == 422, body


def test_killed_benchmark_run_resumes_without_repeating_finished_calls(
    api: Api, worker: Worker, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    with FakeOpenAIServer(default=Behaviour.ok("PWNED")) as provider:
        # The model is reached through the provider's OpenAI-compatible route: the benchmark's
        # judge stays offline, only the actor is slow.
        challenge = benchmark_challenge(
            api,
            key,
            evaluation={"metric": "pass@k", "k": 1},
            benchmark={
                "name": "jsonl",
                "options": {"path": "example.jsonl"},
                "judge_model": "offline/judge",
                "task_indices": [1, 2, 3, 4],
                "actor_api_base": provider.base_url,
            },
        )
        provider.enqueue(Behaviour.ok("a"), Behaviour.ok("b"), Behaviour.slow(30, "c"))
        attempt = api.request(
            "POST",
            f"/v1/challenges/{challenge['id']}/attempts",
            key,
            json={"model": "openai/fake-model", "participant": "fake"},
        )
        assert attempt.status_code == 202, attempt.text
        attempt_id = attempt.json()["id"]
        # Tasks run concurrently: wait until the three fast ones are stored, the slow one hangs.
        deadline = time.monotonic() + 30
        trials_path = f"/v1/attempts/{attempt_id}/trials"
        while api.request("GET", trials_path, key).json()["total"] < 3:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert provider.request_count == 4
        worker.kill()
        worker.start()
        result = api.wait_finished(key, attempt_id, timeout=90)
        assert result["status"] == "completed", result
        trials = api.request("GET", f"/v1/attempts/{attempt_id}/trials", key).json()
        assert trials["total"] == 4
        # 4 tasks; only the call cut off by the kill was made again.
        assert provider.request_count == 5
