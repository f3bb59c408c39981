"""The scoring strategies a challenge ranks its attempts by, as a registry.

Each strategy is one `ScoringStrategy`: how it places an attempt in the leaderboard's order,
whether its attempts need a plugin's score, what it ranks by and shows in its board column (in
people's words and in the API's), and how that column writes a row's value. The service asks
the challenge's strategy object; no code outside this module tests which strategy a challenge
has (tests/unit/test_one_place_per_strategy.py fails on one that does). Which strategies a
challenge may use is its kind's to say (`ChallengeKind.strategies`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol

from app.kit.db import epoch_ms
from app.kit.figures import format_duration, format_number, format_percent
from app.scoring.measures import AttemptMetrics


class Strategy(StrEnum):
    """The strategies' names, as a challenge's `scoring.strategy` stores them and the API
    takes them; each has one `ScoringStrategy` in `STRATEGIES`."""

    FIRST = "first"
    FASTEST = "fastest"
    FEWEST_TOKENS = "fewest_tokens"
    HIGHEST_RATING = "highest_rating"
    METRIC_AT_K = "metric_at_k"
    CUSTOM = "custom"


class Measure(StrEnum):
    """What a strategy ranks by, and so what its board column shows: one of the attempt's
    measures (`AttemptMetrics`), or its score."""

    CREATED_AT = "created_at"
    ELAPSED_MS = "elapsed_ms"
    TOKENS_TOTAL = "tokens_total"
    RATING = "rating"
    METRIC_AT_K = "metric_at_k"
    SCORE = "score"


@dataclass(frozen=True, order=True)
class RankKey:
    """An attempt's place in its strategy's order, smaller first: the leaderboard table's
    `rank_key` and `rank_tiebreak`. One order serves every strategy (the table's index:
    these two, then the earlier attempt, then the attempt id), so a strategy is a mapping
    onto it, negated where higher is better."""

    rank_key: float
    rank_tiebreak: float


# Stands in for an unknown cost, so attempts with a known cost win ties over those without.
UNKNOWN_COST = 1e300


class BoardRow(Protocol):
    """A leaderboard row as a strategy's column reads it (`LeaderboardItem`)."""

    @property
    def created_at(self) -> datetime: ...
    @property
    def elapsed_ms(self) -> int | None: ...
    @property
    def tokens_total(self) -> int | None: ...
    @property
    def rating(self) -> float | None: ...
    @property
    def score(self) -> float | None: ...


Ranker = Callable[[AttemptMetrics, float | None], RankKey | None]


@dataclass(frozen=True)
class ScoringStrategy:
    """One strategy: all the service does with it."""

    name: Strategy
    # Its name in people's words: the pages, the console's choice of strategy.
    label: str
    # The heading of the board column that shows the value it ranks by.
    column: str
    # What it ranks by, in people's words: the pages, the console's choice of strategy.
    explanation: str
    # What it ranks by, in the API's terms: the OpenAPI document's `scoring.strategy`.
    description: str
    measure: Measure
    # The attempt's place in its order, or None when the attempt does not rank.
    rank: Ranker
    # The value it ranks a row by, as its column writes it.
    shown: Callable[[BoardRow], str]
    # What the value counts, said after it where no column heading names it ("12 tokens").
    unit: str = ""
    # Its attempts rank by a score the challenge's scorer plugin gives: its scoring names one.
    scored_by_plugin: bool = False
    # The measure its score repeats (the curve at k), without a plugin; None: no such score.
    score_from: Measure | None = None
    # Its explanation on a challenge's pages, naming the challenge's plugin (`{plugin}`).
    plugin_explanation: str | None = None

    def builtin_score(self, metrics: Mapping[str, Any]) -> float | None:
        """The score an attempt gets without a plugin: the measure it repeats, if any."""
        return None if self.score_from is None else metrics.get(self.score_from)

    @property
    def score_repeats_measure(self) -> bool:
        """Whether its score only repeats the measure it ranks by (not worth showing twice)."""
        return self.score_from is not None

    def explained(self, plugin_id: str | None) -> str:
        """What it ranks by on a challenge's pages, naming the challenge's plugin if it uses
        one."""
        if self.plugin_explanation is None:
            return self.explanation
        return self.plugin_explanation.format(plugin=plugin_id or "a scorer plugin")

    def shown_with_unit(self, row: BoardRow) -> str:
        """Its value for a row where no column heading says what it counts."""
        value = self.shown(row)
        return f"{value} {self.unit}" if self.unit else value


def _finite(value: float | int | None) -> float | None:
    """The value as a float if it is a finite number; NaN, inf and None do not rank."""
    if value is None or not math.isfinite(value):
        return None
    return float(value)


def _succeeded_by(measure: Callable[[AttemptMetrics], float | None]) -> Ranker:
    """Ranks succeeded attempts by a measure, smaller first; others do not rank."""

    def rank(metrics: AttemptMetrics, score: float | None) -> RankKey | None:
        if not metrics.succeeded:
            return None
        value = measure(metrics)
        return None if value is None else RankKey(value, 0.0)

    return rank


