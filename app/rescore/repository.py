"""SQL for rescore jobs. Reads of the API are scoped to a tenant; the worker's take a job id
from the queue."""

from __future__ import annotations

import uuid

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from app.db import page_where
from app.rescore.models import RescoreJob, RescoreStatus


def add(session: Session, job: RescoreJob) -> None:
    session.add(job)
    session.flush()


def get_for_tenant(session: Session, tenant_id: uuid.UUID, job_id: uuid.UUID) -> RescoreJob | None:
    return session.scalar(
        select(RescoreJob).where(RescoreJob.tenant_id == tenant_id, RescoreJob.id == job_id)
    )


def page_of_challenge(
    session: Session, tenant_id: uuid.UUID, challenge_id: uuid.UUID, limit: int, offset: int
) -> tuple[list[RescoreJob], int]:
    return page_where(
        session,
        RescoreJob,
        [RescoreJob.tenant_id == tenant_id, RescoreJob.challenge_id == challenge_id],
        (RescoreJob.created_at.desc(), RescoreJob.id),
        limit=limit,
        offset=offset,
    )


# Worker side -------------------------------------------------------------------------------


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
