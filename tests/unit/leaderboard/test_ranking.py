"""Strategies as rank keys: who ranks, in which order, and how ties break."""

from __future__ import annotations

import math
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from app.leaderboard.models import LeaderboardEntry
from app.leaderboard.ranking import (
    UNKNOWN_COST,
    PlacedAttempt,
    RankedAttempt,
    RankKey,
    rank_key,
)
from app.leaderboard.service import ranked_items
from app.scoring.measures import AttemptMetrics

SUBMITTED = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)


def key(strategy: str, score: float | None = None, **metrics: Any) -> RankKey | None:
    """The rank key of a succeeded attempt submitted at SUBMITTED, unless `metrics` say else."""
    values: dict[str, Any] = {"succeeded": True, "created_at": SUBMITTED, **metrics}
    return rank_key(strategy, AttemptMetrics(**values), score)


@pytest.mark.parametrize("strategy", ["first", "fastest", "fewest_tokens", "highest_rating"])
def test_failed_attempts_do_not_rank_under_success_strategies(strategy: str) -> None:
    assert key(strategy, succeeded=False, elapsed_ms=1, tokens_total=1, rating=10.0) is None
    assert key(strategy, succeeded=None, elapsed_ms=1, tokens_total=1) is None


def test_each_strategy_orders_by_its_measure() -> None:
    later = SUBMITTED + timedelta(milliseconds=1)
    assert key("first") < key("first", created_at=later)
    assert key("first") == RankKey(1_795_780_800_000.0, 0.0)  # epoch milliseconds
    assert key("fastest", elapsed_ms=10) < key("fastest", elapsed_ms=20)
    assert key("fewest_tokens", tokens_total=5) < key("fewest_tokens", tokens_total=50)
    assert key("highest_rating", rating=9.5) < key("highest_rating", rating=3.0)


def test_missing_or_non_finite_measures_do_not_rank() -> None:
    assert key("fastest", elapsed_ms=None) is None
    assert key("fewest_tokens", tokens_total=None) is None
    assert key("highest_rating", rating=None) is None
    assert key("highest_rating", rating=math.nan) is None
    assert key("custom", score=math.inf) is None
    assert key("custom", score=None) is None


def test_custom_ranks_every_scored_attempt_higher_first() -> None:
    failed_but_scored = key("custom", score=23.0, succeeded=False)
    assert failed_but_scored == RankKey(-23.0, 0.0)
    assert key("custom", score=165.0) < failed_but_scored
    assert key("custom", score=0.0) == RankKey(-0.0, 0.0)


def test_metric_at_k_breaks_ties_by_lower_cost_then_unknown_cost_last() -> None:
    cheap = key("metric_at_k", metric_at_k=0.5, cost_usd=0.01)
    dear = key("metric_at_k", metric_at_k=0.5, cost_usd=1.0)
    unknown = key("metric_at_k", metric_at_k=0.5, cost_usd=None)
    better = key("metric_at_k", metric_at_k=0.75, cost_usd=9.0)
    assert better < cheap < dear < unknown
    assert unknown == RankKey(-0.5, UNKNOWN_COST)
    assert key("metric_at_k", metric_at_k=None) is None


def _placed(created_at: datetime, attempt_id: uuid.UUID) -> PlacedAttempt:
    ranked = RankedAttempt(
        tenant_id=uuid.uuid4(),
        challenge_id=uuid.uuid4(),
        participant_id=uuid.uuid4(),
        attempt_id=attempt_id,
        metrics=AttemptMetrics(succeeded=True, created_at=created_at),
        score=None,
    )
    return PlacedAttempt(ranked, RankKey(10.0, 0.0))


def test_ties_go_to_the_earlier_attempt_to_the_millisecond_then_the_id() -> None:
    low, high = uuid.UUID(int=1), uuid.UUID(int=2)
    later = SUBMITTED + timedelta(milliseconds=1)
    assert _placed(SUBMITTED, high).place() < _placed(later, low).place()
    assert _placed(SUBMITTED, low).place() < _placed(SUBMITTED, high).place()
    # Within one millisecond the id decides, as in the leaderboard table (epoch ms stored).
    same_millisecond = SUBMITTED + timedelta(microseconds=999)
    assert _placed(same_millisecond, low).place() < _placed(SUBMITTED, high).place()


def test_an_attempt_ranks_only_with_its_submission_time() -> None:
    with pytest.raises(ValueError, match="created_at"):
        RankedAttempt(
            tenant_id=uuid.uuid4(),
            challenge_id=uuid.uuid4(),
            participant_id=uuid.uuid4(),
            attempt_id=uuid.uuid4(),
            metrics=AttemptMetrics(succeeded=True),
            score=None,
        )


def test_unknown_strategy_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown strategy"):
        key("vibes")


def _entry(baseline: bool) -> LeaderboardEntry:
    return LeaderboardEntry(
        challenge_id=uuid.uuid4(),
        participant_id=uuid.uuid4(),
        attempt_id=uuid.uuid4(),
        rank_key=0.0,
        rank_tiebreak=0.0,
        attempt_created_at_ms=0,
        baseline=baseline,
    )


@pytest.mark.parametrize(
    ("baselines", "ranked_before", "ranks", "after"),
    [
        ([], 0, [], 0),
        ([False, False, False], 0, [1, 2, 3], 3),
        # A baseline is ranked where it would place: the rank of the participant after it.
        ([True, False, True, False, True], 0, [1, 1, 2, 2, 3], 2),
        ([True, True], 0, [1, 1], 0),
        # A page deeper in the board goes on from the participants ranked before it.
        ([False, True, False], 40, [41, 42, 42], 42),
    ],
)
def test_baselines_take_no_participants_rank(
    baselines: list[bool], ranked_before: int, ranks: list[int], after: int
) -> None:
    rows = [(_entry(baseline), f"p{index}") for index, baseline in enumerate(baselines)]
    items, ranked = ranked_items(rows, ranked_before)
    assert [item.rank for item in items] == ranks
    assert [item.baseline for item in items] == baselines
    assert ranked == after
