"""SQL of the worker side and the sweep over attempts of every tenant: the claims of the
workers' queue (whose turn it is, across tenants), the leases, the sweep's re-sends, and a
rescore's recomputation of a challenge's scores.

A task or a sweep takes attempt ids from the queue, not a tenant; every state change is
guarded by the run token of the lease. The API process never imports this module (an
import-linter contract holds it so): the request path reads and writes attempts through
`AttemptRepository`, bound to one tenant.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import cast

from sqlalchemy import Table, bindparam, func, or_, select, tuple_, update
from sqlalchemy.orm import Session

from app.attempt.models import (
    ATTEMPT_LEASES,
    Attempt,
    AttemptScoreAtFreeze,
    AttemptStatus,
)
from app.attempt.repository import ENTRIES_ONLY, QUEUED, RUNNABLE_IN_ORDER, RUNNING
from app.challenge.models import Challenge, challenge_work_runs
from app.kit.db import UTCDateTime, insert_for, lock_some_ids, utcnow
from app.kit.lease import repository as leases

_ATTEMPTS: Table = Attempt.__table__  # type: ignore[assignment]


# Rescoring: a challenge's completed attempts, in batches, then those finished meanwhile.


def count_completed(session: Session, challenge_id: uuid.UUID) -> int:
    return (
        session.scalar(
            select(func.count())
            .select_from(Attempt)
            .where(
                Attempt.challenge_id == challenge_id,
                Attempt.status == AttemptStatus.COMPLETED,
                ENTRIES_ONLY,
            )
        )
        or 0
    )


def completed_after(
    session: Session, challenge_id: uuid.UUID, after: Attempt | None, limit: int
) -> list[Attempt]:
    """The next completed attempts in submission order (to the millisecond, then by id),
    after the attempt `after` (None: from the first)."""
    query = (
        select(Attempt)
        .where(
            Attempt.challenge_id == challenge_id,
            Attempt.status == AttemptStatus.COMPLETED,
            ENTRIES_ONLY,
        )
        .order_by(Attempt.created_at_ms, Attempt.id)
        .limit(limit)
    )
    if after is not None:
        query = query.where(
            tuple_(Attempt.created_at_ms, Attempt.id) > tuple_(after.created_at_ms, after.id)
        )
    return list(session.scalars(query))


def completed_since(session: Session, challenge_id: uuid.UUID, since: datetime) -> list[Attempt]:
    return list(
        session.scalars(
            select(Attempt).where(
                Attempt.challenge_id == challenge_id,
                Attempt.status == AttemptStatus.COMPLETED,
                Attempt.finished_at >= since,
                ENTRIES_ONLY,
            )
        )
    )


def set_scores(session: Session, scored: Sequence[Attempt]) -> None:
    """Writes the score and details set on these (detached) attempts; first, of those whose
    challenge is frozen now and that had finished by its freeze, keeps the score as it stands
    (`AttemptScoreAtFreeze`): what those who see the challenge frozen go on reading."""
    _keep_scores_at_freeze(session, [attempt.id for attempt in scored], utcnow())
    for attempt in scored:
        session.execute(
            update(Attempt)
            .where(Attempt.id == attempt.id)
            .values(score=attempt.score, score_details=attempt.score_details)
        )


def _keep_scores_at_freeze(
    session: Session, attempt_ids: Sequence[uuid.UUID], now: datetime
) -> None:
    """The stored scores of these attempts as the score at their challenge's freeze, for those
    of a challenge frozen now that had finished by its `freeze_at`: a score already kept for
    that `freeze_at` stays (it is the one of the freeze; the stored one came later), one kept
    for another is replaced."""
    if not attempt_ids:
        return
    kept = cast(Table, AttemptScoreAtFreeze.__table__)
    columns = ("attempt_id", "tenant_id", "freeze_at", "score", "score_details")
    as_they_stand = (
        select(
            Attempt.id, Attempt.tenant_id, Challenge.freeze_at, Attempt.score, Attempt.score_details
        )
        .join(Challenge, Challenge.id == Attempt.challenge_id)
        .where(
            Attempt.id.in_(attempt_ids),
            Challenge.freeze_at <= now,
            or_(Challenge.closes_at.is_(None), Challenge.closes_at > now),
            Attempt.finished_at < Challenge.freeze_at,
        )
    )
    statement = insert_for(session)(kept).from_select(columns, as_they_stand)
    session.execute(
        statement.on_conflict_do_update(
            index_elements=["attempt_id"],
            set_={name: statement.excluded[name] for name in columns[2:]},
            where=kept.c.freeze_at != statement.excluded.freeze_at,
        )
    )


# The claims: the attempt whose turn it is, taken under a lease.


@dataclass(frozen=True)
class Claimed:
    """An attempt a run just took, as the claim left it."""

    attempt: Attempt
    # Started for the first time by this claim: no run stored a trial before it.
    first_start: bool


_IN_TURN = (
    select(_ATTEMPTS.c.id)
    .where(
        or_(
            QUEUED,
            RUNNING & (_ATTEMPTS.c.lease_expires_at < bindparam("now", type_=UTCDateTime())),
        ),
        RUNNABLE_IN_ORDER,
    )
    .order_by(_ATTEMPTS.c.turn, _ATTEMPTS.c.created_at)
    .limit(1)
    .with_for_update(skip_locked=True)
)


def in_turn(session: Session, now: datetime) -> uuid.UUID | None:
    """The attempt whose turn it is, across tenants (for workers): the claimable one of the
    lowest turn, locked for this transaction; one another transaction holds is passed over,
    so workers claiming at once take different attempts. None when nothing is claimable."""
    return session.scalar(_IN_TURN, {"now": now})


def claimable(session: Session, attempt_id: uuid.UUID, now: datetime) -> bool:
    """Whether a worker may claim the attempt now (queued, or held under an expired lease)."""
    found = select(Attempt.id).where(Attempt.id == attempt_id, ATTEMPT_LEASES.claimable(now))
    return session.scalar(found) is not None


def claim(
    session: Session, attempt_id: uuid.UUID, token: uuid.UUID, now: datetime, lease_until: datetime
) -> Claimed | None:
    """Takes the attempt if it is queued, or running under an expired lease (its worker died),
    and reads it back in the same statement.

    None when someone else holds it or it is finished. (An admin's re-run keeps `started_at`,
    so only an attempt never started before is `first_start`.)
    """
    attempt = (
        leases.claim(
            session, ATTEMPT_LEASES, [attempt_id], token, now, lease_until, returning=[Attempt]
        )
        .scalars()
        .one_or_none()
    )
    if attempt is None:
        return None
    return Claimed(attempt, first_start=attempt.started_at == now)


def locked_if_held(session: Session, attempt_id: uuid.UUID, token: uuid.UUID) -> Attempt | None:
    return leases.lock_held(session, ATTEMPT_LEASES, attempt_id, token)


# The sweep: attempts whose task was lost, or whose worker died.


def stuck_queued(session: Session, before: datetime, limit: int) -> list[uuid.UUID]:
    return lock_some_ids(
        session,
        Attempt.id,
        Attempt.status == AttemptStatus.QUEUED,
        Attempt.enqueued_at < before,
        # A deleted challenge's attempts wait, unsent, until it is restored; a suspended
        # tenant's until it is resumed.
        challenge_work_runs(Attempt.challenge_id),
        oldest_first=Attempt.enqueued_at,
        limit=limit,
    )


def stuck_running(
    session: Session, now: datetime, requeued_before: datetime, limit: int
) -> list[uuid.UUID]:
    """Running attempts whose lease ran out since they were last sent (their worker is gone:
    at once), or whose re-send before `requeued_before` was lost too (`leases.lapsed`)."""
    return leases.lapsed(
        session,
        ATTEMPT_LEASES,
        now,
        requeued_before,
        oldest_first=Attempt.lease_expires_at,
        limit=limit,
    )


def mark_enqueued(session: Session, attempt_ids: list[uuid.UUID], now: datetime) -> None:
    if attempt_ids:
        session.execute(update(Attempt).where(Attempt.id.in_(attempt_ids)).values(enqueued_at=now))
