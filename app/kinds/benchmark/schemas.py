"""What a participant submits to a benchmark challenge: a model spec."""

from __future__ import annotations

import uuid

from pydantic import Field

from app.kinds.api import KindMetrics, KindSubmission, ModelId, OutputSchema, SubmittedText


class BenchmarkSubmission(KindSubmission):
    model: ModelId = Field(description="A litellm model id.")
    temperature: float | None = Field(
        default=None, ge=0, le=2, description="The model's temperature; null: its default."
    )
    system_prompt: SubmittedText | None = Field(
        default=None, max_length=20_000, description="A system prompt the model is given."
    )


class BenchmarkTrialRun(BenchmarkSubmission):
    """A benchmark practice or test run: the model spec, on one task only."""

    task_index: int | None = Field(
        default=None,
        ge=1,
        le=10_000_000,
        description="The task to run (its 1-based index in the benchmark); null: the first "
        "task the challenge runs.",
    )


class PartMeasures(OutputSchema):
    """A run's results on some of its tasks: the pass@t or seq@t curve (t = 1..k) over them,
    tasks that never ran counting as unsolved."""

    metric_at: list[float]
    metric_at_k: float | None
    tasks_total: int
    tasks_solved: int


class SealedMeasures(OutputSchema):
    """A scored attempt's private part on a split challenge: how its run stands (`status`:
    `queued` until it has run, `completed`, or `error` with the reason), then its results
    (the curve over the private tasks, tasks that never ran counting as unsolved) and what
    it spent. Written before the private part ran as its own run, a document holds the
    results alone (its status is `completed`)."""

    status: str = "completed"
    metric_at: list[float] | None = None
    metric_at_k: float | None = None
    tasks_total: int | None = None
    tasks_solved: int | None = None
    trials: int | None = None
    tokens_total: int | None = None
    elapsed_ms: int | None = None
    cost_usd: float | None = None
    run_status: str | None = None
    error: str | None = None


class BenchmarkMeasures(KindMetrics):
    """A benchmark attempt's own measures: on a split challenge, its private part (`sealed`:
    only the tenant's admins see it until the close); the core's metrics are the public
    part's, its spend included."""

    sealed: SealedMeasures | None = None


class FinalMarks(OutputSchema):
    """A participant's final submissions on a split challenge."""

    challenge_id: uuid.UUID
    participant: str
    attempt_ids: list[uuid.UUID] = Field(description="The marked attempts, oldest mark first.")
    max_final: int = Field(description="How many the challenge lets a participant mark.")


class PrivateBoardItem(OutputSchema):
    rank: int = Field(
        description="1 + the participants ahead (ties share a rank); a baseline's is where it "
        "would place, taking none from a participant."
    )
    participant: str
    baseline: bool
    attempt_id: uuid.UUID = Field(
        description="The counted submission: the best on the private part."
    )
    final: bool = Field(
        description="Whether the participant marked it final (false: none marked, their best "
        "by the public part counted)."
    )
    private_metric_at_k: float | None
    public_metric_at_k: float | None
    private_tasks_solved: int | None
    private_tasks_total: int | None


class PrivateBoard(OutputSchema):
    """The private part's board: each participant's best counted submission on the private
    part, revealed at the close."""

    items: list[PrivateBoardItem]
    total: int
    limit: int
    offset: int
