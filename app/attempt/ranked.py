"""A finished attempt's measures: recorded from its metrics, handed to the leaderboard."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import Any

from app.attempt.metrics import COLUMN_METRICS, AttemptMetrics
from app.attempt.models import Attempt
from app.leaderboard.ranking import RankInput
from app.leaderboard.service import RankedAttempt


def metric_columns(metrics: AttemptMetrics) -> dict[str, Any]:
    """What the attempt's row stores of its metrics: all of them, the ranked measures in
    their columns too."""
    return {"metrics": metrics, **{name: getattr(metrics, name) for name in COLUMN_METRICS}}


def ranked_of(
    attempt_id: uuid.UUID,
    tenant_id: uuid.UUID,
    challenge_id: uuid.UUID,
    participant_id: uuid.UUID,
    *,
    baseline: bool = False,
) -> Callable[[AttemptMetrics, float | None], RankedAttempt]:
    """How the leaderboard ranks this attempt, given its metrics (their `created_at` set) and
    its score: as `as_ranked` would read it back once stored."""

    def ranked(metrics: AttemptMetrics, score: float | None) -> RankedAttempt:
        if metrics.created_at is None:
            raise ValueError("a ranked attempt's metrics carry its created_at")
        columns = {name: getattr(metrics, name) for name in COLUMN_METRICS}
        return _ranked(
            attempt_id,
            tenant_id,
            challenge_id,
            participant_id,
            metrics.created_at,
            score,
            metrics.metric_at_k,
            columns,
            baseline,
        )

    return ranked


def as_ranked(attempt: Attempt) -> RankedAttempt:
    """The attempt as the leaderboard ranks it (its score as scored last)."""
    return _ranked(
        attempt.id,
        attempt.tenant_id,
        attempt.challenge_id,
        attempt.entrant_id,
        attempt.created_at_ms,
        attempt.score,
        attempt.metrics.metric_at_k if attempt.metrics is not None else None,
        {name: getattr(attempt, name) for name in COLUMN_METRICS},
        attempt.baseline,
    )


def _ranked(
    attempt_id: uuid.UUID,
    tenant_id: uuid.UUID,
    challenge_id: uuid.UUID,
    participant_id: uuid.UUID,
    created_at_ms: int,
    score: float | None,
    metric_at_k: float | None,
    columns: Mapping[str, Any],
    baseline: bool,
) -> RankedAttempt:
    return RankedAttempt(
        tenant_id=tenant_id,
        challenge_id=challenge_id,
        participant_id=participant_id,
        attempt_id=attempt_id,
        measures=RankInput(
            created_at_ms=created_at_ms, score=score, metric_at_k=metric_at_k, **columns
        ),
        baseline=baseline,
    )
