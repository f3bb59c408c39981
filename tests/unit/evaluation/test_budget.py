"""Cost budgets in the engine: checked before every try, charged after every answer, and what a
run does when one is spent (the service's database-backed budget is tested through HTTP in
tests/security/test_outbound.py)."""

from __future__ import annotations

import asyncio
import os
import random
import time
from typing import Any, Literal

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from app.evaluation.engine.runner import MemoryRunStore, RunConfig, run_benchmark
from app.evaluation.engine.types import (
    CallRecord,
    CostBudgetExhausted,
    InfrastructureError,
    Message,
    ModelSpec,
)
from app.kit.lease.budget import CostBudget, format_usd
from tests.fixtures.eval_benchmark import ScriptedClient, make_benchmark


class CountingBudget:
    """A CallBudget that allows `calls` calls, then refuses with `scope`."""

    def __init__(self, calls: int, scope: Literal["attempt", "tenant"] = "attempt") -> None:
        self.allowed = calls
        self.scope = scope
        self.checks = 0
        self.released = 0
        self.charged: list[CallRecord] = []

    async def before_call(self, spec: ModelSpec) -> None:
        self.checks += 1
        if len(self.charged) >= self.allowed:
            raise CostBudgetExhausted(f"{self.scope} budget spent", scope=self.scope)

    async def after_call(self, spec: ModelSpec, record: CallRecord) -> None:
        self.charged.append(record)

    def release(self, spec: ModelSpec) -> None:
        self.released += 1


class BudgetedScriptedClient(ScriptedClient):
    def __init__(self, budget: CountingBudget) -> None:
        super().__init__(lambda spec, messages: "no idea")
        self.budget = budget

    async def complete(self, spec: ModelSpec, messages: list[Message]) -> CallRecord:
        await self.budget.before_call(spec)
        record = await super().complete(spec, messages)
        await self.budget.after_call(spec, record)
        return record


def run_config(**changes: Any) -> RunConfig:
    values: dict[str, Any] = {
        "benchmark": "memory_bench",
        "metric": "pass@k",
        "k": 2,
        "feedback_mode": "raw",
        "actor": ModelSpec(model="fake/actor"),
        "tasks_in_flight": 1,
    }
    values.update(changes)
    return RunConfig(**values)


def test_an_attempt_budget_ends_the_run_with_the_tasks_left_unsolved() -> None:
    # seq@k calls one at a time, so the stop is exact (concurrent calls of pass@k that were
    # checked before the budget ran out may still finish: the documented overshoot).
    budget = CountingBudget(calls=5)
    client = BudgetedScriptedClient(budget)
    store = MemoryRunStore()
    result = asyncio.run(
        run_benchmark(make_benchmark(count=10), run_config(metric="seq@k"), store, client)
    )
    assert result.status == "budget_exhausted"
    assert len(client.calls) == 5  # not one call after the budget was spent
    assert result.tasks_errored == 0  # a spent budget is not a task failure
    assert result.summary["curves"]["tasks_complete"] == 2
    interrupted = store.task_summaries[3]
    assert interrupted["error"] == "attempt budget spent"
    assert len(interrupted["attempts"]) == 1  # its finished trial is kept


def test_a_tenant_budget_interrupts_the_run() -> None:
    budget = CountingBudget(calls=3, scope="tenant")
    client = BudgetedScriptedClient(budget)
    store = MemoryRunStore()
    with pytest.raises(CostBudgetExhausted) as caught:
        asyncio.run(
            run_benchmark(make_benchmark(count=10), run_config(metric="seq@k"), store, client)
        )
    assert caught.value.scope == "tenant"
    assert isinstance(caught.value, InfrastructureError)  # the attempt ends in error
    assert len(client.calls) == 3
    assert store.run_summary is not None and store.run_summary["status"] == "stopped"


class Unread:
    """Spend a budget of these tests never reads: they keep it in memory, or only price."""

    def spent(self, session: Any) -> float:
        raise AssertionError("read from the database")

    def add(self, session: Any, amount_usd: float) -> None:
        raise AssertionError("written to the database")

    def budget_usd(self, session: Any) -> float | None:
        raise AssertionError("read from the database")


