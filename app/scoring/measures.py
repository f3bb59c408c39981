"""A finished attempt's measures, declared once: what its kind's run measured, scored by the
challenge's strategy or plugin, stored on the attempt (as a document, the ranked measures in
columns of their own too), shown by the API, and ranked by the leaderboard as they are."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import AwareDatetime, Field, field_validator

from app.kit.db import epoch_ms, from_epoch_ms
from app.kit.schemas import OutputSchema


class AttemptMetrics(OutputSchema):
    """Kinds set what they measure; a field a kind leaves unset is not stored, so scorer
    plugins see the same keys the kind gives (`as_plugin_input`)."""

    succeeded: bool | None = None
    tokens_total: int | None = None
    elapsed_ms: int | None = None
    rating: float | None = None
    created_at: AwareDatetime | None = Field(
        default=None,
        description="When the attempt was submitted (ISO 8601, UTC), as its own `created_at`.",
    )
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

    @field_validator("created_at", mode="before")
    @classmethod
    def _stored_as_epoch_ms(cls, value: Any) -> Any:
        # Documents stored before this field was a date hold epoch milliseconds.
        if isinstance(value, int | float) and not isinstance(value, bool):
            return from_epoch_ms(int(value))
        return value

    def as_plugin_input(self) -> dict[str, object]:
        """The metrics as the mapping a scorer plugin reads: the fields the kind set, with
        `created_at` in epoch milliseconds (the plugin protocol's format, scorers/README.md)."""
        data = self.model_dump(mode="json", exclude_unset=True)
        if self.created_at is not None:
            data["created_at"] = epoch_ms(self.created_at)
        return data

    def submitted_at(self) -> datetime:
        """`created_at`, which the metrics of a finished attempt carry (else ValueError)."""
        if self.created_at is None:
            raise ValueError("a finished attempt's metrics carry its created_at")
        return self.created_at
