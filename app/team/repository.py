"""SQL for teams and their members, always scoped to one tenant."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Collection
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.team.models import Team, TeamMember
from app.tenant.models import Participant


class TeamRepository:
    def __init__(self, session: Session, tenant_id: uuid.UUID) -> None:
        self.session = session
        self.tenant_id = tenant_id

    def _named(self, challenge_id: uuid.UUID, *conditions: Any) -> tuple[Team, str] | None:
        """The challenge's team that meets the conditions, and its name."""
        row = self.session.execute(
            select(Team, Participant.handle)
            .join(Participant, Participant.id == Team.id)
            .where(Team.tenant_id == self.tenant_id, Team.challenge_id == challenge_id, *conditions)
        ).first()
        return None if row is None else (row[0], row[1])

    def get(self, challenge_id: uuid.UUID, team_id: uuid.UUID) -> tuple[Team, str] | None:
        """The challenge's team and its name."""
        return self._named(challenge_id, Team.id == team_id)

    def by_invite_code(self, challenge_id: uuid.UUID, code_hash: str) -> tuple[Team, str] | None:
        return self._named(challenge_id, Team.invite_code_hash == code_hash)

    def is_team(self, participant_id: uuid.UUID) -> bool:
        found = self.session.scalar(
            select(Team.id).where(Team.tenant_id == self.tenant_id, Team.id == participant_id)
        )
        return found is not None

    def team_of_member(self, challenge_id: uuid.UUID, member_id: uuid.UUID) -> uuid.UUID | None:
        return self.session.scalar(
            select(TeamMember.team_id).where(
                TeamMember.tenant_id == self.tenant_id,
                TeamMember.challenge_id == challenge_id,
                TeamMember.member_id == member_id,
            )
        )

    def teams_of_member(
        self, member_id: uuid.UUID, challenge_ids: Collection[uuid.UUID]
    ) -> dict[uuid.UUID, uuid.UUID]:
        """The participant's team at each of these challenges where they are in one."""
        if not challenge_ids:
            return {}
        rows = self.session.execute(
            select(TeamMember.challenge_id, TeamMember.team_id).where(
                TeamMember.tenant_id == self.tenant_id,
                TeamMember.member_id == member_id,
                TeamMember.challenge_id.in_(challenge_ids),
            )
        )
        return {challenge_id: team_id for challenge_id, team_id in rows.tuples()}

    def page(
        self, challenge_id: uuid.UUID, limit: int, offset: int
    ) -> tuple[list[tuple[Team, str]], int]:
        """A page of the challenge's teams by name, and how many it has."""
        scoped = (Team.tenant_id == self.tenant_id, Team.challenge_id == challenge_id)
        rows = self.session.execute(
            select(Team, Participant.handle)
            .join(Participant, Participant.id == Team.id)
            .where(*scoped)
            .order_by(func.lower(Participant.handle), Team.id)
            .limit(limit)
            .offset(offset)
        )
        total = self.session.scalar(select(func.count()).select_from(Team).where(*scoped))
        return [(row[0], row[1]) for row in rows], total or 0

    def members(
        self, team_ids: Collection[uuid.UUID]
    ) -> dict[uuid.UUID, list[tuple[str, datetime]]]:
        """Each team's members (handle, when they joined), oldest member first."""
        if not team_ids:
            return {}
        rows = self.session.execute(
            select(TeamMember.team_id, Participant.handle, TeamMember.joined_at)
            .join(Participant, Participant.id == TeamMember.member_id)
            .where(TeamMember.tenant_id == self.tenant_id, TeamMember.team_id.in_(team_ids))
            .order_by(TeamMember.joined_at, Participant.handle)
        )
        found: dict[uuid.UUID, list[tuple[str, datetime]]] = defaultdict(list)
        for team_id, handle, joined_at in rows:
            found[team_id].append((handle, joined_at))
        return dict(found)

    def member_count(self, team_id: uuid.UUID) -> int:
        count = self.session.scalar(
            select(func.count())
            .select_from(TeamMember)
            .where(TeamMember.tenant_id == self.tenant_id, TeamMember.team_id == team_id)
        )
        return count or 0

    def add(self, team: Team, first_member: TeamMember) -> bool:
        """Inserts the team and its first member; False when the member joined a team of the
        challenge meanwhile (the members' key decides races)."""
        try:
            with self.session.begin_nested():
                self.session.add(team)
                self.session.flush()
                self.session.add(first_member)
        except IntegrityError:
            return False
        return True

    def add_member(self, member: TeamMember) -> bool:
        """False when the participant joined a team of the challenge meanwhile."""
        try:
            with self.session.begin_nested():
                self.session.add(member)
        except IntegrityError:
            return False
        return True

    def remove_member(self, challenge_id: uuid.UUID, member_id: uuid.UUID) -> None:
        self.session.execute(
            delete(TeamMember).where(
                TeamMember.tenant_id == self.tenant_id,
                TeamMember.challenge_id == challenge_id,
                TeamMember.member_id == member_id,
            )
        )

    def remove_team(self, team_id: uuid.UUID) -> None:
        """Deletes the team's participant row, and with it (cascades) the team: its name is
        free again. Only a team with no entries is removed (its members all left)."""
        self.session.execute(
            delete(Participant).where(
                Participant.tenant_id == self.tenant_id, Participant.id == team_id
            )
        )
