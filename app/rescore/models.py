from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum

from sqlalchemy import ForeignKey, Index, Integer, String, Uuid
from sqlalchemy.orm import Mapped, mapped_column

from app.kit.db import Base, ProducedText, StrEnumColumn, UTCDateTime, new_id, utcnow


class RescoreStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    COMPLETED = "completed"
    ERROR = "error"
    # A newer job of the same challenge rebuilds with newer settings; this one stopped.
    SUPERSEDED = "superseded"

    @property
    def finished(self) -> bool:
        return self in (RescoreStatus.COMPLETED, RescoreStatus.ERROR, RescoreStatus.SUPERSEDED)


class RescoreJob(Base):
    """Recomputing the scores and the leaderboard of one challenge after its scoring changed."""

    __tablename__ = "rescore_jobs"
    __table_args__ = (Index("ix_rescore_jobs_challenge_created", "challenge_id", "created_at"),)

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=new_id)
    tenant_id: Mapped[uuid.UUID] = mapped_column(Uuid, ForeignKey("tenants.id", ondelete="CASCADE"))
    challenge_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("challenges.id", ondelete="CASCADE")
    )
    status: Mapped[RescoreStatus] = mapped_column(
        StrEnumColumn(RescoreStatus, 16), default=RescoreStatus.QUEUED
    )
    reason: Mapped[str] = mapped_column(String(300), default="")
    total: Mapped[int | None] = mapped_column(Integer, default=None)
    processed: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[str | None] = mapped_column(ProducedText, default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
