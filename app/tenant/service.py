"""Rules of tenants and their participants: creation, reads, spend, and who a browser session
signs in."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, time, timedelta

from sqlalchemy.orm import Session

from app.auth.models import ApiKey
from app.auth.service import create_api_key
from app.auth.sessions import token_hash
from app.auth.subjects import ApiKeyRole, SignedInParticipant
from app.auth.tenant_access import TenantStatus
from app.kit.config import Settings
from app.kit.db import utcnow
from app.kit.error_codes import ADMIN_NEEDS_ACCOUNT, HANDLE_TAKEN, SLUG_TAKEN, STATUS_CHANGE_REFUSED
from app.kit.errors import Conflict, NotFound
from app.tenant import repository
from app.tenant.models import EmailPolicy, Participant, Tenant
from app.tenant.quotas import refuse_new_participant
from app.tenant.repository import ParticipantRepository, TenantSpendRepository
from app.tenant.schemas import SpendDay, TenantUsage


@dataclass(frozen=True)
class DaySpend:
    """A tenant's model spend of the current UTC day (the budgets' `Spend`), against its own
    daily budget when the platform admin set one."""

    tenant_id: uuid.UUID

    def spent(self, session: Session) -> float:
        return TenantSpendRepository(session, self.tenant_id).spend_on(utcnow().date())

    def add(self, session: Session, amount_usd: float) -> None:
        TenantSpendRepository(session, self.tenant_id).add_spend(utcnow().date(), amount_usd)

    def budget_usd(self, session: Session) -> float | None:
        budget = repository.quota_of(session, self.tenant_id, Tenant.daily_cost_budget_usd)
        return None if budget is None else float(budget)


def daily_budget_usd(tenant: Tenant, settings: Settings) -> float:
    """The model spend a UTC day allows the tenant: its own budget, else the platform's."""
    if tenant.daily_cost_budget_usd is not None:
        return tenant.daily_cost_budget_usd
    return settings.tenant_daily_cost_budget_usd


def slug_taken(slug: str) -> Conflict:
    return Conflict(f"a tenant with slug '{slug}' already exists", code=SLUG_TAKEN)


def new_tenant(session: Session, slug: str, name: str, status: TenantStatus) -> Tenant:
    """A tenant with no key yet (409 when the slug is taken)."""
    if repository.get_tenant_by_slug(session, slug) is not None:
        raise slug_taken(slug)
    tenant = Tenant(
        id=uuid.uuid4(),
        slug=slug,
        name=name,
        created_at=utcnow(),
        email_policy=EmailPolicy.OPTIONAL,
        status=status,
    )
    if not repository.add_tenant(session, tenant):
        raise slug_taken(slug)
    return tenant


def first_admin_key(session: Session, tenant: Tenant) -> tuple[ApiKey, str]:
    """The admin key a tenant is made with (the key itself is shown once)."""
    return create_api_key(session, tenant.id, "initial admin key", ApiKeyRole.ADMIN)


def create_tenant(session: Session, slug: str, name: str) -> tuple[Tenant, ApiKey, str]:
    """An active tenant with its first admin key, the only way into it."""
    tenant = new_tenant(session, slug, name, TenantStatus.ACTIVE)
    key_row, key = first_admin_key(session, tenant)
    return tenant, key_row, key


# Which status a tenant may go to from which: approving a pending one, suspending and resuming
# (a pending one may be refused, which suspends it). Nothing goes back to pending.
STATUS_CHANGES = {
    TenantStatus.PENDING: {TenantStatus.ACTIVE, TenantStatus.SUSPENDED},
    TenantStatus.ACTIVE: {TenantStatus.SUSPENDED},
    TenantStatus.SUSPENDED: {TenantStatus.ACTIVE},
}


def set_status(session: Session, tenant: Tenant, status: TenantStatus) -> bool:
    """Moves the tenant to `status` (platform admin); False when it has it already. 409 for a
    change that is not made (anything back to pending)."""
    if tenant.status == status:
        return False
    if status not in STATUS_CHANGES[tenant.status]:
        raise Conflict(
            f"a {tenant.status.value} tenant cannot become {status.value}",
            code=STATUS_CHANGE_REFUSED,
        )
    tenant.status = status
    session.flush()
    return True


