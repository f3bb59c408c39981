"""The final round's worker-side statements, whatever the tenant: the rounds due, their
making and their matches, and the sweep's marking them played
(app/kinds/red_blue/final_round_runs.py)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session

from app.kinds.api.storage import (
    Challenge,
    challenge_not_deleted,
    count_where,
    insert_for,
)
from app.kinds.red_blue.cross_tenant.matches import NewMatch, _queued_row
from app.kinds.red_blue.cross_tenant.rows import _MATCHES
from app.kinds.red_blue.models import Board, Defense, DefenseStatus, FinalRound


def final_rounds_due(session: Session, now: datetime, limit: int) -> list[uuid.UUID]:
    """Red-blue challenges with a final round, closed by `now`, whose round for that close
    is not made yet (a deleted challenge's waits until it is restored)."""
    rows = session.scalars(
        select(Challenge.id)
        .outerjoin(FinalRound, FinalRound.challenge_id == Challenge.id)
        .where(
            Challenge.kind == "red_blue",
            Challenge.deleted_at.is_(None),
            Challenge.closes_at <= now,
            Challenge.kind_sections["final_round"].as_boolean().is_(True),
            or_(FinalRound.challenge_id.is_(None), FinalRound.closes_at != Challenge.closes_at),
        )
        .order_by(Challenge.closes_at)
        .limit(limit)
    )
    return list(rows)


def pending_defense_count(session: Session, challenge_id: uuid.UUID) -> int:
    """Defenses of the challenge whose self-test has not ended yet."""
    return count_where(
        session,
        Defense,
        Defense.challenge_id == challenge_id,
        Defense.status == DefenseStatus.PENDING,
    )


def claim_final_round(
    session: Session,
    tenant_id: uuid.UUID,
    challenge_id: uuid.UUID,
    closes_at: datetime,
    now: datetime,
) -> bool:
    """Takes the making of the challenge's final round for this close: True for the one
    transaction that gets it (a concurrent one waits for its commit, then finds it made; one
    that is rolled back leaves it to be taken again)."""
    build = insert_for(session)
    statement = (
        build(FinalRound)
        .values(
            challenge_id=challenge_id,
            tenant_id=tenant_id,
            closes_at=closes_at,
            scheduled_at=now,
            matches=0,
            played_at=None,
        )
        .on_conflict_do_update(
            index_elements=["challenge_id"],
            set_={"closes_at": closes_at, "scheduled_at": now, "matches": 0, "played_at": None},
            where=FinalRound.closes_at != closes_at,
        )
        .returning(FinalRound.challenge_id)
    )
    return session.execute(statement).first() is not None


def insert_matches_in_batches(
    session: Session, matches: Sequence[NewMatch], batch: int = 1000
) -> list[uuid.UUID]:
    """`insert_matches` for many rows at once (a final round's): one multi-row statement per
    `batch` rows, skipping a pair that already has a match; the ids inserted now."""
    inserted: list[uuid.UUID] = []
    build = insert_for(session)
    for start in range(0, len(matches), batch):
        statement = (
            build(_MATCHES)
            .values([_queued_row(match) for match in matches[start : start + batch]])
            .on_conflict_do_nothing(index_elements=["attack_id", "defense_id"])
            .returning(_MATCHES.c.id)
        )
        inserted.extend(session.scalars(statement))
    return inserted


def set_final_round_matches(session: Session, challenge_id: uuid.UUID, matches: int) -> None:
    session.execute(
        update(FinalRound).where(FinalRound.challenge_id == challenge_id).values(matches=matches)
    )


def unplayed_final_rounds(session: Session, limit: int) -> list[tuple[uuid.UUID, uuid.UUID]]:
    """Final rounds made whose matches were not all found finished yet, as (challenge, tenant)
    pairs, their rows locked for this transaction (another sweep's are skipped)."""
    rows = session.execute(
        select(FinalRound.challenge_id, FinalRound.tenant_id)
        .where(FinalRound.played_at.is_(None), challenge_not_deleted(FinalRound.challenge_id))
        .order_by(FinalRound.scheduled_at)
        .limit(limit)
        .with_for_update(skip_locked=True)
    ).tuples()
    return list(rows)


def mark_final_round_played(
    session: Session, challenge_id: uuid.UUID, matches: int, now: datetime
) -> None:
    """Every match of the round is finished: `matches` of them in all; the board's intervals
    are bootstrapped at its next recompute (the final ratings), not at their pace."""
    session.execute(
        update(FinalRound)
        .where(FinalRound.challenge_id == challenge_id)
        .values(played_at=now, matches=matches)
    )
    session.execute(
        update(Board).where(Board.challenge_id == challenge_id).values(intervals_due_at=now)
    )
