"""Derives the provider catalog (`litellm_catalog.json`), the price table
(`litellm_prices.json`) and the token limits (`litellm_limits.json`) from the installed
litellm.

    python -m app.outbound.catalog_build           # rewrite the three files
    python -m app.outbound.catalog_build --check   # exit 1 when one differs from litellm's data

The API validates model ids against the catalog, calls that bypass litellm are priced from
the table, and every call's prompt and usage are checked against the limits, so none of them
imports litellm (which takes seconds); a unit test runs `--check`, so upgrading litellm
without rebuilding fails the suite.

What is derived, and how:
- `providers`: `litellm.provider_list`.
- `local_providers`: providers whose default base URL is on this machine or the private
  network. litellm reports a default base for a provider through `get_llm_provider` and its
  chat config's `get_complete_url`; some defaults are only in its code, as
  `get_secret("<PROVIDER>_API_BASE") or "<url>"`, which the source scan reads. Both are asked
  with no `*_API_BASE` variable set and with the network blocked. Providers that run models
  inside the calling process are not visible in that data and are listed by hand below.
- `bare_models`: model names without a provider prefix in litellm's price map, with the
  provider litellm routes each one to.
- `provider_keys`: the API key variables a provider cannot be called without, as litellm's
  `validate_environment` reports them with none set: a list of alternatives, any one of which
  is enough (`GEMINI_API_KEY` or `GOOGLE_API_KEY`), each a list of names needed together.
  Only providers whose every credential is an API key are listed: one that can take its
  credentials from elsewhere (a cloud identity, a base URL it needs besides) is left to itself.
- prices: the per-token prices (`app.outbound.prices.Price`) of every chat or completion model
  of litellm's price map, kept only when `Price.cost` equals litellm's own `completion_cost`
  on every usage of `_check_usages` (cached and reasoning tokens, each long-prompt tier). The
  rest (providers whose price litellm adjusts in code, per-query fees) are left out: a call
  bypassing litellm to such a model is unpriced rather than priced wrongly. So are models
  whose price depends on the time of day (`off_peak_pricing`): litellm prices them by the
  clock, so a table built at another hour would differ (and the `--check` would fail by the
  time of day).
- limits: `max_input_tokens` and `max_output_tokens` of every chat or completion model of
  litellm's price map that states a positive number for either (`app.outbound.limits`).
"""

from __future__ import annotations

import ipaddress
import json
import logging
import math
import os
import re
import socket
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from app.outbound.limits import LIMITS_PATH, ModelLimits
from app.outbound.prices import PRICES_PATH, Price, PriceTier, litellm_release_date
from app.outbound.providers import CATALOG_PATH

# Not derivable from litellm's data: these providers load and run a model in the worker itself.
IN_PROCESS_PROVIDERS = {
    "vllm": "runs the model inside the calling process (litellm's vllm provider)",
}
_SOURCE_DEFAULT = re.compile(
    r"get_secret(?:_str)?\(\s*[\"']([A-Z0-9_]+)_API_BASE[\"']\s*\)\s*or\s*[\"'](https?://[^\"']+)"
)
_PROBE_MODEL = "probe-model"


def _is_local(url: str) -> bool:
    try:
        host = urlsplit(url if "://" in url else f"http://{url}").hostname
    except ValueError:
        return False
    if not host:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return not address.is_global


def _blocked_network(*_: object, **__: object) -> Any:
    raise OSError("network blocked while deriving the provider catalog")


def _probe_defaults(litellm: Any, provider: str) -> list[str]:
    """The default base URLs litellm reports for `provider` (none when it reports none)."""
    found: list[str] = []
    try:
        _, _, _, base = litellm.get_llm_provider(model=f"{provider}/{_PROBE_MODEL}")
        if isinstance(base, str) and base:
            found.append(base)
    except Exception:
        pass
    try:
        # litellm costs seconds to import; only a rebuild of the catalog reads it.
        from litellm.types.utils import LlmProviders
        from litellm.utils import ProviderConfigManager

        config = ProviderConfigManager.get_provider_chat_config(
            model=_PROBE_MODEL, provider=LlmProviders(provider)
        )
        if config is not None:
            url = config.get_complete_url(
                api_base=None,
                api_key=None,
                model=_PROBE_MODEL,
                optional_params={},
                litellm_params={},
                stream=False,
            )
            if isinstance(url, str) and url:
                found.append(url)
    except Exception:
        pass
    return found


def _source_defaults(litellm_root: Path) -> dict[str, list[str]]:
    """`<PROVIDER>_API_BASE` fallbacks written in litellm's code, by lowercased provider."""
    defaults: dict[str, list[str]] = {}
    for path in sorted(litellm_root.rglob("*.py")):
        if "proxy" in path.relative_to(litellm_root).parts:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for match in _SOURCE_DEFAULT.finditer(text):
            defaults.setdefault(match.group(1).lower(), []).append(match.group(2))
    return defaults


