"""Self-serve hosting: an organizer's new tenant, made as the operator's policy says
(`GAUNTLET_TENANT_SIGNUP`), and the platform admin's work on tenants: what each holds and
does, approval (with the mail that tells its organizers), suspension, resumption, quotas; and
a tenant admin's view of its quotas.

- `open`: the tenant is active at once, with its first admin key (shown once) and its
  organizer's account, which has the admin role.
- `approval`: the tenant is pending: nothing of it opens until a platform admin approves it,
  which takes a confirmed address of an organizer (the approval mail goes there, so a
  sign-up with someone else's address reaches nobody).
- `closed`: only the platform admin makes tenants (`POST /v1/tenants`).
"""

from __future__ import annotations

import re
import unicodedata
import uuid
from dataclasses import dataclass
from typing import Literal

from pydantic import TypeAdapter, ValidationError
from sqlalchemy.orm import Session

from app.auth.subjects import PlatformAdmin
from app.auth.tenant_access import TenantStatus
from app.challenge.service import kept_challenge_count
from app.hosting.repository import TenantActivityRepository
from app.hosting.schemas import (
    Organizer,
    QuotasUpdate,
    QuotaUse,
    TenantActivity,
    TenantAdminUpdate,
    TenantOverview,
    TenantQuotaUsage,
)
from app.kit.config import get_settings
from app.kit.db import utcnow
from app.kit.error_codes import ORGANIZER_UNCONFIRMED, SLUG_TAKEN
from app.kit.errors import Conflict, Forbidden, ValidationFailed
from app.kit.mail import service as mail
from app.kit.mail.message import Mail
from app.kit.schemas import Name, Slug
from app.kit.unit_of_work import UnitOfWork
from app.tenant import account_mail, quotas
from app.tenant import service as tenants
from app.tenant.models import Participant, Tenant
from app.tenant.schemas import TenantRead

SignupPolicy = Literal["open", "approval", "closed"]
# What the outbox calls the message that tells organizers their tenant is approved.
APPROVED = "tenant_approved"
_SLUG: TypeAdapter[str] = TypeAdapter(Slug)
_NAME: TypeAdapter[str] = TypeAdapter(Name)
SLUG_RULES = "1 to 64 lowercase letters, digits and hyphens, not starting or ending with one"


class OrganizerUnconfirmed(Conflict):
    """A pending tenant is approved only once an organizer's address is confirmed."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code=ORGANIZER_UNCONFIRMED)


def signup_policy() -> SignupPolicy:
    return get_settings().resolved_tenant_signup


def slug_from_name(name: str) -> str:
    """The address a name gives when none is typed: its letters and digits in lower case
    (accents dropped), words joined by hyphens, at most 64 characters ('' for a name with
    none)."""
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    words = re.sub(r"[^a-z0-9]+", "-", ascii_name.lower()).strip("-")
    return words[:64].rstrip("-")


def checked_name(raw: str) -> str:
    try:
        return _NAME.validate_python(raw)
    except ValidationError:
        raise ValidationFailed.at(
            ["name"], "give the organization's name (1 to 200 characters)"
        ) from None


def checked_slug(raw: str, name: str) -> str:
    """The tenant's address: as typed, or made from the name when left blank."""
    typed = raw.strip()
    slug = typed or slug_from_name(name)
    if not slug:
        raise ValidationFailed.at(["slug"], f"choose an address: {SLUG_RULES}")
    try:
        return _SLUG.validate_python(slug)
    except ValidationError:
        raise ValidationFailed.at(["slug"], f"an address is {SLUG_RULES}") from None


@dataclass(frozen=True)
class HostedTenant:
    """A tenant an organizer made, the organizer's account, and its first admin key (shown
    once; None for a pending tenant, whose organizer makes keys on its console once it is
    approved)."""

    tenant: Tenant
    organizer: Participant
    api_key: str | None


def host_tenant(
    work: UnitOfWork, *, name: str, slug: str, handle: str, password_hash: str, email: str
) -> HostedTenant:
    """Makes the tenant as the policy says, and its organizer's account (a participant with
    the admin role, and this address, sent a link that confirms it). The caller checked the
    handle, the password (and hashed it) and the address; 403 when the policy is `closed`,
    409 with the slug's field when the address is taken."""
    policy = signup_policy()
    if policy == "closed":
        raise Forbidden(
            "new tenants are made by the platform admin here (GAUNTLET_TENANT_SIGNUP=closed)"
        )
    session = work.session
    status = TenantStatus.ACTIVE if policy == "open" else TenantStatus.PENDING
    try:
        tenant = tenants.new_tenant(session, slug, name, status)
    except Conflict:
        message = f"the address /t/{slug}/ is taken: choose another"
        raise Conflict(
            message,
            code=SLUG_TAKEN,
            details=[{"loc": ["body", "slug"], "msg": message, "type": "taken"}],
        ) from None
    key = tenants.first_admin_key(session, tenant)[1] if status is TenantStatus.ACTIVE else None
    organizer = tenants.register_participant(session, tenant.id, handle, password_hash)
    tenants.set_admin_role(session, tenant.id, organizer, True)
    account_mail.change_email(work, tenant, organizer, email)
    return HostedTenant(tenant, organizer, key)