class MemoryCostBudget(CostBudget):
    """The service's budget logic with the database replaced by two numbers."""

    def __init__(self, budget_usd: float) -> None:
        super().__init__(
            own=Unread(),
            tenant_day=Unread(),
            attempt_budget_usd=budget_usd,
            tenant_daily_budget_usd=1000.0,
            unpriced_usd_per_million_tokens=0.0,
        )
        self.attempt_spent = 0.0
        self.tenant_spent = 0.0

    def _spent(self) -> tuple[float, float, float]:
        snapshot = self.attempt_spent, self.tenant_spent, self.tenant_daily_budget_usd
        # A database read takes time; charges committed meanwhile are not in its snapshot.
        time.sleep(0.002)
        return snapshot

    def _charge(self, amount_usd: float) -> None:
        self.attempt_spent += amount_usd
        self.tenant_spent += amount_usd


def test_concurrent_calls_cannot_run_past_the_budget_together() -> None:
    # Twenty calls at once, each costing 1.0, against a budget of 3.0: without counting the
    # calls in flight, all twenty would pass the check before the first is charged.
    budget = MemoryCostBudget(budget_usd=3.0)
    spec = ModelSpec("openai/gpt-4o")
    started = 0

    async def one_call() -> bool:
        nonlocal started
        try:
            await budget.before_call(spec)
        except CostBudgetExhausted:
            return False
        started += 1
        await asyncio.sleep(0.01)
        record = CallRecord(model=spec.model, prompt=[], output="", cost_usd=1.0)
        await budget.after_call(spec, record)
        return True

    async def twenty() -> list[bool]:
        return await asyncio.gather(*(one_call() for _ in range(20)))

    results = asyncio.run(twenty())
    assert results.count(True) == started == 3
    assert budget.attempt_spent == 3.0


@pytest.mark.parametrize("seed", range(20))
def test_calls_ending_during_a_check_are_still_counted(seed: int) -> None:
    # Ten tasks of two sequential calls each, with random call times: a call charged while
    # another call's check reads the spend must be seen in flight or in the read, or the
    # check lets one call too many through ($0.00018 a call, budget $0.0005: three calls).
    rng = random.Random(seed)
    budget = MemoryCostBudget(budget_usd=0.0005)
    spec = ModelSpec("openai/fake-model")
    record = CallRecord(model=spec.model, prompt=[], output="", cost_usd=0.00018)
    started = 0

    async def task() -> None:
        nonlocal started
        for _ in range(2):
            try:
                await budget.before_call(spec)
            except CostBudgetExhausted:
                return
            started += 1
            await asyncio.sleep(rng.random() * 0.01)
            await budget.after_call(spec, record)

    async def ten() -> None:
        await asyncio.gather(*(task() for _ in range(10)))

    asyncio.run(ten())
    assert started == 3


def test_a_failed_call_frees_its_place() -> None:
    budget = MemoryCostBudget(budget_usd=1.0)
    spec = ModelSpec("openai/gpt-4o")

    async def scenario() -> None:
        await budget.before_call(spec)
        budget.release(spec)  # no answer: nothing charged, the next call may start at once
        await asyncio.wait_for(budget.before_call(spec), timeout=5)
        await budget.after_call(spec, CallRecord(model="m", prompt=[], output="", cost_usd=1.0))
        with pytest.raises(CostBudgetExhausted):
            await budget.before_call(spec)

    asyncio.run(scenario())


def test_offline_models_are_free_and_never_checked() -> None:
    """A spent budget stops no offline call, and an offline call charges nothing, whatever
    its record says it cost."""
    budget = MemoryCostBudget(budget_usd=0.001)
    budget.attempt_spent = 5.0
    spec = ModelSpec("offline/echo")
    record = CallRecord(model=spec.model, prompt=[], output="", cost_usd=0.5, input_tokens=9)

    async def calls() -> None:
        for _ in range(3):
            await budget.before_call(spec)
            await budget.after_call(spec, record)

    asyncio.run(calls())
    assert (budget.attempt_spent, budget.tenant_spent) == (5.0, 0.0)
    with pytest.raises(CostBudgetExhausted):
        asyncio.run(budget.before_call(ModelSpec("openai/gpt-4o")))


def test_unpriced_calls_are_charged_at_the_fallback_rate() -> None:
    budget = CostBudget(
        own=Unread(),
        tenant_day=Unread(),
        attempt_budget_usd=1.0,
        tenant_daily_budget_usd=10.0,
        unpriced_usd_per_million_tokens=10.0,
    )
    unpriced = CallRecord(model="m", prompt=[], output="", input_tokens=600, output_tokens=400)
    assert budget.charge_for(unpriced) == pytest.approx(0.01)
    priced = CallRecord(model="m", prompt=[], output="", input_tokens=10**6, cost_usd=0.25)
    assert budget.charge_for(priced) == 0.25
    assert format_usd(0.00001) == "$0.00001" and format_usd(2.0) == "$2"
