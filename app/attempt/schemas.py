from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import Field, field_validator

from app.attempt.metrics import AttemptMetrics
from app.attempt.models import Attempt, AttemptStatus
from app.schemas import Handle, InputSchema, ModelId, OutputSchema


class AttemptCreate(InputSchema):
    """A prompt (prompt challenges) or a model spec (benchmark challenges), for a participant."""

    prompt: str | None = Field(default=None, min_length=1, description="Prompt challenges.")
    model: ModelId | None = Field(
        default=None, description="Benchmark challenges: a litellm model id."
    )
    temperature: float | None = Field(default=None, ge=0, le=2, description="Benchmark only.")
    system_prompt: str | None = Field(
        default=None, max_length=20_000, description="Benchmark only."
    )
    participant: Handle | None = Field(
        default=None,
        description="The participant's handle, created on first use. Required with a tenant key.",
    )

    @field_validator("prompt", "system_prompt")
    @classmethod
    def _storable(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if "\x00" in value:
            raise ValueError("must not contain NUL characters")
        if not value.strip():
            raise ValueError("must not be blank")
        return value


class TrialRead(OutputSchema):
    task_index: int = Field(description="0 for prompt attempts; the benchmark task otherwise.")
    task_id: str | None
    index: int
    success: bool
    score: float
    actor: dict[str, Any]
    judge: dict[str, Any]
    critic: dict[str, Any]
    created_at: datetime


class AttemptTrialRead(TrialRead):
    """A trial with the attempt it belongs to (the trials export)."""

    attempt_id: uuid.UUID
    participant: str


class AttemptRead(OutputSchema):
    id: uuid.UUID
    challenge_id: uuid.UUID
    participant_id: uuid.UUID
    participant: str
    status: AttemptStatus
    prompt: str | None
    model_spec: dict[str, Any] | None = Field(
        default=None, description="Benchmark attempts: the model, temperature, system prompt."
    )
    progress: dict[str, Any] | None = Field(
        default=None,
        description="Benchmark attempts: tasks done, the curve so far, usage and cost.",
    )
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    error: str | None = Field(
        description="Why the attempt ended in error, as participants may read it (never an "
        "address or a provider's answer)."
    )
    error_detail: str | None = Field(
        default=None,
        description="Tenant admins only: the full reason of the error (addresses, provider "
        "answers), also in the worker's log.",
    )
    spent_usd: float | None = Field(
        default=None,
        description="Tenant admins only: model spend charged to this attempt so far (unpriced "
        "calls at the server's fallback rate), checked against its cost budget before each call.",
    )
    metrics: AttemptMetrics | None
    score: float | None
    score_details: dict[str, Any] | None
    trials: list[TrialRead] | None = Field(
        default=None, description="Present on single-attempt reads, absent from lists."
    )


class AttemptList(OutputSchema):
    items: list[AttemptRead]
    total: int
    # The page asked for: `limit` items at most, after `offset`.
    limit: int
    offset: int


class TrialList(OutputSchema):
    items: list[TrialRead]
    total: int
    # The page asked for: `limit` items at most, after `offset`.
    limit: int
    offset: int


# What the web UI reads of attempts beside their views.


@dataclass(frozen=True)
class FailedAttempt:
    attempt: Attempt
    handle: str
    challenge_title: str
    challenge_slug: str


@dataclass(frozen=True)
class RunRow:
    attempt_id: uuid.UUID
    model_spec: dict[str, Any] | None
    metrics: AttemptMetrics | None
    cost_usd: float | None


class RetriedAttempts(OutputSchema):
    """How many of the challenge's failed attempts were queued again."""

    queued: int