# The platform admin -------------------------------------------------------------------------


def list_overviews(
    session: Session,
    admin: PlatformAdmin,
    *,
    limit: int,
    offset: int,
    status: TenantStatus | None = None,
    newest_first: bool = False,
) -> tuple[list[TenantOverview], int]:
    rows, total = tenants.list_tenants(
        session, limit=limit, offset=offset, status=status, newest_first=newest_first
    )
    return overviews(session, admin, rows), total


def overview(session: Session, admin: PlatformAdmin, tenant_id: uuid.UUID) -> TenantOverview:
    return overviews(session, admin, [tenants.get_tenant(session, tenant_id)])[0]


def overviews(session: Session, admin: PlatformAdmin, rows: list[Tenant]) -> list[TenantOverview]:
    """The tenants with what each holds and does today: one query per count for them all."""
    ids = [tenant.id for tenant in rows]
    now = utcnow()
    day_start = now.replace(hour=0, minute=0, second=0, microsecond=0)
    activity = TenantActivityRepository(session, admin)
    challenges = activity.challenge_counts(ids)
    participants = activity.participant_counts(ids)
    attempts = activity.attempt_counts_since(ids, day_start)
    spent = activity.spend_on(ids, now.date())
    admins = activity.organizers(ids)
    return [
        TenantOverview(
            **TenantRead.model_validate(tenant).model_dump(),
            activity=TenantActivity(
                challenges=challenges.get(tenant.id, 0),
                participants=participants.get(tenant.id, 0),
                attempts_today=attempts.get(tenant.id, 0),
                spent_today_usd=spent.get(tenant.id, 0.0),
                day=now.date(),
            ),
            organizers=[_organizer(account) for account in admins[tenant.id]],
        )
        for tenant in rows
    ]


def _organizer(account: Participant) -> Organizer:
    return Organizer(
        id=account.id,
        handle=account.handle,
        email=account.email,
        email_confirmed=account.email_confirmed_at is not None,
    )


def change_tenant(work: UnitOfWork, tenant_id: uuid.UUID, body: TenantAdminUpdate) -> Tenant:
    """The platform admin's change of a tenant: its quotas, then its status. Approving a
    pending tenant needs an organizer's confirmed address (409 `organizer_unconfirmed`) and
    mails each confirmed organizer; suspending closes every door at the next request and
    stops its work from being run (work already running ends); resuming opens it again."""
    session = work.session
    tenant = tenants.get_tenant(session, tenant_id)
    if body.quotas is not None:
        set_quotas(session, tenant, body.quotas)
    if body.status is not None:
        set_status(work, tenant, body.status)
    return tenant


def set_quotas(session: Session, tenant: Tenant, update: QuotasUpdate) -> None:
    given = update.model_dump(include=update.model_fields_set)
    tenants.set_quotas(session, tenant, given)


def set_status(work: UnitOfWork, tenant: Tenant, status: TenantStatus) -> None:
    session = work.session
    approving = tenant.status is TenantStatus.PENDING and status is TenantStatus.ACTIVE
    confirmed = [
        account
        for account in tenants.admin_accounts(session, tenant.id)
        if account.confirmed_email is not None
    ]
    if approving and not confirmed:
        raise OrganizerUnconfirmed(
            f"{tenant.name} cannot be approved yet: no organizer has confirmed an email "
            "address (the approval is mailed there); they open the link they were sent, or "
            "ask for another on the request's page"
        )
    if tenants.set_status(session, tenant, status) and approving:
        for account in confirmed:
            _mail_approval(work, tenant, account)


def _mail_approval(work: UnitOfWork, tenant: Tenant, account: Participant) -> None:
    email = account.confirmed_email
    assert email is not None
    base = f"{get_settings().resolved_public_url}/t/{tenant.slug}"
    text = "\n".join(
        [
            f"Hello {account.handle},",
            "",
            f"{tenant.name} is approved: its console is open.",
            "",
            f"{base}/admin",
            "",
            f"Sign in there with your handle {account.handle} and your password. Your "
            f"participants sign up at {base}/ once you have published a challenge.",
        ]
    )
    mail.queue(work, tenant.id, APPROVED, Mail(email, f"{tenant.name} is approved", text))


# A tenant admin -------------------------------------------------------------------------------


def quota_usage(session: Session, tenant_id: uuid.UUID) -> TenantQuotaUsage:
    """The tenant's quotas and how much of each is used now."""
    tenant = tenants.get_tenant(session, tenant_id)
    now = utcnow()
    usage = tenants.tenant_usage(session, tenant_id, get_settings())
    per_day = tenant.max_attempts_per_day
    return TenantQuotaUsage(
        challenges=QuotaUse(
            limit=tenant.max_challenges,
            used=kept_challenge_count(session, tenant_id),
        ),
        participants=QuotaUse(
            limit=tenant.max_participants, used=tenants.participant_count(session, tenant_id)
        ),
        attempts_today=QuotaUse(
            limit=per_day,
            used=None if per_day is None else quotas.entries_today(session, tenant_id, now),
        ),
        cost_today_usd=QuotaUse(limit=usage.daily_budget_usd, used=usage.spent_usd),
        day=now.date(),
    )
