"""Teams: participants who play one challenge as one (docs/teams.md).

A team is a participant of the tenant, scoped to one challenge; its members' entries are
recorded under it (the submission paths ask `SubmissionTarget.team_id`), so limits, boards,
pairing and exports count it as one player. The rules here keep that one player honest:
joining closes at the team's first entry (unless the challenge says otherwise), leaving
does too (a member who left could play again alone and multiply the team's quota), and a
participant who has entries of their own joins no team.
"""

from __future__ import annotations

import hashlib
import secrets
import uuid
from datetime import datetime
from typing import NamedTuple

from sqlalchemy.orm import Session

from app.challenge.config import ChallengeState
from app.challenge.models import Challenge
from app.challenge.registry import kind_as
from app.challenge.service import get_challenge
from app.kit.db import utcnow
from app.kit.error_codes import (
    ALREADY_IN_TEAM,
    CHALLENGE_NOT_LIVE,
    HAS_OWN_ENTRIES,
    TEAM_FULL,
    TEAM_HAS_ENTRIES,
    TEAM_NAME_TAKEN,
    TEAMS_NOT_ALLOWED,
)
from app.kit.errors import Conflict, NotFound, ValidationFailed
from app.team.models import Team, TeamMember
from app.team.repository import TeamRepository
from app.team.schemas import (
    InviteCode,
    TeamCreate,
    TeamCreated,
    TeamJoin,
    TeamList,
    TeamMemberRead,
    TeamRead,
)
from app.team.team_kind import TeamKind
from app.tenant.service import (
    add_passwordless,
    lock_participant,
    participant_by_handle,
    participant_for_handle,
)


def _code_hash(code: str) -> str:
    # Codes are long random strings (as API keys are), so a fast hash is safe to keep.
    return hashlib.sha256(code.encode()).hexdigest()


def _team_challenge(session: Session, tenant_id: uuid.UUID, challenge_id: uuid.UUID) -> Challenge:
    challenge = get_challenge(session, tenant_id, challenge_id)
    if challenge.limits.max_team_size is None:
        raise Conflict(
            "this challenge is played individually: it allows no teams "
            "(its limits.max_team_size is not set)",
            code=TEAMS_NOT_ALLOWED,
        )
    if challenge.state is not ChallengeState.LIVE:
        # A draft is its admins' alone and an archive read-only: neither is played.
        raise Conflict(
            f"this challenge is {challenge.state.value}: teams form on live ones",
            code=CHALLENGE_NOT_LIVE,
        )
    return challenge


def _entrants(
    session: Session, challenge: Challenge, participant_ids: list[uuid.UUID]
) -> set[uuid.UUID]:
    kind = kind_as(challenge.kind, TeamKind)
    return kind.entrants(session, challenge.tenant_id, challenge.id, participant_ids)


def _player(
    session: Session, repo: TeamRepository, challenge: Challenge, handle: str
) -> tuple[uuid.UUID, str]:
    """The participant acting (created on first use), who must be free to join a team here:
    not a team, in no team of this challenge, without entries of their own in it."""
    participant_id, first_spelling = participant_for_handle(session, challenge.tenant_id, handle)
    if repo.is_team(participant_id):
        raise ValidationFailed.at(["participant"], f"{first_spelling} is a team, not a member")
    if repo.team_of_member(challenge.id, participant_id) is not None:
        raise Conflict(
            f"{first_spelling} is already in a team in this challenge: leave it first "
            "(a participant plays a challenge in one team at most)",
            code=ALREADY_IN_TEAM,
        )
    if _entrants(session, challenge, [participant_id]):
        raise Conflict(
            f"{first_spelling} has entries of their own in this challenge, so joins no team "
            "in it (their entries would stay apart from the team's, outside its limits)",
            code=HAS_OWN_ENTRIES,
        )
    return participant_id, first_spelling


def _read(team: Team, name: str, members: list[tuple[str, datetime]]) -> TeamRead:
    return TeamRead(
        id=team.id,
        challenge_id=team.challenge_id,
        name=name,
        members=[TeamMemberRead(participant=h, joined_at=at) for h, at in members],
        created_at=team.created_at,
    )


