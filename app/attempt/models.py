from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    UniqueConstraint,
    Uuid,
    false,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column, validates

from app.challenge.models import challenge_work_runs
from app.kit.db import (
    Base,
    JSONType,
    ModelColumn,
    ProducedJSON,
    ProducedString,
    ProducedText,
    StrEnumColumn,
    UTCDateTime,
    epoch_ms,
    new_id,
    utcnow,
)
from app.kit.lease.models import Leased, LeasedTable, Metered
from app.scoring.measures import AttemptMetrics


class AttemptStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    COMPLETED = "completed"
    ERROR = "error"

    @property
    def finished(self) -> bool:
        return self in (AttemptStatus.COMPLETED, AttemptStatus.ERROR)


# Attempts a worker has still to run or is running: the rows of the workers' queue.
UNFINISHED = text("status IN ('queued', 'running')")


class RunPurpose(StrEnum):
    """Why an attempt runs. Only entries are scored play: boards, limits, rescoring, exports,
    dashboards and the attempt lists read entries alone. The others run the same way on a
    worker and are shown to whom they are for, and to nothing else:

    - `practice`: a participant's unscored try, under its own small quota;
    - `test`: a tenant admin's run of the challenge's configuration on a sample input, in any
      state (a draft's too); it has no participant.
    """

    ENTRY = "entry"
    PRACTICE = "practice"
    TEST = "test"

    @property
    def scored(self) -> bool:
        return self is RunPurpose.ENTRY


class Attempt(Leased, Metered, Base):
    """One submission. Status moves queued → running → completed | error.

    A worker runs it under a lease (`Leased`, `ATTEMPT_LEASES`): only the holder of the current
    run token may finish the attempt, so a redelivered task or a worker that came back late
    never finishes it twice.
    """

    __tablename__ = "attempts"
    __table_args__ = (
        UniqueConstraint("tenant_id", "idempotency_key"),
        Index(
            "ix_attempts_challenge_participant_created",
            "challenge_id",
            "participant_id",
            "created_at",
        ),
        Index("ix_attempts_status_lease", "status", "lease_expires_at"),
        Index("ix_attempts_tenant_created", "tenant_id", "created_at"),
        # The workers' queue in turn order, and each tenant's place in it (app/attempt/turns.py):
        # only unfinished attempts, so both stay as small as the queue.
        Index(
            "ix_attempts_unfinished_turn",
            "turn",
            "created_at",
            postgresql_where=UNFINISHED,
            sqlite_where=UNFINISHED,
        ),
        Index(
            "ix_attempts_unfinished_tenant_turn",
            "tenant_id",
            "turn",
            postgresql_where=UNFINISHED,
            sqlite_where=UNFINISHED,
        ),
    )

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=new_id)
    tenant_id: Mapped[uuid.UUID] = mapped_column(Uuid, ForeignKey("tenants.id", ondelete="CASCADE"))
    challenge_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("challenges.id", ondelete="CASCADE")
    )
    # None only for a test run, which no participant makes.
    participant_id: Mapped[uuid.UUID | None] = mapped_column(
        Uuid, ForeignKey("participants.id", ondelete="CASCADE"), index=True
    )
    purpose: Mapped[RunPurpose] = mapped_column(
        StrEnumColumn(RunPurpose, 16),
        default=RunPurpose.ENTRY,
        server_default=RunPurpose.ENTRY.value,
    )
    status: Mapped[AttemptStatus] = mapped_column(
        StrEnumColumn(AttemptStatus, 16), default=AttemptStatus.QUEUED
    )
    # The submission's fields, as its kind's `submission_model` validated them and in the
    # shape the kind keeps them (`AttemptKind.submission`): no kind has a column here, so a
    # kind needs no migration for a field of its own.
    kind_fields: Mapped[dict[str, Any] | None] = mapped_column(JSONType, default=None)
    # An admin's reference entry: shown on boards with a mark, it takes no participant's rank
    # (and, red-blue, no point of the team standings).
    baseline: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # The member who submitted a team's entry (its `participant_id` is the team's); null for
    # an entry of a participant playing alone. No foreign key: it is a record, kept as it was.
    submitted_by_id: Mapped[uuid.UUID | None] = mapped_column(Uuid, default=None)
    idempotency_key: Mapped[str | None] = mapped_column(String(255), default=None)
    request_fingerprint: Mapped[str | None] = mapped_column(String(64), default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # `created_at` in epoch milliseconds, set with it: the storage form the rescore's batches
    # order by (as the leaderboard orders by its rows' `attempt_created_at_ms`).
    created_at_ms: Mapped[int] = mapped_column(BigInteger)
    enqueued_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # Its place in the workers' queue: workers take the claimable attempt of the lowest turn,
    # and a tenant's next attempt gets a turn after its own unfinished ones (app/attempt/
    # turns.py), so tenants are served in turn, not in the order they sent.
    turn: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    # `error` is what participants read ("model ... unreachable"); `error_detail` the full
    # reason (addresses, provider answers), for the tenant admin and the logs only.
    # Both are written by workers from what models and plugins produced: escaped, never refused.
    error: Mapped[str | None] = mapped_column(ProducedText, default=None)
    error_detail: Mapped[str | None] = mapped_column(ProducedText, default=None)
    succeeded: Mapped[bool | None] = mapped_column(Boolean, default=None)
    tokens_total: Mapped[int | None] = mapped_column(BigInteger, default=None)
    elapsed_ms: Mapped[int | None] = mapped_column(BigInteger, default=None)
    rating: Mapped[float | None] = mapped_column(Float, default=None)
    cost_usd: Mapped[float | None] = mapped_column(Float, default=None)
    metrics: Mapped[AttemptMetrics | None] = mapped_column(
        ModelColumn(AttemptMetrics, exclude_unset=True), default=None
    )
    # Measures of the kind's own (`RunsAttempts.measure_own`), beside the core's `metrics`.
    kind_metrics: Mapped[dict[str, Any] | None] = mapped_column(ProducedJSON, default=None)
    score: Mapped[float | None] = mapped_column(Float, default=None)
    score_details: Mapped[dict[str, Any] | None] = mapped_column(ProducedJSON, default=None)
    # Benchmark attempts: the engine's run record (fingerprint, settings) and its latest
    # summary (tasks done, the curve so far, usage), refreshed as trials land.
    run_config: Mapped[dict[str, Any] | None] = mapped_column(ProducedJSON, default=None)
    progress: Mapped[dict[str, Any] | None] = mapped_column(ProducedJSON, default=None)

    @validates("created_at")
    def _with_created_at_ms(self, _key: str, created_at: datetime) -> datetime:
        self.created_at_ms = epoch_ms(created_at)
        return created_at

    @property
    def entrant_id(self) -> uuid.UUID:
        """The participant of an entry or a practice run (only a test run has none)."""
        if self.participant_id is None:
            raise ValueError(f"attempt {self.id} is a test run: it has no participant")
        return self.participant_id


class AttemptScoreAtFreeze(Base):
    """An attempt's score as it stood when its challenge's freeze began, kept by the rescore
    that changed it in the freeze: what readers who see the challenge frozen read of the
    attempt until the close (the live score is the admins' and the attempt's participant's).
    It belongs to one `freeze_at`: a freeze moved elsewhere makes it stale."""

    __tablename__ = "attempt_scores_at_freeze"

    attempt_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("attempts.id", ondelete="CASCADE"), primary_key=True
    )
    tenant_id: Mapped[uuid.UUID] = mapped_column(Uuid, ForeignKey("tenants.id", ondelete="CASCADE"))
    freeze_at: Mapped[datetime] = mapped_column(UTCDateTime)
    score: Mapped[float | None] = mapped_column(Float, default=None)
    score_details: Mapped[dict[str, Any] | None] = mapped_column(ProducedJSON, default=None)


