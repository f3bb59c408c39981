"""What a model call costs, from litellm's bundled price map read as data.

litellm prices the calls it makes itself. Calls that do not go through litellm (the direct
transport to OpenAI-compatible servers, app.evaluation.engine.direct) are priced here, from
`litellm_prices.json`: the per-token prices of litellm's bundled price map, derived from the
installed litellm by `catalog_build`, which keeps only the models whose price this module
computes exactly as litellm's own `completion_cost` does (checked at build time on several
usages). Reading it takes milliseconds; importing litellm takes seconds.

A price is per token, in USD, with litellm's field names: input tokens (cached ones at the
cache-read price, which defaults to the input price), output tokens (reasoning ones at the
reasoning price when the model has one) and, for models whose price changes with the prompt's
length, the tier of the longest threshold the prompt exceeds (litellm's `..._above_Nk_tokens`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

from app.outbound.providers import ProviderCatalog, map_key

PRICES_PATH = Path(__file__).resolve().parent / "litellm_prices.json"


@dataclass(frozen=True)
class PriceTier:
    """The prices that apply to a whole call once its prompt exceeds `above_prompt_tokens`."""

    above_prompt_tokens: int
    input_cost_per_token: float
    output_cost_per_token: float
    cache_read_input_token_cost: float | None = None


@dataclass(frozen=True)
class Price:
    """Per-token prices in USD, litellm's field names. Cached input defaults to full input."""

    input_cost_per_token: float
    output_cost_per_token: float
    cache_read_input_token_cost: float | None = None
    output_cost_per_reasoning_token: float | None = None
    tiers: tuple[PriceTier, ...] = ()

    def cost(
        self,
        *,
        input_tokens: int,
        cached_tokens: int,
        output_tokens: int,
        thinking_tokens: int = 0,
    ) -> float:
        input_price = self.input_cost_per_token
        output_price = self.output_cost_per_token
        cache_read_price = self.cache_read_input_token_cost
        for tier in self.tiers:  # ascending thresholds: the last one exceeded applies
            if input_tokens > tier.above_prompt_tokens:
                input_price = tier.input_cost_per_token
                output_price = tier.output_cost_per_token
                if tier.cache_read_input_token_cost is not None:
                    cache_read_price = tier.cache_read_input_token_cost
        # Providers count cached tokens inside input tokens and reasoning inside output tokens.
        cached = min(max(cached_tokens, 0), max(input_tokens, 0))
        cost = (input_tokens - cached) * input_price + cached * (
            cache_read_price if cache_read_price is not None else input_price
        )
        if self.output_cost_per_reasoning_token is None:
            return cost + output_tokens * output_price
        reasoning = min(max(thinking_tokens, 0), max(output_tokens, 0))
        return (
            cost
            + (output_tokens - reasoning) * output_price
            + reasoning * self.output_cost_per_reasoning_token
        )

    def to_json(self) -> dict[str, Any]:
        """The compact form `litellm_prices.json` stores (`from_json` reads it back)."""
        data: dict[str, Any] = {
            "input": self.input_cost_per_token,
            "output": self.output_cost_per_token,
        }
        if self.cache_read_input_token_cost is not None:
            data["cache_read"] = self.cache_read_input_token_cost
        if self.output_cost_per_reasoning_token is not None:
            data["reasoning"] = self.output_cost_per_reasoning_token
        if self.tiers:
            data["tiers"] = [
                [
                    tier.above_prompt_tokens,
                    tier.input_cost_per_token,
                    tier.output_cost_per_token,
                    tier.cache_read_input_token_cost,
                ]
                for tier in self.tiers
            ]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Price:
        return cls(
            input_cost_per_token=float(data["input"]),
            output_cost_per_token=float(data["output"]),
            cache_read_input_token_cost=_optional_float(data.get("cache_read")),
            output_cost_per_reasoning_token=_optional_float(data.get("reasoning")),
            tiers=tuple(
                PriceTier(int(above), float(input_), float(output), _optional_float(cache_read))
                for above, input_, output, cache_read in data.get("tiers", ())
            ),
        )


def _optional_float(value: Any) -> float | None:
    return None if value is None else float(value)


class _PricesByModel(Mapping[str, Price]):
    """The map's entries, each made a `Price` when first asked for: a run prices a few models
    of the ~2,000, and building them all took most of the table's load time."""

    def __init__(self, entries: Mapping[str, Any]) -> None:
        self._entries = entries
        self._built: dict[str, Price] = {}

    def __getitem__(self, model: str) -> Price:
        price = self._built.get(model)
        if price is None:
            price = Price.from_json(self._entries[model])
            self._built[model] = price
        return price

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)


@dataclass(frozen=True)
class PriceTable:
    """litellm's prices by model key, with the provider each key belongs to, and the date of
    the map they come from (litellm's release date; None when its package does not say)."""

    litellm_version: str
    prices: Mapping[str, Price]
    providers: Mapping[str, str]
    price_map_date: str | None = None

    @classmethod
    def from_json(cls, text: str) -> PriceTable:
        data = json.loads(text)
        models: dict[str, Any] = data["models"]
        date = data.get("price_map_date")
        return cls(
            litellm_version=str(data["litellm_version"]),
            prices=_PricesByModel(models),
            providers={name: str(entry["provider"]) for name, entry in models.items()},
            price_map_date=str(date) if date is not None else None,
        )

    def price_of(self, model: str, catalog: ProviderCatalog) -> Price | None:
        """The price of a model id as litellm looks it up (`providers.map_key`: the id itself,
        or `openai/gpt-4o-mini` as `gpt-4o-mini`). None when unknown."""
        key = map_key(model, self.providers, catalog)
        return None if key is None else self.prices.get(key)


@lru_cache(maxsize=1)
def bundled_prices() -> PriceTable:
    return PriceTable.from_json(PRICES_PATH.read_text(encoding="utf-8"))


def litellm_release_date() -> str | None:
    """The installed litellm's release date (its SBOM's build timestamp), read from its package
    metadata without importing it; None when it ships no SBOM. litellm's price map carries no
    date of its own: this is the date of the map bundled with that release."""
    # importlib.metadata (~10 ms: email, zipfile, csv) loads only when a run names its price map.
    from importlib import metadata

    try:
        files = metadata.distribution("litellm").files or ()
    except metadata.PackageNotFoundError:
        return None
    for entry in files:
        if entry.name.endswith(".cyclonedx.json"):
            try:
                stamp = json.loads(entry.read_text())["metadata"]["timestamp"]
                return datetime.fromisoformat(str(stamp)[:19]).date().isoformat()
            except (OSError, ValueError, KeyError, TypeError):
                continue
    return None
