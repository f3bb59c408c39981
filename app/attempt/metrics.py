"""What an attempt keeps of its measures beside the core's (`app.scoring.measures`)."""

from __future__ import annotations

from app.schemas import OutputSchema


class KindMetrics(OutputSchema):
    """Measures of a kind's own (its `AttemptKind.measure_own`), beside the core's: stored in
    the attempt's `kind_metrics` document and shown on its read and by the kind's templates.
    The leaderboard and scorer plugins rank by the core's metrics only."""


# The measures an attempt also keeps in columns of its own, for the leaderboard and rescoring.
COLUMN_METRICS = ("succeeded", "tokens_total", "elapsed_ms", "rating", "cost_usd")
