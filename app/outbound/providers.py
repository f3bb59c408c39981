"""Which model ids may be called: well-formed ones, of providers the operator allows.

A model id is `<provider>/<model>` (a litellm provider prefix) or a bare name from litellm's
price map. The provider decides where litellm connects and which of the operator's keys it
sends, so the operator chooses the providers (`GAUNTLET_ALLOWED_PROVIDERS`): by default every
litellm provider except those whose default base URL is local (`ollama/x` would make a worker
connect to 127.0.0.1:11434 on a participant's word) or that run models in the worker itself.

Model ids are also restricted in form: segments of letters, digits and `._:@+-`, each starting
with a letter, digit or `@`. litellm puts parts of some model ids into URL paths (Azure
deployments, SageMaker endpoints, Replicate versions), so dot segments, empty segments,
`%`, `?`, `#`, backslashes and whitespace never reach it.

The provider data (`litellm_catalog.json`) is derived from litellm by `catalog_build`, so the
API validates model ids without importing litellm.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

# Derived from litellm by `catalog_build` (which imports this module, not the other way round).
CATALOG_PATH = Path(__file__).resolve().parent / "litellm_catalog.json"

MAX_MODEL_ID_CHARS = 200
ALL_REMOTE_PROVIDERS = "*"
# Built into the service (app.evaluation.engine.offline): no network, no key, no cost.
BUILTIN_PROVIDERS = frozenset({"offline"})
# Not litellm's: `openai-compatible/<name>` is a model of an OpenAI-compatible server reached
# through its base URL (app.evaluation.engine.direct), which the base-URL policy decides.
DIRECT_PROVIDER = "openai-compatible"
_MODEL_ID = re.compile(r"^[A-Za-z0-9@][A-Za-z0-9._:@+-]*(?:/[A-Za-z0-9@][A-Za-z0-9._:@+-]*)*$")
_PROVIDER_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")


@dataclass(frozen=True)
class ProviderCatalog:
    """litellm's providers, those that are local by default, and its bare model names."""

    litellm_version: str
    providers: frozenset[str]
    local_providers: Mapping[str, str]  # provider -> why it is local
    bare_models: Mapping[str, str]  # bare model name -> the provider litellm routes it to
    # provider -> the API key variables it needs: alternatives, each of names needed together
    provider_keys: Mapping[str, tuple[tuple[str, ...], ...]] = field(default_factory=dict)

    @classmethod
    def from_json(cls, text: str) -> ProviderCatalog:
        data = json.loads(text)
        return cls(
            litellm_version=str(data["litellm_version"]),
            providers=frozenset(data["providers"]),
            local_providers=dict(data["local_providers"]),
            bare_models=dict(data["bare_models"]),
            provider_keys={
                provider: tuple(tuple(names) for names in alternatives)
                for provider, alternatives in data.get("provider_keys", {}).items()
            },
        )

    def provider_of(self, model: str) -> str | None:
        """The provider a model id is routed to, or None when it names none litellm knows."""
        prefix, slash, _ = model.partition("/")
        if slash:
            if prefix in BUILTIN_PROVIDERS or prefix in self.providers:
                return prefix
            return None
        return self.bare_models.get(model)

    def missing_key(self, provider: str, environ: Mapping[str, str]) -> str | None:
        """Why `provider` cannot be called with the keys in `environ` (litellm reads its
        providers' keys from the environment), or None when it can."""
        alternatives = self.provider_keys.get(provider)
        if not alternatives:
            return None
        if any(all(environ.get(name) for name in names) for names in alternatives):
            return None
        wanted = " or ".join(" and ".join(names) for names in alternatives)
        return f"no API key configured for provider '{provider}' (the server needs {wanted})"


def map_key(model: str, key_providers: Mapping[str, str], catalog: ProviderCatalog) -> str | None:
    """The key of litellm's model map (prices, limits) that `model` is filed under, as litellm
    looks it up: the id itself (`groq/llama3-8b-8192`, `gpt-4o-mini`), else, for
    `<provider>/<name>`, the bare name when litellm files it under that provider
    (`openai/gpt-4o-mini` is `gpt-4o-mini`). `key_providers`: the map's keys, each with its
    provider. None when the map does not know the model."""
    if model in key_providers:
        return model
    prefix, slash, rest = model.partition("/")
    if slash and prefix in catalog.providers and key_providers.get(rest) == prefix:
        return rest
    return None


