"""The sweep: work that lost its worker, in every tenant, found and sent again."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import case, or_, update
from sqlalchemy.orm import Session

from app.kinds.api import leases
from app.kinds.api.storage import challenge_not_deleted, lock_some_ids
from app.kinds.red_blue.models import (
    MATCH_LEASES,
    SELF_TEST_LEASES,
    Attack,
    Board,
    Defense,
    DefenseStatus,
    Match,
)


def stuck_matches(
    session: Session, now: datetime, resent_before: datetime, limit: int
) -> list[uuid.UUID]:
    """Queued matches last sent long ago (their message was lost) and running ones whose
    lease ran out (their worker died: at once, see `leases.lapsed`)."""
    return leases.lapsed(
        session,
        MATCH_LEASES,
        now,
        resent_before,
        waiting=True,
        oldest_first=Match.enqueued_at,
        limit=limit,
    )


def stuck_defenses(
    session: Session, now: datetime, resent_before: datetime, limit: int
) -> list[uuid.UUID]:
    """Pending defenses whose self-test nobody holds, and active ones never paired."""
    return leases.lapsed(
        session,
        SELF_TEST_LEASES,
        now,
        resent_before,
        waiting=True,
        also=(Defense.status == DefenseStatus.ACTIVE) & Defense.paired_at.is_(None),
        oldest_first=Defense.enqueued_at,
        limit=limit,
    )


def stuck_attacks(session: Session, resent_before: datetime, limit: int) -> list[uuid.UUID]:
    return lock_some_ids(
        session,
        Attack.id,
        Attack.paired_at.is_(None),
        Attack.enqueued_at < resent_before,
        challenge_not_deleted(Attack.challenge_id),
        oldest_first=Attack.enqueued_at,
        limit=limit,
    )


def stuck_boards(session: Session, before: datetime, limit: int) -> list[uuid.UUID]:
    """Boards dirty since before `before` whose recompute was due by then (it was lost or
    failed; a board paced to wait longer is not stuck), and boards whose interval refresh
    was due before then and never came (its message was lost)."""
    return lock_some_ids(
        session,
        Board.challenge_id,
        or_(
            Board.dirty.is_(True)
            & (Board.dirty_since < before)
            & or_(Board.recompute_due_at.is_(None), Board.recompute_due_at < before),
            Board.dirty.is_(False)
            & (Board.intervals_seq < Board.rated_seq)
            & (Board.intervals_due_at < before),
        ),
        # A deleted challenge's board stays as it is until the challenge is restored.
        challenge_not_deleted(Board.challenge_id),
        limit=limit,
    )


def mark_resent(session: Session, model: Any, ids: Sequence[uuid.UUID], now: datetime) -> None:
    if ids:
        session.execute(update(model).where(model.id.in_(ids)).values(enqueued_at=now))


def mark_boards_resent(session: Session, ids: Sequence[uuid.UUID], now: datetime) -> None:
    if ids:
        session.execute(
            update(Board)
            .where(Board.challenge_id.in_(ids))
            .values(
                dirty_since=case((Board.dirty.is_(True), now), else_=Board.dirty_since),
                intervals_due_at=case((Board.dirty.is_(False), now), else_=Board.intervals_due_at),
            )
        )
