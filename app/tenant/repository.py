"""SQL for tenants, their participants and their days. Participant and day queries are always
scoped to one tenant."""

from __future__ import annotations

import uuid
from datetime import date, datetime
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import InstrumentedAttribute, Session

from app.auth.models import BrowserSession
from app.auth.tenant_access import TenantStatus
from app.kit.db import count_where, insert_for, page_where, take_write_lock, utcnow
from app.tenant.models import Participant, Tenant, TenantSpend


def get_tenant(session: Session, tenant_id: uuid.UUID) -> Tenant | None:
    return session.get(Tenant, tenant_id)


def get_tenant_by_slug(session: Session, slug: str) -> Tenant | None:
    return session.scalar(select(Tenant).where(Tenant.slug == slug))


def add_tenant(session: Session, tenant: Tenant) -> bool:
    """Inserts the tenant; False when its slug is taken (a race the check missed)."""
    try:
        with session.begin_nested():
            session.add(tenant)
    except IntegrityError:
        return False
    return True


def list_tenants(
    session: Session,
    limit: int,
    offset: int,
    status: TenantStatus | None = None,
    *,
    newest_first: bool = False,
) -> tuple[list[Tenant], int]:
    """Tenants, oldest first or newest first (those of one status, when given)."""
    conditions = [] if status is None else [Tenant.status == status]
    order = (
        (Tenant.created_at.desc(), Tenant.id.desc())
        if newest_first
        else (Tenant.created_at, Tenant.id)
    )
    return page_where(session, Tenant, conditions, order, limit=limit, offset=offset)


def lock_tenant(session: Session, tenant_id: uuid.UUID) -> None:
    """Holds the tenant's row until the transaction ends: what a quota counts (challenges,
    participants) is counted and added to one at a time.

    PostgreSQL locks the row FOR NO KEY UPDATE, which the foreign-key checks of rows inserted
    meanwhile (they take KEY SHARE) do not wait for. SQLite has no row locks: it takes the
    database's write lock up front.
    """
    if session.get_bind().dialect.name == "sqlite":
        take_write_lock(session)
        return
    session.execute(select(Tenant.id).where(Tenant.id == tenant_id).with_for_update(key_share=True))


def quota_of(session: Session, tenant_id: uuid.UUID, column: InstrumentedAttribute[Any]) -> Any:
    """One quota column of the tenant (None: no quota), read alone."""
    return session.scalar(select(column).where(Tenant.id == tenant_id))


