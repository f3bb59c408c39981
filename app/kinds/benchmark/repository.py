"""The benchmark kind's statements: final marks, what the private board reads of a
challenge's completed entries, and the private part's runs."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from app.kinds.api import AttemptMetrics, AttemptStatus, RunPurpose, leases
from app.kinds.api.storage import Attempt, Challenge, insert_for, utcnow
from app.kinds.benchmark.models import (
    SEALED_RUN_LEASES,
    FinalMark,
    SealedRun,
    SealedRunStatus,
)

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


# The private part's runs (`SealedRun`): made when a scored attempt completes, run under a
# lease of their own, re-sent by the kind's sweep.


def queue_sealed_run(
    session: Session, attempt_id: uuid.UUID, tenant_id: uuid.UUID, challenge_id: uuid.UUID
) -> bool:
    """Queues the attempt's private run unless it has one; whether it queued one."""
    now = utcnow()
    inserted = session.execute(
        insert_for(session)(SealedRun)
        .values(
            id=attempt_id,
            tenant_id=tenant_id,
            challenge_id=challenge_id,
            status=SealedRunStatus.QUEUED,
            created_at=now,
            enqueued_at=now,
            run_count=0,
        )
        .on_conflict_do_nothing(index_elements=["id"])
        .returning(SealedRun.id)
    )
    return inserted.first() is not None


def claim_sealed_run(
    session: Session, run_id: uuid.UUID, token: uuid.UUID, now: datetime, until: datetime
) -> SealedRun | None:
    """Takes the private run if it is queued, or running under an expired lease."""
    found = leases.claim(
        session, SEALED_RUN_LEASES, [run_id], token, now, until, returning=[SealedRun]
    )
    return found.scalars().one_or_none()


def sealed_run_source(session: Session, run_id: uuid.UUID) -> tuple[Attempt, Challenge] | None:
    """The attempt a private run is of, and its challenge (None once either is gone)."""
    row = session.execute(
        select(Attempt, Challenge)
        .join(Challenge, Challenge.id == Attempt.challenge_id)
        .where(Attempt.id == run_id)
    ).first()
    return None if row is None else (row[0], row[1])


def sealed_run_of(
    session: Session, tenant_id: uuid.UUID, attempt_id: uuid.UUID
) -> SealedRun | None:
    """The tenant's attempt's private run, locked (None: none, or its challenge deleted)."""
    return session.scalar(
        select(SealedRun)
        .join(Challenge, Challenge.id == SealedRun.challenge_id)
        .where(
            SealedRun.tenant_id == tenant_id,
            SealedRun.id == attempt_id,
            Challenge.deleted_at.is_(None),
        )
        .with_for_update(of=SealedRun)
    )


def held_sealed_run(session: Session, run_id: uuid.UUID, token: uuid.UUID) -> SealedRun | None:
    """The private run, locked, if this token still holds it."""
    return leases.lock_held(session, SEALED_RUN_LEASES, run_id, token)


def set_own_measures(
    session: Session, attempt_id: uuid.UUID, name: str, value: dict[str, Any]
) -> None:
    """Sets one of the attempt's own measures (`kind_metrics[name]`), keeping the others."""
    current = session.scalar(
        select(Attempt.kind_metrics).where(Attempt.id == attempt_id).with_for_update()
    )
    session.execute(
        update(Attempt)
        .where(Attempt.id == attempt_id)
        .values(kind_metrics={**(current or {}), name: value})
    )


def own_measures(session: Session, attempt_id: uuid.UUID) -> dict[str, Any] | None:
    return session.scalar(select(Attempt.kind_metrics).where(Attempt.id == attempt_id))


def stuck_sealed_runs(
    session: Session, now: datetime, resent_before: datetime, limit: int
) -> list[uuid.UUID]:
    """Private runs still queued long after they were sent (a lost message), and those whose
    lease ran out (a dead worker: at once, see `leases.lapsed`); locked, up to `limit`."""
    return leases.lapsed(
        session,
        SEALED_RUN_LEASES,
        now,
        resent_before,
        waiting=True,
        oldest_first=SealedRun.enqueued_at,
        limit=limit,
    )


def mark_sealed_runs_sent(session: Session, run_ids: list[uuid.UUID], now: datetime) -> None:
    if run_ids:
        session.execute(update(SealedRun).where(SealedRun.id.in_(run_ids)).values(enqueued_at=now))
