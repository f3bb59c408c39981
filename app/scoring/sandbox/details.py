"""Bounds a scorer plugin's `details` to plain JSON data of a sane shape and size.

`details` comes from plugin code and is shown to participants and stored with the attempt, so it
is treated as hostile data: only JSON objects, arrays, strings, finite numbers, booleans and
null survive; depth, keys, items, string lengths and the total encoded size are capped, and
whatever was cut is flagged with `"details_truncated": true`. Numbers that JSON cannot carry
faithfully become strings: NaN and infinities (which PostgreSQL's JSONB refuses) and integers
beyond 2**53 (which JavaScript clients would round). NUL characters and lone surrogates (which
PostgreSQL cannot store) are left to the storage boundary, which escapes them visibly
(app/evaluation/engine/storable.py), so a participant sees what the plugin wrote.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

TRUNCATED_KEY = "details_truncated"
_SAFE_INTEGER = 2**53
_FLAG_BYTES = len(f',"{TRUNCATED_KEY}":true') + 2


@dataclass(frozen=True)
class DetailsLimits:
    max_bytes: int = 16_384
    max_depth: int = 8
    max_keys: int = 64
    max_items: int = 64
    max_string_chars: int = 2_000
    max_key_chars: int = 100


DEFAULT_LIMITS = DetailsLimits()


class _Walk:
    def __init__(self, limits: DetailsLimits) -> None:
        self.limits = limits
        # Encoded size left (compact JSON), with room kept for the truncation flag: when it
        # runs out, the rest is cut.
        self.budget = limits.max_bytes - _FLAG_BYTES
        self.truncated = False

    def spend(self, cost: int) -> bool:
        if cost > self.budget:
            self.truncated = True
            self.budget = 0
            return False
        self.budget -= cost
        return True

    def text(self, value: str, limit: int) -> str:
        if len(value) > limit:
            self.truncated = True
        return bound_text(value, limit)

    def scalar(self, value: object) -> object:
        if value is None or isinstance(value, bool):
            return value
        if isinstance(value, int):
            return value if -_SAFE_INTEGER <= value <= _SAFE_INTEGER else str(value)
        if isinstance(value, float):
            if math.isnan(value):
                return "NaN"
            if math.isinf(value):
                return "Infinity" if value > 0 else "-Infinity"
            return value
        if isinstance(value, str):
            return self.text(value, self.limits.max_string_chars)
        # Not JSON at all (cannot come out of json.loads, but callers may pass anything).
        self.truncated = True
        return None

    def value(self, value: object, depth: int) -> tuple[bool, object]:
        """(kept, bounded value); kept is False when the budget ran out before it."""
        if isinstance(value, dict):
            if depth >= self.limits.max_depth:
                self.truncated = True
                return self.spend(2), {}
            return self.spend(2), self.mapping(value, depth + 1)
        if isinstance(value, list | tuple):
            if depth >= self.limits.max_depth:
                self.truncated = True
                return self.spend(2), []
            return self.spend(2), self.sequence(value, depth + 1)
        bounded = self.scalar(value)
        return self.spend(_encoded_size(bounded) + 1), bounded

    def mapping(self, value: dict[Any, Any], depth: int) -> dict[str, object]:
        result: dict[str, object] = {}
        for index, (key, item) in enumerate(value.items()):
            if index >= self.limits.max_keys:
                self.truncated = True
                break
            name = self.text(str(key), self.limits.max_key_chars)
            if name in result or not self.spend(_encoded_size(name) + 1):
                self.truncated = True
                if self.budget == 0:
                    break
                continue
            kept, bounded = self.value(item, depth)
            if not kept:
                break
            result[name] = bounded
        return result

    def sequence(self, value: list[Any] | tuple[Any, ...], depth: int) -> list[object]:
        result: list[object] = []
        for index, item in enumerate(value):
            if index >= self.limits.max_items:
                self.truncated = True
                break
            kept, bounded = self.value(item, depth)
            if not kept:
                break
            result.append(bounded)
        return result


def bound_text(value: str, limit: int) -> str:
    """`value` cut to `limit` characters (the cut marked with an ellipsis): for reasons and
    messages that carry text a plugin chose."""
    if len(value) > limit:
        value = value[: max(limit - 1, 0)] + "…"
    return value


def bound_details(
    details: object, limits: DetailsLimits = DEFAULT_LIMITS
) -> dict[str, object] | None:
    """`details` as bounded JSON data, or None when it is not an object at all."""
    if not isinstance(details, dict):
        return None
    walk = _Walk(limits)
    bounded = walk.mapping(details, 1)
    if walk.truncated:
        bounded[TRUNCATED_KEY] = True
    if _encoded_size(bounded) > limits.max_bytes:
        # Never reached while the running count is right; a cap is a cap all the same.
        return {TRUNCATED_KEY: True}
    return bounded


def _encoded_size(value: object) -> int:
    """Bytes of `value` as compact UTF-8 JSON."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    # Lone surrogates stay (the storage boundary escapes them); count them as UTF-8 would.
    return len(text.encode("utf-8", "surrogatepass"))