class ParticipantRepository:
    def __init__(self, session: Session, tenant_id: uuid.UUID) -> None:
        self.session = session
        self.tenant_id = tenant_id

    def get(self, participant_id: uuid.UUID) -> Participant | None:
        return self.session.scalar(
            select(Participant).where(
                Participant.tenant_id == self.tenant_id, Participant.id == participant_id
            )
        )

    def lock(self, participant_id: uuid.UUID) -> bool:
        """Holds the participant's row until the transaction ends; False when there is no such
        row (a team deleted meanwhile).

        PostgreSQL locks the row FOR NO KEY UPDATE: holders of this lock wait for each other,
        while the foreign-key checks of rows that name the participant (an attempt submitted
        meanwhile, a leaderboard row a worker writes; they take KEY SHARE) never wait for it.
        FOR UPDATE would make them wait, and a worker's completion that already holds rows a
        submission then waits for deadlocks with it. SQLite has no row locks: it takes the
        database's write lock up front, or two transactions could both read before either
        writes.
        """
        if self.session.get_bind().dialect.name == "sqlite":
            take_write_lock(self.session)
            found = self.session.scalar(
                select(Participant.id).where(
                    Participant.tenant_id == self.tenant_id, Participant.id == participant_id
                )
            )
            return found is not None
        locked = self.session.scalar(
            select(Participant.id)
            .where(Participant.tenant_id == self.tenant_id, Participant.id == participant_id)
            .with_for_update(key_share=True)
        )
        return locked is not None

    def count(self) -> int:
        """The tenant's participants: accounts, handles its keys named, teams."""
        return count_where(self.session, Participant, Participant.tenant_id == self.tenant_id)

    def admins(self) -> list[Participant]:
        """The tenant's accounts with the admin role, oldest first."""
        return list(
            self.session.scalars(
                select(Participant)
                .where(
                    Participant.tenant_id == self.tenant_id,
                    Participant.is_admin.is_(True),
                    Participant.password_hash.is_not(None),
                )
                .order_by(Participant.created_at, Participant.id)
            )
        )

    def get_by_handle(self, handle: str) -> Participant | None:
        """The participant with this handle, ignoring case."""
        return self.session.scalar(
            select(Participant).where(
                Participant.tenant_id == self.tenant_id,
                func.lower(Participant.handle) == handle.lower(),
            )
        )

    def handle_in_use(self, handle: str) -> bool:
        """Whether a participant of the tenant has this handle, ignoring case."""
        found = self.session.scalar(
            select(Participant.id)
            .where(
                Participant.tenant_id == self.tenant_id,
                func.lower(Participant.handle) == handle.lower(),
            )
            .limit(1)
        )
        return found is not None

    def add_with_password(self, handle: str, password_hash: str | None) -> Participant | None:
        """A participant with a password (or none: a team's, which never signs in); None when
        the handle is taken (the unique index on the lower-cased handle decides races, 'Alice'
        against 'alice')."""
        participant = Participant(
            id=uuid.uuid4(),
            tenant_id=self.tenant_id,
            handle=handle,
            password_hash=password_hash,
            created_at=utcnow(),
        )
        try:
            with self.session.begin_nested():
                self.session.add(participant)
        except IntegrityError:
            return None
        return participant

    def signed_in(self, token_hash: str, now: datetime) -> Participant | None:
        """The participant a live browser session of this tenant is for, if it is still a web
        account (has a password)."""
        return self.session.scalar(
            select(Participant)
            .join(BrowserSession, BrowserSession.participant_id == Participant.id)
            .where(
                BrowserSession.token_hash == token_hash,
                BrowserSession.tenant_id == self.tenant_id,
                BrowserSession.expires_at > now,
                Participant.tenant_id == self.tenant_id,
                Participant.password_hash.is_not(None),
            )
        )

    def id_for_handle(self, handle: str) -> uuid.UUID:
        return self.id_and_handle_for(handle)[0]

    def id_and_handle_for(self, handle: str) -> tuple[uuid.UUID, str]:
        """The handle's participant (ignoring case), created on first use, and its handle as
        first spelled. Racing first uses, in any mix of cases, make one row: the later insert
        waits for the earlier transaction, then inserts nothing and finds that row. No
        conflict target: the exact-spelling constraint may be the one a race trips first, and a
        targeted ON CONFLICT would raise on it."""
        insert = insert_for(self.session)
        created: uuid.UUID | None = self.session.scalar(
            insert(Participant)
            .values(id=uuid.uuid4(), tenant_id=self.tenant_id, handle=handle, created_at=utcnow())
            .on_conflict_do_nothing()
            .returning(Participant.id)
        )
        if created is not None:
            return created, handle
        existing = self.get_by_handle(handle)
        if existing is None:
            raise RuntimeError(f"participant {handle!r} conflicted on insert, yet is not there")
        return existing.id, existing.handle

    def page(
        self,
        limit: int,
        offset: int,
        handle_prefix: str | None = None,
        *,
        made_before: datetime | None = None,
    ) -> tuple[list[Participant], int]:
        scoped = [Participant.tenant_id == self.tenant_id]
        if made_before is not None:
            scoped.append(Participant.created_at < made_before)
        if handle_prefix:
            lowered = func.lower(Participant.handle)
            scoped.append(lowered.startswith(handle_prefix.lower(), autoescape=True))
        return page_where(
            self.session, Participant, scoped, (Participant.handle,), limit=limit, offset=offset
        )

    def accounts_with_confirmed_email(self, email: str, limit: int) -> list[Participant]:
        """The web accounts (with a password) whose confirmed address is this one, ignoring
        case; the oldest `limit`."""
        return list(
            self.session.scalars(
                select(Participant)
                .where(
                    Participant.tenant_id == self.tenant_id,
                    func.lower(Participant.email) == email.lower(),
                    Participant.email_confirmed_at.is_not(None),
                    Participant.password_hash.is_not(None),
                )
                .order_by(Participant.created_at, Participant.id)
                .limit(limit)
            )
        )

    def notified(self, participant_ids: list[uuid.UUID]) -> list[Participant]:
        """Those of the participants who get notification emails: accounts with a confirmed
        address that did not turn them off."""
        if not participant_ids:
            return []
        return list(
            self.session.scalars(
                select(Participant).where(
                    Participant.tenant_id == self.tenant_id,
                    Participant.id.in_(participant_ids),
                    Participant.email_confirmed_at.is_not(None),
                    Participant.notify_by_mail.is_(True),
                    Participant.password_hash.is_not(None),
                )
            )
        )

    def handles(self, participant_ids: list[uuid.UUID]) -> dict[uuid.UUID, str]:
        if not participant_ids:
            return {}
        rows = self.session.execute(
            select(Participant.id, Participant.handle).where(
                Participant.tenant_id == self.tenant_id, Participant.id.in_(participant_ids)
            )
        )
        return {row.id: row.handle for row in rows}