ATTEMPT_LEASES = LeasedTable(
    Attempt,
    waiting=AttemptStatus.QUEUED,
    running=AttemptStatus.RUNNING,
    runnable=challenge_work_runs(Attempt.challenge_id),
)


class AttemptTask(Base):
    """One benchmark task of an attempt: its public description and its summary so far."""

    __tablename__ = "attempt_tasks"

    attempt_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("attempts.id", ondelete="CASCADE"), primary_key=True
    )
    task_index: Mapped[int] = mapped_column(Integer, primary_key=True)
    tenant_id: Mapped[uuid.UUID] = mapped_column(Uuid, ForeignKey("tenants.id", ondelete="CASCADE"))
    task_id: Mapped[str] = mapped_column(ProducedString(200))
    meta: Mapped[dict[str, Any] | None] = mapped_column(ProducedJSON, default=None)
    summary: Mapped[dict[str, Any] | None] = mapped_column(ProducedJSON, default=None)
    # A task of its challenge's private part: its results are shown as `SEALED` says.
    sealed: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())


class Trial(Base):
    """One actor call with its verification and feedback, in the run-folder attempt layout."""

    __tablename__ = "trials"
    __table_args__ = (UniqueConstraint("attempt_id", "task_index", "trial_index"),)

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=new_id)
    tenant_id: Mapped[uuid.UUID] = mapped_column(Uuid, ForeignKey("tenants.id", ondelete="CASCADE"))
    attempt_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("attempts.id", ondelete="CASCADE")
    )
    # Prompt attempts have one task (index 0); benchmark attempts one per benchmark task.
    task_index: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    task_id: Mapped[str | None] = mapped_column(ProducedString(200), default=None)
    trial_index: Mapped[int] = mapped_column(Integer)
    success: Mapped[bool] = mapped_column(Boolean)
    score: Mapped[float] = mapped_column(Float)
    # Model outputs, judge and critic replies: escaped on the way in
    # (app/evaluation/engine/storable.py).
    actor: Mapped[dict[str, Any]] = mapped_column(ProducedJSON)
    judge: Mapped[dict[str, Any]] = mapped_column(ProducedJSON)
    critic: Mapped[dict[str, Any]] = mapped_column(ProducedJSON)
    # A trial of a task of its challenge's private part (as its `AttemptTask.sealed`).
    sealed: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
