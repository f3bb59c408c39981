"""Model token limits read from litellm's map as data (app.outbound.limits), as litellm states
them, looked up as litellm looks model ids up."""

from __future__ import annotations

import pytest

from app.outbound.limits import ModelLimits, bundled_limits
from app.outbound.providers import bundled_catalog


def test_a_model_s_limits_are_found_by_its_bare_and_its_provider_name() -> None:
    table, catalog = bundled_limits(), bundled_catalog()
    bare = table.limits_of("gpt-4o-mini", catalog)
    assert bare == ModelLimits(max_input_tokens=128_000, max_output_tokens=16_384)
    assert table.limits_of("openai/gpt-4o-mini", catalog) == bare
    # A bare name filed under another provider is not this provider's model.
    assert table.limits_of("groq/gpt-4o-mini", catalog) is None


@pytest.mark.parametrize(
    "model", ["offline/echo", "openai-compatible/local", "openai/no-such-model", ""]
)
def test_models_the_map_does_not_know_have_no_limits(model: str) -> None:
    assert bundled_limits().limits_of(model, bundled_catalog()) is None


def test_limits_survive_their_stored_form_and_refuse_nonsense() -> None:
    limits = ModelLimits(max_input_tokens=8191, max_output_tokens=None)
    assert ModelLimits.from_json(limits.to_json()) == limits
    assert ModelLimits.from_json({"input": 0, "output": -1}) == ModelLimits()
    assert ModelLimits.from_json({"input": True, "output": "4096"}) == ModelLimits()