def set_quotas(session: Session, tenant: Tenant, quotas: dict[str, int | float | None]) -> None:
    """Sets the given quotas (platform admin); None removes one."""
    for name, value in quotas.items():
        setattr(tenant, name, value)
    session.flush()


def admin_accounts(session: Session, tenant_id: uuid.UUID) -> list[Participant]:
    """The tenant's accounts with the admin role (its organizers), oldest first."""
    return ParticipantRepository(session, tenant_id).admins()


def participant_count(session: Session, tenant_id: uuid.UUID) -> int:
    return ParticipantRepository(session, tenant_id).count()


def get_tenant(session: Session, tenant_id: uuid.UUID) -> Tenant:
    tenant = repository.get_tenant(session, tenant_id)
    if tenant is None:
        raise NotFound("tenant not found")
    return tenant


def tenant_by_slug(session: Session, slug: str) -> Tenant | None:
    return repository.get_tenant_by_slug(session, slug)


def set_email_policy(session: Session, tenant_id: uuid.UUID, policy: EmailPolicy) -> Tenant:
    """What the tenant asks of its participants' addresses from now on: at sign-up, and before
    each play (accounts that signed up under a looser policy are asked when they play)."""
    tenant = get_tenant(session, tenant_id)
    tenant.email_policy = policy
    session.flush()
    return tenant


def list_tenants(
    session: Session,
    *,
    limit: int,
    offset: int,
    status: TenantStatus | None = None,
    newest_first: bool = False,
) -> tuple[list[Tenant], int]:
    return repository.list_tenants(session, limit, offset, status, newest_first=newest_first)


USAGE_HISTORY_DAYS = 30


def tenant_usage(session: Session, tenant_id: uuid.UUID, settings: Settings) -> TenantUsage:
    """Today's model spend against the budgets, and the last days' spend."""
    now = utcnow()
    today = now.date()
    days = TenantSpendRepository(session, tenant_id).spend_since(
        today - timedelta(days=USAGE_HISTORY_DAYS - 1)
    )
    spent = next((row.spent_usd for row in days if row.day == today), 0.0)
    budget = daily_budget_usd(get_tenant(session, tenant_id), settings)
    return TenantUsage(
        day=today,
        spent_usd=spent,
        daily_budget_usd=budget,
        remaining_usd=max(0.0, budget - spent),
        resets_at=datetime.combine(today + timedelta(days=1), time(), tzinfo=now.tzinfo),
        attempt_budget_usd=settings.attempt_cost_budget_usd,
        unpriced_usd_per_million_tokens=settings.unpriced_usd_per_million_tokens,
        history=[SpendDay(day=row.day, spent_usd=row.spent_usd, calls=row.calls) for row in days],
    )


# Participants ---------------------------------------------------------------------------------


def list_participants(
    session: Session,
    tenant_id: uuid.UUID,
    *,
    limit: int,
    offset: int,
    handle_prefix: str | None = None,
    made_before: datetime | None = None,
) -> tuple[list[Participant], int]:
    """The tenant's participants by handle, those whose handle starts with `handle_prefix`
    (ignoring case) when given, those made before `made_before` when given."""
    return ParticipantRepository(session, tenant_id).page(
        limit, offset, handle_prefix, made_before=made_before
    )


def get_participant(
    session: Session, tenant_id: uuid.UUID, participant_id: uuid.UUID
) -> Participant:
    participant = ParticipantRepository(session, tenant_id).get(participant_id)
    if participant is None:
        raise NotFound("participant not found")
    return participant


def set_admin_role(
    session: Session, tenant_id: uuid.UUID, participant: Participant, is_admin: bool
) -> None:
    """Gives the participant the admin role, or takes it back. Only an account (signed up
    with a password) can have it: a handle that API keys name has no way to sign in."""
    if is_admin and participant.password_hash is None:
        raise Conflict(
            f"{participant.handle} has no account to sign in with: only a participant who "
            "signed up on the web can have the admin role",
            code=ADMIN_NEEDS_ACCOUNT,
        )
    participant.is_admin = is_admin
    session.flush()


