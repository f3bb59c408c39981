"""The notices' sweep's SQL, which reads the challenges of every tenant (the sweep's only:
app/competition/notices.py); a tenant's own statements are in app.competition.repository."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import and_, exists, select
from sqlalchemy.orm import Session

from app.challenge.config import ChallengeState
from app.challenge.models import Challenge
from app.competition.models import ChallengeNotice


def challenge_of_any_tenant(session: Session, challenge_id: uuid.UUID) -> Challenge | None:
    """The challenge, whichever tenant's."""
    return session.get(Challenge, challenge_id)


def due_notices(
    session: Session,
    event: str,
    now: datetime,
    since: datetime,
    after: tuple[datetime, uuid.UUID] | None,
    limit: int,
) -> Sequence[Challenge]:
    """Challenges of every tenant closed between `since` and `now` (not drafts, not deleted)
    whose notice of the event for that close is not recorded, in the order they closed,
    after the cursor (closes_at, id)."""
    sent = exists().where(
        ChallengeNotice.challenge_id == Challenge.id,
        ChallengeNotice.event == event,
        ChallengeNotice.closes_at == Challenge.closes_at,
    )
    return list(
        session.scalars(
            select(Challenge)
            .where(
                Challenge.closes_at.is_not(None),
                Challenge.closes_at <= now,
                Challenge.closes_at > since,
                Challenge.deleted_at.is_(None),
                Challenge.state != ChallengeState.DRAFT,
                ~sent,
                *(
                    ()
                    if after is None
                    else (
                        (Challenge.closes_at > after[0])
                        | and_(Challenge.closes_at == after[0], Challenge.id > after[1]),
                    )
                ),
            )
            .order_by(Challenge.closes_at, Challenge.id)
            .limit(limit)
        )
    )
