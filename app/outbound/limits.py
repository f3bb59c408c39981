"""How many tokens a model takes in and gives out, from litellm's bundled model map read as data.

`litellm_limits.json` holds, for every chat or completion model of litellm's map that states
them, its `max_input_tokens` (the longest prompt it accepts) and `max_output_tokens` (the
longest answer it gives), derived from the installed litellm by `catalog_build`. The engine
uses them to refuse a prompt clearly over a model's limit before calling it, and to bound what
a call's usage may claim when the call sets no `max_tokens` (docs/engine.md, "Bounded
outputs"). Reading the file takes milliseconds; importing litellm takes seconds.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from app.outbound.providers import ProviderCatalog, map_key

LIMITS_PATH = Path(__file__).resolve().parent / "litellm_limits.json"


@dataclass(frozen=True)
class ModelLimits:
    """A model's token limits; None where litellm's map does not state one."""

    max_input_tokens: int | None = None
    max_output_tokens: int | None = None

    def to_json(self) -> dict[str, int]:
        """The compact form `litellm_limits.json` stores (`from_json` reads it back)."""
        data: dict[str, int] = {}
        if self.max_input_tokens is not None:
            data["input"] = self.max_input_tokens
        if self.max_output_tokens is not None:
            data["output"] = self.max_output_tokens
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ModelLimits:
        return cls(
            max_input_tokens=_positive_int(data.get("input")),
            max_output_tokens=_positive_int(data.get("output")),
        )


def _positive_int(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


@dataclass(frozen=True)
class LimitTable:
    """litellm's token limits by model key, with the provider each key belongs to."""

    litellm_version: str
    entries: Mapping[str, Mapping[str, Any]]
    providers: Mapping[str, str]

    @classmethod
    def from_json(cls, text: str) -> LimitTable:
        data = json.loads(text)
        models: dict[str, Any] = data["models"]
        return cls(
            litellm_version=str(data["litellm_version"]),
            entries=models,
            providers={name: str(entry["provider"]) for name, entry in models.items()},
        )

    def limits_of(self, model: str, catalog: ProviderCatalog) -> ModelLimits | None:
        """The limits of a model id as litellm looks it up (`providers.map_key`); None when
        litellm's map states none for it."""
        key = map_key(model, self.providers, catalog)
        return None if key is None else ModelLimits.from_json(self.entries[key])


@lru_cache(maxsize=1)
def bundled_limits() -> LimitTable:
    return LimitTable.from_json(LIMITS_PATH.read_text(encoding="utf-8"))
