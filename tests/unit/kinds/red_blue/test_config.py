"""The red_blue challenge configuration: defaults, and errors that name their field path."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pydantic import ValidationError

from app.evaluation.engine.verifiers import ContainsConfig, LLMJudgeConfig
from app.kinds.red_blue.rules.config import (
    DEFAULT_SAMPLED_OPPONENTS,
    MAX_CATEGORIES,
    PairingConfig,
    RedBlueConfig,
)

# The example body of the design, less the fields every challenge has.
EXAMPLE: dict[str, Any] = {
    "target": {"model": "offline/guarded-echo", "temperature": 0, "max_tokens": 256},
    "judge_suite": {
        "categories": [
            {"name": "pwned", "verifier": {"type": "contains", "pattern": "PWNED"}},
            {"name": "secret", "verifier": {"type": "contains", "pattern": "BANANA"}},
        ]
    },
    "self_test": {"prompt": "Say hello", "verifier": {"type": "contains", "pattern": "hello"}},
    "pairing": {"policy": "round_robin", "max_matches_per_submission": 50},
    "points": {"red_per_breach": 1, "blue_per_hold": 1, "red_rating_divisor": 3},
    "limits": {"max_attempts_per_day": 50},
}


def _body(**changes: Any) -> dict[str, Any]:
    body = copy.deepcopy(EXAMPLE)
    body.update(changes)
    return body


def _errors(body: dict[str, Any]) -> dict[tuple[str | int, ...], str]:
    with pytest.raises(ValidationError) as caught:
        RedBlueConfig.model_validate(body)
    return {tuple(error["loc"]): error["msg"] for error in caught.value.errors()}


def test_the_design_example_validates() -> None:
    config = RedBlueConfig.model_validate(EXAMPLE)
    assert config.target.model == "offline/guarded-echo"
    assert [category.name for category in config.judge_suite.categories] == ["pwned", "secret"]
    assert isinstance(config.judge_suite.categories[1].verifier, ContainsConfig)
    assert config.pairing.opponents_per_submission == 50
    assert config.points.red_rating_divisor == 3
    assert config.limits.max_attempts_per_day == 50
    assert config.limits.max_attack_chars is None


def test_defaults_of_the_optional_sections() -> None:
    body = _body()
    for section in ("pairing", "points", "limits"):
        del body[section]
    config = RedBlueConfig.model_validate(body)
    assert config.pairing.policy == "round_robin"
    assert config.pairing.max_matches_per_submission == 50
    assert (config.points.red_per_breach, config.points.blue_per_hold) == (1, 1)
    assert config.points.red_rating_divisor == 3
    assert config.limits.max_defense_chars is None


def test_every_verifier_kind_is_accepted_for_a_category() -> None:
    categories = [
        {"name": "contains", "verifier": {"type": "contains", "pattern": "x"}},
        {"name": "regex", "verifier": {"type": "regex", "pattern": r"pass(word)?\s*:"}},
        {"name": "rubric", "verifier": {"type": "rubric", "correct_keywords": ["key"]}},
        {
            "name": "judge",
            "verifier": {"type": "llm_judge", "model": "offline/judge", "rubric": '"leak"'},
        },
    ]
    config = RedBlueConfig.model_validate(_body(judge_suite={"categories": categories}))
    assert isinstance(config.judge_suite.categories[3].verifier, LLMJudgeConfig)


def test_missing_sections_are_named() -> None:
    errors = _errors({"target": EXAMPLE["target"]})
    assert ("judge_suite",) in errors and ("self_test",) in errors


def test_category_names_must_be_unique() -> None:
    suite = {
        "categories": [
            {"name": "pwned", "verifier": {"type": "contains", "pattern": "A"}},
            {"name": "other", "verifier": {"type": "contains", "pattern": "B"}},
            {"name": "pwned", "verifier": {"type": "contains", "pattern": "C"}},
        ]
    }
    errors = _errors(_body(judge_suite=suite))
    assert "'pwned' is both item 0 and item 2" in errors[("judge_suite", "categories")]


@pytest.mark.parametrize("count", [0, MAX_CATEGORIES + 1])
def test_between_one_and_sixteen_categories(count: int) -> None:
    categories = [
        {"name": f"c{index}", "verifier": {"type": "contains", "pattern": "x"}}
        for index in range(count)
    ]
    errors = _errors(_body(judge_suite={"categories": categories}))
    assert ("judge_suite", "categories") in errors


def test_sixteen_categories_are_enough() -> None:
    categories = [
        {"name": f"c{index}", "verifier": {"type": "contains", "pattern": "x"}}
        for index in range(MAX_CATEGORIES)
    ]
    assert RedBlueConfig.model_validate(_body(judge_suite={"categories": categories}))


@pytest.mark.parametrize("name", ["", "Pwned", "has space", "-dash-first", "x" * 65, "é"])
def test_category_names_are_identifiers(name: str) -> None:
    suite = {"categories": [{"name": name, "verifier": {"type": "contains", "pattern": "x"}}]}
    errors = _errors(_body(judge_suite=suite))
    assert ("judge_suite", "categories", 0, "name") in errors


def test_bad_verifiers_are_named_down_to_the_field() -> None:
    suite = {
        "categories": [
            {"name": "ok", "verifier": {"type": "contains", "pattern": "x"}},
            {"name": "unknown", "verifier": {"type": "sentiment", "pattern": "x"}},
            {"name": "backref", "verifier": {"type": "regex", "pattern": r"(a)\1"}},
            {"name": "empty", "verifier": {"type": "contains", "pattern": ""}},
        ]
    }
    errors = _errors(_body(judge_suite=suite))
    assert ("judge_suite", "categories", 1, "verifier") in errors
    assert "sentiment" in errors[("judge_suite", "categories", 1, "verifier")]
    assert ("judge_suite", "categories", 2, "verifier", "regex", "pattern") in errors
    assert ("judge_suite", "categories", 3, "verifier", "contains", "pattern") in errors


def test_judge_models_are_held_to_the_model_rules() -> None:
    judge = {"type": "llm_judge", "model": "nonsense-provider/x", "rubric": "r"}
    suite = {"categories": [{"name": "judged", "verifier": judge}]}
    errors = _errors(_body(judge_suite=suite, self_test={"prompt": "Say hello", "verifier": judge}))
    assert errors[("judge_suite", "categories", 0, "verifier")].startswith("Value error, model:")
    assert errors[("self_test", "verifier")].startswith("Value error, model:")


def test_models_without_a_base_url_are_refused() -> None:
    judge = {"type": "llm_judge", "model": "openai-compatible/judge", "rubric": "r"}
    suite = {"categories": [{"name": "judged", "verifier": judge}]}
    errors = _errors(_body(target={"model": "openai-compatible/llama"}, judge_suite=suite))
    assert "base URL" in errors[("target", "model")]
    assert "base URL" in errors[("judge_suite", "categories", 0, "verifier")]


def test_target_fields_are_checked() -> None:
    errors = _errors(
        _body(target={"model": "offline/nope", "temperature": 3, "max_tokens": 0, "extra": 1})
    )
    for field in ("model", "temperature", "max_tokens", "extra"):
        assert ("target", field) in errors, field


def test_self_test_needs_a_prompt() -> None:
    errors = _errors(_body(self_test={"prompt": "", "verifier": EXAMPLE["self_test"]["verifier"]}))
    assert ("self_test", "prompt") in errors


def test_unknown_pairing_policy_is_named() -> None:
    errors = _errors(_body(pairing={"policy": "swiss"}))
    assert ("pairing", "policy") in errors


def test_n_and_seed_belong_to_their_policies() -> None:
    errors = _errors(_body(pairing={"policy": "round_robin", "n": 3, "seed": 1}))
    assert "round_robin meets every opponent" in errors[("pairing", "n")]
    assert "only random_active" in errors[("pairing", "seed")]
    errors = _errors(_body(pairing={"policy": "latest_best", "seed": 1}))
    assert ("pairing", "seed") in errors
    errors = _errors(
        _body(pairing={"policy": "random_active", "n": 11, "max_matches_per_submission": 10})
    )
    assert "at most max_matches_per_submission (10)" in errors[("pairing", "n")]


def test_opponents_per_submission_by_policy() -> None:
    assert PairingConfig(policy="latest_best").opponents_per_submission == (
        DEFAULT_SAMPLED_OPPONENTS
    )
    assert PairingConfig(policy="random_active", n=7).opponents_per_submission == 7
    capped = PairingConfig(policy="latest_best", max_matches_per_submission=2)
    assert capped.opponents_per_submission == 2
    assert PairingConfig(policy="random_active").draw_seed == 0
    assert PairingConfig(policy="random_active", seed=9).draw_seed == 9


def test_points_and_limits_are_bounded() -> None:
    errors = _errors(
        _body(
            points={"red_per_breach": -1, "blue_per_hold": 1.5, "red_rating_divisor": 0},
            limits={"max_attempts_per_day": 0, "max_defense_chars": 0, "max_attack_chars": -5},
        )
    )
    for path in (
        ("points", "red_per_breach"),
        ("points", "blue_per_hold"),
        ("points", "red_rating_divisor"),
        ("limits", "max_attempts_per_day"),
        ("limits", "max_defense_chars"),
        ("limits", "max_attack_chars"),
    ):
        assert path in errors, path


def test_non_finite_numbers_and_unknown_fields_are_refused() -> None:
    errors = _errors(
        _body(points={"red_rating_divisor": float("nan")}, limits={"max_prompt_chars": 5})
    )
    assert ("points", "red_rating_divisor") in errors
    assert ("limits", "max_prompt_chars") in errors
