"""The runner over real HTTP calls to a loopback OpenAI-compatible server: concurrency caps hold
across tasks and roles, and transient failures are retried with usage summed per role (the
runner with scripted clients is tests/unit/evaluation/test_runner.py)."""

from __future__ import annotations

import logging
import os
from typing import Any

import pytest

from tests.unit.evaluation.test_runner import config, run

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from app.evaluation.engine.benchmark import (
    AttemptView,
    Task,
    complete,
)
from app.evaluation.engine.llm import LLMClient, load_litellm
from app.evaluation.engine.types import ModelSpec, RetryPolicy, VerifierResult
from tests.fixtures.eval_benchmark import make_benchmark
from tests.fixtures.fake_openai import Behaviour, FakeOpenAIServer


def test_caps_hold_across_tasks_and_roles_on_a_real_http_server() -> None:
    """10 tasks x pass@3, each verification also calling a judge model: never more than the
    per-model cap for the actor, nor more than the global cap in all."""
    os.environ.setdefault("OPENAI_API_KEY", "sk-test-dummy")
    load_litellm()
    with FakeOpenAIServer(default=Behaviour.slow(0.03, text="no idea")) as server:
        actor = ModelSpec("openai/fake-model", api_base=server.base_url, timeout_s=10)
        judge = ModelSpec("openai/fake-judge", api_base=server.base_url, timeout_s=10)

        async def verify(task: Task, attempt: AttemptView, *, judge_model: str | None) -> Any:
            assert judge_model == judge.model
            record = await complete(judge_model, [{"role": "user", "content": "grade"}])
            return VerifierResult(success=False, score=0.0, raw_eval_output=record.output)

        client = LLMClient(global_concurrency=4, per_model_concurrency=3)
        result = run(
            make_benchmark(count=10, verify=verify, verifier="llm"),
            config(metric="pass@k", k=3, judge=judge, actor=actor),
            client,
        )
        assert result.summary["calls"] == 60
        assert server.request_count == 60
        assert client.max_in_flight == server.max_in_flight == 4
        assert result.summary["usage"]["judge"]["openai/fake-judge"]["calls"] == 30


def test_per_model_cap_limits_one_model_below_the_global_cap() -> None:
    os.environ.setdefault("OPENAI_API_KEY", "sk-test-dummy")
    load_litellm()
    with FakeOpenAIServer(default=Behaviour.slow(0.03, text="no idea")) as server:
        actor = ModelSpec("openai/fake-model", api_base=server.base_url, timeout_s=10)
        client = LLMClient(global_concurrency=8, per_model_concurrency=3)
        run(make_benchmark(count=8), config(metric="pass@k", k=2, actor=actor), client)
        assert server.max_in_flight == 3


def test_transient_failures_are_retried_and_usage_summed_per_role(
    caplog: pytest.LogCaptureFixture,
) -> None:
    os.environ.setdefault("OPENAI_API_KEY", "sk-test-dummy")
    load_litellm()
    with FakeOpenAIServer(default=Behaviour.ok(text="no idea")) as server:
        server.enqueue(Behaviour.rate_limited(retry_after=0), Behaviour.server_error())
        actor = ModelSpec("openai/fake-model", api_base=server.base_url, timeout_s=10)
        sleeps: list[float] = []

        async def no_sleep(delay: float) -> None:
            sleeps.append(delay)

        client = LLMClient(retry=RetryPolicy(max_attempts=3, base_delay_s=0.01), sleep=no_sleep)
        with caplog.at_level(logging.WARNING, logger="app.evaluation.engine.llm"):
            result = run(make_benchmark(count=2), config(metric="pass@k", k=2, actor=actor), client)
        assert result.status == "complete"
        assert server.request_count == 6
        assert len(sleeps) == 2
        usage = result.summary["usage"]["actor"]["openai/fake-model"]
        # The fake server's usage: 11 prompt (3 cached), 7 completion (2 reasoning) per call.
        assert usage["calls"] == 4
        assert (usage["input_tokens"], usage["cached_tokens"]) == (44, 12)
        assert (usage["output_tokens"], usage["thinking_tokens"]) == (28, 8)
        # litellm has no price for the fake model: null, one warning, named in the summary.
        assert usage["cost_usd"] is None and result.summary["cost_usd"] is None
        assert result.summary["unpriced_models"] == ["openai/fake-model"]
        warnings = [r for r in caplog.records if "no price known" in r.getMessage()]
        assert len(warnings) == 1
