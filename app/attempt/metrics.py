"""An attempt's metrics, declared once: what its kind's run measured, stored on the attempt
(as a document, and the ranked measures in columns of their own), shown by the API, and
handed to the leaderboard as its rank input."""

from __future__ import annotations

from pydantic import Field

from app.schemas import OutputSchema


class AttemptMetrics(OutputSchema):
    """Kinds set what they measure; a field a kind leaves unset is not stored, so scorer
    plugins see the same keys the kind gives (`as_plugin_input`)."""

    succeeded: bool | None = None
    tokens_total: int | None = None
    elapsed_ms: int | None = None
    rating: float | None = None
    created_at: int | None = Field(default=None, description="Epoch milliseconds.")
    cost_usd: float | None = None
    trials: int = 0
    metric_at: list[float] | None = Field(
        default=None, description="Benchmark attempts: the pass@t or seq@t curve, t = 1..k."
    )
    metric_at_k: float | None = None
    tasks_total: int | None = None
    tasks_solved: int | None = None
    run_status: str | None = Field(
        default=None,
        description="Benchmark attempts: 'complete', or 'budget_exhausted' when the attempt's "
        "cost budget stopped the run (tasks left unrun count as unsolved).",
    )

    def as_plugin_input(self) -> dict[str, object]:
        """The metrics as the mapping a scorer plugin reads: the fields the kind set."""
        return self.model_dump(mode="json", exclude_unset=True)


class KindMetrics(OutputSchema):
    """Measures of a kind's own (its `RunsAttempts.measure_own`), beside the core's: stored in
    the attempt's `kind_metrics` document and shown on its read and by the kind's templates.
    The leaderboard and scorer plugins rank by the core's metrics only. Measures under
    `SEALED_MEASURES` are of sealed results (a challenge's private part): readers see them
    when they see its sealed trials (`app.challenge.service.sealed_shown`)."""


SEALED_MEASURES = "sealed"


# The measures an attempt also keeps in columns of its own, for the leaderboard and rescoring.
COLUMN_METRICS = ("succeeded", "tokens_total", "elapsed_ms", "rating", "cost_usd")
