"""The benchmark kind's own table: the submissions participants mark final on a split
challenge (docs/boards.md, "Private parts")."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import ForeignKey, Index, Uuid
from sqlalchemy.orm import Mapped, mapped_column

from app.db import Base, UTCDateTime, utcnow


class FinalMark(Base):
    """An attempt its participant marked final: the private board ranks their best one."""

    __tablename__ = "benchmark_final_marks"
    __table_args__ = (
        Index("ix_benchmark_final_marks_participant", "challenge_id", "participant_id"),
    )

    attempt_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("attempts.id", ondelete="CASCADE"), primary_key=True
    )
    tenant_id: Mapped[uuid.UUID] = mapped_column(Uuid, ForeignKey("tenants.id", ondelete="CASCADE"))
    challenge_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("challenges.id", ondelete="CASCADE")
    )
    participant_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("participants.id", ondelete="CASCADE")
    )
    marked_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
