"""The prices read as data cost what the installed litellm computes, on usages the build never
tried (imports litellm, seconds; the prices' rules are tests/unit/outbound/test_prices.py)."""

from __future__ import annotations

import math
import os
import random

from app.outbound.prices import bundled_prices
from app.outbound.providers import bundled_catalog

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def test_every_openai_model_costs_what_litellm_says_on_usages_the_build_never_tried() -> None:
    from app.evaluation.engine.llm import load_litellm

    litellm = load_litellm()
    table, catalog = bundled_prices(), bundled_catalog()
    rng = random.Random(14)
    names = sorted(name for name, provider in table.providers.items() if provider == "openai")
    assert len(names) > 50
    for name in names:
        for model in (name, f"openai/{name}"):
            input_tokens = rng.randint(1, 400_000)
            cached = rng.randint(0, input_tokens)
            output_tokens = rng.randint(0, 20_000)
            reasoning = rng.randint(0, output_tokens)
            response = litellm.ModelResponse(
                model=model,
                usage=litellm.Usage(
                    prompt_tokens=input_tokens,
                    completion_tokens=output_tokens,
                    total_tokens=input_tokens + output_tokens,
                    prompt_tokens_details={"cached_tokens": cached},
                    completion_tokens_details={"reasoning_tokens": reasoning},
                ),
            )
            expected = litellm.completion_cost(completion_response=response, model=model)
            price = table.price_of(model, catalog)
            assert price is not None, model
            ours = price.cost(
                input_tokens=input_tokens,
                cached_tokens=cached,
                output_tokens=output_tokens,
                thinking_tokens=reasoning,
            )
            assert math.isclose(ours, expected, rel_tol=1e-9, abs_tol=1e-15), (
                model,
                ours,
                expected,
            )
