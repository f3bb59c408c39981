"""Prices read as data (app/outbound/prices.py): the same cost litellm computes, without litellm."""

from __future__ import annotations

import os

import pytest

from app.outbound.prices import Price, PriceTier, bundled_prices
from app.outbound.providers import bundled_catalog

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def test_cached_tokens_cost_the_cache_read_price_and_default_to_the_input_price() -> None:
    with_cache = Price(
        input_cost_per_token=2.0, output_cost_per_token=5.0, cache_read_input_token_cost=0.5
    )
    assert (
        with_cache.cost(input_tokens=10, cached_tokens=4, output_tokens=3) == 6 * 2 + 4 * 0.5 + 15
    )
    plain = Price(input_cost_per_token=2.0, output_cost_per_token=5.0)
    assert plain.cost(input_tokens=10, cached_tokens=4, output_tokens=3) == 20 + 15


def test_reasoning_tokens_cost_their_own_price_only_when_the_model_has_one() -> None:
    price = Price(
        input_cost_per_token=1.0, output_cost_per_token=4.0, output_cost_per_reasoning_token=9.0
    )
    assert (
        price.cost(input_tokens=0, cached_tokens=0, output_tokens=10, thinking_tokens=3)
        == 7 * 4 + 3 * 9
    )
    plain = Price(input_cost_per_token=1.0, output_cost_per_token=4.0)
    assert plain.cost(input_tokens=0, cached_tokens=0, output_tokens=10, thinking_tokens=3) == 40


def test_a_long_prompt_prices_the_whole_call_at_the_highest_tier_it_exceeds() -> None:
    price = Price(
        input_cost_per_token=1.0,
        output_cost_per_token=2.0,
        cache_read_input_token_cost=0.1,
        tiers=(PriceTier(100, 10.0, 20.0, 1.0), PriceTier(200, 100.0, 200.0)),
    )
    assert price.cost(input_tokens=100, cached_tokens=0, output_tokens=1) == 100 + 2
    assert price.cost(input_tokens=150, cached_tokens=50, output_tokens=1) == 100 * 10 + 50 * 1 + 20
    # A tier without its own cache-read price keeps the last one that applied.
    assert (
        price.cost(input_tokens=300, cached_tokens=100, output_tokens=1)
        == 200 * 100 + 100 * 1 + 200
    )


def test_counts_out_of_range_are_clamped_not_priced_negative() -> None:
    price = Price(
        input_cost_per_token=1.0, output_cost_per_token=1.0, cache_read_input_token_cost=0.0
    )
    assert price.cost(input_tokens=5, cached_tokens=50, output_tokens=0) == 0.0
    assert price.cost(input_tokens=5, cached_tokens=-3, output_tokens=0) == 5.0


def test_a_price_survives_its_stored_form() -> None:
    price = Price(1e-6, 2e-6, 5e-7, 3e-6, (PriceTier(200_000, 2e-6, 4e-6, None),))
    assert Price.from_json(price.to_json()) == price


def test_model_ids_are_looked_up_as_litellm_looks_them_up() -> None:
    table, catalog = bundled_prices(), bundled_catalog()
    bare = table.price_of("gpt-4o-mini", catalog)
    assert bare is not None and bare.input_cost_per_token > 0
    assert table.price_of("openai/gpt-4o-mini", catalog) == bare
    # A bare name filed under another provider is not this provider's model.
    assert table.price_of("groq/gpt-4o-mini", catalog) is None
    # Your own server's models have no price in any map: `prices:` names them.
    assert table.price_of("openai-compatible/gpt-4o-mini", catalog) is None
    assert table.price_of("openai/no-such-model", catalog) is None
    assert table.price_of("", catalog) is None


def test_the_table_was_derived_from_the_installed_litellm() -> None:
    from importlib.metadata import version

    assert bundled_prices().litellm_version == version("litellm")
    assert len(bundled_prices().prices) > 1_000


@pytest.mark.parametrize("model", ["offline/echo", "openai-compatible/local"])
def test_models_no_price_map_knows_are_unpriced(model: str) -> None:
    assert bundled_prices().price_of(model, bundled_catalog()) is None
