"""A finished attempt's measures: recorded from its metrics, handed to the leaderboard."""

from __future__ import annotations

from app.attempt.metrics import COLUMN_METRICS, AttemptMetrics
from app.attempt.models import Attempt
from app.leaderboard.ranking import RankInput
from app.leaderboard.service import RankedAttempt


def record_metrics(attempt: Attempt, metrics: AttemptMetrics) -> None:
    """Stores the metrics on the attempt, the ranked measures in their columns too."""
    attempt.metrics = metrics
    for name in COLUMN_METRICS:
        setattr(attempt, name, getattr(metrics, name))


def as_ranked(attempt: Attempt) -> RankedAttempt:
    """The attempt as the leaderboard ranks it (its score as scored last)."""
    return RankedAttempt(
        tenant_id=attempt.tenant_id,
        challenge_id=attempt.challenge_id,
        participant_id=attempt.participant_id,
        attempt_id=attempt.id,
        measures=RankInput(
            created_at_ms=attempt.created_at_ms,
            score=attempt.score,
            metric_at_k=attempt.metrics.metric_at_k if attempt.metrics is not None else None,
            **{name: getattr(attempt, name) for name in COLUMN_METRICS},
        ),
    )
