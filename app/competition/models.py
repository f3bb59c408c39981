from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, String, Text, UniqueConstraint, Uuid
from sqlalchemy.orm import Mapped, mapped_column

from app.kit.db import Base, UTCDateTime, new_id, utcnow


class RulesAcceptance(Base):
    """A participant accepted a version of a challenge's rules (the SHA-256 of their text).
    One row per version accepted: accepting the same version again changes nothing, and the
    rows of earlier versions stay as the record of what was accepted when."""

    __tablename__ = "rules_acceptances"
    __table_args__ = (UniqueConstraint("challenge_id", "participant_id", "rules_sha256"),)

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=new_id)
    tenant_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("tenants.id", ondelete="CASCADE"), index=True
    )
    challenge_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("challenges.id", ondelete="CASCADE")
    )
    participant_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("participants.id", ondelete="CASCADE"), index=True
    )
    rules_sha256: Mapped[str] = mapped_column(String(64))
    accepted_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Announcement(Base):
    """A message an organizer posted to a challenge's participants: on its page, and mailed
    to those who get notification emails (`mailed` of them, when it was posted)."""

    __tablename__ = "announcements"
    __table_args__ = (
        Index("ix_announcements_challenge_id_created_at", "challenge_id", "created_at"),
    )

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=new_id)
    tenant_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("tenants.id", ondelete="CASCADE"), index=True
    )
    challenge_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("challenges.id", ondelete="CASCADE")
    )
    title: Mapped[str] = mapped_column(String(200))
    body: Mapped[str] = mapped_column(Text, default="")
    mailed: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class ChallengeNotice(Base):
    """A notification of a challenge's event (`closed`, `revealed`) sent for one close (the
    `closes_at` it was sent for). The key makes it once per event and close, however often
    the sweep that sends it finds the event, and however many run at once: the row and the
    mails it queues commit together."""

    __tablename__ = "challenge_notices"
    __table_args__ = (UniqueConstraint("challenge_id", "event", "closes_at"),)

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=new_id)
    tenant_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("tenants.id", ondelete="CASCADE"), index=True
    )
    challenge_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("challenges.id", ondelete="CASCADE")
    )
    event: Mapped[str] = mapped_column(String(16))
    closes_at: Mapped[datetime] = mapped_column(UTCDateTime)
    mailed: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