def lock_participant(session: Session, tenant_id: uuid.UUID, participant_id: uuid.UUID) -> bool:
    """Holds the participant's row until the transaction ends: what one participant (or team)
    does that a count decides (limits, final marks, a team's joins, leaves and entries) happens
    one at a time. False when the participant is gone (a team whose last member left)."""
    return ParticipantRepository(session, tenant_id).lock(participant_id)


def participant_by_handle(
    session: Session, tenant_id: uuid.UUID, handle: str
) -> Participant | None:
    """The participant with this handle, ignoring case."""
    return ParticipantRepository(session, tenant_id).get_by_handle(handle)


def participant_for_handle(
    session: Session, tenant_id: uuid.UUID, handle: str
) -> tuple[uuid.UUID, str]:
    """The handle's participant (ignoring case), created on first use (within the tenant's
    participant quota), and its handle as first spelled."""
    participants = ParticipantRepository(session, tenant_id)
    if repository.quota_of(session, tenant_id, Tenant.max_participants) is not None:
        existing = participants.get_by_handle(handle)
        if existing is not None:
            return existing.id, existing.handle
        refuse_new_participant(session, tenant_id)
    return participants.id_and_handle_for(handle)


def add_passwordless(session: Session, tenant_id: uuid.UUID, handle: str) -> Participant | None:
    """A new participant that cannot sign in (a team's), within the tenant's participant
    quota; None when the handle is taken."""
    participants = ParticipantRepository(session, tenant_id)
    if participants.handle_in_use(handle):
        return None
    refuse_new_participant(session, tenant_id)
    return participants.add_with_password(handle, None)


def handles(
    session: Session, tenant_id: uuid.UUID, participant_ids: list[uuid.UUID]
) -> dict[uuid.UUID, str]:
    return ParticipantRepository(session, tenant_id).handles(participant_ids)


def handle_of(session: Session, tenant_id: uuid.UUID, participant_id: uuid.UUID) -> str:
    return handles(session, tenant_id, [participant_id]).get(participant_id, "")


@dataclass(frozen=True)
class EntryNames:
    """The handles of entries' participants and of the members who submitted a team's
    entries (`submitted_by_id`), read together."""

    named: dict[uuid.UUID, str]

    def of(self, participant_id: uuid.UUID) -> str:
        return self.named.get(participant_id, "")

    def submitter(self, submitted_by_id: uuid.UUID | None) -> str | None:
        """The member's handle; None for an entry of a participant playing alone."""
        return None if submitted_by_id is None else self.named.get(submitted_by_id)


def entry_names(
    session: Session,
    tenant_id: uuid.UUID,
    entries: Iterable[tuple[uuid.UUID, uuid.UUID | None]],
) -> EntryNames:
    """The names of entries given as (participant id, submitted-by id) pairs: one query for
    a whole page of them."""
    ids = {name for pair in entries for name in pair if name is not None}
    return EntryNames(handles(session, tenant_id, list(ids)))


def register_participant(
    session: Session, tenant_id: uuid.UUID, handle: str, password_hash: str
) -> Participant:
    """A web account: a participant with a password. A handle already in use is refused, even
    one an API key created without a password (claiming it would take over that player's
    results), and so is one differing only in case ('Alice' next to 'alice')."""
    participants = ParticipantRepository(session, tenant_id)
    taken = Conflict("This handle is taken. Choose another one.", code=HANDLE_TAKEN)
    if participants.handle_in_use(handle):
        raise taken
    refuse_new_participant(session, tenant_id)
    participant = participants.add_with_password(handle, password_hash)
    if participant is None:
        raise taken
    return participant


def signed_in_participant(session: Session, tenant_id: uuid.UUID, token: str) -> Participant | None:
    """The participant a live browser session of this tenant (its token) is for, if it is
    still a web account."""
    return ParticipantRepository(session, tenant_id).signed_in(token_hash(token), utcnow())


def as_subject(participant: Participant) -> SignedInParticipant:
    """The signed-in participant as the authorization gate's subject."""
    return SignedInParticipant(participant.tenant_id, participant.id, participant.handle)
