"""SQL for challenges. Every query names its tenant (`ChallengeRepository`), except the home
page's directory of the tenants with public challenges (public challenges only) and the
platform admin's scorer checks (across tenants: `PlatformChallengeRepository`)."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Collection
from datetime import datetime
from typing import TypeVar

from sqlalchemy import bindparam, func, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import InstrumentedAttribute, Session

from app.auth.subjects import PlatformAdmin
from app.auth.tenant_access import TenantStatus
from app.challenge.config import ChallengeState, Visibility
from app.challenge.models import Challenge
from app.kit.db import count_where, page_where
from app.scoring.schemas import ScoringConfig
from app.tenant.models import Tenant

Value = TypeVar("Value")

# Built once: every challenge-scoped request (leaderboard reads, attempt lists, the challenge
# itself) looks its challenge up first, and composing the select each time costs more than
# binding its parameters (SQLAlchemy caches the compiled SQL either way).
# A deleted challenge is found by no lookup but the ones of its tenant's admins that list,
# restore or purge deleted challenges (`*_deleted`): every page, board, export and worker reads
# its challenge through the others.
_NOT_DELETED = Challenge.deleted_at.is_(None)
_DELETED = Challenge.deleted_at.is_not(None)
_BY_ID = select(Challenge).where(
    Challenge.tenant_id == bindparam("tenant_id"),
    Challenge.id == bindparam("challenge_id"),
    _NOT_DELETED,
)
_DELETED_BY_ID = select(Challenge).where(
    Challenge.tenant_id == bindparam("tenant_id"),
    Challenge.id == bindparam("challenge_id"),
    _DELETED,
)
# Its scoring alone, for a worker finishing an attempt (no other section is loaded or parsed).
_SCORING_BY_ID = select(Challenge.scoring).where(
    Challenge.tenant_id == bindparam("tenant_id"),
    Challenge.id == bindparam("challenge_id"),
    _NOT_DELETED,
)
# A challenge named by its slug in a tenant's request (app/challenge/reference.py).
# Deleted challenges are not named by slug: a live one may have taken theirs.
_ID_BY_SLUG = select(Challenge.id).where(
    Challenge.tenant_id == bindparam("tenant_id"),
    Challenge.slug == bindparam("slug"),
    _NOT_DELETED,
)
_NEWEST_FIRST = (Challenge.created_at.desc(), Challenge.id)
# On the public lists (the home page, the tenants with public challenges): public and live.
_LISTED_PUBLICLY = (
    (Challenge.visibility == Visibility.PUBLIC)
    & (Challenge.state == ChallengeState.LIVE)
    & _NOT_DELETED
)


class ChallengeRepository:
    def __init__(self, session: Session, tenant_id: uuid.UUID) -> None:
        self.session = session
        self.tenant_id = tenant_id

    def get(self, challenge_id: uuid.UUID, *, for_update: bool = False) -> Challenge | None:
        query = _BY_ID.with_for_update() if for_update else _BY_ID
        return self.session.scalar(
            query, {"tenant_id": self.tenant_id, "challenge_id": challenge_id}
        )

    def count_kept(self) -> int:
        """The tenant's challenges that are not deleted (drafts and archived ones too)."""
        return count_where(
            self.session, Challenge, Challenge.tenant_id == self.tenant_id, _NOT_DELETED
        )

    def get_deleted(self, challenge_id: uuid.UUID) -> Challenge | None:
        """A deleted challenge of the tenant, locked (restored or purged by the caller)."""
        return self.session.scalar(
            _DELETED_BY_ID.with_for_update(),
            {"tenant_id": self.tenant_id, "challenge_id": challenge_id},
        )

    def deleted_page(self, *, limit: int, offset: int) -> tuple[list[Challenge], int]:
        """The tenant's deleted challenges, the latest deleted first."""
        conditions = [Challenge.tenant_id == self.tenant_id, _DELETED]
        order = (Challenge.deleted_at.desc(), Challenge.id)
        return page_where(self.session, Challenge, conditions, order, limit=limit, offset=offset)

    def scoring(self, challenge_id: uuid.UUID) -> ScoringConfig | None:
        return self.session.scalar(
            _SCORING_BY_ID, {"tenant_id": self.tenant_id, "challenge_id": challenge_id}
        )

    def get_by_slug(self, slug: str) -> Challenge | None:
        return self.session.scalar(
            select(Challenge).where(
                Challenge.tenant_id == self.tenant_id, Challenge.slug == slug, _NOT_DELETED
            )
        )

    def get_public(self, slug: str) -> Challenge | None:
        """The tenant's public challenge with this slug, if it is not a draft (an archived one
        too: its pages and boards stay)."""
        return self.session.scalar(
            select(Challenge).where(
                Challenge.tenant_id == self.tenant_id,
                Challenge.slug == slug,
                Challenge.visibility == Visibility.PUBLIC,
                Challenge.state != ChallengeState.DRAFT,
                _NOT_DELETED,
            )
        )

    def id_of_slug(self, slug: str) -> uuid.UUID | None:
        return self.session.scalar(_ID_BY_SLUG, {"tenant_id": self.tenant_id, "slug": slug})

    def page(
        self,
        *,
        limit: int,
        offset: int,
        kind: str | None = None,
        visibility: Visibility | None = None,
        states: Collection[ChallengeState] = (ChallengeState.LIVE,),
    ) -> tuple[list[Challenge], int]:
        conditions = [
            Challenge.tenant_id == self.tenant_id,
            Challenge.state.in_(states),
            _NOT_DELETED,
        ]
        if kind:
            conditions.append(Challenge.kind == kind)
        if visibility:
            conditions.append(Challenge.visibility == visibility)
        return page_where(
            self.session, Challenge, conditions, _NEWEST_FIRST, limit=limit, offset=offset
        )

    def newest(self, *, visibilities: Collection[Visibility] | None, limit: int) -> list[Challenge]:
        """The newest challenges: every one of them for the tenant's admins (no
        `visibilities`), else the live ones of the given visibilities."""
        query = select(Challenge).where(Challenge.tenant_id == self.tenant_id, _NOT_DELETED)
        if visibilities is not None:
            query = query.where(
                Challenge.visibility.in_(visibilities), Challenge.state == ChallengeState.LIVE
            )
        return list(self.session.scalars(query.order_by(*_NEWEST_FIRST).limit(limit)))

    def closes(self, challenge_ids: Collection[uuid.UUID]) -> dict[uuid.UUID, datetime | None]:
        """When each of these challenges of the tenant closes (null: never)."""
        return self._column_of(challenge_ids, Challenge.closes_at)

    def earliest_freeze_going_on(self, now: datetime) -> datetime | None:
        """The earliest `freeze_at` of the tenant's challenges frozen at `now` (from their
        `freeze_at` until their close), if any is."""
        return self.session.scalar(
            select(func.min(Challenge.freeze_at)).where(
                Challenge.tenant_id == self.tenant_id,
                Challenge.deleted_at.is_(None),
                Challenge.freeze_at <= now,
                or_(Challenge.closes_at.is_(None), Challenge.closes_at > now),
            )
        )

    def kinds_and_schedules(
        self, challenge_ids: Collection[uuid.UUID]
    ) -> dict[uuid.UUID, tuple[str, datetime | None, datetime | None]]:
        """The kind of each of these challenges of the tenant, when it closes and when its
        boards freeze."""
        if not challenge_ids:
            return {}
        rows = self.session.execute(
            select(Challenge.id, Challenge.kind, Challenge.closes_at, Challenge.freeze_at).where(
                Challenge.tenant_id == self.tenant_id, Challenge.id.in_(challenge_ids)
            )
        ).tuples()
        return {found: (kind, closes_at, freeze_at) for found, kind, closes_at, freeze_at in rows}

    def _column_of(
        self, challenge_ids: Collection[uuid.UUID], column: InstrumentedAttribute[Value]
    ) -> dict[uuid.UUID, Value]:
        if not challenge_ids:
            return {}
        rows = self.session.execute(
            select(Challenge.id, column).where(
                Challenge.tenant_id == self.tenant_id, Challenge.id.in_(challenge_ids)
            )
        ).tuples()
        return {found: value for found, value in rows}

    def add(self, challenge: Challenge) -> bool:
        """Inserts the challenge; False when its slug is taken (a race the check missed)."""
        try:
            with self.session.begin_nested():
                self.session.add(challenge)
        except IntegrityError:
            return False
        return True

    def restore(self, challenge: Challenge, slug: str) -> bool:
        """Makes the deleted challenge not deleted again, under this slug; False when a
        challenge not deleted has the slug (a race the check missed)."""
        try:
            with self.session.begin_nested():
                challenge.slug = slug
                challenge.deleted_at = None
                self.session.flush()
        except IntegrityError:
            return False
        return True

    def purge(self, challenge: Challenge) -> None:
        """Removes the challenge's row; the database removes its data with it (cascades)."""
        self.session.delete(challenge)
        self.session.flush()


