from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import ConfigDict, Field

from app.attempt.models import Attempt, AttemptStatus, RunPurpose
from app.kit.schemas import Handle, InputSchema, OutputSchema
from app.scoring.measures import AttemptMetrics

# A kind's fields ride along as extra fields of the body (as a challenge's sections do).
_WITH_KIND_FIELDS = ConfigDict(extra="allow", allow_inf_nan=False)


class KindFieldsBody(InputSchema):
    """A body whose fields are the challenge kind's, riding along as extra fields; the service
    validates them with the kind's own model, naming the field on error."""

    model_config = _WITH_KIND_FIELDS

    @property
    def kind_fields(self) -> dict[str, Any]:
        """The kind's fields as given (unvalidated: the kind validates them). A null counts as
        not given, as clients that send every field (the other kinds' too) do."""
        return {
            name: value for name, value in (self.model_extra or {}).items() if value is not None
        }


class ParticipantBody(KindFieldsBody):
    """A body of a participant's: their handle beside the kind's fields."""

    participant: Handle | None = Field(
        default=None,
        description="The participant's handle, created on first use. Required with a tenant key.",
    )


class AttemptCreate(ParticipantBody):
    """A submission: the participant, and the fields of the challenge's kind (`prompt` for
    prompt challenges; `model`, `temperature`, `system_prompt` for benchmark ones), which ride
    along as extra fields. The service validates those with the kind's own model
    (`AttemptKind.submission_model`), naming the field on error, an unknown one included."""

    baseline: bool = Field(
        default=False,
        description="Tenant admin keys only: an admin's reference entry (a baseline), shown on "
        "the leaderboard with a mark, ranked where it would place, taking no participant's rank. "
        "Give baselines handles of their own: a row shows its participant's best attempt.",
    )

    @classmethod
    def of(cls, participant: str | None, **fields: Any) -> AttemptCreate:
        """A submission built in code (the web forms), validated as a request body is."""
        return cls.model_validate({"participant": participant, **fields})


class PracticeCreate(ParticipantBody):
    """A practice run: the participant and a submission's fields (`prompt`; benchmark: the
    model spec and an optional `task_index`; red_blue: the attack as `prompt` and, optionally,
    a defense as `system_prompt`, else the participant's newest active one). A practice run is
    never a baseline."""


class TestRunCreate(KindFieldsBody):
    """A test run's sample input, the fields of a submission of the challenge's kind (`prompt`;
    benchmark: the model spec and an optional `task_index`, else the first task; red_blue: a
    sample defense as `system_prompt` and attack as `prompt`)."""


class TrialRead(OutputSchema):
    task_index: int = Field(description="0 for prompt attempts; the benchmark task otherwise.")
    task_id: str | None
    index: int
    success: bool
    score: float
    actor: dict[str, Any]
    judge: dict[str, Any]
    critic: dict[str, Any]
    sealed: bool = Field(
        description="True for a trial of the challenge's private part (a split benchmark "
        "challenge): shown to participants once the challenge has closed."
    )
    created_at: datetime


class AttemptTrialRead(TrialRead):
    """A trial with the attempt it belongs to (the trials export)."""

    attempt_id: uuid.UUID
    participant: str


class AttemptRead(OutputSchema):
    id: uuid.UUID
    challenge_id: uuid.UUID
    participant_id: uuid.UUID
    participant: str = Field(description="The participant's handle, or the team's name.")
    submitted_by: str | None = Field(
        description="A team's entry: the handle of the member who submitted it "
        "(`participant` is the team's name); null for a participant playing alone.",
    )
    status: AttemptStatus
    prompt: str | None
    model_spec: dict[str, Any] | None = Field(
        default=None, description="Benchmark attempts: the model, temperature, system prompt."
    )
    kind_fields: dict[str, Any] | None = Field(
        default=None,
        description="The fields of its kind's own that the submission gave (those it does not "
        "answer as `prompt` or `model_spec`), as its kind validated them.",
    )
    baseline: bool = Field(default=False, description="An admin's reference entry.")
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
    kind_metrics: dict[str, Any] | None = Field(
        default=None, description="Measures of its kind's own, beside `metrics`."
    )
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
    # The submission's fields as its kind stored them (the kind reads them: `stored_fields`).
    kind_fields: dict[str, Any] | None
    metrics: AttemptMetrics | None
    kind_metrics: dict[str, Any] | None
    cost_usd: float | None


class AttemptsLeft(OutputSchema):
    """What a challenge's limits leave one participant (counted as submissions count: every
    attempt but those an infrastructure error ended)."""

    participant: str
    max_attempts_total: int | None = Field(description="The challenge's limit in all; null: none.")
    max_attempts_per_day: int | None = Field(description="Its limit per UTC day; null: none.")
    left_total: int | None = Field(description="Attempts left in all; null: no such limit.")
    left_today: int | None = Field(description="Attempts left today; null: no such limit.")
    resets_at: datetime | None = Field(
        description="When the day's count starts again (00:00 UTC); null without a daily limit."
    )


class RerunAttempts(OutputSchema):
    """How many of the challenge's failed attempts were queued to run again (`rerun-failed`)."""

    queued: int


class UnscoredRunRead(OutputSchema):
    """A practice or test run: run by a worker as an attempt is, scored for its reader, and
    seen by no board, limit, rescoring or export. `messages`, `reply` and `verdict` are its
    last trial's, as the reader may see them (every trial is in `trials`)."""

    id: uuid.UUID
    challenge_id: uuid.UUID
    purpose: RunPurpose
    participant: str | None = Field(description="Who practised; null for a test run.")
    status: AttemptStatus
    prompt: str | None
    model_spec: dict[str, Any] | None
    kind_fields: dict[str, Any] | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    error: str | None
    error_detail: str | None = Field(default=None, description="Tenant admins only.")
    messages: list[dict[str, Any]] | None = Field(
        description="The exact messages sent to the model (participants: without the "
        "challenge's hidden system prompt)."
    )
    reply: str | None = Field(description="The model's reply.")
    verdict: dict[str, Any] | None = Field(
        description="The verifier's decision: success, score (0..1), its public output."
    )
    metrics: AttemptMetrics | None
    kind_metrics: dict[str, Any] | None
    score: float | None = Field(description="What the challenge's scoring would give it.")
    score_details: dict[str, Any] | None
    cost_usd: float | None = Field(description="Model cost of the run, where prices are known.")
    trials: list[TrialRead]


class UnscoredRunList(OutputSchema):
    items: list[UnscoredRunRead]
    total: int
    limit: int
    offset: int


class PracticeLeft(OutputSchema):
    """What the challenge's practice quota leaves one participant today (practice runs count
    only here, never against the attempt limits; those an infrastructure error ended do not
    count)."""

    participant: str
    max_practice_per_day: int
    left_today: int
    resets_at: datetime = Field(description="When the day's count starts again (00:00 UTC).")
