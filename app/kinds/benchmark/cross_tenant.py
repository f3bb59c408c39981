"""The benchmark kind's statements that cross tenants by design, on the worker side only: a
worker claims a private run by its id alone, reads what it runs, and holds it under its
lease; the sweep finds the private runs of every tenant that need sending again. The request
path never imports this module (an import-linter contract, pyproject.toml); its statements
are app/kinds/benchmark/repository.py's, bound to one tenant."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from app.kinds.api import leases
from app.kinds.api.storage import Attempt, Challenge
from app.kinds.benchmark.models import SEALED_RUN_LEASES, SealedRun


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


def held_sealed_run(session: Session, run_id: uuid.UUID, token: uuid.UUID) -> SealedRun | None:
    """The private run, locked, if this token still holds it."""
    return leases.lock_held(session, SEALED_RUN_LEASES, run_id, token)


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
