"""The competition domain's SQL of one tenant (`CompetitionRepository`). The notices' sweep's,
which reads across tenants, is in app.competition.cross_tenant."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import Select, and_, func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from app.competition.models import Announcement, ChallengeNotice, RulesAcceptance
from app.kit.db import utcnow
from app.team.models import TeamMember
from app.tenant.models import Participant

# The unique keys the inserts below skip a duplicate of.
_UNIQUE_KEYS = {
    RulesAcceptance: (
        RulesAcceptance.challenge_id,
        RulesAcceptance.participant_id,
        RulesAcceptance.rules_sha256,
    ),
    ChallengeNotice: (
        ChallengeNotice.challenge_id,
        ChallengeNotice.event,
        ChallengeNotice.closes_at,
    ),
}


class CompetitionRepository:
    def __init__(self, session: Session, tenant_id: uuid.UUID) -> None:
        self.session = session
        self.tenant_id = tenant_id

    def _insert_new(
        self, model: type[RulesAcceptance] | type[ChallengeNotice], values: dict[str, Any]
    ) -> uuid.UUID | None:
        """Inserts the row unless one with the same unique key exists (also in a
        transaction not yet committed: this one waits for it); the new row's id, or None."""
        keys = [column.key for column in _UNIQUE_KEYS[model]]
        if self.session.get_bind().dialect.name == "postgresql":
            pg = postgresql.insert(model).values(values).on_conflict_do_nothing(index_elements=keys)
            return self.session.execute(pg.returning(model.id)).scalar()
        lite = sqlite.insert(model).values(values).on_conflict_do_nothing(index_elements=keys)
        return self.session.execute(lite.returning(model.id)).scalar()

    # Rules acceptances ------------------------------------------------------------------------

    def accept(self, challenge_id: uuid.UUID, participant_id: uuid.UUID, rules_sha256: str) -> bool:
        """Records the acceptance; False when this version was accepted before (also by a
        concurrent request: the unique key decides)."""
        values = {
            "id": uuid.uuid4(),
            "tenant_id": self.tenant_id,
            "challenge_id": challenge_id,
            "participant_id": participant_id,
            "rules_sha256": rules_sha256,
            "accepted_at": utcnow(),
        }
        return self._insert_new(RulesAcceptance, values) is not None

    def newest_acceptance(
        self, challenge_id: uuid.UUID, participant_id: uuid.UUID
    ) -> RulesAcceptance | None:
        return self.session.scalar(
            select(RulesAcceptance)
            .where(
                RulesAcceptance.tenant_id == self.tenant_id,
                RulesAcceptance.challenge_id == challenge_id,
                RulesAcceptance.participant_id == participant_id,
            )
            .order_by(RulesAcceptance.accepted_at.desc(), RulesAcceptance.id)
            .limit(1)
        )

    def acceptances_in_order(
        self, challenge_id: uuid.UUID, after: tuple[datetime, uuid.UUID] | None, limit: int
    ) -> list[tuple[RulesAcceptance, str]]:
        """Up to `limit` acceptances after the cursor, oldest first, with their handles."""
        query = (
            select(RulesAcceptance, Participant.handle)
            .join(Participant, Participant.id == RulesAcceptance.participant_id)
            .where(
                RulesAcceptance.tenant_id == self.tenant_id,
                RulesAcceptance.challenge_id == challenge_id,
            )
            .order_by(RulesAcceptance.accepted_at, RulesAcceptance.id)
            .limit(limit)
        )
        if after is not None:
            moment, last_id = after
            query = query.where(
                (RulesAcceptance.accepted_at > moment)
                | and_(RulesAcceptance.accepted_at == moment, RulesAcceptance.id > last_id)
            )
        return [(row, handle) for row, handle in self.session.execute(query).tuples()]

    # Who plays ---------------------------------------------------------------------------------

    def acceptors_and_members(self, challenge_id: uuid.UUID) -> set[uuid.UUID]:
        """Those who accepted the challenge's rules, and the members of its teams."""
        accepted = select(RulesAcceptance.participant_id).where(
            RulesAcceptance.tenant_id == self.tenant_id,
            RulesAcceptance.challenge_id == challenge_id,
        )
        members = select(TeamMember.member_id).where(
            TeamMember.tenant_id == self.tenant_id, TeamMember.challenge_id == challenge_id
        )
        return set(self.session.scalars(accepted.union(members)))

    # Announcements ----------------------------------------------------------------------------

    def add_announcement(self, announcement: Announcement) -> None:
        self.session.add(announcement)
        self.session.flush()

    def _announcements(self, challenge_id: uuid.UUID) -> Select[Any]:
        return select(Announcement).where(
            Announcement.tenant_id == self.tenant_id, Announcement.challenge_id == challenge_id
        )

    def announcements(
        self, challenge_id: uuid.UUID, *, limit: int, offset: int
    ) -> tuple[list[Announcement], int]:
        """A page of the challenge's announcements, newest first, and their total."""
        query = self._announcements(challenge_id)
        total = self.session.scalar(select(func.count()).select_from(query.subquery())) or 0
        rows = self.session.scalars(
            query.order_by(Announcement.created_at.desc(), Announcement.id.desc())
            .limit(limit)
            .offset(offset)
        )
        return [row for row in rows if isinstance(row, Announcement)], total

    def announcement(
        self, challenge_id: uuid.UUID, announcement_id: uuid.UUID
    ) -> Announcement | None:
        found = self.session.scalar(
            self._announcements(challenge_id).where(Announcement.id == announcement_id)
        )
        return found if isinstance(found, Announcement) else None

    def delete_announcement(self, announcement: Announcement) -> None:
        self.session.delete(announcement)
        self.session.flush()

    # Notices ----------------------------------------------------------------------------------

    def record_notice(
        self, challenge_id: uuid.UUID, event: str, closes_at: datetime
    ) -> uuid.UUID | None:
        """Claims the notice of the event for this close: its new row's id, or None when it
        was sent (or is being sent by a transaction that has not committed: this one then
        waits for it, and finds it sent)."""
        values = {
            "id": uuid.uuid4(),
            "tenant_id": self.tenant_id,
            "challenge_id": challenge_id,
            "event": event,
            "closes_at": closes_at,
            "mailed": 0,
            "created_at": utcnow(),
        }
        return self._insert_new(ChallengeNotice, values)

    def set_notice_mailed(self, notice_id: uuid.UUID, mailed: int) -> None:
        notice = self.session.get(ChallengeNotice, notice_id)
        if notice is not None and notice.tenant_id == self.tenant_id:
            notice.mailed = mailed
            self.session.flush()
