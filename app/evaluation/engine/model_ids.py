"""Validation of model ids, so a typo or a provider the operator does not allow is refused when
a challenge or an attempt is saved, not later when a worker first calls the model.

The provider data comes from `app.outbound.providers` (derived from litellm ahead of time), so
validating a model id never imports litellm.
"""

from __future__ import annotations

from app.outbound.providers import DIRECT_PROVIDER, ProviderPolicy
from app.outbound.providers import model_id_problem as _model_id_problem


def offline_model_names() -> tuple[str, ...]:
    # The simulations load only where offline models are named, not in a run of real models.
    from app.evaluation.engine.offline import OFFLINE_MODELS

    return tuple(OFFLINE_MODELS)


def model_id_problem(model: str, policy: ProviderPolicy | None = None) -> str | None:
    """Why `model` is not a usable model id, or None when it is.

    Accepted: `offline/<name>` for the built-in offline models, `openai-compatible/<name>` for
    a model of an OpenAI-compatible server (called through a base URL, which the caller must
    give with it), `<provider>/<model>` for any provider litellm knows, or a bare model name
    in litellm's price map (e.g. `gpt-4o-mini`); with a `policy`, only of a provider the
    operator allows.
    """
    return _model_id_problem(model.strip(), offline_models=offline_model_names(), policy=policy)


def base_url_problem(model: str, api_base: str | None, base_field: str | None) -> str | None:
    """Why `model` cannot be reached from where it is named, or None when it can.

    An `openai-compatible/` model names no provider: it is called at a base URL, so it needs
    one beside it (`base_field`, the field that holds it), and a slot with no such field (a
    judge's, a critic's) cannot take it at all.
    """
    if not model.strip().startswith(f"{DIRECT_PROVIDER}/") or api_base:
        return None
    if base_field:
        return f"an '{DIRECT_PROVIDER}/' model is called at a base URL: set {base_field}"
    return (
        f"an '{DIRECT_PROVIDER}/' model is called at a base URL, which this model cannot "
        "have; name its provider instead (e.g. 'openai/...', 'hosted_vllm/...')"
    )
