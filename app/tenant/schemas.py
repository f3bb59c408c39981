from __future__ import annotations

import uuid
from datetime import date, datetime

from pydantic import Field

from app.auth.subjects import ApiKeyRole
from app.auth.tenant_access import TenantStatus
from app.kit.schemas import InputSchema, Name, OutputSchema, Slug
from app.tenant.models import EmailPolicy


class TenantCreate(InputSchema):
    slug: Slug
    name: Name


class TenantQuotas(OutputSchema):
    """What the platform admin allows the tenant; null: no quota (the daily budget: the
    platform's, `GAUNTLET_TENANT_DAILY_COST_BUDGET_USD`)."""

    max_challenges: int | None = Field(description="Challenges not deleted.")
    max_participants: int | None = Field(
        description="Participants: accounts, handles its API keys name, teams."
    )
    max_attempts_per_day: int | None = Field(
        description="Entries a UTC day: attempts, red-blue defenses and attacks."
    )
    daily_cost_budget_usd: float | None = Field(
        description="Model spend a UTC day, in place of the platform's budget."
    )


class TenantRead(OutputSchema):
    id: uuid.UUID
    slug: str
    name: str
    created_at: datetime
    email_policy: EmailPolicy = Field(
        description="What the tenant asks of participants' email addresses: `optional` (asked "
        "at sign-up, may be left out), `required` (an address to sign up and to play), "
        "`confirmed` (an address whose confirmation link was opened, to play)."
    )
    status: TenantStatus = Field(
        description="`active`; `pending`: an organizer's sign-up waiting for a platform "
        "admin's approval; `suspended` by a platform admin (its keys, pages and play answer "
        "403 `tenant_suspended`, nothing runs, its data is kept)."
    )
    quotas: TenantQuotas


class TenantUpdate(InputSchema):
    """The settings to change; those left out stay as they are."""

    email_policy: EmailPolicy | None = None


class TenantCreated(TenantRead):
    api_key: str = Field(description="An admin key of the new tenant. Shown once, never again.")


class ApiKeyCreate(InputSchema):
    name: Name
    role: ApiKeyRole


class ApiKeyRead(OutputSchema):
    id: uuid.UUID
    name: str
    role: str
    key_prefix: str
    created_at: datetime
    revoked_at: datetime | None


class ApiKeyCreated(ApiKeyRead):
    key: str = Field(description="The key itself. Shown once, stored only as a hash.")


class ApiKeyList(OutputSchema):
    items: list[ApiKeyRead]
    total: int
    # The page asked for: `limit` items at most, after `offset`.
    limit: int
    offset: int


class ParticipantRead(OutputSchema):
    id: uuid.UUID
    handle: str
    created_at: datetime


class ParticipantList(OutputSchema):
    items: list[ParticipantRead]
    total: int
    # The page asked for: `limit` items at most, after `offset`.
    limit: int
    offset: int


class SpendDay(OutputSchema):
    day: date
    spent_usd: float
    calls: int = Field(description="Charged model calls (offline models are free and uncounted).")


class TenantUsage(OutputSchema):
    """Model spend of the tenant against its budgets (tenant admins)."""

    day: date = Field(description="Today, in UTC: budgets are per UTC day.")
    spent_usd: float = Field(description="Spent today, all attempts of the tenant.")
    daily_budget_usd: float = Field(description="No model call starts once this is spent.")
    remaining_usd: float
    resets_at: datetime
    attempt_budget_usd: float = Field(
        description="The default budget of one attempt (a benchmark challenge may lower it)."
    )
    unpriced_usd_per_million_tokens: float = Field(
        description="What a call litellm cannot price is charged, per million tokens."
    )
    history: list[SpendDay] = Field(description="The last 30 days with spend, newest first.")
