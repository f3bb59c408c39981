"""What a kind declares it accepts and what it implements agree: a kind that takes attempts,
or runs unscored ones, runs them; a kind of entries alone has no run to refuse with."""

from __future__ import annotations

from typing import ClassVar

import pytest

from app.attempt.attempt_kind import (
    AttemptKind,
    KindSubmission,
    RunContext,
    RunsAttempts,
    runner_of,
    unscored_fields,
)
from app.attempt.metrics import AttemptMetrics
from app.challenge import registry
from app.challenge.challenge_kind import Accepts, KindConfig
from app.kinds.base import Kind
from app.scoring.strategies import Strategy


class _Practice(KindSubmission):
    prompt: str


def test_a_kind_that_takes_attempts_without_running_them_is_refused_when_defined() -> None:
    with pytest.raises(TypeError, match=r"takes attempts .*subclass .*RunsAttempts"):

        class Silent(Kind):
            name: ClassVar[str] = "silent"
            accepts: ClassVar[Accepts] = Accepts.BOTH


def test_a_kind_of_entries_that_runs_unscored_ones_without_running_them_is_refused() -> None:
    with pytest.raises(TypeError, match="unscored_model"):

        class Practising(Kind):
            name: ClassVar[str] = "practising"
            accepts: ClassVar[Accepts] = Accepts.ENTRIES
            unscored_model: ClassVar[type[KindSubmission] | None] = _Practice


def test_a_kind_of_entries_alone_has_no_run_and_runs_nothing() -> None:
    class Entries(Kind):
        name: ClassVar[str] = "entries"
        config_model: ClassVar[type[KindConfig]] = KindConfig
        strategies: ClassVar[tuple[Strategy, ...]] = (Strategy.FIRST,)
        default_strategy: ClassVar[Strategy] = Strategy.FIRST
        accepts: ClassVar[Accepts] = Accepts.ENTRIES

    kind = Entries()
    assert not hasattr(kind, "run")
    assert unscored_fields(kind) is None
    with pytest.raises(TypeError, match="does not implement RunsAttempts"):
        runner_of(kind)


def test_a_kind_that_runs_attempts_must_say_how() -> None:
    class Unfinished(RunsAttempts, Kind):
        name: ClassVar[str] = "unfinished"

    with pytest.raises(TypeError, match="abstract"):
        Unfinished()  # type: ignore[abstract]

    class Finished(Unfinished):
        async def run(self, context: RunContext) -> AttemptMetrics:
            return AttemptMetrics(succeeded=True, tokens_total=0, elapsed_ms=0, trials=1)

    finished = Finished()
    assert runner_of(finished) is finished


def test_every_registered_kind_runs_what_it_accepts() -> None:
    kinds = registry._load((("word_count", "tests.fixtures.word_count_kind:KIND"),))
    for kind in kinds.values():
        assert isinstance(kind, AttemptKind)
        runs_some = kind.accepts.attempts or kind.unscored_model is not None
        assert runs_some == isinstance(kind, RunsAttempts), kind.name
    # red_blue takes entries of its own and runs its one-off matches as unscored attempts.
    assert kinds["red_blue"].accepts is Accepts.ENTRIES
    assert unscored_fields(kinds["red_blue"]) is not None
