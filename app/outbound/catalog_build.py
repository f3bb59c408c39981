"""Derives the provider catalog (`litellm_catalog.json`) from the installed litellm.

    python -m app.outbound.catalog_build           # rewrite the catalog
    python -m app.outbound.catalog_build --check   # exit 1 when it differs from litellm's data

The API validates model ids against this file, so it never imports litellm (which takes
seconds); a unit test runs `--check`, so upgrading litellm without rebuilding fails the suite.

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
"""

from __future__ import annotations

import ipaddress
import json
import logging
import os
import re
import socket
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

CATALOG_PATH = Path(__file__).resolve().parent / "litellm_catalog.json"

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


def build() -> dict[str, Any]:
    for name in list(os.environ):
        if name.endswith(("_API_BASE", "_BASE_URL")):
            del os.environ[name]
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    socket.getaddrinfo = _blocked_network
    socket.create_connection = _blocked_network
    import litellm

    # Probing makes litellm print and log at every unknown combination; none of it matters here.
    litellm.suppress_debug_info = True
    logging.getLogger("LiteLLM").setLevel(logging.CRITICAL)
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
    return {
        "litellm_version": _litellm_version(),
        "providers": providers,
        "local_providers": dict(sorted(local.items())),
        "bare_models": dict(sorted(bare.items())),
    }


def _litellm_version() -> str:
    from importlib.metadata import version

    return version("litellm")


def render(catalog: dict[str, Any]) -> str:
    return json.dumps(catalog, indent=1, sort_keys=True) + "\n"


def main(argv: list[str]) -> int:
    text = render(build())
    if "--check" in argv:
        current = CATALOG_PATH.read_text(encoding="utf-8") if CATALOG_PATH.exists() else ""
        if current != text:
            print(
                f"{CATALOG_PATH} differs from the installed litellm's data; rebuild it with "
                "`python -m app.outbound.catalog_build`",
                file=sys.stderr,
            )
            return 1
        return 0
    CATALOG_PATH.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
