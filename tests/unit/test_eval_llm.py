from __future__ import annotations

import asyncio
import gc
import logging
import os
import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from app.evaluation.llm import LLMClient, is_transient, load_litellm, retry_after_seconds
from app.evaluation.types import InfrastructureError, Message, ModelSpec, RetryPolicy
from tests.fixtures.fake_openai import Behaviour, FakeOpenAIServer

MODEL = "openai/fake-model"
USER: list[Message] = [{"role": "user", "content": "hello there"}]


@pytest.fixture(autouse=True)
def dummy_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-dummy")
    load_litellm()


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as running:
        yield running


class RecordingSleep:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


@pytest.fixture
def sleeps() -> RecordingSleep:
    return RecordingSleep()


def spec_for(server: FakeOpenAIServer, **changes: object) -> ModelSpec:
    return ModelSpec(model=MODEL, api_base=server.base_url, timeout_s=5.0, **changes)  # type: ignore[arg-type]


def test_a_successful_call_records_messages_text_and_all_four_token_fields(
    server: FakeOpenAIServer,
) -> None:
    server.enqueue(
        Behaviour.ok(
            "General Kenobi.",
            prompt_tokens=120,
            cached_tokens=100,
            completion_tokens=40,
            reasoning_tokens=25,
        )
    )
    client = LLMClient()
    spec = spec_for(server, system_prompt="Be brief.", temperature=0.2, max_tokens=64)
    record = asyncio.run(client.complete(spec, USER))

    assert record.model == MODEL
    assert record.output == "General Kenobi."
    assert record.prompt == [{"role": "system", "content": "Be brief."}, *USER]
    assert (record.input_tokens, record.cached_tokens) == (120, 100)
    assert (record.thinking_tokens, record.output_tokens) == (25, 40)
    assert record.elapsed_ms >= 0
    assert client.calls_made == 1

    sent = server.requests[0]
    assert sent["messages"] == record.prompt
    assert sent["temperature"] == 0.2
    assert sent["max_tokens"] == 64


def test_unset_optional_arguments_are_not_sent(server: FakeOpenAIServer) -> None:
    asyncio.run(LLMClient().complete(spec_for(server), USER))
    sent = server.requests[0]
    assert "temperature" not in sent
    assert "max_tokens" not in sent
    assert sent["messages"] == USER


