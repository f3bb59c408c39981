"""The benchmark kind's statements: final marks, and what the private board reads of a
challenge's completed entries."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from app.attempt.models import Attempt, AttemptStatus, RunPurpose
from app.db import insert_for, utcnow
from app.kinds.benchmark.models import FinalMark
from app.scoring.measures import AttemptMetrics

# A completed entry as the private board reads it: (attempt id, participant id, baseline,
# created_at, metrics, cost, kind_metrics).
EntryRow = tuple[
    uuid.UUID,
    uuid.UUID | None,
    bool,
    datetime,
    AttemptMetrics | None,
    float | None,
    dict[str, Any] | None,
]


def marked(session: Session, challenge_id: uuid.UUID, participant_id: uuid.UUID) -> list[uuid.UUID]:
    """The participant's marked attempts at the challenge, oldest mark first."""
    return list(
        session.scalars(
            select(FinalMark.attempt_id)
            .where(
                FinalMark.challenge_id == challenge_id, FinalMark.participant_id == participant_id
            )
            .order_by(FinalMark.marked_at, FinalMark.attempt_id)
        )
    )


def mark(session: Session, attempt: Attempt, participant_id: uuid.UUID) -> None:
    session.execute(
        insert_for(session)(FinalMark)
        .values(
            attempt_id=attempt.id,
            tenant_id=attempt.tenant_id,
            challenge_id=attempt.challenge_id,
            participant_id=participant_id,
            marked_at=utcnow(),
        )
        .on_conflict_do_nothing(index_elements=["attempt_id"])
    )


def unmark(session: Session, attempt_id: uuid.UUID) -> None:
    session.execute(delete(FinalMark).where(FinalMark.attempt_id == attempt_id))


def marked_at_challenge(session: Session, challenge_id: uuid.UUID) -> set[uuid.UUID]:
    return set(
        session.scalars(select(FinalMark.attempt_id).where(FinalMark.challenge_id == challenge_id))
    )


def completed_entries(
    session: Session, tenant_id: uuid.UUID, challenge_id: uuid.UUID
) -> Iterable[EntryRow]:
    """The challenge's completed entries with a participant (baselines included)."""
    return session.execute(
        select(
            Attempt.id,
            Attempt.participant_id,
            Attempt.baseline,
            Attempt.created_at,
            Attempt.metrics,
            Attempt.cost_usd,
            Attempt.kind_metrics,
        ).where(
            Attempt.tenant_id == tenant_id,
            Attempt.challenge_id == challenge_id,
            Attempt.purpose == RunPurpose.ENTRY,
            Attempt.status == AttemptStatus.COMPLETED,
            Attempt.participant_id.is_not(None),
        )
    ).tuples()


def entry_count(session: Session, tenant_id: uuid.UUID, challenge_id: uuid.UUID) -> int:
    """How many submissions the challenge has, in any status (practice and test runs not
    counted: they reach no board)."""
    return (
        session.scalar(
            select(func.count())
            .select_from(Attempt)
            .where(
                Attempt.tenant_id == tenant_id,
                Attempt.challenge_id == challenge_id,
                Attempt.purpose == RunPurpose.ENTRY,
            )
        )
        or 0
    )
