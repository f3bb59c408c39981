"""The benchmark kind's own tables, both of split challenges (docs/boards.md, "Private
parts"): the submissions participants mark final, and the private part's run of each scored
attempt."""

from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import ForeignKey, Index, Uuid
from sqlalchemy.orm import Mapped, mapped_column

from app.kinds.api.leases import Leased, LeasedTable
from app.kinds.api.storage import (
    Base,
    ProducedJSON,
    ProducedText,
    StrEnumColumn,
    UTCDateTime,
    challenge_not_deleted,
    utcnow,
)


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


class SealedRunStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    COMPLETED = "completed"
    ERROR = "error"


class SealedRun(Leased, Base):
    """The private part's run of a scored attempt on a split challenge: its sealed tasks, run
    on a worker once the attempt (its public part) has completed, under a lease of its own
    (`SEALED_RUN_LEASES`). Nothing a participant sees of the attempt waits for it or depends
    on it: the attempt's status, times, counts and board row are its public part's alone.
    Its trials and tasks are the attempt's, stored sealed; its measures end in the attempt's
    `kind_metrics.sealed`."""

    __tablename__ = "benchmark_sealed_runs"
    __table_args__ = (
        Index("ix_benchmark_sealed_runs_status_enqueued", "status", "enqueued_at"),
        Index("ix_benchmark_sealed_runs_status_lease", "status", "lease_expires_at"),
    )

    # The attempt's id: one private run per attempt.
    id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("attempts.id", ondelete="CASCADE"), primary_key=True
    )
    tenant_id: Mapped[uuid.UUID] = mapped_column(Uuid, ForeignKey("tenants.id", ondelete="CASCADE"))
    challenge_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("challenges.id", ondelete="CASCADE")
    )
    status: Mapped[SealedRunStatus] = mapped_column(
        StrEnumColumn(SealedRunStatus, 16), default=SealedRunStatus.QUEUED
    )
    # The engine's run record (fingerprint, settings) and its latest summary.
    run_config: Mapped[dict[str, Any] | None] = mapped_column(ProducedJSON, default=None)
    progress: Mapped[dict[str, Any] | None] = mapped_column(ProducedJSON, default=None)
    error: Mapped[str | None] = mapped_column(ProducedText, default=None)
    error_detail: Mapped[str | None] = mapped_column(ProducedText, default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    enqueued_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)


# A deleted challenge's private runs wait, unrun, until it is restored.
SEALED_RUN_LEASES = LeasedTable(
    SealedRun,
    waiting=SealedRunStatus.QUEUED,
    running=SealedRunStatus.RUNNING,
    runnable=challenge_not_deleted(SealedRun.challenge_id),
)
