"""A finished attempt's metrics: recorded in its row, handed to the leaderboard as they are."""

from __future__ import annotations

import uuid
from typing import Any

from app.attempt.attempt_kind import AttemptJob
from app.attempt.metrics import COLUMN_METRICS
from app.attempt.models import Attempt
from app.leaderboard.ranking import RankedAttempt
from app.scoring.measures import AttemptMetrics


def metric_columns(metrics: AttemptMetrics) -> dict[str, Any]:
    """What the attempt's row stores of its metrics: all of them, the ranked measures in
    their columns too."""
    return {"metrics": metrics, **{name: getattr(metrics, name) for name in COLUMN_METRICS}}


def ranked_run(
    job: AttemptJob, participant_id: uuid.UUID, metrics: AttemptMetrics, score: float | None
) -> RankedAttempt:
    """The attempt a run just finished, as the leaderboard ranks it: the metrics its kind's
    run measured (their `created_at` set) and its score, as `as_ranked` reads them back."""
    return RankedAttempt(
        tenant_id=job.tenant_id,
        challenge_id=job.challenge_id,
        participant_id=participant_id,
        attempt_id=job.attempt_id,
        metrics=metrics,
        score=score,
        baseline=job.baseline,
    )


def as_ranked(attempt: Attempt) -> RankedAttempt:
    """A stored attempt as the leaderboard ranks it (its score as scored last): its metrics,
    the ranked measures as their columns hold them, submitted at its `created_at`."""
    stored = attempt.metrics if attempt.metrics is not None else AttemptMetrics()
    columns = {name: getattr(attempt, name) for name in COLUMN_METRICS}
    return RankedAttempt(
        tenant_id=attempt.tenant_id,
        challenge_id=attempt.challenge_id,
        participant_id=attempt.entrant_id,
        attempt_id=attempt.id,
        metrics=stored.model_copy(update={**columns, "created_at": attempt.created_at}),
        score=attempt.score,
        baseline=attempt.baseline,
    )
