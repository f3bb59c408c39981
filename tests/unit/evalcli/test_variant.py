"""Variant checking (app.evaluation.commands.variant.parse_variant): what is accepted, and that
every problem is reported at once with its key path."""

from __future__ import annotations

from typing import Any

import pytest

from app.evaluation.commands.variant import (
    DEFAULT_CHAR_LIMIT,
    DEFAULT_CONCURRENCY,
    CliError,
    Concurrency,
    parse_variant,
)
from app.evaluation.engine.types import ModelSpec

MINIMAL = {"metric": "pass@k", "k": 3, "model": "offline/echo"}


def problems(data: Any) -> str:
    with pytest.raises(CliError) as caught:
        parse_variant(data, source="v.yaml")
    message = str(caught.value)
    assert message.startswith("v.yaml: ")
    return message.removeprefix("v.yaml: ")


def test_a_minimal_variant_gets_the_defaults() -> None:
    variant = parse_variant(dict(MINIMAL), source="v.yaml")
    assert (variant.metric, variant.k, variant.model) == ("pass@k", 3, "offline/echo")
    assert variant.feedback_mode == "binary"
    assert variant.concurrency == DEFAULT_CONCURRENCY
    assert variant.console_char_limit == DEFAULT_CHAR_LIMIT
    assert variant.options == {} and variant.continue_ is False
    assert variant.judge_model is None and variant.prices is None


def test_every_key_is_read() -> None:
    variant = parse_variant(
        {
            **MINIMAL,
            "metric": "seq@k",
            "description": "",
            "benchmark": "jsonl",
            "feedback_mode": "raw",
            "model": {"model": "openai-compatible/m", "api_base": "http://x/v1", "timeout_s": 5},
            "temperature": 0.5,
            "judge_model": "offline/judge",
            "critic_model": {"model": "offline/critic", "system_prompt": ""},
            "task_indices": [0, 4],
            "max_tasks": 2,
            "continue": True,
            "s3_sync": "s3://bucket/prefix",
            "console_char_limit": 0,
            "concurrency": {"global": 200, "per_model": 100, "tasks_in_flight": 8},
            "options": {"data_dir": "/data"},
            "prices": {"m": {"input_cost_per_token": 0}},
            "cost_budget_usd": 0,
        },
        source="v.yaml",
    )
    assert variant.model == ModelSpec(
        model="openai-compatible/m", api_base="http://x/v1", timeout_s=5.0
    )
    assert variant.critic_model == ModelSpec(model="offline/critic", system_prompt="")
    assert variant.concurrency == Concurrency(global_=200, per_model=100, tasks_in_flight=8)
    assert variant.continue_ is True and variant.task_indices == [0, 4]
    assert variant.cost_budget_usd == 0.0


def test_every_problem_is_reported_with_its_key_path() -> None:
    found = problems(
        {
            "metric": "best@k",
            "k": 0,
            "model": {"model": "", "timeout_s": 0, "colour": "red"},
            "feedbak_mode": "raw",
            "concurrency": {"global": 0},
            "task_indices": [1, "two"],
        }
    )
    assert found.split("; ") == [
        "metric: must match (pass|seq)@k",
        "k: must be between 1 and 10000",
        "model.model: a non-empty string is needed",
        "model.timeout_s: must be a finite number above 0",
        "model.colour: unknown key",
        "feedbak_mode: unknown key",
        "concurrency.global: must be at least 1",
        "task_indices.1: an integer is needed",
    ]


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"k": True}, "k: an integer is needed"),
        ({"k": 2.5}, "k: an integer is needed"),
        ({"temperature": 2.5}, "temperature: must be a finite number at least 0 and at most 2"),
        ({"temperature": "hot"}, "temperature: a number is needed"),
        ({"cost_budget_usd": float("inf")}, "cost_budget_usd: must be a finite number"),
        ({"model": 7}, "model: a model id or a mapping with `model` is needed"),
        ({"model": {"temperature": 1}}, "model.model: required"),
        ({"continue": "yes"}, "continue: true or false is needed"),
        ({"options": []}, "options: a mapping is needed"),
        ({"s3_sync": 3}, "s3_sync: true, a string or a mapping is needed"),
        ({"prices": 3}, "prices: a file path or a mapping is needed"),
        ({"concurrency": "many"}, "concurrency: an integer is needed"),
        ({"description": 3}, "description: a string is needed"),
    ],
)
def test_a_wrong_value_is_named(changes: dict[str, Any], expected: str) -> None:
    assert problems({**MINIMAL, **changes}).startswith(expected)


def test_required_keys_and_the_top_level() -> None:
    assert problems({"model": "offline/echo"}) == "k: required; metric: required"
    assert problems(["not", "a", "mapping"]) == "a variant is a YAML mapping of keys"