def _submitted_ms(metrics: AttemptMetrics) -> float | None:
    # The key is a number: the submission time in epoch milliseconds.
    return None if metrics.created_at is None else float(epoch_ms(metrics.created_at))


def _elapsed(metrics: AttemptMetrics) -> float | None:
    return _finite(metrics.elapsed_ms)


def _tokens(metrics: AttemptMetrics) -> float | None:
    return _finite(metrics.tokens_total)


def _negated_rating(metrics: AttemptMetrics) -> float | None:
    return None if metrics.rating is None else _finite(-metrics.rating)


def _by_metric_at_k(metrics: AttemptMetrics, score: float | None) -> RankKey | None:
    metric = _finite(metrics.metric_at_k)
    if metric is None:
        return None
    cost = _finite(metrics.cost_usd)
    return RankKey(-metric, UNKNOWN_COST if cost is None else cost)


def _by_score(metrics: AttemptMetrics, score: float | None) -> RankKey | None:
    # Every attempt with a score ranks, succeeded or not: the plugin decides what counts.
    scored = _finite(score)
    return None if scored is None else RankKey(-scored, 0.0)


def _time_shown(row: BoardRow) -> str:
    return f"{row.created_at:%Y-%m-%d %H:%M:%S} UTC"


def _duration_shown(row: BoardRow) -> str:
    return format_duration(row.elapsed_ms)


def _tokens_shown(row: BoardRow) -> str:
    return format_number(row.tokens_total)


def _rating_shown(row: BoardRow) -> str:
    return "—" if row.rating is None else f"{row.rating:g} / 10"


def _share_shown(row: BoardRow) -> str:
    return format_percent(row.score)


def _score_shown(row: BoardRow) -> str:
    return format_number(row.score)


STRATEGIES: tuple[ScoringStrategy, ...] = (
    ScoringStrategy(
        Strategy.FIRST,
        label="First to succeed",
        column="Solved at",
        explanation="The earliest success ranks first.",
        description="succeeded attempts by `created_at`, earliest first",
        measure=Measure.CREATED_AT,
        rank=_succeeded_by(_submitted_ms),
        shown=_time_shown,
    ),
    ScoringStrategy(
        Strategy.FASTEST,
        label="Fastest",
        column="Time",
        explanation="Successful attempts rank by model time.",
        description="succeeded attempts by `elapsed_ms`, fastest first",
        measure=Measure.ELAPSED_MS,
        rank=_succeeded_by(_elapsed),
        shown=_duration_shown,
    ),
    ScoringStrategy(
        Strategy.FEWEST_TOKENS,
        label="Fewest tokens",
        column="Tokens",
        explanation="Successful attempts rank by tokens used, fewest first.",
        description="succeeded attempts by `tokens_total`, fewest first",
        measure=Measure.TOKENS_TOTAL,
        rank=_succeeded_by(_tokens),
        shown=_tokens_shown,
        unit="tokens",
    ),
    ScoringStrategy(
        Strategy.HIGHEST_RATING,
        label="Highest rating",
        column="Rating",
        explanation="Successful attempts rank by the judge's rating.",
        description="succeeded attempts by the judge's `rating`, highest first (needs an "
        "`llm_judge` verifier)",
        measure=Measure.RATING,
        rank=_succeeded_by(_negated_rating),
        shown=_rating_shown,
    ),
    ScoringStrategy(
        Strategy.METRIC_AT_K,
        label="Best metric",
        column="Metric",
        explanation="Higher first; among equals, cheaper.",
        description="benchmark runs by `metric_at_k` (the curve at k, the score too), highest "
        "first; among equals, the lower `cost_usd`",
        measure=Measure.METRIC_AT_K,
        rank=_by_metric_at_k,
        shown=_share_shown,
        score_from=Measure.METRIC_AT_K,
    ),
    ScoringStrategy(
        Strategy.CUSTOM,
        label="Custom score",
        column="Score",
        explanation="Attempts rank by a scorer plugin's score.",
        description="every attempt with a score from the scorer plugin `plugin_id`, highest first",
        measure=Measure.SCORE,
        rank=_by_score,
        shown=_score_shown,
        scored_by_plugin=True,
        plugin_explanation="Attempts rank by the score of {plugin}.",
    ),
)

_BY_NAME: Mapping[Strategy, ScoringStrategy] = {strategy.name: strategy for strategy in STRATEGIES}

# The strategy a scoring section means when it names a plugin and no strategy (the flat
# scoring fields), and the one a plugin is refused without.
PLUGIN_STRATEGY = next(strategy for strategy in STRATEGIES if strategy.scored_by_plugin)


def scoring_strategy(name: Strategy | str) -> ScoringStrategy:
    """The strategy of this name (ValueError for a name no strategy has)."""
    try:
        return _BY_NAME[Strategy(name)]
    except ValueError:
        raise ValueError(f"unknown strategy {name!r}") from None


def scored_by_plugin(name: Strategy | str | None) -> bool:
    """Whether a scoring section naming this strategy needs a plugin: False for none or an
    unknown name (which the scoring's schema refuses on its own)."""
    if name is None or name not in _BY_NAME:
        return False
    return scoring_strategy(name).scored_by_plugin
