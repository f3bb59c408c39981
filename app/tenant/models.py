from __future__ import annotations

import uuid
from datetime import date, datetime
from enum import StrEnum

from sqlalchemy import (
    Boolean,
    Date,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    UniqueConstraint,
    Uuid,
    false,
    func,
    true,
)
from sqlalchemy.orm import Mapped, mapped_column

from app.auth.tenant_access import TenantStatus
from app.kit.db import Base, StrEnumColumn, UTCDateTime, new_id, utcnow


class EmailPolicy(StrEnum):
    """What a tenant asks of its participants' email addresses (docs/accounts.md)."""

    OPTIONAL = "optional"  # asked at sign-up, may be left out
    REQUIRED = "required"  # an address to sign up, and to play
    CONFIRMED = "confirmed"  # an address to sign up, confirmed (its link opened) to play


class Tenant(Base):
    __tablename__ = "tenants"

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=new_id)
    slug: Mapped[str] = mapped_column(String(64), unique=True)
    name: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    email_policy: Mapped[EmailPolicy] = mapped_column(
        StrEnumColumn(EmailPolicy, 16),
        default=EmailPolicy.OPTIONAL,
        server_default=EmailPolicy.OPTIONAL.value,
    )
    # Pending (an organizer's sign-up waiting for approval), active, or suspended by a
    # platform admin (app.auth.tenant_access): only an active tenant's doors open.
    status: Mapped[TenantStatus] = mapped_column(
        StrEnumColumn(TenantStatus, 16),
        default=TenantStatus.ACTIVE,
        server_default=TenantStatus.ACTIVE.value,
    )
    # Quotas a platform admin sets (app.tenant.quotas); None: no quota. Challenges not
    # deleted; participants (accounts, handles its keys name, teams); entries a day (attempts,
    # red-blue defenses and attacks); the model spend of a day, in place of the platform's
    # GAUNTLET_TENANT_DAILY_COST_BUDGET_USD.
    max_challenges: Mapped[int | None] = mapped_column(Integer, default=None)
    max_participants: Mapped[int | None] = mapped_column(Integer, default=None)
    max_attempts_per_day: Mapped[int | None] = mapped_column(Integer, default=None)
    daily_cost_budget_usd: Mapped[float | None] = mapped_column(Float, default=None)

    @property
    def quotas(self) -> dict[str, int | float | None]:
        """The quota columns by name (what `TenantRead.quotas` shows)."""
        return {name: getattr(self, name) for name in QUOTA_COLUMNS}


QUOTA_COLUMNS = (
    "max_challenges",
    "max_participants",
    "max_attempts_per_day",
    "daily_cost_budget_usd",
)


class Participant(Base):
    """A player of one tenant; created on first use by a tenant key, or by signing up.

    Handles are unique in a tenant ignoring case ('Alice' and 'alice' are one player); the
    first spelling is kept for display. Handles are ASCII (`app.kit.schemas.Handle`), so SQL's
    lower() and Python's agree on both databases.
    """

    __tablename__ = "participants"
    # The plain unique constraint is older and now redundant; it stays because dropping it
    # means rebuilding the table on SQLite (see the 20261126 accounts migration).
    __table_args__ = (UniqueConstraint("tenant_id", "handle"),)

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=new_id)
    tenant_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("tenants.id", ondelete="CASCADE"), index=True
    )
    handle: Mapped[str] = mapped_column(String(64))
    password_hash: Mapped[str | None] = mapped_column(String(255), default=None)
    # The admin role, given by a tenant admin to an account (one with a password): it signs in
    # to the tenant's admin pages with its handle and password.
    is_admin: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # An account's address (as email-validator normalised it), when it gave one, and when its
    # confirmation link was opened; changing the address clears the confirmation.
    email: Mapped[str | None] = mapped_column(String(254), default=None)
    email_confirmed_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    # Notification emails (announcements, a challenge closing, results revealed): on until the
    # participant turns them off (the account page, or a message's unsubscribe link).
    notify_by_mail: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())

    @property
    def confirmed_email(self) -> str | None:
        """The address, if it is confirmed: the only one account mail may go to besides its
        own confirmation."""
        return self.email if self.email_confirmed_at is not None else None


Index(
    "ux_participants_tenant_id_lower_handle",
    Participant.tenant_id,
    func.lower(Participant.handle),
    unique=True,
)
# A password reset asked by address finds its accounts (not unique: one person may hold
# several handles).
Index("ix_participants_tenant_id_lower_email", Participant.tenant_id, func.lower(Participant.email))


class TenantSpend(Base):
    """Model spend of one tenant in one UTC day; every worker adds to it atomically (one
    upsert per charged call), and no call starts once it reaches the daily budget. While the
    tenant has a daily quota of entries, each entry is counted here too (`attempts`), by a
    conditional upsert that refuses the one past the quota."""

    __tablename__ = "tenant_spend"

    tenant_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True
    )
    day: Mapped[date] = mapped_column(Date, primary_key=True)
    spent_usd: Mapped[float] = mapped_column(Float, default=0.0, server_default="0")
    calls: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
