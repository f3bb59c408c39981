"""The tenant's participants list. It lives with the challenges, not the tenant, since which
participants a reader sees depends on the challenges' freezes (`participants_as_seen`)."""

from __future__ import annotations

from fastapi import APIRouter

from app.auth.gate import TenantKeyDep
from app.challenge import service
from app.kit.deps import SessionDep
from app.kit.routing import ApiRoute
from app.kit.schemas import Limit, Offset
from app.tenant.schemas import ParticipantList, ParticipantRead

router = APIRouter(prefix="/v1", tags=["participants"], route_class=ApiRoute)


@router.get("/participants")
def get_participants(
    session: SessionDep, caller: TenantKeyDep, limit: Limit = 50, offset: Offset = 0
) -> ParticipantList:
    """The tenant's participants by handle. While one of the tenant's challenges is frozen,
    member keys see those made before its freeze began (until its close); admin keys all."""
    rows, total = service.participants_as_seen(
        session, caller.tenant_id, caller.audience, limit=limit, offset=offset
    )
    return ParticipantList(
        items=[ParticipantRead.model_validate(p) for p in rows],
        total=total,
        limit=limit,
        offset=offset,
    )
