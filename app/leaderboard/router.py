from __future__ import annotations

import uuid

from fastapi import APIRouter

from app.auth.gate import TenantKeyDep
from app.deps import SessionDep
from app.leaderboard import service
from app.leaderboard.schemas import Leaderboard
from app.schemas import Limit, Offset

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
    return service.read_tenant_leaderboard(
        session, caller.tenant_id, challenge_id, limit=limit, offset=offset
    )


@router.get("/public/{tenant_slug}/challenges/{challenge_slug}/leaderboard")
def get_public_leaderboard(
    tenant_slug: str,
    challenge_slug: str,
    session: SessionDep,
    limit: Limit = 50,
    offset: Offset = 0,
) -> Leaderboard:
    """The leaderboard of a public challenge, without credentials. Others answer 404."""
    return service.read_public_leaderboard(
        session, tenant_slug, challenge_slug, limit=limit, offset=offset
    )
