"""Rescore jobs over HTTP: request one, follow its progress."""

from __future__ import annotations

import uuid

from fastapi import APIRouter, status

from app.auth.gate import TenantAdminDep
from app.challenge.reference import ChallengeIdDep
from app.kit.deps import SessionDep, UnitOfWorkDep
from app.kit.routing import ApiRoute
from app.kit.schemas import Limit, Offset
from app.rescore import service
from app.rescore.schemas import RescoreJobList, RescoreJobRead

router = APIRouter(prefix="/v1", route_class=ApiRoute)


@router.post(
    "/challenges/{challenge_id}/rescore",
    status_code=status.HTTP_202_ACCEPTED,
    tags=["challenges"],
)
def post_rescore(
    challenge_id: ChallengeIdDep, work: UnitOfWorkDep, caller: TenantAdminDep
) -> RescoreJobRead:
    """Score every completed attempt again and rebuild the leaderboard (tenant admin)."""
    job = service.request_challenge_rescore(work, caller.tenant_id, challenge_id)
    work.commit()
    return RescoreJobRead.model_validate(job)


@router.get("/challenges/{challenge_id}/rescore-jobs", tags=["challenges"])
def get_rescore_jobs(
    challenge_id: ChallengeIdDep,
    session: SessionDep,
    caller: TenantAdminDep,
    limit: Limit = 50,
    offset: Offset = 0,
) -> RescoreJobList:
    """The challenge's rescore jobs with their progress, newest first (tenant admin: a job
    counts the challenge's attempts, those made in a freeze too)."""
    jobs, total = service.page_jobs(
        session, caller.tenant_id, challenge_id, limit=limit, offset=offset
    )
    return RescoreJobList(
        items=[RescoreJobRead.model_validate(j) for j in jobs],
        total=total,
        limit=limit,
        offset=offset,
    )


@router.get("/rescore-jobs/{job_id}", tags=["scorers"])
def get_rescore_job(
    job_id: uuid.UUID, session: SessionDep, caller: TenantAdminDep
) -> RescoreJobRead:
    """Progress of one rescore job: `processed` of `total` attempts, then `completed`
    (tenant admin)."""
    return RescoreJobRead.model_validate(service.get_job(session, caller.tenant_id, job_id))