def _view(repo: TeamRepository, team: Team, name: str) -> TeamRead:
    return _read(team, name, repo.members([team.id]).get(team.id, []))


def create_team(
    session: Session, tenant_id: uuid.UUID, challenge_id: uuid.UUID, body: TeamCreate
) -> TeamCreated:
    """A new team of the challenge with the participant as its first member, and the invite
    code others join with (shown here only)."""
    challenge = _team_challenge(session, tenant_id, challenge_id)
    repo = TeamRepository(session, tenant_id)
    member_id, _ = _player(session, repo, challenge, body.participant)
    named = add_passwordless(session, tenant_id, body.name)
    if named is None:
        raise Conflict(
            f"the name {body.name} is taken by a participant or a team of this tenant: "
            "choose another",
            code=TEAM_NAME_TAKEN,
        )
    code = secrets.token_urlsafe(24)
    now = utcnow()
    team = Team(
        id=named.id,
        tenant_id=tenant_id,
        challenge_id=challenge.id,
        invite_code_hash=_code_hash(code),
        created_at=now,
    )
    first = TeamMember(
        challenge_id=challenge.id,
        member_id=member_id,
        tenant_id=tenant_id,
        team_id=team.id,
        joined_at=now,
    )
    if not repo.add(team, first):
        raise Conflict(
            f"{body.participant} joined a team in this challenge meanwhile", code=ALREADY_IN_TEAM
        )
    return TeamCreated(**_view(repo, team, named.handle).model_dump(), invite_code=code)


def join_team(
    session: Session, tenant_id: uuid.UUID, challenge_id: uuid.UUID, body: TeamJoin
) -> TeamRead:
    """Adds the participant to the team the invite code is for."""
    challenge = _team_challenge(session, tenant_id, challenge_id)
    repo = TeamRepository(session, tenant_id)
    found = repo.by_invite_code(challenge.id, _code_hash(body.invite_code))
    if found is None:
        raise ValidationFailed.at(["invite_code"], "is no team's invite code in this challenge")
    team, name = found
    member_id, handle = _player(session, repo, challenge, body.participant)
    lock_participant(session, tenant_id, team.id)
    max_size = challenge.limits.max_team_size
    if max_size is not None and repo.member_count(team.id) >= max_size:
        raise Conflict(
            f"team {name} is full: this challenge allows {max_size} members a team",
            code=TEAM_FULL,
        )
    if not challenge.limits.team_joins_after_first_entry and _entrants(
        session, challenge, [team.id]
    ):
        raise Conflict(
            f"team {name} has entries in this challenge: joining closed at its first entry",
            code=TEAM_HAS_ENTRIES,
        )
    member = TeamMember(
        challenge_id=challenge.id,
        member_id=member_id,
        tenant_id=tenant_id,
        team_id=team.id,
        joined_at=utcnow(),
    )
    if not repo.add_member(member):
        raise Conflict(f"{handle} joined a team in this challenge meanwhile", code=ALREADY_IN_TEAM)
    return _view(repo, team, name)


class _Membership(NamedTuple):
    repo: TeamRepository
    challenge: Challenge
    team: Team
    name: str
    member_id: uuid.UUID


def _member_team(
    session: Session,
    tenant_id: uuid.UUID,
    challenge_id: uuid.UUID,
    team_id: uuid.UUID,
    handle: str,
) -> _Membership:
    """The challenge, its team and the member with this handle (404 when any is not)."""
    challenge = get_challenge(session, tenant_id, challenge_id)
    repo = TeamRepository(session, tenant_id)
    found = repo.get(challenge_id, team_id)
    if found is None:
        raise NotFound("team not found")
    team, name = found
    member = participant_by_handle(session, tenant_id, handle)
    if member is None or repo.team_of_member(challenge_id, member.id) != team.id:
        raise NotFound(f"{handle} is not a member of team {name}")
    return _Membership(repo, challenge, team, name, member.id)


