"""Cost budgets of model calls on a worker: per attempt, and per tenant per UTC day.

Before every call (every try), the attempt's spend and the tenant's spend of the day are read
from the database; when either has reached its budget, the call does not start. After every
answered call its charge is added to both in one transaction, atomically, so the budgets hold
across worker processes and across the runs of one attempt (a takeover, an admin's re-run).

The charge is the call's price from litellm's price map; a call litellm cannot price is charged
`unpriced_usd_per_million_tokens` for its input and output tokens. Offline models are free and
never leave the process: they are not charged or checked.

Calls already in flight when a budget is reached still finish and are charged, so a budget can
be overshot by at most the calls in flight at that moment (the engine's concurrency caps).
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from datetime import date

from app.attempt import repository
from app.db import session_scope, utcnow
from app.evaluation.types import CallRecord, CostBudgetExhausted, ModelSpec
from app.tenant import repository as tenants


def format_usd(amount: float) -> str:
    text = f"{amount:,.6f}".rstrip("0").rstrip(".")
    return f"${text}"


def _is_free(spec: ModelSpec) -> bool:
    return spec.model.startswith("offline/")


def _today() -> date:
    return utcnow().date()


@dataclass(frozen=True)
class AttemptBudget:
    """The service's `CallBudget` for one attempt."""

    attempt_id: uuid.UUID
    tenant_id: uuid.UUID
    attempt_budget_usd: float
    tenant_daily_budget_usd: float
    unpriced_usd_per_million_tokens: float

    def charge_for(self, record: CallRecord) -> float:
        if record.cost_usd is not None:
            return max(0.0, record.cost_usd)
        tokens = record.input_tokens + record.output_tokens
        return tokens * self.unpriced_usd_per_million_tokens / 1_000_000

    def _spent(self) -> tuple[float, float]:
        with session_scope() as session:
            return (
                repository.attempt_spend(session, self.attempt_id),
                tenants.spend_on(session, self.tenant_id, _today()),
            )

    def _charge(self, amount_usd: float) -> None:
        with session_scope() as session:
            repository.add_attempt_spend(session, self.attempt_id, amount_usd)
            tenants.add_spend(session, self.tenant_id, _today(), amount_usd)

    async def before_call(self, spec: ModelSpec) -> None:
        if _is_free(spec):
            return
        attempt_spent, tenant_spent = await asyncio.to_thread(self._spent)
        if attempt_spent >= self.attempt_budget_usd:
            budget = format_usd(self.attempt_budget_usd)
            raise CostBudgetExhausted(
                f"the cost budget of this attempt ({budget}) is spent",
                scope="attempt",
                detail=f"attempt spent {format_usd(attempt_spent)} of its {budget} budget",
            )
        if tenant_spent >= self.tenant_daily_budget_usd:
            raise CostBudgetExhausted(
                "this tenant's model budget for today is spent; the attempt can be re-run "
                "after 00:00 UTC",
                scope="tenant",
                detail=f"tenant spent {format_usd(tenant_spent)} of its "
                f"{format_usd(self.tenant_daily_budget_usd)} budget for {_today()} (UTC)",
            )

    async def after_call(self, spec: ModelSpec, record: CallRecord) -> None:
        if _is_free(spec):
            return
        charge = self.charge_for(record)
        if charge > 0:
            await asyncio.to_thread(self._charge, charge)
