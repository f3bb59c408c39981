"""Deleted challenges, for their tenant's admins: list, restore, purge. A deleted challenge is
kept, hidden from everyone else, until one of them restores or purges it."""

from __future__ import annotations

import uuid

from fastapi import APIRouter, Response, status

from app.auth.gate import TenantAdminDep
from app.challenge import service
from app.challenge.schemas import ChallengeList, ChallengeRead, ChallengeRestore
from app.kit.deps import SessionDep, UnitOfWorkDep
from app.kit.error_codes import QUOTA_MAX_CHALLENGES, SLUG_TAKEN, raises
from app.kit.routing import ApiRoute
from app.kit.schemas import Limit, Offset

router = APIRouter(prefix="/v1/deleted-challenges", tags=["challenges"], route_class=ApiRoute)


@router.get("")
def list_deleted_challenges(
    session: SessionDep, caller: TenantAdminDep, limit: Limit = 50, offset: Offset = 0
) -> ChallengeList:
    """The tenant's deleted challenges, the latest deleted first (tenant admin)."""
    rows, total = service.deleted_challenges(session, caller.tenant_id, limit=limit, offset=offset)
    return ChallengeList(
        items=[service.to_admin_view(c) for c in rows], total=total, limit=limit, offset=offset
    )


@router.post(
    "/{challenge_id}/restore",
    responses=raises(SLUG_TAKEN, QUOTA_MAX_CHALLENGES),
)
def restore_challenge(
    challenge_id: uuid.UUID,
    work: UnitOfWorkDep,
    caller: TenantAdminDep,
    body: ChallengeRestore | None = None,
) -> ChallengeRead:
    """Restore a deleted challenge with its data, as it was (tenant admin)."""
    slug = body.slug if body is not None else None
    challenge = service.restore_challenge(work.session, caller.tenant_id, challenge_id, slug)
    work.commit()
    return service.to_admin_view(challenge)


@router.delete("/{challenge_id}", status_code=status.HTTP_204_NO_CONTENT)
def purge_challenge(
    challenge_id: uuid.UUID, work: UnitOfWorkDep, caller: TenantAdminDep
) -> Response:
    """Purge a deleted challenge: remove it for good with its attempts, trials, boards and a
    red-blue challenge's defenses, attacks and matches (tenant admin)."""
    service.purge_challenge(work.session, caller.tenant_id, challenge_id)
    work.commit()
    return Response(status_code=status.HTTP_204_NO_CONTENT)
