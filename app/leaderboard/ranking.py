"""Finished attempts placed in the leaderboard's order.

Each strategy maps a finished attempt onto `(rank_key, rank_tiebreak)`, smaller first, or None
when the attempt does not rank (its `ScoringStrategy.rank`, app/scoring/strategies.py). Ties
after that go to the earlier attempt (its `created_at` to the millisecond), then to the attempt
id, so the order is total and stable.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from app.scoring.measures import AttemptMetrics
from app.scoring.strategies import UNKNOWN_COST as UNKNOWN_COST
from app.scoring.strategies import RankKey, Strategy, scoring_strategy


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


def rank_key(
    strategy: Strategy | str, metrics: AttemptMetrics, score: float | None
) -> RankKey | None:
    """The attempt's place in the strategy's order, or None if it does not rank at all."""
    return scoring_strategy(strategy).rank(metrics, score)


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
