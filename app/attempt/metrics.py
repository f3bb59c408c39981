"""An attempt's measures beside the core's `AttemptMetrics` (app.scoring.measures): the
metrics of a run of trials, a kind's own measures, and the columns an attempt keeps."""

from __future__ import annotations

from collections.abc import Sequence

from app.evaluation.engine.types import TrialRecord
from app.kit.schemas import OutputSchema
from app.scoring.measures import AttemptMetrics


class KindMetrics(OutputSchema):
    """Measures of a kind's own (its `RunsAttempts.measure_own`), beside the core's: stored in
    the attempt's `kind_metrics` document and shown on its read and by the kind's templates.
    The leaderboard and scorer plugins rank by the core's metrics only. Measures under
    `SEALED_MEASURES` are of sealed results (a challenge's private part): readers see them
    when they see its sealed trials (`app.challenge.service.sealed_shown`)."""


SEALED_MEASURES = "sealed"


# The measures an attempt also keeps in columns of its own, for the leaderboard and rescoring.
COLUMN_METRICS = ("succeeded", "tokens_total", "elapsed_ms", "rating", "cost_usd")


def trial_metrics(trials: Sequence[TrialRecord]) -> AttemptMetrics:
    """An attempt's metrics from all its trials (a takeover's count with the first run's).
    Tokens and time count the actor only; cost counts every call whose price is known."""
    ratings = [trial.judge.rating for trial in trials if trial.judge.rating is not None]
    costs: list[float] = []
    for trial in trials:
        if trial.actor.cost_usd is not None:
            costs.append(trial.actor.cost_usd)
        for call in [*trial.judge.calls, *trial.critic.calls]:
            cost = call.get("cost_usd")
            if isinstance(cost, int | float) and not isinstance(cost, bool):
                costs.append(float(cost))
    return AttemptMetrics(
        succeeded=any(trial.success for trial in trials),
        tokens_total=sum(trial.actor.input_tokens + trial.actor.output_tokens for trial in trials),
        elapsed_ms=sum(trial.actor.elapsed_ms for trial in trials),
        rating=max(ratings) if ratings else None,
        cost_usd=sum(costs) if costs else None,
        trials=len(trials),
    )
