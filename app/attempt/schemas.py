from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import Field, field_validator

from app.schemas import Handle, InputSchema, OutputSchema

AttemptStatus = Literal["queued", "running", "completed", "error"]


class AttemptCreate(InputSchema):
    prompt: str = Field(min_length=1, description="The participant's prompt (prompt challenges).")
    participant: Handle | None = Field(
        default=None,
        description="The participant's handle, created on first use. Required with a tenant key.",
    )

    @field_validator("prompt")
    @classmethod
    def _storable(cls, value: str) -> str:
        if "\x00" in value:
            raise ValueError("must not contain NUL characters")
        if not value.strip():
            raise ValueError("must not be blank")
        return value


class AttemptMetricsRead(OutputSchema):
    succeeded: bool | None
    tokens_total: int | None
    elapsed_ms: int | None
    rating: float | None
    created_at: int = Field(description="Epoch milliseconds.")
    cost_usd: float | None
    trials: int


class TrialRead(OutputSchema):
    index: int
    success: bool
    score: float
    actor: dict[str, Any]
    judge: dict[str, Any]
    critic: dict[str, Any]
    created_at: datetime


class AttemptRead(OutputSchema):
    id: uuid.UUID
    challenge_id: uuid.UUID
    participant_id: uuid.UUID
    participant: str
    status: AttemptStatus
    prompt: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    error: str | None
    metrics: AttemptMetricsRead | None
    score: float | None
    score_details: dict[str, Any] | None
    trials: list[TrialRead] | None = Field(
        default=None, description="Present on single-attempt reads, absent from lists."
    )


class AttemptList(OutputSchema):
    items: list[AttemptRead]
    total: int
