"""Rescoring: after a challenge's scoring (or its plugin) changes, a job recomputes the scores
of its completed attempts and rebuilds its leaderboard on a worker (app/rescore/runner.py).
Here: the jobs requested, and a tenant's reads of them.
"""

from __future__ import annotations

import uuid

from sqlalchemy.orm import Session

from app.auth.subjects import PlatformAdmin
from app.challenge import service as challenges
from app.kit.db import utcnow
from app.kit.errors import NotFound
from app.kit.unit_of_work import UnitOfWork, WorkerTask
from app.rescore.models import RescoreJob, RescoreStatus
from app.rescore.repository import RescoreJobRepository

RESCORE_TASK = "gauntlet.rescore_challenge"
RESCORE = WorkerTask(RESCORE_TASK, "POST .../rescore to retry")


def request_rescore(
    work: UnitOfWork, tenant_id: uuid.UUID, challenge_id: uuid.UUID, reason: str
) -> RescoreJob:
    """Records a job, sent to a worker once the caller commits."""
    job = RescoreJob(
        id=uuid.uuid4(),
        challenge_id=challenge_id,
        status=RescoreStatus.QUEUED,
        reason=reason[:300],
        processed=0,
        created_at=utcnow(),
    )
    RescoreJobRepository(work.session, tenant_id).add(job)
    work.send_after_commit(RESCORE, str(job.id))
    return job


def request_challenge_rescore(
    work: UnitOfWork, tenant_id: uuid.UUID, challenge_id: uuid.UUID
) -> RescoreJob:
    """A tenant admin's request to score every completed attempt again (404 for a challenge
    that is not the tenant's)."""
    challenges.get_challenge(work.session, tenant_id, challenge_id)
    return request_rescore(work, tenant_id, challenge_id, "requested")


def request_rescores_for_plugin(
    work: UnitOfWork, admin: PlatformAdmin, plugin_id: str, reason: str
) -> list[RescoreJob]:
    """Jobs for every challenge, of every tenant, that scores with this plugin (the platform
    admin changed it)."""
    return [
        request_rescore(work, tenant_id, challenge_id, reason)
        for challenge_id, tenant_id in challenges.scoring_with_plugin(
            work.session, admin, plugin_id
        )
    ]


def page_jobs(
    session: Session, tenant_id: uuid.UUID, challenge_id: uuid.UUID, *, limit: int, offset: int
) -> tuple[list[RescoreJob], int]:
    """A page of the challenge's jobs, newest first, and how many it has (404 for a
    challenge not the tenant's)."""
    challenges.get_challenge(session, tenant_id, challenge_id)
    return RescoreJobRepository(session, tenant_id).page_of_challenge(challenge_id, limit, offset)


def get_job(session: Session, tenant_id: uuid.UUID, job_id: uuid.UUID) -> RescoreJob:
    job = RescoreJobRepository(session, tenant_id).get(job_id)
    if job is None:
        raise NotFound("rescore job not found")
    return job
