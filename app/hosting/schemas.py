"""Shapes of the platform admin's tenant operations and of a tenant's quota usage."""

from __future__ import annotations

import uuid
from datetime import date

from pydantic import Field

from app.auth.tenant_access import TenantStatus
from app.kit.schemas import InputSchema, OutputSchema
from app.tenant.schemas import TenantRead


class TenantActivity(OutputSchema):
    """How much a tenant holds and does (the platform admin's list)."""

    challenges: int = Field(description="Challenges not deleted.")
    participants: int = Field(description="Participants: accounts, handles named, teams.")
    attempts_today: int = Field(description="Attempts submitted today (UTC).")
    spent_today_usd: float = Field(description="Model spend today (UTC).")
    day: date = Field(description="Today, in UTC.")


class Organizer(OutputSchema):
    """An account with the admin role of the tenant (who signed it up, for one made from the
    web)."""

    id: uuid.UUID
    handle: str
    email: str | None
    email_confirmed: bool = Field(
        description="Whether the address's confirmation link was opened: a pending tenant is "
        "approved only once an organizer's address is confirmed."
    )


class TenantOverview(TenantRead):
    """A tenant as the platform admin sees it."""

    activity: TenantActivity
    organizers: list[Organizer]


class TenantOverviewList(OutputSchema):
    items: list[TenantOverview]
    total: int
    # The page asked for: `limit` items at most, after `offset`.
    limit: int
    offset: int


class QuotasUpdate(InputSchema):
    """The quotas to change; those left out stay, null removes one (no quota; the daily
    budget: the platform's)."""

    max_challenges: int | None = Field(default=None, ge=0, le=1_000_000)
    max_participants: int | None = Field(default=None, ge=0, le=100_000_000)
    max_attempts_per_day: int | None = Field(default=None, ge=0, le=100_000_000)
    daily_cost_budget_usd: float | None = Field(default=None, ge=0, le=1_000_000_000)


class TenantAdminUpdate(InputSchema):
    """What the platform admin changes of a tenant: its status (`active` approves a pending
    tenant or resumes a suspended one; `suspended` closes every door and stops its work,
    keeping its data) and its quotas."""

    status: TenantStatus | None = None
    quotas: QuotasUpdate | None = None


class QuotaUse(OutputSchema):
    limit: float | None = Field(description="The quota; null: none.")
    used: float | None = Field(description="How much of it is used; null: not counted.")


class TenantQuotaUsage(OutputSchema):
    """A tenant's quotas (set by the platform admin) and how much of each is used."""

    challenges: QuotaUse = Field(description="Challenges not deleted.")
    participants: QuotaUse = Field(description="Accounts, handles its keys named, teams.")
    attempts_today: QuotaUse = Field(
        description="Entries today (attempts, red-blue defenses and attacks); they are "
        "counted while the quota is set (without one, `limit` and `used` are null)."
    )
    cost_today_usd: QuotaUse = Field(
        description="Model spend today against the daily budget (the tenant's own, or the "
        "platform's when it has none: `limit` is never null)."
    )
    day: date = Field(description="The UTC day the daily quotas count; they reset at 00:00 UTC.")
