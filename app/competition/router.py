"""Rules acceptance and announcements over the API (docs/api.md, "Rules and announcements")."""

from __future__ import annotations

import uuid

from fastapi import APIRouter, Response, status

from app.auth.gate import TenantAdminDep, TenantKeyDep
from app.challenge.reference import ChallengeIdDep
from app.competition import service
from app.competition.schemas import (
    AnnouncementCreate,
    AnnouncementList,
    AnnouncementPosted,
    RulesAcceptanceCreate,
    RulesAcceptanceRead,
)
from app.kit.conditional import CONDITIONAL_READ
from app.kit.deps import SessionDep, UnitOfWorkDep
from app.kit.error_codes import NO_RULES, raises
from app.kit.routing import ApiRoute
from app.kit.schemas import Limit, Offset

router = APIRouter(prefix="/v1/challenges", tags=["challenges"], route_class=ApiRoute)


@router.post(
    "/{challenge_id}/rules/acceptance",
    status_code=status.HTTP_201_CREATED,
    responses=raises(
        NO_RULES,
        also={
            200: {
                "model": RulesAcceptanceRead,
                "description": "This participant had accepted this version: the same record.",
            }
        },
    ),
)
def accept_rules(
    challenge_id: ChallengeIdDep,
    body: RulesAcceptanceCreate,
    work: UnitOfWorkDep,
    caller: TenantKeyDep,
    response: Response,
) -> RulesAcceptanceRead:
    """Record that a participant (`participant`, created on first use) accepts the
    challenge's rules as they are now. Until a participant has, their submissions to a
    challenge with rules are refused (409 `rules_not_accepted`)."""
    accepted, created = service.accept_rules(work.session, caller, challenge_id, body.participant)
    work.commit()
    if not created:
        response.status_code = status.HTTP_200_OK
    return accepted


@router.post("/{challenge_id}/announcements", status_code=status.HTTP_201_CREATED)
def post_announcement(
    challenge_id: ChallengeIdDep,
    body: AnnouncementCreate,
    work: UnitOfWorkDep,
    caller: TenantAdminDep,
) -> AnnouncementPosted:
    """Post an announcement (tenant admin): shown on the challenge's page, and mailed to
    its participants who have a confirmed address and get notification emails (`mailed`
    says how many)."""
    posted = service.post_announcement(work, caller.tenant_id, challenge_id, body)
    work.commit()
    return posted


@router.get("/{challenge_id}/announcements", responses=CONDITIONAL_READ)
def list_announcements(
    challenge_id: ChallengeIdDep,
    session: SessionDep,
    caller: TenantKeyDep,
    limit: Limit = 50,
    offset: Offset = 0,
) -> AnnouncementList:
    """The challenge's announcements, newest first."""
    items, total = service.list_announcements(
        session, caller.tenant_id, challenge_id, caller.audience, limit=limit, offset=offset
    )
    return AnnouncementList(items=items, total=total, limit=limit, offset=offset)


@router.delete(
    "/{challenge_id}/announcements/{announcement_id}", status_code=status.HTTP_204_NO_CONTENT
)
def delete_announcement(
    challenge_id: ChallengeIdDep,
    announcement_id: uuid.UUID,
    work: UnitOfWorkDep,
    caller: TenantAdminDep,
) -> Response:
    """Take an announcement off the challenge's page (tenant admin); mail sent stays sent."""
    service.delete_announcement(work.session, caller.tenant_id, challenge_id, announcement_id)
    work.commit()
    return Response(status_code=status.HTTP_204_NO_CONTENT)
