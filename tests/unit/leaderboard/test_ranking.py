"""Strategies as rank keys: who ranks, in which order, and how ties break."""

from __future__ import annotations

import math
import uuid

import pytest

from app.leaderboard.models import LeaderboardEntry
from app.leaderboard.ranking import UNKNOWN_COST, RankInput, RankKey, rank_key, sort_tuple
from app.leaderboard.service import ranked_items


def attempt(**values: object) -> RankInput:
    base: dict[str, object] = {"succeeded": True, "created_at_ms": 1_000}
    base.update(values)
    return RankInput(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize("strategy", ["first", "fastest", "fewest_tokens", "highest_rating"])
def test_failed_attempts_do_not_rank_under_success_strategies(strategy: str) -> None:
    failed = attempt(succeeded=False, elapsed_ms=1, tokens_total=1, rating=10.0)
    assert rank_key(strategy, failed) is None
    assert rank_key(strategy, attempt(succeeded=None, elapsed_ms=1, tokens_total=1)) is None


def test_each_strategy_orders_by_its_measure() -> None:
    early, late = attempt(created_at_ms=1), attempt(created_at_ms=2)
    assert rank_key("first", early) < rank_key("first", late)
    fast, slow = attempt(elapsed_ms=10), attempt(elapsed_ms=20)
    assert rank_key("fastest", fast) < rank_key("fastest", slow)
    few, many = attempt(tokens_total=5), attempt(tokens_total=50)
    assert rank_key("fewest_tokens", few) < rank_key("fewest_tokens", many)
    high, low = attempt(rating=9.5), attempt(rating=3.0)
    assert rank_key("highest_rating", high) < rank_key("highest_rating", low)


def test_missing_or_non_finite_measures_do_not_rank() -> None:
    assert rank_key("fastest", attempt(elapsed_ms=None)) is None
    assert rank_key("fewest_tokens", attempt(tokens_total=None)) is None
    assert rank_key("highest_rating", attempt(rating=None)) is None
    assert rank_key("highest_rating", attempt(rating=math.nan)) is None
    assert rank_key("custom", attempt(score=math.inf)) is None
    assert rank_key("custom", attempt(score=None)) is None


def test_custom_ranks_every_scored_attempt_higher_first() -> None:
    failed_but_scored = attempt(succeeded=False, score=23.0)
    assert rank_key("custom", failed_but_scored) == RankKey(-23.0, 0.0)
    assert rank_key("custom", attempt(score=165.0)) < rank_key("custom", failed_but_scored)
    assert rank_key("custom", attempt(score=0.0)) == RankKey(-0.0, 0.0)


def test_metric_at_k_breaks_ties_by_lower_cost_then_unknown_cost_last() -> None:
    cheap = rank_key("metric_at_k", attempt(metric_at_k=0.5, cost_usd=0.01))
    dear = rank_key("metric_at_k", attempt(metric_at_k=0.5, cost_usd=1.0))
    unknown = rank_key("metric_at_k", attempt(metric_at_k=0.5, cost_usd=None))
    better = rank_key("metric_at_k", attempt(metric_at_k=0.75, cost_usd=9.0))
    assert better < cheap < dear < unknown
    assert unknown == RankKey(-0.5, UNKNOWN_COST)
    assert rank_key("metric_at_k", attempt(metric_at_k=None)) is None


def test_ties_go_to_the_earlier_attempt_then_the_id() -> None:
    key = RankKey(10.0, 0.0)
    assert sort_tuple(key, 1, "b") < sort_tuple(key, 2, "a")
    assert sort_tuple(key, 1, "a") < sort_tuple(key, 1, "b")


def test_unknown_strategy_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown strategy"):
        rank_key("vibes", attempt())


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
