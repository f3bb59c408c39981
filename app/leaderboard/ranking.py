"""Scoring strategies as rank keys.

Each strategy maps a finished attempt onto `(rank_key, rank_tiebreak)`, smaller first, or None
when the attempt does not rank. Ties after that go to the earlier attempt (its `created_at` to
the millisecond), then to the attempt id, so the order is total and stable.
"""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass
from datetime import datetime

from app.db import epoch_ms
from app.scoring.measures import AttemptMetrics
from app.scoring.strategies import Strategy


@dataclass(frozen=True)
class RankedAttempt:
    """A finished attempt as the leaderboard sees it: whose it is, its metrics as its kind's
    run measured them (their `created_at` set) and its score."""

    tenant_id: uuid.UUID
    challenge_id: uuid.UUID
    participant_id: uuid.UUID
    attempt_id: uuid.UUID
    metrics: AttemptMetrics
    score: float | None
    baseline: bool = False

    def __post_init__(self) -> None:
        self.metrics.submitted_at()  # refuses metrics without their created_at

    @property
    def created_at(self) -> datetime:
        return self.metrics.submitted_at()


@dataclass(frozen=True, order=True)
class RankKey:
    rank_key: float
    rank_tiebreak: float


def _number(value: float | int | None) -> float | None:
    """The value as a float if it is a finite number; NaN, inf and None do not rank."""
    if value is None or not math.isfinite(value):
        return None
    return float(value)


# Stands in for an unknown cost, so attempts with a known cost win ties over those without.
UNKNOWN_COST = 1e300


def rank_key(
    strategy: Strategy | str, metrics: AttemptMetrics, score: float | None
) -> RankKey | None:
    """The attempt's place in the strategy's order, or None if it does not rank at all."""
    try:
        strategy = Strategy(strategy)
    except ValueError:
        raise ValueError(f"unknown strategy {strategy!r}") from None
    if strategy is Strategy.CUSTOM:
        # Every attempt with a score ranks, succeeded or not: the plugin decides what counts.
        scored = _number(score)
        return None if scored is None else RankKey(-scored, 0.0)
    if strategy is Strategy.METRIC_AT_K:
        metric = _number(metrics.metric_at_k)
        if metric is None:
            return None
        cost = _number(metrics.cost_usd)
        return RankKey(-metric, UNKNOWN_COST if cost is None else cost)
    if not metrics.succeeded:
        return None
    measure = {
        # The key is a number: the submission time in epoch milliseconds.
        Strategy.FIRST: None if metrics.created_at is None else epoch_ms(metrics.created_at),
        Strategy.FASTEST: _number(metrics.elapsed_ms),
        Strategy.FEWEST_TOKENS: _number(metrics.tokens_total),
        Strategy.HIGHEST_RATING: None if metrics.rating is None else _number(-metrics.rating),
    }[strategy]
    return None if measure is None else RankKey(float(measure), 0.0)


@dataclass(frozen=True)
class PlacedAttempt:
    """An attempt that ranks, with its key: the leaderboard row it would have."""

    attempt: RankedAttempt
    key: RankKey

    def place(self) -> tuple[float, float, datetime, uuid.UUID]:
        """Its place in the leaderboard's full order (the table's index), for comparisons in
        Python: the same order as the table's, its time to the millisecond as stored."""
        created_at = self.attempt.created_at
        to_the_millisecond = created_at.replace(microsecond=created_at.microsecond // 1000 * 1000)
        return (
            self.key.rank_key,
            self.key.rank_tiebreak,
            to_the_millisecond,
            self.attempt.attempt_id,
        )


def placed(strategy: Strategy | str, attempt: RankedAttempt) -> PlacedAttempt | None:
    """The attempt with its place in the strategy's order, or None if it does not rank."""
    key = rank_key(strategy, attempt.metrics, attempt.score)
    return None if key is None else PlacedAttempt(attempt, key)
