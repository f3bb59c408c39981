"""Cost budgets of a leased job's model calls: the job's own (an attempt's, a match's), and
its tenant's per UTC day.

Before every call (every try), the job's spend and the tenant's spend of the day are read
from the database; when either has reached its budget, the call does not start. After every
answered call its charge is added to both in one transaction, atomically, so the budgets hold
across worker processes and across the runs of one job (a takeover, an admin's re-run).

The charge is the call's price from litellm's price map; a call litellm cannot price is charged
`unpriced_usd_per_million_tokens` for its input and output tokens. Offline models are free and
never leave the process: they are not charged or checked.

Calls run concurrently, and a call's price is known only once it is answered, so an attempt's
calls in flight are counted too: until one paid call has been priced, paid calls run one at a
time; after that each call in flight reserves the highest charge seen so far. A budget can then
be overshot by about one call of the attempt (calls of other attempts of the tenant, on other
workers, are seen only once charged).
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from datetime import date
from typing import Protocol

from sqlalchemy.orm import Session

from app.evaluation.engine.types import CallRecord, CostBudgetExhausted, ModelSpec
from app.kit.db import session_scope, utcnow
from app.kit.lease import repository
from app.kit.lease.models import Metered


def format_usd(amount: float) -> str:
    text = f"{amount:,.6f}".rstrip("0").rstrip(".")
    return f"${text}"


def _is_free(spec: ModelSpec) -> bool:
    return spec.model.startswith("offline/")


def _today() -> date:
    return utcnow().date()


class Spend(Protocol):
    """Where spend is kept (a job's row, the tenant's day): read, added to atomically, and
    the budget it keeps of its own, if any (a tenant's, set by the platform admin)."""

    def spent(self, session: Session) -> float: ...

    def add(self, session: Session, amount_usd: float) -> None: ...

    def budget_usd(self, session: Session) -> float | None:
        """Its own budget, read with the spend (None: the one the `CostBudget` was given)."""
        ...


@dataclass(frozen=True)
class RowSpend:
    """A job's own spend, on its row (`Metered`: an attempt's, a match's)."""

    model: type[Metered]
    row_id: uuid.UUID

    def spent(self, session: Session) -> float:
        return repository.spent(session, self.model, self.row_id)

    def add(self, session: Session, amount_usd: float) -> None:
        repository.add_spend(session, self.model, self.row_id, amount_usd)

    def budget_usd(self, session: Session) -> float | None:
        return None


class CostBudget:
    """The service's `CallBudget` for one job (used on one event loop): its own spend, if it
    keeps one (`own`; a defense's self-test does not), against `attempt_budget_usd`, and its
    tenant's of the day (`tenant_day`) against the tenant's own daily budget, or
    `tenant_daily_budget_usd` when it has none."""

    def __init__(
        self,
        *,
        own: Spend | None,
        tenant_day: Spend,
        attempt_budget_usd: float,
        tenant_daily_budget_usd: float,
        unpriced_usd_per_million_tokens: float,
    ) -> None:
        self.own, self.tenant_day = own, tenant_day
        self.attempt_budget_usd = attempt_budget_usd
        self.tenant_daily_budget_usd = tenant_daily_budget_usd
        self.unpriced_usd_per_million_tokens = unpriced_usd_per_million_tokens
        self._in_flight = 0
        self._highest_charge: float | None = None  # None: no paid call priced yet
        self._check = asyncio.Lock()  # one check at a time: read, decide, count in flight
        self._unpriced = asyncio.Lock()  # held by the one paid call in flight before a price
        self._holding_unpriced = False

    def charge_for(self, record: CallRecord) -> float:
        if record.cost_usd is not None:
            return max(0.0, record.cost_usd)
        tokens = record.input_tokens + record.output_tokens
        return tokens * self.unpriced_usd_per_million_tokens / 1_000_000

    def _spent(self) -> tuple[float, float, float]:
        """The job's spend, the tenant's of the day, and the tenant's daily budget (its own,
        when the platform admin set one: a change applies from the next call)."""
        with session_scope() as session:
            own = self.own.spent(session) if self.own is not None else 0.0
            tenant_budget = self.tenant_day.budget_usd(session)
            if tenant_budget is None:
                tenant_budget = self.tenant_daily_budget_usd
            return own, self.tenant_day.spent(session), tenant_budget

    def _charge(self, amount_usd: float) -> None:
        with session_scope() as session:
            if self.own is not None:
                self.own.add(session, amount_usd)
            self.tenant_day.add(session, amount_usd)

    def _release_unpriced(self) -> None:
        if self._holding_unpriced:
            self._holding_unpriced = False
            self._unpriced.release()

    async def before_call(self, spec: ModelSpec) -> None:
        if _is_free(spec):
            return
        if self._highest_charge is None:
            await self._unpriced.acquire()
            if self._highest_charge is None:
                self._holding_unpriced = True
            else:
                self._unpriced.release()  # priced while this call waited
        try:
            async with self._check:
                # Counted before the read: a call charged while the read runs is then seen
                # in flight, in the read, or both (never neither).
                in_flight = self._in_flight
                attempt_spent, tenant_spent, tenant_budget = await asyncio.to_thread(self._spent)
                reserved = in_flight * (self._highest_charge or 0.0)
                self._refuse_when_spent(
                    attempt_spent + reserved, tenant_spent + reserved, tenant_budget
                )
                self._in_flight += 1
        except BaseException:
            self._release_unpriced()
            raise

    def _refuse_when_spent(
        self, attempt_spent: float, tenant_spent: float, tenant_budget: float
    ) -> None:
        if attempt_spent >= self.attempt_budget_usd:
            budget = format_usd(self.attempt_budget_usd)
            raise CostBudgetExhausted(
                f"the cost budget of this attempt ({budget}) is spent",
                scope="attempt",
                detail=f"attempt spent {format_usd(attempt_spent)} (calls in flight included) "
                f"of its {budget} budget",
            )
        if tenant_spent >= tenant_budget:
            raise CostBudgetExhausted(
                "this tenant's model budget for today is spent; the attempt can be re-run "
                "after 00:00 UTC",
                scope="tenant",
                detail=f"tenant spent {format_usd(tenant_spent)} of its "
                f"{format_usd(tenant_budget)} budget for {_today()} (UTC)",
            )

    async def after_call(self, spec: ModelSpec, record: CallRecord) -> None:
        if _is_free(spec):
            return
        charge = self.charge_for(record)
        try:
            if charge > 0:
                await asyncio.to_thread(self._charge, charge)
        finally:
            # Counted in flight until charged, so no check sees the call in neither place.
            self._in_flight -= 1
            self._highest_charge = max(self._highest_charge or 0.0, charge)
            self._release_unpriced()

    def release(self, spec: ModelSpec) -> None:
        if _is_free(spec):
            return
        self._in_flight -= 1
        self._release_unpriced()
