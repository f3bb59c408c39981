"""Teams of a challenge (docs/teams.md). Each route parses, calls one service function and
returns its view. A tenant key acts for the participant its body (or path) names, as it
does for submissions."""

from __future__ import annotations

import uuid

from fastapi import APIRouter, Response, status

from app.auth.gate import TenantKeyDep
from app.challenge.reference import ChallengeIdDep
from app.kit.deps import SessionDep, UnitOfWorkDep
from app.kit.error_codes import (
    ALREADY_IN_TEAM,
    CHALLENGE_NOT_LIVE,
    HAS_OWN_ENTRIES,
    QUOTA_MAX_PARTICIPANTS,
    TEAM_FULL,
    TEAM_HAS_ENTRIES,
    TEAM_NAME_TAKEN,
    TEAMS_NOT_ALLOWED,
    raises,
)
from app.kit.routing import ApiRoute
from app.kit.schemas import Handle, Limit, Offset
from app.team import service
from app.team.schemas import (
    InviteCode,
    TeamCreate,
    TeamCreated,
    TeamJoin,
    TeamList,
    TeamMemberAct,
    TeamRead,
)

router = APIRouter(prefix="/v1", tags=["teams"], route_class=ApiRoute)

# Why a challenge has no team to form or join.
_NO_TEAMS = (TEAMS_NOT_ALLOWED, CHALLENGE_NOT_LIVE)


@router.post(
    "/challenges/{challenge_id}/teams",
    status_code=status.HTTP_201_CREATED,
    responses=raises(
        *_NO_TEAMS, ALREADY_IN_TEAM, HAS_OWN_ENTRIES, TEAM_NAME_TAKEN, QUOTA_MAX_PARTICIPANTS
    ),
)
def post_team(
    challenge_id: ChallengeIdDep,
    body: TeamCreate,
    work: UnitOfWorkDep,
    caller: TenantKeyDep,
    response: Response,
) -> TeamCreated:
    """Create a team with the participant as its first member. The answer holds the invite
    code others join with: it is shown here only."""
    created = service.create_team(work.session, caller.tenant_id, challenge_id, body)
    work.commit()
    response.headers["Location"] = f"/v1/challenges/{challenge_id}/teams/{created.id}"
    return created


@router.post(
    "/challenges/{challenge_id}/teams/join",
    responses=raises(
        *_NO_TEAMS,
        ALREADY_IN_TEAM,
        HAS_OWN_ENTRIES,
        TEAM_FULL,
        TEAM_HAS_ENTRIES,
        QUOTA_MAX_PARTICIPANTS,
    ),
)
def post_team_join(
    challenge_id: ChallengeIdDep, body: TeamJoin, work: UnitOfWorkDep, caller: TenantKeyDep
) -> TeamRead:
    """Join the team the invite code is for (before its first entry, unless the challenge's
    `limits.team_joins_after_first_entry` allows later joins)."""
    team = service.join_team(work.session, caller.tenant_id, challenge_id, body)
    work.commit()
    return team


@router.delete(
    "/challenges/{challenge_id}/teams/{team_id}/members/{participant}",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=raises(TEAM_HAS_ENTRIES),
)
def delete_team_member(
    challenge_id: ChallengeIdDep,
    team_id: uuid.UUID,
    participant: Handle,
    work: UnitOfWorkDep,
    caller: TenantKeyDep,
) -> Response:
    """Leave the team (before its first entry only). The last member leaving deletes it."""
    service.leave_team(work.session, caller.tenant_id, challenge_id, team_id, participant)
    work.commit()
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post("/challenges/{challenge_id}/teams/{team_id}/invite-code")
def post_invite_code(
    challenge_id: ChallengeIdDep,
    team_id: uuid.UUID,
    body: TeamMemberAct,
    work: UnitOfWorkDep,
    caller: TenantKeyDep,
) -> InviteCode:
    """A new invite code, asked by a member: codes are kept only as hashes, so a lost one is
    replaced, never read back. The previous code stops working."""
    code = service.new_invite_code(
        work.session, caller.tenant_id, challenge_id, team_id, body.participant
    )
    work.commit()
    return code


@router.get("/challenges/{challenge_id}/teams")
def get_teams(
    challenge_id: ChallengeIdDep,
    session: SessionDep,
    caller: TenantKeyDep,
    limit: Limit = 50,
    offset: Offset = 0,
) -> TeamList:
    """The challenge's teams by name, with their members."""
    return service.list_teams(session, caller.tenant_id, challenge_id, limit=limit, offset=offset)


@router.get("/challenges/{challenge_id}/teams/{team_id}")
def get_team(
    challenge_id: ChallengeIdDep, team_id: uuid.UUID, session: SessionDep, caller: TenantKeyDep
) -> TeamRead:
    """A team and its members (never its invite code)."""
    return service.read_team(session, caller.tenant_id, challenge_id, team_id)
