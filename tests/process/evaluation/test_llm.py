"""LLMClient over both transports, against the same loopback OpenAI-compatible server.

Every behaviour a caller relies on (records, the four token fields, retries, Retry-After, error
classes, caps, cost) is checked on both paths a call can take:

- `litellm`: a provider model id (`openai/fake-model`) with no base URL; litellm's openai
  provider reads the server's address from `OPENAI_API_BASE`, so the request takes litellm's
  real HTTP path;
- `direct`: the same model id with an `api_base`, over the direct transport
  (app.evaluation.engine.direct);
- `openai-compatible`: the explicit `openai-compatible/` prefix with an `api_base`, also direct.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from app.evaluation.engine.direct import ConnectionPools
from app.evaluation.engine.llm import LLMClient, load_litellm, retry_after_seconds
from app.evaluation.engine.storable import TRUNCATION_MARK
from app.evaluation.engine.types import (
    InfrastructureError,
    Message,
    ModelSpec,
    PromptTooLong,
    RetryPolicy,
)
from app.outbound.prices import Price, bundled_prices
from app.outbound.providers import bundled_catalog
from tests.fixtures.fake_openai import Behaviour, FakeOpenAIServer

USER: list[Message] = [{"role": "user", "content": "hello there"}]
TRANSPORTS = ("litellm", "direct", "openai-compatible")


@pytest.fixture(autouse=True)
def dummy_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-dummy")


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as running:
        yield running


@dataclass(frozen=True)
class Transport:
    name: str
    server: FakeOpenAIServer

    def model(self, name: str = "fake-model") -> str:
        prefix = "openai-compatible/" if self.name == "openai-compatible" else "openai/"
        return prefix + name

    def spec(self, name: str = "fake-model", **changes: object) -> ModelSpec:
        api_base = None if self.name == "litellm" else self.server.base_url
        settings: dict[str, object] = {"api_base": api_base, "timeout_s": 5.0, **changes}
        return ModelSpec(model=self.model(name), **settings)  # type: ignore[arg-type]

    @property
    def direct(self) -> bool:
        return self.name != "litellm"


@pytest.fixture(params=TRANSPORTS)
def transport(
    request: pytest.FixtureRequest, server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> Transport:
    if request.param == "litellm":
        load_litellm()
        monkeypatch.setenv("OPENAI_API_BASE", server.base_url)
    return Transport(request.param, server)


class RecordingSleep:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


@pytest.fixture
def sleeps() -> RecordingSleep:
    return RecordingSleep()


def test_a_successful_call_records_messages_text_and_all_four_token_fields(
    transport: Transport,
) -> None:
    transport.server.enqueue(
        Behaviour.ok(
            "General Kenobi.",
            prompt_tokens=120,
            cached_tokens=100,
            completion_tokens=40,
            reasoning_tokens=25,
        )
    )
    client = LLMClient()
    spec = transport.spec(system_prompt="Be brief.", temperature=0.2, max_tokens=64)
    record = asyncio.run(client.complete(spec, USER))

    assert record.model == spec.model
    assert record.output == "General Kenobi."
    assert record.prompt == [{"role": "system", "content": "Be brief."}, *USER]
    assert (record.input_tokens, record.cached_tokens) == (120, 100)
    assert (record.thinking_tokens, record.output_tokens) == (25, 40)
    assert record.elapsed_ms >= 0
    assert client.calls_made == 1

    sent = transport.server.requests[0]
    # The server gets the name without the prefix on every path, as litellm sends it.
    assert sent["model"] == "fake-model"
    assert sent["messages"] == record.prompt
    assert sent["temperature"] == 0.2
    assert sent["max_tokens"] == 64


def test_unset_optional_arguments_are_not_sent(transport: Transport) -> None:
    asyncio.run(LLMClient().complete(transport.spec(), USER))
    sent = transport.server.requests[0]
    assert "temperature" not in sent
    assert "max_tokens" not in sent
    assert sent["messages"] == USER


def test_unknown_price_gives_no_cost_and_one_warning_per_model(
    transport: Transport, caplog: pytest.LogCaptureFixture
) -> None:
    client = LLMClient()

    async def twice() -> list[float | None]:
        first = await client.complete(transport.spec(), USER)
        second = await client.complete(transport.spec(), USER)
        return [first.cost_usd, second.cost_usd]

    with caplog.at_level(logging.WARNING, logger="app.evaluation.engine.llm"):
        assert asyncio.run(twice()) == [None, None]
    warnings = [record for record in caplog.records if record.name == "app.evaluation.engine.llm"]
    assert len(warnings) == 1
    assert transport.model() in warnings[0].getMessage()


@pytest.mark.parametrize("name", ["litellm", "direct"])
def test_a_known_model_costs_what_litellm_charges_on_both_paths(
    name: str, server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    if name == "litellm":
        load_litellm()
        monkeypatch.setenv("OPENAI_API_BASE", server.base_url)
    transport = Transport(name, server)
    server.enqueue(Behaviour.ok("x", prompt_tokens=1200, cached_tokens=1000, completion_tokens=300))
    # A prompt that can be 1,200 tokens: a usage is believed only up to what the request sent.
    long_prompt: list[Message] = [{"role": "user", "content": "word " * 1200}]
    record = asyncio.run(LLMClient().complete(transport.spec("gpt-4o-mini"), long_prompt))
    price = bundled_prices().price_of("openai/gpt-4o-mini", bundled_catalog())
    assert price is not None and price.cache_read_input_token_cost is not None
    expected = 200 * price.input_cost_per_token + 1000 * price.cache_read_input_token_cost
    expected += 300 * price.output_cost_per_token
    assert record.cost_usd == pytest.approx(expected, rel=1e-9)


def test_a_prices_override_prices_its_model_on_every_path(transport: Transport) -> None:
    transport.server.enqueue(Behaviour.ok(prompt_tokens=10, cached_tokens=4, completion_tokens=5))
    override = Price(
        input_cost_per_token=1.0, output_cost_per_token=3.0, cache_read_input_token_cost=0.5
    )
    client = LLMClient(prices={transport.model(): override})
    record = asyncio.run(client.complete(transport.spec(), USER))
    assert record.cost_usd == 6 * 1.0 + 4 * 0.5 + 5 * 3.0


# Bounded outputs, usage and prompts (app.evaluation.engine.bounds)


def test_an_answer_longer_than_max_tokens_allows_is_cut_with_a_mark(
    transport: Transport,
) -> None:
    transport.server.enqueue(Behaviour.ok("x" * 300_000, completion_tokens=16))
    record = asyncio.run(LLMClient().complete(transport.spec(max_tokens=16), USER))
    # 16 tokens: at most 1,024 characters kept (the floor), the rest named by the mark.
    assert record.output == "x" * 1024 + TRUNCATION_MARK.format(count=300_000 - 1024)
    assert record.output_truncated_chars == 300_000 - 1024
    assert record.to_dict()["output_truncated_chars"] == 300_000 - 1024
    assert record.output_tokens == 16


def test_a_31_mb_answer_to_16_tokens_is_never_kept(
    transport: Transport, sleeps: RecordingSleep
) -> None:
    transport.server.enqueue(Behaviour.ok("y" * 31_456_880))
    client = LLMClient(sleep=sleeps)
    spec = transport.spec(max_tokens=16)
    if transport.direct:
        # Not even read whole: the transport stops at the bytes 16 tokens could take.
        with pytest.raises(InfrastructureError) as caught:
            asyncio.run(client.complete(spec, USER))
        assert str(caught.value) == (
            f"model {transport.model()} answered more than the 1,048,576 bytes its max_tokens "
            "allow (not retried)"
        )
        assert transport.server.request_count == 1 and sleeps.delays == []
    else:
        # litellm reads the answer itself; what is kept is cut all the same.
        record = asyncio.run(client.complete(spec, USER))
        assert record.output == "y" * 1024 + TRUNCATION_MARK.format(count=31_456_880 - 1024)


def test_the_ceiling_caps_an_answer_when_no_max_tokens_is_set(transport: Transport) -> None:
    transport.server.enqueue(Behaviour.ok("z" * 10_000))
    record = asyncio.run(LLMClient(max_output_chars=2_000).complete(transport.spec(), USER))
    assert record.output == "z" * 2_000 + TRUNCATION_MARK.format(count=8_000)


def test_an_honest_answer_is_kept_whole(transport: Transport) -> None:
    answer = "word " * 800  # 4,000 characters in 800 tokens: max_tokens 1,000 keeps it all
    transport.server.enqueue(Behaviour.ok(answer, prompt_tokens=9, completion_tokens=800))
    record = asyncio.run(LLMClient().complete(transport.spec(max_tokens=1000), USER))
    assert record.output == answer
    assert record.output_truncated_chars == 0 and record.reported_usage is None
    assert (record.input_tokens, record.output_tokens) == (9, 800)


LYING_USAGE = Behaviour.ok(
    "PWNED",
    prompt_tokens=10**15,
    cached_tokens=0,
    completion_tokens=10**15,
    reasoning_tokens=10**15,
)


def test_a_usage_of_10_to_the_15_tokens_counts_what_the_request_could_be(
    transport: Transport,
) -> None:
    transport.server.enqueue(LYING_USAGE)
    spec = transport.spec(max_tokens=16)
    record = asyncio.run(LLMClient().complete(spec, USER))
    # The user message's 11 bytes, 16 tokens per message, 256 per request.
    assert record.input_tokens == 11 + 16 + 256
    assert record.output_tokens == 16 and record.thinking_tokens == 16
    assert record.reported_usage == {
        "input_tokens": 10**15,
        "cached_tokens": 0,
        "thinking_tokens": 10**15,
        "output_tokens": 10**15,
    }


@pytest.mark.parametrize("name", ["litellm", "direct"])
def test_a_usage_of_10_to_the_15_tokens_is_priced_as_the_request_could_cost(
    name: str, server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    if name == "litellm":
        load_litellm()
        monkeypatch.setenv("OPENAI_API_BASE", server.base_url)
    transport = Transport(name, server)
    server.enqueue(LYING_USAGE)
    record = asyncio.run(LLMClient().complete(transport.spec("gpt-4o-mini", max_tokens=16), USER))
    price = bundled_prices().price_of("openai/gpt-4o-mini", bundled_catalog())
    assert price is not None
    expected = (11 + 16 + 256) * price.input_cost_per_token + 16 * price.output_cost_per_token
    assert record.cost_usd == pytest.approx(expected, rel=1e-9)
    assert record.cost_usd is not None and record.cost_usd < 0.001


def test_without_max_tokens_the_model_s_own_output_limit_bounds_the_usage(
    server: FakeOpenAIServer,
) -> None:
    server.enqueue(LYING_USAGE)
    spec = Transport("direct", server).spec("gpt-4o-mini")
    record = asyncio.run(LLMClient().complete(spec, USER))
    assert record.output_tokens == 16_384  # gpt-4o-mini's max_output_tokens in litellm's map


def test_without_any_limit_the_answer_s_size_bounds_the_usage(transport: Transport) -> None:
    transport.server.enqueue(LYING_USAGE)
    record = asyncio.run(LLMClient().complete(transport.spec(), USER))
    assert record.output_tokens == len("PWNED") + 256


CONTEXT_REFUSAL = (
    "This model's maximum context length is 4096 tokens. However, you requested 9000 tokens "
    "(8000 in the messages, 1000 in the completion). Please reduce the length of the messages "
    "or completion."
)


def test_a_context_length_refusal_is_a_readable_reason_and_not_retried(
    transport: Transport, sleeps: RecordingSleep
) -> None:
    transport.server.enqueue(Behaviour.error(400, CONTEXT_REFUSAL))
    with pytest.raises(PromptTooLong) as caught:
        asyncio.run(LLMClient(sleep=sleeps).complete(transport.spec(), USER))
    assert str(caught.value) == (
        f"the prompt is longer than model {transport.model()} accepts (not retried)"
    )
    assert "maximum context length is 4096 tokens" in caught.value.detail
    assert transport.server.request_count == 1 and sleeps.delays == []


def test_other_bad_requests_stay_plain_failures(transport: Transport) -> None:
    transport.server.enqueue(Behaviour.error(400, "temperature must be at most 2"))
    with pytest.raises(InfrastructureError) as caught:
        asyncio.run(LLMClient().complete(transport.spec(), USER))
    assert not isinstance(caught.value, PromptTooLong)
    assert str(caught.value) == f"model {transport.model()} failed: HTTP 400 (not retried)"


@pytest.mark.parametrize("name", ["litellm", "direct"])
def test_a_prompt_clearly_over_the_model_s_limit_is_refused_before_any_call(
    name: str, server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    if name == "litellm":
        load_litellm()
        monkeypatch.setenv("OPENAI_API_BASE", server.base_url)
    spec = Transport(name, server).spec("gpt-3.5-turbo")  # 16,385 input tokens
    client = LLMClient()
    huge: list[Message] = [{"role": "user", "content": "a" * 200_000}]
    with pytest.raises(PromptTooLong) as caught:
        asyncio.run(client.complete(spec, huge))
    assert str(caught.value) == (
        "the prompt is too long for model openai/gpt-3.5-turbo: 200,000 characters, more than "
        "the 16,385 tokens it accepts (not retried)"
    )
    assert server.request_count == 0 and client.calls_made == 0
    # A prompt that may fit (4 bytes a token would make it 16,250 tokens) is sent.
    asyncio.run(client.complete(spec, [{"role": "user", "content": "a" * 65_000}]))
    assert server.request_count == 1


def test_retries_after_a_rate_limit_honouring_retry_after(
    transport: Transport, sleeps: RecordingSleep
) -> None:
    transport.server.enqueue(Behaviour.rate_limited(retry_after=7), Behaviour.ok("finally"))
    client = LLMClient(sleep=sleeps)
    record = asyncio.run(client.complete(transport.spec(), USER))
    assert record.output == "finally"
    assert transport.server.request_count == 2
    assert client.calls_made == 2
    assert sleeps.delays == [7.0]


def test_retry_after_beyond_the_cap_waits_the_cap(
    transport: Transport, sleeps: RecordingSleep
) -> None:
    transport.server.enqueue(Behaviour.rate_limited(retry_after=3600), Behaviour.ok())
    client = LLMClient(sleep=sleeps, retry=RetryPolicy(max_delay_s=2.5))
    asyncio.run(client.complete(transport.spec(), USER))
    assert sleeps.delays == [2.5]


def test_server_errors_exhaust_the_budget_with_a_clear_reason(
    transport: Transport, sleeps: RecordingSleep
) -> None:
    transport.server.default = Behaviour.server_error()
    retry = RetryPolicy(max_attempts=4, base_delay_s=0.5, max_delay_s=1.5)
    client = LLMClient(sleep=sleeps, retry=retry, rng=random.Random(7))
    model = transport.model()
    with pytest.raises(InfrastructureError) as caught:
        asyncio.run(client.complete(transport.spec(), USER))
    # Participants read the status; the tenant admin and the logs get the provider's answer.
    assert str(caught.value) == f"model {model} failed: HTTP 500 after 4 tries"
    assert caught.value.detail.startswith(f"model {model} failed after 4 tries: ")
    assert "InternalServerError" in caught.value.detail
    assert "fake server error 500" in caught.value.detail
    assert transport.server.request_count == 4
    # Full jitter: each wait lies between 0 and the capped exponential ceiling.
    ceilings = [0.5, 1.0, 1.5]
    assert len(sleeps.delays) == 3
    for delay, ceiling in zip(sleeps.delays, ceilings, strict=True):
        assert 0.0 <= delay <= ceiling


def test_a_garbage_response_is_transient(transport: Transport, sleeps: RecordingSleep) -> None:
    transport.server.enqueue(Behaviour.garbage(), Behaviour.ok("clean"))
    record = asyncio.run(LLMClient(sleep=sleeps).complete(transport.spec(), USER))
    assert record.output == "clean"
    assert transport.server.request_count == 2


def test_a_timeout_is_transient(transport: Transport, sleeps: RecordingSleep) -> None:
    transport.server.enqueue(Behaviour.slow(delay_s=3.0), Behaviour.ok("in time"))
    spec = transport.spec(timeout_s=0.3)
    record = asyncio.run(LLMClient(sleep=sleeps).complete(spec, USER))
    assert record.output == "in time"
    assert transport.server.request_count == 2


@pytest.mark.parametrize("status", [400, 401, 403, 404])
def test_client_errors_are_not_retried(
    transport: Transport, sleeps: RecordingSleep, status: int
) -> None:
    transport.server.enqueue(Behaviour.error(status))
    client = LLMClient(sleep=sleeps)
    with pytest.raises(InfrastructureError) as caught:
        asyncio.run(client.complete(transport.spec(), USER))
    assert str(caught.value) == f"model {transport.model()} failed: HTTP {status} (not retried)"
    # The detail names the error as each client library classes it, and the server's answer.
    assert f"model {transport.model()} failed (not retried): " in caught.value.detail
    assert f"fake server error {status}" in caught.value.detail
    assert transport.server.request_count == 1
    assert sleeps.delays == []


def test_a_service_unavailable_status_is_retried(
    transport: Transport, sleeps: RecordingSleep
) -> None:
    transport.server.enqueue(Behaviour.error(503), Behaviour.ok())
    asyncio.run(LLMClient(sleep=sleeps).complete(transport.spec(), USER))
    assert transport.server.request_count == 2


def test_an_unknown_provider_is_not_retried(sleeps: RecordingSleep) -> None:
    load_litellm()
    client = LLMClient(sleep=sleeps)
    with pytest.raises(InfrastructureError, match="not retried"):
        asyncio.run(client.complete(ModelSpec(model="no-such-provider/thing"), USER))
    assert sleeps.delays == []


def test_an_openai_compatible_model_without_a_base_url_is_refused_before_any_call(
    server: FakeOpenAIServer, sleeps: RecordingSleep
) -> None:
    client = LLMClient(sleep=sleeps)
    with pytest.raises(InfrastructureError) as caught:
        asyncio.run(client.complete(ModelSpec(model="openai-compatible/fake-model"), USER))
    assert str(caught.value) == "model openai-compatible/fake-model has no api_base (not retried)"
    assert client.calls_made == 0 and server.request_count == 0 and sleeps.delays == []


def test_a_provider_with_no_key_configured_is_refused_before_any_call_and_not_retried(
    server: FakeOpenAIServer, sleeps: RecordingSleep, monkeypatch: pytest.MonkeyPatch
) -> None:
    load_litellm()
    monkeypatch.setenv("OPENAI_API_BASE", server.base_url)
    monkeypatch.delenv("OPENAI_API_KEY")
    client = LLMClient(sleep=sleeps)
    with pytest.raises(InfrastructureError) as caught:
        asyncio.run(client.complete(ModelSpec(model="openai/fake-model"), USER))
    assert str(caught.value) == (
        "no API key configured for provider 'openai' (the server needs OPENAI_API_KEY) "
        "(not retried)"
    )
    assert client.calls_made == 0 and server.request_count == 0 and sleeps.delays == []

    # The same model at a base URL carries that base's credential, not a provider key.
    server.enqueue(Behaviour.ok("hello"))
    at_base = ModelSpec(model="openai/fake-model", api_base=server.base_url)
    assert asyncio.run(client.complete(at_base, USER)).output == "hello"


def test_per_model_cap_bounds_calls_in_flight(transport: Transport) -> None:
    transport.server.default = Behaviour.slow(delay_s=0.2, text="done")
    client = LLMClient(per_model_concurrency=2)

    async def six() -> None:
        await asyncio.gather(*(client.complete(transport.spec(), USER) for _ in range(6)))

    asyncio.run(six())
    assert transport.server.request_count == 6
    assert transport.server.max_in_flight == 2
    assert client.max_in_flight == 2


def test_global_cap_bounds_calls_across_models(transport: Transport) -> None:
    transport.server.default = Behaviour.slow(delay_s=0.2, text="done")
    client = LLMClient(global_concurrency=3, per_model_concurrency=10)
    specs = [transport.spec(name) for name in ("fake-a", "fake-b") for _ in range(4)]

    async def eight() -> None:
        await asyncio.gather(*(client.complete(spec, USER) for spec in specs))

    asyncio.run(eight())
    assert transport.server.request_count == 8
    assert transport.server.max_in_flight == 3


def test_the_client_survives_a_new_event_loop(transport: Transport) -> None:
    client = LLMClient(per_model_concurrency=1)
    first = asyncio.run(client.complete(transport.spec(), USER))
    second = asyncio.run(client.complete(transport.spec(), USER))
    assert first.output == second.output == "hello there"


# The direct transport's connections


def test_clients_on_one_loop_share_one_pool_per_base_url_and_reuse_its_connections(
    server: FakeOpenAIServer,
) -> None:
    pools = ConnectionPools()
    spec = ModelSpec(model="openai/fake-model", api_base=server.base_url)

    async def calls() -> int:
        for _ in range(3):  # a worker's attempts, each with an LLMClient of its own
            client = LLMClient(pools=pools)
            for _ in range(4):
                await client.complete(spec, USER)
        count = pools.count()
        await pools.aclose()
        return count

    assert asyncio.run(calls()) == 1
    assert server.request_count == 12
    assert len({received.peer_port for received in server.received}) == 1


def test_a_pool_per_base_url_and_credential(server: FakeOpenAIServer) -> None:
    pools = ConnectionPools()

    async def calls() -> int:
        client = LLMClient(pools=pools)
        for base in (server.base_url, server.base_url.replace("/v1", "/v2"), server.base_url):
            await client.complete(ModelSpec(model="openai/m", api_base=base), USER)
        count = pools.count()
        await client.aclose()  # its own pools: closed with it
        return count

    assert asyncio.run(calls()) == 2


def test_the_pool_sets_no_cap_below_the_client_s(server: FakeOpenAIServer) -> None:
    # Client libraries' pools often hold 100 connections: 120 calls in flight must all reach it.
    server.default = Behaviour.slow(delay_s=0.5, text="done")
    client = LLMClient(global_concurrency=120, per_model_concurrency=120, pools=ConnectionPools())
    spec = ModelSpec(model="openai/fake-model", api_base=server.base_url, timeout_s=20)

    async def many() -> None:
        try:
            await asyncio.gather(*(client.complete(spec, USER) for _ in range(120)))
        finally:
            await client.aclose()

    asyncio.run(many())
    assert server.max_in_flight == 120


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


def test_litellm_s_objects_are_left_out_of_garbage_collection() -> None:
    # A full collection over litellm's ~370,000 objects pauses a run or the API for ~0.2 s;
    # frozen once it is loaded, the collector never walks them again.
    load_litellm()
    assert gc.get_freeze_count() > 100_000
