"""Cost budgets on real calls to a loopback OpenAI-compatible server: every try checked, every
answer charged, no call or retry once the budget is spent, a lying usage charged only what the
request could cost (the budgets' arithmetic is tests/unit/evaluation/test_budget.py)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.unit.evaluation.test_budget import CountingBudget, Unread

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from app.evaluation.engine.llm import LLMClient
from app.evaluation.engine.types import (
    CallRecord,
    CostBudgetExhausted,
    Message,
    ModelSpec,
    RetryPolicy,
)
from app.kit.lease.budget import CostBudget
from app.outbound.policy import OutboundPolicy, parse_allowed_bases
from tests.fixtures.fake_openai import Behaviour, FakeOpenAIServer

USER: list[Message] = [{"role": "user", "content": "hello"}]


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as running:
        yield running


def client_for(budget: CountingBudget, **options: Any) -> LLMClient:
    bases = parse_allowed_bases(["http://127.0.0.1:*/v1"])
    return LLMClient(
        outbound=OutboundPolicy(bases=bases), budget=budget, sleep=_no_sleep, **options
    )


def test_every_try_is_checked_and_every_answer_charged(server: FakeOpenAIServer) -> None:
    server.enqueue(Behaviour.rate_limited(), Behaviour.ok("paid"))
    budget = CountingBudget(calls=10)
    spec = ModelSpec("openai/fake-model", api_base=server.base_url)
    record = asyncio.run(client_for(budget).complete(spec, USER))
    assert record.output == "paid"
    assert budget.checks == 2  # the retry was checked again
    assert budget.released == 1  # the rate-limited try: nothing to charge
    assert budget.charged == [record]


def test_no_call_starts_once_the_budget_is_spent(server: FakeOpenAIServer) -> None:
    budget = CountingBudget(calls=1)
    spec = ModelSpec("openai/fake-model", api_base=server.base_url)
    client = client_for(budget)

    async def twice() -> None:
        await client.complete(spec, USER)
        await client.complete(spec, USER)

    with pytest.raises(CostBudgetExhausted) as caught:
        asyncio.run(twice())
    assert caught.value.scope == "attempt"
    assert server.request_count == 1


def test_a_retry_is_not_started_once_the_budget_is_spent(server: FakeOpenAIServer) -> None:
    server.enqueue(Behaviour.server_error())
    budget = CountingBudget(calls=0)
    budget.allowed = 1  # the first try is allowed; its failure is not charged...
    spec = ModelSpec("openai/fake-model", api_base=server.base_url)
    budget.charged.append(  # ...but something else spent the budget meanwhile
        CallRecord(model="x", prompt=[], output="")
    )
    with pytest.raises(CostBudgetExhausted):
        asyncio.run(client_for(budget, retry=RetryPolicy(max_attempts=3)).complete(spec, USER))
    assert server.request_count == 0


def test_a_lying_usage_is_charged_only_what_the_request_could_cost(
    server: FakeOpenAIServer,
) -> None:
    """A server claiming 10^15 tokens for a 16-token answer: the unpriced charge counts the
    tokens the request could be (its bytes and overheads, max_tokens), not the claim."""
    server.enqueue(
        Behaviour.ok("PWNED", prompt_tokens=10**15, completion_tokens=10**15, reasoning_tokens=0)
    )
    budget = CountingBudget(calls=10)
    spec = ModelSpec("openai/fake-model", api_base=server.base_url, max_tokens=16)
    record = asyncio.run(client_for(budget).complete(spec, USER))
    assert budget.charged == [record]
    charge = CostBudget(
        own=Unread(),
        tenant_day=Unread(),
        attempt_budget_usd=1.0,
        tenant_daily_budget_usd=20.0,
        unpriced_usd_per_million_tokens=10.0,
    ).charge_for(record)
    # "hello" (5 bytes) + 16 + 256 input tokens, 16 output tokens, at $10 per million.
    assert charge == pytest.approx((5 + 16 + 256 + 16) * 10 / 1_000_000)


async def _no_sleep(_: float) -> None:
    return None
