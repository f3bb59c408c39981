"""What a participant submits to a benchmark challenge: a model spec."""

from __future__ import annotations

from pydantic import Field

from app.attempt.attempt_kind import KindSubmission, SubmittedText
from app.attempt.metrics import KindMetrics
from app.schemas import ModelId, OutputSchema


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


class BenchmarkMeasures(KindMetrics):
    """A benchmark attempt's own measures: on a split challenge, its results on the private
    part (`sealed`: only the tenant's admins see them until the close); the core's metrics
    are the public part's."""

    sealed: PartMeasures | None = None
