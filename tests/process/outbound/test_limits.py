"""Every chat model's token limits read as data are the installed litellm's (imports litellm,
seconds; the lookups are tests/unit/outbound/test_limits.py)."""

from __future__ import annotations

from app.outbound.limits import bundled_limits
from app.outbound.providers import bundled_catalog


def test_every_chat_model_s_limits_are_litellm_s() -> None:
    from importlib.metadata import version

    from app.evaluation.engine.llm import load_litellm

    litellm = load_litellm()
    table, catalog = bundled_limits(), bundled_catalog()
    assert table.litellm_version == version("litellm")
    assert len(table.entries) > 3_000
    for name in table.entries:
        info = litellm.model_cost[name]
        limits = table.limits_of(name, catalog)
        assert limits is not None
        assert limits.max_input_tokens == info.get("max_input_tokens"), name
        assert limits.max_output_tokens == info.get("max_output_tokens"), name