@lru_cache(maxsize=1)
def bundled_catalog() -> ProviderCatalog:
    return ProviderCatalog.from_json(CATALOG_PATH.read_text(encoding="utf-8"))


@dataclass(frozen=True)
class ProviderPolicy:
    """The operator's provider allow-list: names, and `*` for every provider that is not local
    by default. Built-in providers (`offline`) are always allowed."""

    allowed: tuple[str, ...] = (ALL_REMOTE_PROVIDERS,)

    @classmethod
    def unrestricted(cls, catalog: ProviderCatalog | None = None) -> ProviderPolicy:
        """Every provider, local ones included: the operator's own runs (the CLI)."""
        catalog = catalog or bundled_catalog()
        return cls(allowed=(ALL_REMOTE_PROVIDERS, *sorted(catalog.local_providers)))

    def refusal(self, provider: str, catalog: ProviderCatalog) -> str | None:
        """Why `provider` may not be called, or None when it may."""
        if provider in BUILTIN_PROVIDERS or provider in self.allowed:
            return None
        if ALL_REMOTE_PROVIDERS in self.allowed and provider not in catalog.local_providers:
            return None
        if provider in catalog.local_providers:
            return (
                f"provider '{provider}/' is not allowed on this server: it "
                f"{_local_reason(catalog.local_providers[provider])} "
                "(setting GAUNTLET_ALLOWED_PROVIDERS)"
            )
        return (
            f"provider '{provider}/' is not allowed on this server "
            "(setting GAUNTLET_ALLOWED_PROVIDERS)"
        )


def _local_reason(reason: str) -> str:
    if reason.startswith("default base "):
        return "connects to a local address by default"
    return reason


def validate_provider_names(names: Iterable[str]) -> tuple[str, ...]:
    """The setting's entries, checked: `*` or provider names (unknown names are kept, so a
    setting written for a newer litellm still starts)."""
    checked = []
    for name in names:
        if name != ALL_REMOTE_PROVIDERS and not _PROVIDER_NAME.match(name):
            raise ValueError(f"{name!r} is not a provider name or '*'")
        checked.append(name)
    return tuple(checked)


def model_id_problem(
    model: str,
    *,
    offline_models: Iterable[str],
    policy: ProviderPolicy | None = None,
    catalog: ProviderCatalog | None = None,
) -> str | None:
    """Why `model` may not be used, or None when it may.

    Accepted: `offline/<name>` for the built-in offline models, `openai-compatible/<name>` for
    a model of an OpenAI-compatible server (called through a base URL, which must be given
    with it), `<provider>/<model>` for a provider litellm knows, or a bare model name of
    litellm's price map (e.g. `gpt-4o-mini`); with a `policy`, only of a provider it allows.
    """
    catalog = catalog or bundled_catalog()
    if not model or len(model) > MAX_MODEL_ID_CHARS:
        return f"must be a model id of 1 to {MAX_MODEL_ID_CHARS} characters"
    if any(character.isspace() for character in model):
        return "must be a non-empty model id without spaces"
    if not _MODEL_ID.match(model):
        return (
            "must be '<provider>/<model>' made of letters, digits and '._:@+-' per segment "
            "(no empty, '.' or '..' segments)"
        )
    prefix, slash, _ = model.partition("/")
    if slash and prefix in BUILTIN_PROVIDERS:
        known = sorted(offline_models)
        if model not in known:
            return f"unknown offline model '{model}'; known: {', '.join(known)}"
        return None
    if slash and prefix == DIRECT_PROVIDER:
        return None
    provider = catalog.provider_of(model)
    if provider is None:
        if slash:
            return (
                f"unknown provider prefix '{prefix}/' (litellm providers, "
                f"'{DIRECT_PROVIDER}/' or 'offline/')"
            )
        return (
            f"'{model}' is not a known bare model name; use the '<provider>/<model>' form "
            "(e.g. 'openai/gpt-4o-mini') or an 'offline/' model"
        )
    if policy is not None:
        return policy.refusal(provider, catalog)
    return None
