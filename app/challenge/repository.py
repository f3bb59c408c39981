"""SQL for challenges, always scoped to one tenant."""

from __future__ import annotations

import uuid

from sqlalchemy import bindparam, func, select
from sqlalchemy.orm import Session

from app.challenge.config import Visibility
from app.challenge.models import Challenge
from app.tenant.models import Tenant

# Built once: every challenge-scoped request (leaderboard reads, attempt lists, the challenge
# itself) looks its challenge up first, and composing the select each time costs more than
# binding its parameters (SQLAlchemy caches the compiled SQL either way).
_BY_ID = select(Challenge).where(
    Challenge.tenant_id == bindparam("tenant_id"), Challenge.id == bindparam("challenge_id")
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

    def get_by_slug(self, slug: str) -> Challenge | None:
        return self.session.scalar(
            select(Challenge).where(Challenge.tenant_id == self.tenant_id, Challenge.slug == slug)
        )

    def page(
        self,
        *,
        limit: int,
        offset: int,
        kind: str | None = None,
        visibility: Visibility | None = None,
    ) -> tuple[list[Challenge], int]:
        conditions = [Challenge.tenant_id == self.tenant_id]
        if kind:
            conditions.append(Challenge.kind == kind)
        if visibility:
            conditions.append(Challenge.visibility == visibility)
        rows = self.session.scalars(
            select(Challenge)
            .where(*conditions)
            .order_by(Challenge.created_at.desc(), Challenge.id)
            .limit(limit)
            .offset(offset)
        )
        total = self.session.scalar(select(func.count()).select_from(Challenge).where(*conditions))
        return list(rows), total or 0

    def add(self, challenge: Challenge) -> None:
        self.session.add(challenge)
        self.session.flush()

    def delete(self, challenge: Challenge) -> None:
        self.session.delete(challenge)
        self.session.flush()


def get_public_challenge(
    session: Session, tenant_slug: str, challenge_slug: str
) -> Challenge | None:
    """The one unauthenticated lookup: a public challenge by its tenant's and its own slug."""
    return session.scalar(
        select(Challenge)
        .join(Tenant, Tenant.id == Challenge.tenant_id)
        .where(
            Tenant.slug == tenant_slug,
            Challenge.slug == challenge_slug,
            Challenge.visibility == Visibility.PUBLIC,
        )
    )