def tenants_with_public_challenges(
    session: Session, *, limit: int, offset: int, challenges_per_tenant: int
) -> tuple[list[tuple[Tenant, list[Challenge], int]], int]:
    """Tenants that have at least one public challenge, by name, each with its newest public
    challenges and how many it has; and how many such tenants there are."""
    # Only active tenants are listed: a suspended or pending one's pages are closed.
    has_public = select(Challenge.id).where(
        Challenge.tenant_id == Tenant.id, _LISTED_PUBLICLY
    ).exists() & (Tenant.status == TenantStatus.ACTIVE)
    tenants = list(
        session.scalars(
            select(Tenant)
            .where(has_public)
            .order_by(Tenant.name, Tenant.slug)
            .limit(limit)
            .offset(offset)
        )
    )
    total = session.scalar(select(func.count()).select_from(Tenant).where(has_public)) or 0
    if not tenants:
        return [], total
    position = (
        func.row_number()
        .over(partition_by=Challenge.tenant_id, order_by=_NEWEST_FIRST)
        .label("position")
    )
    ranked = (
        select(Challenge.id, position)
        .where(
            Challenge.tenant_id.in_([t.id for t in tenants]),
            _LISTED_PUBLICLY,
        )
        .subquery()
    )
    challenges = session.scalars(
        select(Challenge)
        .join(ranked, ranked.c.id == Challenge.id)
        .where(ranked.c.position <= challenges_per_tenant)
        .order_by(*_NEWEST_FIRST)
    )
    by_tenant: dict[uuid.UUID, list[Challenge]] = defaultdict(list)
    for challenge in challenges:
        by_tenant[challenge.tenant_id].append(challenge)
    counts = session.execute(
        select(Challenge.tenant_id, func.count())
        .where(Challenge.tenant_id.in_([t.id for t in tenants]), _LISTED_PUBLICLY)
        .group_by(Challenge.tenant_id)
    ).tuples()
    count_of = {tenant_id: count for tenant_id, count in counts}
    return [(t, by_tenant[t.id], count_of.get(t.id, 0)) for t in tenants], total


class PlatformChallengeRepository:
    """The challenges of every tenant, for the platform admin."""

    def __init__(self, session: Session, platform_admin: PlatformAdmin) -> None:
        self.session = session
        self.platform_admin = platform_admin

    def scoring_of_every_challenge(self) -> list[tuple[uuid.UUID, uuid.UUID, ScoringConfig]]:
        """(id, tenant id, scoring) of every challenge of every tenant: the platform admin's
        scorer registry asks which use a plugin (JSON filtering done in Python, portable to
        SQLite)."""
        rows = self.session.execute(select(Challenge.id, Challenge.tenant_id, Challenge.scoring))
        return [(row.id, row.tenant_id, row.scoring) for row in rows]
