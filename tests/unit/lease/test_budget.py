"""Where a leased job's cost budget reads and charges spend: its own row's, when it keeps one,
and its tenant's of the day (the budget's arithmetic is tests/unit/evaluation/test_budget.py)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from app.evaluation.engine.types import CallRecord, CostBudgetExhausted, ModelSpec
from app.kit.lease import budget as lease_budget
from app.kit.lease.budget import CostBudget

SPEC = ModelSpec("openai/gpt-4o")


class Kept:
    """Spend kept in memory, with a budget of its own when given."""

    def __init__(self, spent: float = 0.0, budget: float | None = None) -> None:
        self.total = spent
        self.budget = budget

    def spent(self, session: Any) -> float:
        return self.total

    def add(self, session: Any, amount_usd: float) -> None:
        self.total += amount_usd

    def budget_usd(self, session: Any) -> float | None:
        return self.budget


@pytest.fixture(autouse=True)
def no_database(monkeypatch: pytest.MonkeyPatch) -> None:
    @contextlib.contextmanager
    def session_scope() -> Iterator[None]:
        yield None

    monkeypatch.setattr(lease_budget, "session_scope", session_scope)


def _budget(own: Kept | None, tenant_day: Kept, own_budget: float = 1.0) -> CostBudget:
    return CostBudget(
        own=own,
        tenant_day=tenant_day,
        attempt_budget_usd=own_budget,
        tenant_daily_budget_usd=10.0,
        unpriced_usd_per_million_tokens=0.0,
    )


def _call(budget: CostBudget, cost: float) -> None:
    async def call() -> None:
        await budget.before_call(SPEC)
        record = CallRecord(model=SPEC.model, prompt=[], output="", cost_usd=cost)
        await budget.after_call(SPEC, record)

    asyncio.run(call())


def test_a_call_is_charged_to_the_job_and_to_its_tenants_day() -> None:
    own, tenant_day = Kept(), Kept(2.0)
    _call(_budget(own, tenant_day), 0.25)
    assert (own.total, tenant_day.total) == (0.25, 2.25)


def test_a_job_that_keeps_no_spend_of_its_own_is_held_to_its_tenants_day_only() -> None:
    tenant_day = Kept()
    budget = _budget(None, tenant_day, own_budget=0.5)
    for _ in range(3):
        _call(budget, 0.25)
    assert tenant_day.total == 0.75
    tenant_day.total = 10.0
    with pytest.raises(CostBudgetExhausted) as refused:
        _call(budget, 0.25)
    assert refused.value.scope == "tenant"


def test_a_job_whose_own_budget_is_spent_starts_no_call() -> None:
    own, tenant_day = Kept(1.0), Kept()
    with pytest.raises(CostBudgetExhausted) as refused:
        _call(_budget(own, tenant_day), 0.25)
    assert refused.value.scope == "attempt"
    assert (own.total, tenant_day.total) == (1.0, 0.0)


def test_a_tenant_with_a_budget_of_its_own_is_held_to_it_from_its_next_call() -> None:
    tenant_day = Kept(2.0, budget=2.5)
    budget = _budget(None, tenant_day, own_budget=5.0)
    _call(budget, 0.5)
    with pytest.raises(CostBudgetExhausted) as refused:
        _call(budget, 0.5)
    assert refused.value.scope == "tenant"
    assert "$2.5 budget" in refused.value.detail
    # Raised by the platform admin: the next call goes, whatever the platform's budget says.
    tenant_day.budget = 50.0
    tenant_day.total = 20.0
    _call(budget, 0.5)
    assert tenant_day.total == 20.5
