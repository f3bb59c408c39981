from __future__ import annotations

import uuid

from fastapi import APIRouter

from app.challenge.repository import get_public_challenge
from app.challenge.service import get_challenge
from app.deps import SessionDep, TenantKeyDep
from app.errors import NotFound
from app.leaderboard.schemas import Leaderboard
from app.leaderboard.service import read_leaderboard
from app.schemas import Limit, Offset
from app.scoring import rescore
from app.scoring.schemas import RescoreJobRead

router = APIRouter(prefix="/v1", tags=["leaderboards"])


@router.get("/challenges/{challenge_id}/leaderboard")
def get_leaderboard(
    challenge_id: uuid.UUID,
    session: SessionDep,
    caller: TenantKeyDep,
    limit: Limit = 50,
    offset: Offset = 0,
) -> Leaderboard:
    """One row per participant (their best attempt under the strategy), best first."""
    challenge = get_challenge(session, caller.tenant_id, challenge_id)
    return read_leaderboard(session, challenge, limit=limit, offset=offset)


@router.get("/public/{tenant_slug}/challenges/{challenge_slug}/leaderboard")
def get_public_leaderboard(
    tenant_slug: str,
    challenge_slug: str,
    session: SessionDep,
    limit: Limit = 50,
    offset: Offset = 0,
) -> Leaderboard:
    """The leaderboard of a public challenge, without credentials. Others answer 404."""
    challenge = get_public_challenge(session, tenant_slug, challenge_slug)
    if challenge is None:
        raise NotFound("no public challenge at this address")
    return read_leaderboard(session, challenge, limit=limit, offset=offset)


@router.get("/rescore-jobs/{job_id}", tags=["scorers"])
def get_rescore_job(job_id: uuid.UUID, session: SessionDep, caller: TenantKeyDep) -> RescoreJobRead:
    """Progress of one rescore job: `processed` of `total` attempts, then `completed`."""
    return RescoreJobRead.model_validate(rescore.get_job(session, caller.tenant_id, job_id))
