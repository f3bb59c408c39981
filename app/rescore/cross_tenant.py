"""SQL of the rescore worker: it takes a job id from the queue, not a tenant. The API process
never imports this module (an import-linter contract holds it so); it reads a tenant's jobs
through `app.rescore.repository.RescoreJobRepository`."""

from __future__ import annotations

import uuid

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from app.rescore.models import RescoreJob, RescoreStatus


def get(session: Session, job_id: uuid.UUID, *, lock: bool = False) -> RescoreJob | None:
    return session.get(RescoreJob, job_id, with_for_update=lock)


def newer_pending_exists(session: Session, job: RescoreJob) -> bool:
    """Whether a newer job of the same challenge is queued or running (it supersedes this)."""
    newer = session.scalar(
        select(func.count())
        .select_from(RescoreJob)
        .where(
            RescoreJob.challenge_id == job.challenge_id,
            RescoreJob.created_at > job.created_at,
            RescoreJob.status.in_((RescoreStatus.QUEUED, RescoreStatus.RUNNING)),
        )
    )
    return bool(newer)


def add_processed(session: Session, job_id: uuid.UUID, count: int) -> None:
    session.execute(
        update(RescoreJob)
        .where(RescoreJob.id == job_id)
        .values(processed=RescoreJob.processed + count)
    )
