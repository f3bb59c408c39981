"""A tenant's quotas, set by the platform admin (none by default), and the refusals past them:
one rule per quota, called where the thing it counts is made.

- `max_challenges`: challenges not deleted (drafts and archived ones count; a deleted one
  counts again when restored). Past it, creating or restoring one answers 409
  `quota_max_challenges`.
- `max_participants`: the tenant's participants: accounts, handles its API keys name (made on
  their first use), teams (a team is a participant its members submit as). Past it, a new one
  answers 409 `quota_max_participants`.
- `max_attempts_per_day`: entries a UTC day (attempts, red-blue defenses and attacks; practice
  and test runs have limits of their own). Past it, 429 `quota_max_attempts_per_day` with
  `Retry-After` until 00:00 UTC. They are counted while the quota is set, in the tenant's day
  row, by one conditional statement, so concurrent entries never pass it.
- `daily_cost_budget_usd`: the model spend of a UTC day, in place of the platform's
  `GAUNTLET_TENANT_DAILY_COST_BUDGET_USD` (read before every paid call, app.kit.lease.budget).

Challenges and participants are counted under a lock of the tenant's row, so two requests at
once cannot both take the last place.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from sqlalchemy.orm import Session

from app.kit.db import TransactionNeeded, autocommits
from app.kit.error_codes import (
    QUOTA_MAX_ATTEMPTS_PER_DAY,
    QUOTA_MAX_CHALLENGES,
    QUOTA_MAX_PARTICIPANTS,
)
from app.kit.errors import AppError
from app.tenant import repository
from app.tenant.models import Tenant
from app.tenant.repository import ParticipantRepository, TenantSpendRepository


class Quota(StrEnum):
    CHALLENGES = "max_challenges"
    PARTICIPANTS = "max_participants"
    ATTEMPTS_PER_DAY = "max_attempts_per_day"
    DAILY_COST_BUDGET_USD = "daily_cost_budget_usd"


class QuotaReached(AppError):
    """A tenant's quota is used up; the code names it (`quota_max_challenges`, ...) and says
    the status (409, or 429 for the day's)."""

    def __init__(
        self, quota: Quota, message: str, *, headers: dict[str, str] | None = None
    ) -> None:
        code = QUOTA_CODES[quota]
        super().__init__(message, code=code, details={"quota": quota.value}, headers=headers)
        self.quota = quota
        self.status_code = code.status


# The code of each quota a request can use up.
QUOTA_CODES = {
    Quota.CHALLENGES: QUOTA_MAX_CHALLENGES,
    Quota.PARTICIPANTS: QUOTA_MAX_PARTICIPANTS,
    Quota.ATTEMPTS_PER_DAY: QUOTA_MAX_ATTEMPTS_PER_DAY,
}


ASK_FOR_MORE = "the platform admin sets it, and can raise it"


def _limit(session: Session, tenant_id: uuid.UUID, quota: Quota) -> Any:
    return repository.quota_of(session, tenant_id, getattr(Tenant, quota.value))


def refuse_new_challenge(
    session: Session, tenant_id: uuid.UUID, count_kept: Callable[[], int]
) -> None:
    """Before a challenge is made or restored: 409 when the tenant has as many as its quota
    allows. `count_kept` counts the tenant's challenges that are not deleted."""
    limit = _limit(session, tenant_id, Quota.CHALLENGES)
    if limit is None:
        return
    repository.lock_tenant(session, tenant_id)
    if count_kept() >= limit:
        raise QuotaReached(
            Quota.CHALLENGES,
            f"challenge quota reached: this tenant may have {limit} challenges (deleted ones "
            f"do not count); delete one, or ask for more: {ASK_FOR_MORE}",
        )


def refuse_new_participant(session: Session, tenant_id: uuid.UUID) -> None:
    """Before a participant is made (an account, a handle's first use, a team): 409 when the
    tenant has as many as its quota allows. In a session without a transaction it asks for
    one (`TransactionNeeded`): the count and the insert must be one at a time."""
    limit = _limit(session, tenant_id, Quota.PARTICIPANTS)
    if limit is None:
        return
    if autocommits(session):
        raise TransactionNeeded()
    repository.lock_tenant(session, tenant_id)
    if ParticipantRepository(session, tenant_id).count() >= limit:
        raise QuotaReached(
            Quota.PARTICIPANTS,
            f"participant quota reached: this tenant may have {limit} participants (accounts, "
            f"handles its API keys named, and teams); ask for more: {ASK_FOR_MORE}",
        )


def count_entry(session: Session, tenant_id: uuid.UUID, limit: int | None, now: datetime) -> None:
    """Counts one entry against the tenant's daily quota (`limit`, read with the submission's
    challenge; None: no quota, nothing counted); 429 with `Retry-After` until midnight UTC
    past it. The count holds the tenant's day row to the commit, so it asks for a transaction
    (`TransactionNeeded`): a retry sent at once with the same Idempotency-Key waits for the
    first to commit, and then finds its entry (`give_back_entry`)."""
    if limit is None:
        return
    if autocommits(session):
        raise TransactionNeeded()
    if TenantSpendRepository(session, tenant_id).count_entry(now.date(), limit):
        return
    day_start = now.replace(hour=0, minute=0, second=0, microsecond=0)
    reset = day_start + timedelta(days=1)
    raise QuotaReached(
        Quota.ATTEMPTS_PER_DAY,
        f"daily attempt quota reached: this tenant may take {limit} entries a day (attempts, "
        f"red-blue defenses and attacks); it resets at {reset:%Y-%m-%d %H:%M} UTC; "
        f"{ASK_FOR_MORE}",
        headers={"Retry-After": str(math.ceil((reset - now).total_seconds()))},
    )


def give_back_entry(
    session: Session, tenant_id: uuid.UUID, limit: int | None, now: datetime
) -> None:
    """Gives back the entry `count_entry` counted in this transaction, when the request turned
    out to be a retry of one that stored its entry first (the same Idempotency-Key): one entry
    is counted once."""
    if limit is None:
        return
    TenantSpendRepository(session, tenant_id).uncount_entry(now.date())


def entries_today(session: Session, tenant_id: uuid.UUID, now: datetime) -> int:
    """The entries counted today (counted while the tenant has a daily quota)."""
    return TenantSpendRepository(session, tenant_id).entries_on(now.date())
