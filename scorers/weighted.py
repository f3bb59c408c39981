"""The built-in weighted scorer: a success bonus plus the rating, minus time and token costs."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from scorers.protocol import ScoringResult

PLUGIN_ID = "builtin.weighted_scorer"

DEFAULT_CONFIG: dict[str, float] = {
    "success_bonus": 100.0,
    "rating_weight": 10.0,
    "time_penalty": 1.0,
    "token_penalty": 0.01,
}

CONFIG_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "success_bonus": {
            "type": "number",
            "default": DEFAULT_CONFIG["success_bonus"],
            "description": "Points for a successful attempt.",
        },
        "rating_weight": {
            "type": "number",
            "default": DEFAULT_CONFIG["rating_weight"],
            "description": "Points per unit of rating.",
        },
        "time_penalty": {
            "type": "number",
            "default": DEFAULT_CONFIG["time_penalty"],
            "description": "Points taken per second of elapsed time.",
        },
        "token_penalty": {
            "type": "number",
            "default": DEFAULT_CONFIG["token_penalty"],
            "description": "Points taken per token used.",
        },
    },
    "additionalProperties": False,
}


def validate_config(config: dict[str, Any]) -> dict[str, float]:
    """The defaults overlaid with `config`; raises ValueError naming the offending key."""
    if not isinstance(config, dict):
        raise ValueError(f"config must be an object, got {type(config).__name__}")
    merged = dict(DEFAULT_CONFIG)
    for key, value in config.items():
        if key not in DEFAULT_CONFIG:
            known = ", ".join(DEFAULT_CONFIG)
            raise ValueError(f"unknown config key {key!r} (expected one of: {known})")
        merged[key] = _finite_number(f"config key {key!r}", value)
    return merged


def _finite_number(what: str, value: object) -> float:
    # bool is an int subclass, but `true` as a weight is a mistake, never a meaning.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{what} must be a number, got {type(value).__name__}")
    try:
        number = float(value)
    except OverflowError:
        raise ValueError(f"{what} must be a finite number, got an integer too large") from None
    if not math.isfinite(number):
        raise ValueError(f"{what} must be a finite number, got {number}")
    return number


def _metric(name: str, value: object) -> float:
    """A missing metric counts as 0; a present but unusable one is an error, not a silent 0."""
    if value is None:
        return 0.0
    return _finite_number(f"metric {name!r}", value)


class WeightedScorer:
    """Reads metrics by mapping access, so it takes AttemptMetrics and a plain dict alike."""

    def score(
        self, metrics: Mapping[str, Any], config: dict[str, Any], ctx: Mapping[str, Any]
    ) -> ScoringResult:
        weights = validate_config(config)
        # Only a real `True` earns the bonus: a truthy string such as "false" must not.
        success_term = weights["success_bonus"] if metrics.get("succeeded") is True else 0.0
        rating_term = _metric("rating", metrics.get("rating")) * weights["rating_weight"]
        elapsed_seconds = _metric("elapsed_ms", metrics.get("elapsed_ms")) / 1000
        time_term = elapsed_seconds * weights["time_penalty"]
        tokens = _metric("tokens_total", metrics.get("tokens_total"))
        token_term = tokens * weights["token_penalty"]
        raw = success_term + rating_term - time_term - token_term
        if not math.isfinite(raw):
            raise ValueError(f"weighted score is not finite ({raw}); metrics are out of range")
        clamped = max(raw, 0.0)
        return {
            "score": clamped,
            "details": {
                "success_term": success_term,
                "rating_term": rating_term,
                "time_term": time_term,
                "token_term": token_term,
                "raw": raw,
                "clamped": clamped,
            },
        }