def test_unknown_price_gives_no_cost_and_one_warning_per_model(
    server: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    client = LLMClient()

    async def twice() -> None:
        await client.complete(spec_for(server), USER)
        await client.complete(spec_for(server), USER)

    with caplog.at_level(logging.WARNING, logger="app.evaluation.llm"):
        asyncio.run(twice())
    warnings = [record for record in caplog.records if record.name == "app.evaluation.llm"]
    assert len(warnings) == 1
    assert MODEL in warnings[0].getMessage()


def test_retries_after_a_rate_limit_honouring_retry_after(
    server: FakeOpenAIServer, sleeps: RecordingSleep
) -> None:
    server.enqueue(Behaviour.rate_limited(retry_after=7), Behaviour.ok("finally"))
    client = LLMClient(sleep=sleeps)
    record = asyncio.run(client.complete(spec_for(server), USER))
    assert record.output == "finally"
    assert server.request_count == 2
    assert client.calls_made == 2
    assert sleeps.delays == [7.0]


def test_retry_after_beyond_the_cap_waits_the_cap(
    server: FakeOpenAIServer, sleeps: RecordingSleep
) -> None:
    server.enqueue(Behaviour.rate_limited(retry_after=3600), Behaviour.ok())
    client = LLMClient(sleep=sleeps, retry=RetryPolicy(max_delay_s=2.5))
    asyncio.run(client.complete(spec_for(server), USER))
    assert sleeps.delays == [2.5]


def test_server_errors_exhaust_the_budget_with_a_clear_reason(
    server: FakeOpenAIServer, sleeps: RecordingSleep
) -> None:
    server.default = Behaviour.server_error()
    retry = RetryPolicy(max_attempts=4, base_delay_s=0.5, max_delay_s=1.5)
    client = LLMClient(sleep=sleeps, retry=retry, rng=random.Random(7))
    with pytest.raises(InfrastructureError) as caught:
        asyncio.run(client.complete(spec_for(server), USER))
    # Participants read the status; the tenant admin and the logs get the provider's answer.
    assert str(caught.value) == f"model {MODEL} failed: HTTP 500 after 4 tries"
    assert caught.value.detail.startswith(
        f"model {MODEL} failed after 4 tries: InternalServerError: Error code: 500"
    )
    assert server.request_count == 4
    # Full jitter: each wait lies between 0 and the capped exponential ceiling.
    ceilings = [0.5, 1.0, 1.5]
    assert len(sleeps.delays) == 3
    for delay, ceiling in zip(sleeps.delays, ceilings, strict=True):
        assert 0.0 <= delay <= ceiling


def test_a_garbage_response_is_transient(server: FakeOpenAIServer, sleeps: RecordingSleep) -> None:
    server.enqueue(Behaviour.garbage(), Behaviour.ok("clean"))
    record = asyncio.run(LLMClient(sleep=sleeps).complete(spec_for(server), USER))
    assert record.output == "clean"
    assert server.request_count == 2


def test_a_timeout_is_transient(server: FakeOpenAIServer, sleeps: RecordingSleep) -> None:
    server.enqueue(Behaviour.slow(delay_s=3.0), Behaviour.ok("in time"))
    spec = ModelSpec(model=MODEL, api_base=server.base_url, timeout_s=0.3)
    record = asyncio.run(LLMClient(sleep=sleeps).complete(spec, USER))
    assert record.output == "in time"
    assert server.request_count == 2


@pytest.mark.parametrize(
    ("status", "error_name"),
    [
        (400, "BadRequestError"),
        (401, "AuthenticationError"),
        (403, "PermissionDeniedError"),
        (404, "NotFoundError"),
    ],
)
def test_client_errors_are_not_retried(
    server: FakeOpenAIServer, sleeps: RecordingSleep, status: int, error_name: str
) -> None:
    server.enqueue(Behaviour.error(status))
    client = LLMClient(sleep=sleeps)
    with pytest.raises(InfrastructureError) as caught:
        asyncio.run(client.complete(spec_for(server), USER))
    assert str(caught.value) == f"model {MODEL} failed: HTTP {status} (not retried)"
    assert f"not retried): {error_name}" in caught.value.detail
    assert server.request_count == 1
    assert sleeps.delays == []


def test_a_service_unavailable_status_is_retried(
    server: FakeOpenAIServer, sleeps: RecordingSleep
) -> None:
    server.enqueue(Behaviour.error(503), Behaviour.ok())
    asyncio.run(LLMClient(sleep=sleeps).complete(spec_for(server), USER))
    assert server.request_count == 2


def test_an_unknown_provider_is_not_retried(sleeps: RecordingSleep) -> None:
    client = LLMClient(sleep=sleeps)
    with pytest.raises(InfrastructureError, match="not retried"):
        asyncio.run(client.complete(ModelSpec(model="no-such-provider/thing"), USER))
    assert sleeps.delays == []


def test_per_model_cap_bounds_calls_in_flight(server: FakeOpenAIServer) -> None:
    server.default = Behaviour.slow(delay_s=0.2, text="done")
    client = LLMClient(per_model_concurrency=2)

    async def six() -> None:
        await asyncio.gather(*(client.complete(spec_for(server), USER) for _ in range(6)))

    asyncio.run(six())
    assert server.request_count == 6
    assert server.max_in_flight == 2
    assert client.max_in_flight == 2


def test_global_cap_bounds_calls_across_models(server: FakeOpenAIServer) -> None:
    server.default = Behaviour.slow(delay_s=0.2, text="done")
    client = LLMClient(global_concurrency=3, per_model_concurrency=10)
    specs = [
        ModelSpec(model=model, api_base=server.base_url)
        for model in ("openai/fake-a", "openai/fake-b")
        for _ in range(4)
    ]

    async def eight() -> None:
        await asyncio.gather(*(client.complete(spec, USER) for spec in specs))

    asyncio.run(eight())
    assert server.request_count == 8
    assert server.max_in_flight == 3


def test_the_client_survives_a_new_event_loop(server: FakeOpenAIServer) -> None:
    client = LLMClient(per_model_concurrency=1)
    first = asyncio.run(client.complete(spec_for(server), USER))
    second = asyncio.run(client.complete(spec_for(server), USER))
    assert first.output == second.output == "hello there"


def test_invalid_caps_are_rejected() -> None:
    with pytest.raises(ValueError):
        LLMClient(global_concurrency=0)
    with pytest.raises(ValueError):
        LLMClient(retry=RetryPolicy(max_attempts=0))


# Retry-After parsing and error classes


def _error_with_headers(headers: dict[str, str]) -> Exception:
    litellm = load_litellm()
    response = httpx.Response(
        429, headers=headers, request=httpx.Request("POST", "http://127.0.0.1/v1")
    )
    error: Exception = litellm.RateLimitError(
        "slow down", llm_provider="openai", model="m", response=response
    )
    return error


def test_retry_after_reads_seconds_milliseconds_and_http_dates() -> None:
    now = datetime(2025, 1, 1, tzinfo=UTC)
    assert retry_after_seconds(_error_with_headers({"Retry-After": "2.5"})) == 2.5
    assert retry_after_seconds(_error_with_headers({"retry-after-ms": "1500"})) == 1.5
    date = format_datetime(now + timedelta(seconds=30), usegmt=True)
    assert retry_after_seconds(_error_with_headers({"Retry-After": date}), now=now) == 30.0
    assert retry_after_seconds(_error_with_headers({"Retry-After": "soon"})) is None
    assert retry_after_seconds(_error_with_headers({})) is None
    assert retry_after_seconds(ValueError("no headers at all")) is None


def test_plain_errors_are_classified() -> None:
    assert is_transient(TimeoutError())
    assert is_transient(ConnectionResetError())
    assert not is_transient(ValueError("bug"))


def test_litellm_s_objects_are_left_out_of_garbage_collection() -> None:
    # A full collection over litellm's ~370,000 objects pauses a run or the API for ~0.2 s;
    # frozen once it is loaded, the collector never walks them again.
    load_litellm()
    assert gc.get_freeze_count() > 100_000
