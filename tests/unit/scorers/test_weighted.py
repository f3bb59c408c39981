"""The built-in weighted scorer and the metric types plugins receive."""

from __future__ import annotations

import math
from typing import Any

import pytest

from scorers.protocol import AttemptMetrics, ScoringContext
from scorers.weighted import (
    CONFIG_SCHEMA,
    DEFAULT_CONFIG,
    PLUGIN_ID,
    WeightedScorer,
    validate_config,
)

CTX = ScoringContext(tenant_id="t1", challenge_id="c1", participant_id="p1", timeout_ms=5000)


def score(config: dict[str, Any] | None = None, **metrics: Any) -> dict[str, Any]:
    result = WeightedScorer().score(AttemptMetrics(**metrics), config or {}, CTX)
    return dict(result)


def test_success_example_from_the_design() -> None:
    result = score(succeeded=True, rating=8, elapsed_ms=5000, tokens_total=1000)
    assert result["score"] == 165.0
    assert result["details"] == {
        "success_term": 100.0,
        "rating_term": 80.0,
        "time_term": 5.0,
        "token_term": 10.0,
        "raw": 165.0,
        "clamped": 165.0,
    }


def test_failure_example_from_the_design() -> None:
    result = score(succeeded=False, rating=3, elapsed_ms=2000, tokens_total=500)
    assert result["score"] == 23.0
    assert result["details"]["success_term"] == 0.0


def test_negative_total_is_clamped_to_zero_and_raw_kept() -> None:
    result = score(succeeded=False, rating=0, elapsed_ms=60_000, tokens_total=10_000)
    assert result["score"] == 0.0
    assert result["details"]["raw"] == pytest.approx(-160.0)
    assert result["details"]["clamped"] == 0.0


def test_missing_metrics_count_as_zero() -> None:
    assert score()["score"] == 0.0
    assert score(succeeded=True)["score"] == 100.0
    assert score(rating=2.5)["score"] == 25.0


def test_only_a_real_true_earns_the_success_bonus() -> None:
    assert score(succeeded=None)["details"]["success_term"] == 0.0
    metrics = AttemptMetrics.from_dict({"succeeded": "false"})
    result = WeightedScorer().score(metrics, {}, CTX)
    assert result["details"] is not None
    assert result["details"]["success_term"] == 0.0


def test_custom_weights_override_the_defaults() -> None:
    config = {"success_bonus": 10, "rating_weight": 1.5, "time_penalty": 0, "token_penalty": 0.1}
    result = score(config, succeeded=True, rating=4, elapsed_ms=9000, tokens_total=20)
    assert result["score"] == pytest.approx(10 + 6 - 0 - 2)


def test_partial_config_keeps_the_other_defaults() -> None:
    result = score({"success_bonus": 1}, succeeded=True, rating=1)
    assert result["score"] == pytest.approx(1 + 10)


@pytest.mark.parametrize("metric", ["rating", "elapsed_ms", "tokens_total"])
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, "7", True])
def test_unusable_metric_is_refused_not_zeroed(metric: str, bad: Any) -> None:
    with pytest.raises(ValueError, match=metric):
        score(**{metric: bad})


def test_validate_config_merges_defaults() -> None:
    assert validate_config({}) == DEFAULT_CONFIG
    merged = validate_config({"time_penalty": 2})
    assert merged == {**DEFAULT_CONFIG, "time_penalty": 2.0}
    assert DEFAULT_CONFIG["time_penalty"] == 1.0  # the module default is not mutated


@pytest.mark.parametrize(
    ("config", "named"),
    [
        ({"bonus": 1}, "bonus"),
        ({"success_bonus": True}, "success_bonus"),
        ({"rating_weight": math.nan}, "rating_weight"),
        ({"time_penalty": math.inf}, "time_penalty"),
        ({"token_penalty": "0.5"}, "token_penalty"),
        ({"token_penalty": None}, "token_penalty"),
        ({"success_bonus": 10**400}, "success_bonus"),
    ],
)
def test_validate_config_refuses_and_names_the_key(config: dict[str, Any], named: str) -> None:
    with pytest.raises(ValueError, match=named):
        validate_config(config)


def test_validate_config_refuses_a_non_object() -> None:
    with pytest.raises(ValueError, match="object"):
        validate_config(["success_bonus"])  # type: ignore[arg-type]


def test_score_validates_its_config() -> None:
    with pytest.raises(ValueError, match="surprise"):
        score({"surprise": 1}, succeeded=True)


def test_schema_describes_the_same_keys_and_defaults() -> None:
    assert PLUGIN_ID == "builtin.weighted_scorer"
    assert CONFIG_SCHEMA["type"] == "object"
    assert CONFIG_SCHEMA["additionalProperties"] is False
    properties = CONFIG_SCHEMA["properties"]
    assert set(properties) == set(DEFAULT_CONFIG)
    for key, default in DEFAULT_CONFIG.items():
        assert properties[key]["type"] == "number"
        assert properties[key]["default"] == default


def test_metrics_from_dict_ignores_unknown_keys_and_round_trips() -> None:
    data = {"succeeded": True, "rating": 4.5, "metric_at": [0.1, 0.2], "brand_new_metric": 1}
    metrics = AttemptMetrics.from_dict(data)
    assert metrics.succeeded is True
    assert metrics.rating == 4.5
    assert metrics.tokens_total is None
    round_trip = metrics.to_dict()
    assert "brand_new_metric" not in round_trip
    assert AttemptMetrics.from_dict(round_trip) == metrics
    assert set(round_trip) == {
        "succeeded",
        "tokens_total",
        "elapsed_ms",
        "rating",
        "created_at",
        "metric_at",
        "tasks_total",
        "tasks_solved",
        "cost_usd",
    }
