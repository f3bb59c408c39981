"""Scoring strategies as rank keys.

Each strategy maps a finished attempt onto `(rank_key, rank_tiebreak)`, smaller first, or None
when the attempt does not rank. Ties after that go to the earlier attempt (`created_at` in epoch
ms, then the attempt id, so the order is total and stable).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from app.scoring.strategies import Strategy


@dataclass(frozen=True)
class RankInput:
    """What an attempt is ranked by: the one declaration of the ranked measures."""

    succeeded: bool | None
    created_at_ms: int
    elapsed_ms: int | None = None
    tokens_total: int | None = None
    rating: float | None = None
    score: float | None = None
    metric_at_k: float | None = None
    cost_usd: float | None = None


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


def rank_key(strategy: Strategy | str, attempt: RankInput) -> RankKey | None:
    """The attempt's place in the strategy's order, or None if it does not rank at all."""
    try:
        strategy = Strategy(strategy)
    except ValueError:
        raise ValueError(f"unknown strategy {strategy!r}") from None
    if strategy is Strategy.CUSTOM:
        # Every attempt with a score ranks, succeeded or not: the plugin decides what counts.
        score = _number(attempt.score)
        return None if score is None else RankKey(-score, 0.0)
    if strategy is Strategy.METRIC_AT_K:
        metric = _number(attempt.metric_at_k)
        if metric is None:
            return None
        cost = _number(attempt.cost_usd)
        return RankKey(-metric, UNKNOWN_COST if cost is None else cost)
    if not attempt.succeeded:
        return None
    measure = {
        Strategy.FIRST: _number(attempt.created_at_ms),
        Strategy.FASTEST: _number(attempt.elapsed_ms),
        Strategy.FEWEST_TOKENS: _number(attempt.tokens_total),
        Strategy.HIGHEST_RATING: None if attempt.rating is None else _number(-attempt.rating),
    }[strategy]
    return None if measure is None else RankKey(measure, 0.0)


def sort_tuple(key: RankKey, created_at_ms: int, attempt_id: str) -> tuple[float, float, int, str]:
    """The full order used by the leaderboard table's index, for comparisons in Python."""
    return (key.rank_key, key.rank_tiebreak, created_at_ms, attempt_id)