class TenantSpendRepository:
    """The tenant's days (`TenantSpend`): the entries counted against its daily quota, and its
    model spend."""

    def __init__(self, session: Session, tenant_id: uuid.UUID) -> None:
        self.session = session
        self.tenant_id = tenant_id

    def count_entry(self, day: date, limit: int) -> bool:
        """Counts one entry of the tenant's day if fewer than `limit` are counted; False (and
        nothing counted) when the day has `limit` already. One statement: the upsert's
        condition is checked on the row it locks, so concurrent entries never pass the
        limit."""
        if limit < 1:
            return False
        insert = insert_for(self.session)
        statement = insert(TenantSpend).values(
            tenant_id=self.tenant_id, day=day, spent_usd=0.0, calls=0, attempts=1
        )
        counted = self.session.execute(
            statement.on_conflict_do_update(
                index_elements=["tenant_id", "day"],
                set_={"attempts": TenantSpend.attempts + 1},
                where=TenantSpend.attempts < limit,
            ).returning(TenantSpend.attempts)
        ).first()
        return counted is not None

    def uncount_entry(self, day: date) -> None:
        """Takes back one entry counted on the tenant's day (by `count_entry`, in this
        transaction)."""
        self.session.execute(
            update(TenantSpend)
            .where(
                TenantSpend.tenant_id == self.tenant_id,
                TenantSpend.day == day,
                TenantSpend.attempts > 0,
            )
            .values(attempts=TenantSpend.attempts - 1)
        )

    def entries_on(self, day: date) -> int:
        """The entries counted on the tenant's day (while it had a daily quota)."""
        counted = self.session.scalar(
            select(TenantSpend.attempts).where(
                TenantSpend.tenant_id == self.tenant_id, TenantSpend.day == day
            )
        )
        return int(counted or 0)

    def add_spend(self, day: date, amount_usd: float) -> None:
        """Adds one call's charge to the tenant's day, atomically across workers (one
        upsert)."""
        insert = insert_for(self.session)
        statement = insert(TenantSpend).values(
            tenant_id=self.tenant_id, day=day, spent_usd=amount_usd, calls=1
        )
        self.session.execute(
            statement.on_conflict_do_update(
                index_elements=["tenant_id", "day"],
                set_={
                    "spent_usd": TenantSpend.spent_usd + statement.excluded.spent_usd,
                    "calls": TenantSpend.calls + 1,
                },
            )
        )

    def spend_on(self, day: date) -> float:
        spent = self.session.scalar(
            select(TenantSpend.spent_usd).where(
                TenantSpend.tenant_id == self.tenant_id, TenantSpend.day == day
            )
        )
        return float(spent or 0.0)

    def spend_since(self, first_day: date) -> list[TenantSpend]:
        """The tenant's days with spend from `first_day` on, newest first."""
        return list(
            self.session.scalars(
                select(TenantSpend)
                .where(TenantSpend.tenant_id == self.tenant_id, TenantSpend.day >= first_day)
                .order_by(TenantSpend.day.desc())
            )
        )
