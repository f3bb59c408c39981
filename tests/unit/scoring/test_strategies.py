"""The registry of scoring strategies: one object per strategy, each ordering attempts by its
measure, ties going to the earlier attempt, and saying in its column what it ranks by."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from app.leaderboard.ranking import RankedAttempt, placed
from app.leaderboard.schemas import LeaderboardItem
from app.scoring.measures import AttemptMetrics
from app.scoring.schemas import ScoringConfig
from app.scoring.strategies import (
    PLUGIN_STRATEGY,
    STRATEGIES,
    Measure,
    RankKey,
    Strategy,
    scored_by_plugin,
    scoring_strategy,
)

ROOT = Path(__file__).resolve().parents[3]
SUBMITTED = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)

# For each strategy: what a better attempt and a worse one measure (and score), both succeeded.
BETTER_AND_WORSE: dict[Strategy, tuple[dict[str, Any], dict[str, Any]]] = {
    Strategy.FIRST: ({}, {"created_at": SUBMITTED + timedelta(milliseconds=1)}),
    Strategy.FASTEST: ({"elapsed_ms": 10}, {"elapsed_ms": 20}),
    Strategy.FEWEST_TOKENS: ({"tokens_total": 5}, {"tokens_total": 50}),
    Strategy.HIGHEST_RATING: ({"rating": 9.5}, {"rating": 3.0}),
    # The curve decides before the cost does.
    Strategy.METRIC_AT_K: (
        {"metric_at_k": 0.75, "cost_usd": 9.0},
        {"metric_at_k": 0.5, "cost_usd": 0.01},
    ),
    Strategy.CUSTOM: ({"score": 165.0}, {"score": 23.0}),
}


def _attempt(
    submitted: datetime = SUBMITTED, attempt_id: uuid.UUID | None = None, **values: Any
) -> RankedAttempt:
    score = values.pop("score", None)
    metrics = AttemptMetrics(**{"succeeded": True, "created_at": submitted, **values})
    return RankedAttempt(
        tenant_id=uuid.uuid4(),
        challenge_id=uuid.uuid4(),
        participant_id=uuid.uuid4(),
        attempt_id=attempt_id or uuid.uuid4(),
        metrics=metrics,
        score=score,
    )


def _key(strategy: Strategy, attempt: RankedAttempt) -> RankKey | None:
    return scoring_strategy(strategy).rank(attempt.metrics, attempt.score)


def test_every_strategy_name_has_one_registered_object() -> None:
    assert [strategy.name for strategy in STRATEGIES] == list(Strategy)
    for name in Strategy:
        assert scoring_strategy(name).name is name
        assert scoring_strategy(str(name)) is scoring_strategy(name)


def test_an_unknown_strategy_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown strategy 'vibes'"):
        scoring_strategy("vibes")


@pytest.mark.parametrize("name", list(Strategy))
def test_each_strategy_ranks_the_better_attempt_first(name: Strategy) -> None:
    better, worse = BETTER_AND_WORSE[name]
    better_key, worse_key = _key(name, _attempt(**better)), _key(name, _attempt(**worse))
    assert better_key is not None and worse_key is not None
    assert better_key < worse_key


@pytest.mark.parametrize("name", list(Strategy))
def test_each_strategy_gives_a_tie_to_the_earlier_attempt(name: Strategy) -> None:
    measures = BETTER_AND_WORSE[name][0]
    # The later attempt has the smaller id: only its time can place it second.
    earlier = _attempt(SUBMITTED, uuid.UUID(int=2), **measures)
    later = _attempt(SUBMITTED + timedelta(milliseconds=1), uuid.UUID(int=1), **measures)
    if scoring_strategy(name).measure is not Measure.CREATED_AT:
        assert _key(name, earlier) == _key(name, later)  # a tie on the strategy's own measure
    first, second = placed(name, earlier), placed(name, later)
    assert first is not None and second is not None
    assert first.place() < second.place()


@pytest.mark.parametrize("name", list(Strategy))
def test_an_attempt_without_the_measure_does_not_rank(name: Strategy) -> None:
    # The better attempt's measures, each of them missing in turn (`created_at` aside: a
    # finished attempt always has it).
    for missing in BETTER_AND_WORSE[name][0]:
        values = {**BETTER_AND_WORSE[name][0], missing: None}
        if missing == "cost_usd":
            continue  # an unknown cost ranks last among equals, it does not unrank
        assert _key(name, _attempt(**values)) is None, missing


def test_a_failed_attempt_ranks_only_by_a_plugins_score_or_a_benchmarks_curve() -> None:
    for strategy in STRATEGIES:
        better = BETTER_AND_WORSE[strategy.name][0]
        ranks = _key(strategy.name, _attempt(**better, succeeded=False)) is not None
        assert ranks == (strategy.name in (Strategy.CUSTOM, Strategy.METRIC_AT_K)), strategy.name


def test_each_strategy_ranks_by_a_measure_the_attempt_has() -> None:
    for strategy in STRATEGIES:
        assert strategy.measure == "score" or strategy.measure in AttemptMetrics.model_fields


def test_one_strategy_is_scored_by_a_plugin_and_a_plugin_alone_means_it() -> None:
    assert [s.name for s in STRATEGIES if s.scored_by_plugin] == [Strategy.CUSTOM]
    assert PLUGIN_STRATEGY is scoring_strategy(Strategy.CUSTOM)
    assert scored_by_plugin("custom") and scored_by_plugin(Strategy.CUSTOM)
    assert not scored_by_plugin("first")
    assert not scored_by_plugin(None) and not scored_by_plugin("vibes")


def test_a_score_without_a_plugin_repeats_the_measure_or_is_none() -> None:
    metrics = {"metric_at_k": 0.5, "tokens_total": 7}
    scores = {strategy.name: strategy.builtin_score(metrics) for strategy in STRATEGIES}
    assert scores == {name: (0.5 if name is Strategy.METRIC_AT_K else None) for name in Strategy}
    repeats = [s.name for s in STRATEGIES if s.score_repeats_measure]
    assert repeats == [Strategy.METRIC_AT_K]


def _row(**values: Any) -> LeaderboardItem:
    row: dict[str, Any] = {
        "rank": 1,
        "participant": "alice",
        "attempt_id": uuid.uuid4(),
        "score": None,
        "succeeded": True,
        "tokens_total": None,
        "elapsed_ms": None,
        "rating": None,
        "created_at": SUBMITTED,
    }
    return LeaderboardItem(**{**row, **values})


def test_each_strategy_writes_the_value_it_ranks_by_in_its_column() -> None:
    row = _row(elapsed_ms=1500, tokens_total=1234, rating=8.5, score=0.5)
    shown = {strategy.name: strategy.shown(row) for strategy in STRATEGIES}
    assert shown == {
        Strategy.FIRST: "2026-11-27 12:00:00 UTC",
        Strategy.FASTEST: "1.5 s",
        Strategy.FEWEST_TOKENS: "1,234",
        Strategy.HIGHEST_RATING: "8.5 / 10",
        Strategy.METRIC_AT_K: "50%",
        Strategy.CUSTOM: "0.50",
    }
    # Unknown values read as a dash, never "None".
    empty = _row()
    for strategy in STRATEGIES:
        if strategy.measure is not Measure.CREATED_AT:
            assert strategy.shown(empty) == "—", strategy.name
    # Alone (a challenge list), a count says what it counts.
    assert scoring_strategy("fewest_tokens").shown_with_unit(row) == "1,234 tokens"
    assert scoring_strategy("fastest").shown_with_unit(row) == "1.5 s"


def test_each_strategy_has_its_own_words() -> None:
    for field in ("label", "column", "explanation", "description"):
        words = [getattr(strategy, field) for strategy in STRATEGIES]
        assert all(words) and len(set(words)) == len(words), field


def test_a_plugins_strategy_names_the_plugin_on_the_pages() -> None:
    custom = scoring_strategy("custom")
    assert custom.explained("acme.frugal") == "Attempts rank by the score of acme.frugal."
    assert custom.explained(None) == "Attempts rank by the score of a scorer plugin."
    assert custom.explanation == "Attempts rank by a scorer plugin's score."
    fastest = scoring_strategy("fastest")
    assert fastest.explained("acme.frugal") == fastest.explanation


def test_the_api_documents_every_strategy() -> None:
    field = ScoringConfig.model_fields["strategy"].description or ""
    api_docs = (ROOT / "docs" / "api.md").read_text()
    for strategy in STRATEGIES:
        assert f"`{strategy.name}`: {strategy.description}" in field
        assert f"`{strategy.name}`" in api_docs