def new_invite_code(
    session: Session,
    tenant_id: uuid.UUID,
    challenge_id: uuid.UUID,
    team_id: uuid.UUID,
    handle: str,
) -> InviteCode:
    """A new invite code for the team, asked by a member (the code is kept only as a hash,
    so a lost one is replaced, never read back); the old code stops working."""
    team = _member_team(session, tenant_id, challenge_id, team_id, handle).team
    code = secrets.token_urlsafe(24)
    team.invite_code_hash = _code_hash(code)
    session.flush()
    return InviteCode(invite_code=code)


def leave_team(
    session: Session,
    tenant_id: uuid.UUID,
    challenge_id: uuid.UUID,
    team_id: uuid.UUID,
    handle: str,
) -> None:
    """Takes the participant out of the team, before its first entry only. A team whose
    last member leaves is deleted, and its name is free again."""
    repo, challenge, team, name, member_id = _member_team(
        session, tenant_id, challenge_id, team_id, handle
    )
    lock_participant(session, tenant_id, team.id)
    if _entrants(session, challenge, [team.id]):
        raise Conflict(
            f"team {name} has entries in this challenge: its members stay in it (a member who "
            "left could play again and count the team's limits twice)",
            code=TEAM_HAS_ENTRIES,
        )
    repo.remove_member(challenge_id, member_id)
    if repo.member_count(team.id) == 0:
        repo.remove_team(team.id)


def read_team(
    session: Session, tenant_id: uuid.UUID, challenge_id: uuid.UUID, team_id: uuid.UUID
) -> TeamRead:
    get_challenge(session, tenant_id, challenge_id)
    repo = TeamRepository(session, tenant_id)
    found = repo.get(challenge_id, team_id)
    if found is None:
        raise NotFound("team not found")
    return _view(repo, *found)


def list_teams(
    session: Session, tenant_id: uuid.UUID, challenge_id: uuid.UUID, *, limit: int, offset: int
) -> TeamList:
    get_challenge(session, tenant_id, challenge_id)
    repo = TeamRepository(session, tenant_id)
    rows, total = repo.page(challenge_id, limit, offset)
    members = repo.members([team.id for team, _ in rows])
    items = [_read(team, name, members.get(team.id, [])) for team, name in rows]
    return TeamList(items=items, total=total, limit=limit, offset=offset)


def team_of(
    session: Session, tenant_id: uuid.UUID, challenge_id: uuid.UUID, member_id: uuid.UUID
) -> TeamRead | None:
    """The team the participant plays this challenge in, if any (for their own pages)."""
    repo = TeamRepository(session, tenant_id)
    team_id = repo.team_of_member(challenge_id, member_id)
    if team_id is None:
        return None
    found = repo.get(challenge_id, team_id)
    return None if found is None else _view(repo, *found)


def member_handles(
    session: Session, tenant_id: uuid.UUID, participant_ids: list[uuid.UUID]
) -> dict[uuid.UUID, list[str]]:
    """The members of those of the participants that are teams (board rows list them)."""
    members = TeamRepository(session, tenant_id).members(participant_ids)
    return {team_id: [handle for handle, _ in rows] for team_id, rows in members.items()}


def player_id(
    session: Session, tenant_id: uuid.UUID, challenge_id: uuid.UUID, participant_id: uuid.UUID
) -> uuid.UUID:
    """Whose entries the participant's are in this challenge: their team's, or their own (what
    the limits count for them)."""
    team_id = TeamRepository(session, tenant_id).team_of_member(challenge_id, participant_id)
    return participant_id if team_id is None else team_id


def players_at(
    session: Session,
    tenant_id: uuid.UUID,
    participant_id: uuid.UUID,
    challenge_ids: list[uuid.UUID],
) -> dict[uuid.UUID, list[uuid.UUID]]:
    """The challenges grouped by whose entries are the participant's at each: their own (the
    participant's id) or a team's (one team per challenge). For the pages that list a
    participant's results across challenges."""
    teams = TeamRepository(session, tenant_id).teams_of_member(participant_id, challenge_ids)
    grouped: dict[uuid.UUID, list[uuid.UUID]] = {}
    for challenge_id in challenge_ids:
        grouped.setdefault(teams.get(challenge_id, participant_id), []).append(challenge_id)
    return grouped
