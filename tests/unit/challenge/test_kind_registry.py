"""The registry of challenge kinds: the built-in ones, those installed packages add through
their entry points, and the mistakes it refuses at once."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest
from pydantic import ValidationError

from app.attempt.attempt_kind import AttemptKind
from app.challenge import registry
from app.challenge.challenge_kind import Accepts, ChallengeKind
from app.kit.config import Settings
from app.leaderboard.leaderboard_kind import LeaderboardKind
from app.web.web_kind import WebKind


def test_the_built_in_kinds_implement_every_layers_interface() -> None:
    kinds = registry._load(())
    assert list(kinds) == ["prompt", "benchmark", "red_blue"]
    for kind in kinds.values():
        for interface in (ChallengeKind, LeaderboardKind, AttemptKind, WebKind):
            assert isinstance(kind, interface)
        assert kind.default_strategy in kind.strategies


WORD_COUNT = ("word_count", "tests.fixtures.word_count_kind:KIND")
INSTALLED = Path(__file__).resolve().parents[2] / "fixtures" / "installed"


def test_an_installed_package_adds_its_kind_through_its_entry_point(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.syspath_prepend(str(INSTALLED))
    assert WORD_COUNT in registry.installed_entry_points()
    kinds = registry._load(registry.installed_entry_points())
    assert list(kinds)[:3] == ["prompt", "benchmark", "red_blue"]
    assert kinds["word_count"].name == "word_count"


def test_unknown_names_are_refused_with_the_known_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "registered", lambda: registry._load(()))
    with pytest.raises(registry.KindNotFound, match="known: benchmark, prompt, red_blue"):
        registry.find_kind("blue_green")


def test_the_old_module_list_setting_is_refused_at_start_up_saying_what_replaced_it() -> None:
    with pytest.raises(ValidationError, match=r"gauntlet\.challenge_kinds"):
        Settings(extra_challenge_kinds="tests.fixtures.word_count_kind")
    assert Settings(extra_challenge_kinds=" ").extra_challenge_kinds == " "


def test_each_kind_declares_what_it_accepts_and_the_fields_of_its_attempts() -> None:
    kinds = registry._load((WORD_COUNT,))
    assert {name: kind.accepts for name, kind in kinds.items()} == {
        "prompt": Accepts.ATTEMPTS,
        "benchmark": Accepts.ATTEMPTS,
        "red_blue": Accepts.ENTRIES,
        "word_count": Accepts.ATTEMPTS,
    }
    fields = {
        name: set(kind.submission_model.model_fields)
        for name, kind in kinds.items()
        if isinstance(kind, AttemptKind) and kind.accepts.attempts
    }
    assert fields == {
        "prompt": {"prompt"},
        "benchmark": {"model", "temperature", "system_prompt"},
        # A field of the kind's own beside the prompt, with no line of the core naming it.
        "word_count": {"prompt", "signature"},
    }


def test_an_entry_point_that_is_not_a_kind_or_takes_a_taken_name_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    empty = types.ModuleType("tests_kind_without_kind")
    empty.KIND = object()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, empty.__name__, empty)
    with pytest.raises(TypeError, match="is not a ChallengeKind"):
        registry._load((("empty", f"{empty.__name__}:KIND"),))
    twin = types.ModuleType("tests_kind_twin")
    twin.KIND = registry._load(())["prompt"]  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, twin.__name__, twin)
    with pytest.raises(ValueError, match="two challenge kinds are named 'prompt'"):
        registry._load((("prompt", f"{twin.__name__}:KIND"),))
    with pytest.raises(ValueError, match="an entry point is named as its kind"):
        registry._load((("other_name", "tests.fixtures.word_count_kind:KIND"),))


def test_seen_through_an_interface_it_lacks_a_kind_is_a_programming_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Bare(ChallengeKind):
        name = "bare"

    monkeypatch.setattr(registry, "registered", lambda: {"bare": Bare()})
    with pytest.raises(TypeError, match="does not implement AttemptKind"):
        registry.kind_as("bare", AttemptKind)


def test_the_worker_includes_a_kinds_tasks_and_beat_sends_its_periodic_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # What workers/celery_app.py builds its app with (importing it here would build the
    # process's Celery app before the test stack's settings).
    monkeypatch.setattr(registry, "registered", lambda: registry._load((WORD_COUNT,)))
    assert registry.worker_task_modules() == [
        "app.kinds.benchmark.tasks",
        "app.kinds.red_blue.tasks",
        "tests.fixtures.word_count_kind.tasks",
    ]
    sweep_every = registry.find_kind("red_blue").periodic_tasks["sweep"][1]
    assert registry.periodic_tasks() == {
        "benchmark-sweep": ("gauntlet.benchmark.sweep", sweep_every),
        "red_blue-sweep": ("gauntlet.redblue.sweep", sweep_every),
        "word_count-tally": ("tests.word_count.ping", 3600.0),
    }


def test_a_template_is_merged_under_a_body_as_a_json_merge_patch() -> None:
    from app.challenge.templates import merge_patch

    template = {"target": {"model": "m", "system_prompt": "s", "max_tokens": 5}, "k": [1, 2]}
    patch = {"target": {"system_prompt": "t", "max_tokens": None}, "k": [3], "new": {"a": 1}}
    assert merge_patch(template, patch) == {
        "target": {"model": "m", "system_prompt": "t"},
        "k": [3],
        "new": {"a": 1},
    }
    assert template["target"]["max_tokens"] == 5  # the template is not changed
    # Another shape of a union is the body's whole: no field of the template's shape is left.
    verifier = {"verifier": {"type": "contains", "pattern": "PWNED"}}
    judge = {"verifier": {"type": "llm_judge", "model": "m", "rubric": "r"}}
    assert merge_patch(verifier, judge) == judge
    same = {"verifier": {"type": "contains", "pattern": "BANANA"}}
    assert merge_patch(verifier, same) == same
    # However deep a body nests, the walk goes no deeper than the template.
    deep: dict[str, object] = {}
    for _ in range(5000):
        deep = {"x": deep}
    assert merge_patch({"x": 1}, deep) == deep


def test_a_slug_is_made_from_the_title_and_the_next_free_one_taken() -> None:
    from app.challenge.templates import slug_of_title

    taken = {"make-it-say-pwned", "make-it-say-pwned-2"}
    assert slug_of_title("Make it say PWNED!", taken.__contains__) == "make-it-say-pwned-3"
    assert slug_of_title("Café déjà vu", lambda s: False) == "cafe-deja-vu"
    assert slug_of_title("???", lambda s: False) == "challenge"
    # A title that would make a slug reading as an id gets one that does not.
    assert slug_of_title("0" * 32, lambda s: False) == "challenge-" + "0" * 32
    assert len(slug_of_title("word " * 40, lambda s: False)) <= 56