def _litellm() -> Any:
    """litellm, imported with the network blocked and its `*_API_BASE` variables unset."""
    for name in list(os.environ):
        if name.endswith(("_API_BASE", "_BASE_URL")):
            del os.environ[name]
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    socket.getaddrinfo = _blocked_network
    socket.create_connection = _blocked_network
    # litellm loads only once the network is blocked, so its import fetches nothing.
    import litellm

    # Probing makes litellm print and log at every unknown combination; none of it matters here.
    litellm.suppress_debug_info = True
    logging.getLogger("LiteLLM").setLevel(logging.CRITICAL)
    return litellm


_API_KEY_NAME = re.compile(r"^[A-Z0-9_]+_API_(?:KEY|TOKEN)$")


def _missing_keys(litellm: Any, provider: str, environ: dict[str, str]) -> list[str]:
    """The variables litellm says `provider` needs, with only `environ` set."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(environ)
    try:
        report = litellm.validate_environment(model=f"{provider}/{_PROBE_MODEL}")
    except Exception:
        return []
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return sorted({str(name) for name in report.get("missing_keys") or []})


def _provider_keys(litellm: Any, provider: str) -> list[list[str]]:
    """The alternatives of API key variables `provider` needs (empty: none, or not only keys)."""
    missing = _missing_keys(litellm, provider, {})
    if not missing or not all(_API_KEY_NAME.match(name) for name in missing):
        return []
    alone = [name for name in missing if not _missing_keys(litellm, provider, {name: "probe"})]
    return [[name] for name in alone] if alone else [missing]


def build_catalog(litellm: Any) -> dict[str, Any]:
    providers = sorted({getattr(p, "value", str(p)) for p in litellm.provider_list})
    local: dict[str, str] = {}
    source = _source_defaults(Path(litellm.__file__).resolve().parent)
    for provider in providers:
        for url in [*_probe_defaults(litellm, provider), *source.get(provider, [])]:
            if _is_local(url):
                local.setdefault(provider, f"default base {url}")
        if provider in IN_PROCESS_PROVIDERS:
            local.setdefault(provider, IN_PROCESS_PROVIDERS[provider])

    bare: dict[str, str] = {}
    for name, info in litellm.model_cost.items():
        if "/" in name or not isinstance(info, dict):
            continue
        try:
            routed = litellm.get_llm_provider(model=name)[1]
        except Exception:
            continue
        if isinstance(routed, str) and routed in providers:
            bare[name] = routed
    keys = {provider: _provider_keys(litellm, provider) for provider in providers}
    return {
        "litellm_version": _litellm_version(),
        "providers": providers,
        "local_providers": dict(sorted(local.items())),
        "bare_models": dict(sorted(bare.items())),
        "provider_keys": {provider: names for provider, names in keys.items() if names},
    }


def _litellm_version() -> str:
    return version("litellm")


_PRICED_MODES = frozenset({"chat", "completion", "responses"})
_TIER_INPUT = re.compile(r"^input_cost_per_token_above_(\d+)(k?)_tokens$")


def _tiers(info: dict[str, Any]) -> tuple[PriceTier, ...]:
    tiers = []
    for key, value in info.items():
        match = _TIER_INPUT.match(key)
        if match is None or not isinstance(value, int | float):
            continue
        suffix = key.removeprefix("input_cost_per_token")
        output = info.get(f"output_cost_per_token{suffix}", info["output_cost_per_token"])
        cache_read = info.get(f"cache_read_input_token_cost{suffix}")
        above = int(match.group(1)) * (1000 if match.group(2) else 1)
        tiers.append(PriceTier(above, float(value), float(output), _number_or_none(cache_read)))
    return tuple(sorted(tiers, key=lambda tier: tier.above_prompt_tokens))


def _number_or_none(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _price_from_data(info: dict[str, Any]) -> Price | None:
    if info.get("mode") not in _PRICED_MODES:
        return None
    input_cost = _number_or_none(info.get("input_cost_per_token"))
    output_cost = _number_or_none(info.get("output_cost_per_token"))
    if input_cost is None or output_cost is None:
        return None
    return Price(
        input_cost_per_token=input_cost,
        output_cost_per_token=output_cost,
        cache_read_input_token_cost=_number_or_none(info.get("cache_read_input_token_cost")),
        output_cost_per_reasoning_token=_number_or_none(
            info.get("output_cost_per_reasoning_token")
        ),
        tiers=_tiers(info),
    )


def _check_usages(price: Price) -> list[tuple[int, int, int, int]]:
    """(input, cached, output, reasoning) token counts a price must get right: a short prompt,
    and one just above each long-prompt threshold."""
    usages = [(1_000, 200, 500, 100), (1_000, 0, 500, 0)]
    for tier in price.tiers:
        usages.append((tier.above_prompt_tokens + 1_000, 2_000, 700, 300))
    return usages


def _litellm_cost(litellm: Any, model: str, usage: tuple[int, int, int, int]) -> float | None:
    input_tokens, cached, output_tokens, reasoning = usage
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
    try:
        cost = litellm.completion_cost(completion_response=response, model=model)
    except Exception:
        return None
    return float(cost) if isinstance(cost, int | float) else None


# A per-model block litellm applies by the clock (cheaper hours); see the module docstring.
_TIME_OF_DAY_PRICING = "off_peak_pricing"


def build_prices(litellm: Any) -> tuple[dict[str, Any], int]:
    """The price table, and how many priced models it leaves out (litellm prices them otherwise)."""
    models: dict[str, Any] = {}
    left_out = 0
    for name, info in sorted(litellm.model_cost.items()):
        if not isinstance(info, dict):
            continue
        if info.get(_TIME_OF_DAY_PRICING) is not None:
            left_out += 1
            continue
        price = _price_from_data(info)
        if price is None:
            continue
        agrees = True
        for usage in _check_usages(price):
            expected = _litellm_cost(litellm, name, usage)
            input_tokens, cached, output_tokens, reasoning = usage
            ours = price.cost(
                input_tokens=input_tokens,
                cached_tokens=cached,
                output_tokens=output_tokens,
                thinking_tokens=reasoning,
            )
            if expected is None or not math.isclose(ours, expected, rel_tol=1e-9, abs_tol=1e-15):
                agrees = False
                break
        if not agrees:
            left_out += 1
            continue
        models[name] = {"provider": str(info.get("litellm_provider", "")), **price.to_json()}
    table = {
        "litellm_version": _litellm_version(),
        "price_map_date": litellm_release_date(),
        "models": models,
    }
    return table, left_out


def build_limits(litellm: Any) -> dict[str, Any]:
    """The token limits of every chat or completion model of litellm's map that states one."""
    models: dict[str, Any] = {}
    for name, info in sorted(litellm.model_cost.items()):
        if not isinstance(info, dict) or info.get("mode") not in _PRICED_MODES:
            continue
        limits = ModelLimits.from_json(
            {"input": info.get("max_input_tokens"), "output": info.get("max_output_tokens")}
        )
        if limits.max_input_tokens is None and limits.max_output_tokens is None:
            continue
        models[name] = {"provider": str(info.get("litellm_provider", "")), **limits.to_json()}
    return {"litellm_version": _litellm_version(), "models": models}


