from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import ForeignKey, Index, String, Uuid
from sqlalchemy.orm import Mapped, mapped_column

from app.kit.db import Base, UTCDateTime, utcnow


class Team(Base):
    """Participants who play one challenge as one. The team is itself a participant of the
    tenant (its `id` is that participant's, its name that participant's handle), so every
    entry its members submit is recorded under one participant id: limits, board rows, best
    entries, red-blue pairing and exports then treat it as one player with no rule of their
    own. That participant has no password (it never signs in) and holds its name against
    every handle of the tenant. Only a SHA-256 of the invite code is kept: the code is shown
    once, to the member who asked for it."""

    __tablename__ = "teams"
    __table_args__ = (Index("ix_teams_tenant_id_challenge_id", "tenant_id", "challenge_id"),)

    id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("participants.id", ondelete="CASCADE"), primary_key=True
    )
    tenant_id: Mapped[uuid.UUID] = mapped_column(Uuid, ForeignKey("tenants.id", ondelete="CASCADE"))
    challenge_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("challenges.id", ondelete="CASCADE")
    )
    invite_code_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class TeamMember(Base):
    """A participant's place in a team. The key makes a participant a member of at most one
    team per challenge."""

    __tablename__ = "team_members"

    challenge_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("challenges.id", ondelete="CASCADE"), primary_key=True
    )
    member_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("participants.id", ondelete="CASCADE"), primary_key=True
    )
    tenant_id: Mapped[uuid.UUID] = mapped_column(Uuid, ForeignKey("tenants.id", ondelete="CASCADE"))
    team_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("teams.id", ondelete="CASCADE"), index=True
    )
    joined_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
