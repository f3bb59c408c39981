"""Validation of litellm model ids, so a typo is refused when a challenge is saved, not later
when a worker first calls the model."""

from __future__ import annotations

from functools import lru_cache
from typing import Any


@lru_cache(maxsize=1)
def _litellm_catalog() -> tuple[frozenset[str], frozenset[str]]:
    from app.evaluation.llm import load_litellm

    litellm = load_litellm()
    providers: Any = litellm.provider_list
    names = {p.value if hasattr(p, "value") else str(p) for p in providers}
    return frozenset(names), frozenset(litellm.model_cost)


def warm_up() -> None:
    """Import litellm ahead of the first request that needs it (it takes seconds)."""
    _litellm_catalog()


def model_id_problem(model: str) -> str | None:
    """Why `model` is not a usable model id, or None when it is.

    Accepted: `offline/<name>` for the built-in offline models, `<provider>/<model>` for any
    provider litellm knows, or a bare model name in litellm's price map (e.g. `gpt-4o-mini`).
    """
    from app.evaluation.offline import OFFLINE_MODELS

    model = model.strip()
    if not model or len(model) > 200 or any(ch.isspace() for ch in model):
        return "must be a non-empty model id without spaces"
    provider, slash, rest = model.partition("/")
    if slash and provider == "offline":
        if model not in OFFLINE_MODELS:
            known = ", ".join(sorted(OFFLINE_MODELS))
            return f"unknown offline model '{model}'; known: {known}"
        return None
    providers, priced = _litellm_catalog()
    if slash:
        if not rest:
            return "names a provider but no model"
        if provider not in providers:
            return f"unknown provider prefix '{provider}/' (litellm providers, or 'offline/')"
        return None
    if model in priced:
        return None
    return (
        f"'{model}' is not a known bare model name; use the '<provider>/<model>' form "
        "(e.g. 'openai/gpt-4o-mini') or an 'offline/' model"
    )