def render(catalog: dict[str, Any]) -> str:
    return json.dumps(catalog, indent=1, sort_keys=True) + "\n"


def render_prices(table: dict[str, Any]) -> str:
    """One model per line: small diffs when litellm's prices change."""
    models = table["models"]
    lines = [
        f"  {json.dumps(name)}: {json.dumps(entry, sort_keys=True, separators=(',', ':'))}"
        for name, entry in models.items()
    ]
    return (
        f'{{\n "litellm_version": {json.dumps(table["litellm_version"])},\n'
        f' "price_map_date": {json.dumps(table["price_map_date"])},\n "models": {{\n'
        + ",\n".join(lines)
        + "\n }\n}\n"
    )


def render_limits(table: dict[str, Any]) -> str:
    """One model per line, as the price table."""
    lines = [
        f"  {json.dumps(name)}: {json.dumps(entry, sort_keys=True, separators=(',', ':'))}"
        for name, entry in table["models"].items()
    ]
    return (
        f'{{\n "litellm_version": {json.dumps(table["litellm_version"])},\n "models": {{\n'
        + ",\n".join(lines)
        + "\n }\n}\n"
    )


def main(argv: list[str]) -> int:
    litellm = _litellm()
    outputs = {
        CATALOG_PATH: render(build_catalog(litellm)),
        PRICES_PATH: render_prices(build_prices(litellm)[0]),
        LIMITS_PATH: render_limits(build_limits(litellm)),
    }
    if "--check" in argv:
        stale = [
            path
            for path, text in outputs.items()
            if not path.exists() or path.read_text(encoding="utf-8") != text
        ]
        for path in stale:
            print(
                f"{path} differs from the installed litellm's data; rebuild it with "
                "`python -m app.outbound.catalog_build`",
                file=sys.stderr,
            )
        return 1 if stale else 0
    for path, text in outputs.items():
        path.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
