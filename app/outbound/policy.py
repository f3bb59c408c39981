"""The decision for one outbound call: may it happen, where exactly, with which credential.

Two kinds of call exist:

- provider calls (no base URL): litellm connects to the provider's own endpoint with the
  operator's key for that provider from the environment (`OPENAI_API_KEY` goes to OpenAI
  only). The policy decides whether the provider is allowed.
- base-URL calls (`target.api_base`, `benchmark.actor_api_base`): an OpenAI-compatible server.
  The base must match an entry of the operator's allow-list, and gets the key configured for
  that entry (`api_key_env`) or no credential at all, never a provider key from the
  environment. Its host is resolved before every request and non-public addresses are refused
  unless the entry names them explicitly (see `addresses`).

The same policy object answers at save time (the API) and before each call (the worker).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.outbound.addresses import (
    DestinationRefused,
    Resolver,
    permitted_addresses,
    system_resolve,
)
from app.outbound.providers import (
    ProviderCatalog,
    ProviderPolicy,
    bundled_catalog,
    model_id_problem,
)
from app.outbound.proxy import Proxy, ProxySettings
from app.outbound.urls import (
    AllowedBase,
    HttpUrl,
    UrlRefused,
    matching_base,
    parse_allowed_base,
    parse_url,
)

__all__ = ["BaseRoute", "DestinationRefused", "OutboundPolicy", "OutboundRefused", "UrlRefused"]


class OutboundRefused(Exception):
    """A call the policy refuses (a provider, a base URL or a model id not allowed)."""


@dataclass(frozen=True)
class BaseRoute:
    """Where a base-URL call goes and what it carries."""

    url: HttpUrl
    # The allow-list entry; None for the operator's own runs, where any base is permitted.
    entry: AllowedBase | None
    api_key: str | None  # None: the request carries no credential
    # The operator's proxy (only ever on the operator's own runs); None: connect directly.
    proxy: Proxy | None = None

    def addresses_permitted(self, addresses: list[Any]) -> list[Any]:
        return permitted_addresses(self.url, self.entry, addresses)


def parse_allowed_bases(entries: Sequence[str | Mapping[str, Any]]) -> tuple[AllowedBase, ...]:
    """The allow-list setting, each entry checked (ValueError naming the bad entry)."""
    parsed = []
    for position, entry in enumerate(entries):
        try:
            parsed.append(parse_allowed_base(entry))
        except UrlRefused as error:
            raise ValueError(f"entry {position} ({entry!r}): {error}") from None
    return tuple(parsed)


@dataclass(frozen=True)
class OutboundPolicy:
    """The operator's outbound policy. `restricted` False is the operator's own run (the CLI):
    any base URL and any provider, but credentials still bound to their destinations."""

    bases: tuple[AllowedBase, ...] = ()
    providers: ProviderPolicy = field(default_factory=ProviderPolicy)
    restricted: bool = True
    environ: Mapping[str, str] = field(default_factory=lambda: os.environ)
    catalog: ProviderCatalog = field(default_factory=bundled_catalog)
    # The operator's egress proxy (app.outbound.proxy), for base-URL calls of unrestricted
    # policies only: a tenant's call never goes through one.
    proxies: ProxySettings | None = None

    def __post_init__(self) -> None:
        if self.restricted and self.proxies is not None:
            raise ValueError("a proxy is for the operator's own runs, never for tenants' calls")

    @classmethod
    def unrestricted(
        cls,
        bases: tuple[AllowedBase, ...] = (),
        environ: Mapping[str, str] | None = None,
        proxies: ProxySettings | None = None,
    ) -> OutboundPolicy:
        catalog = bundled_catalog()
        return cls(
            bases=bases,
            providers=ProviderPolicy.unrestricted(catalog),
            restricted=False,
            environ=os.environ if environ is None else environ,
            catalog=catalog,
            proxies=proxies,
        )

    # Models

    def model_problem(self, model: str, offline_models: Sequence[str]) -> str | None:
        return model_id_problem(
            model, offline_models=offline_models, policy=self.providers, catalog=self.catalog
        )

    def check_provider(self, model: str) -> None:
        """OutboundRefused when `model` is of a provider this policy does not allow. Unknown
        providers pass: litellm refuses them itself, with no connection made."""
        provider = self.catalog.provider_of(model)
        if provider is None:
            return
        refusal = self.providers.refusal(provider, self.catalog)
        if refusal is not None:
            raise OutboundRefused(f"model {model}: {refusal}")

    def check_key(self, model: str) -> None:
        """OutboundRefused when `model`'s provider needs an API key this server does not have
        (litellm would fail every call). A call at a base URL carries the key of its
        allow-list entry instead, and is not asked about here."""
        provider = self.catalog.provider_of(model)
        if provider is None:
            return
        problem = self.catalog.missing_key(provider, self.environ)
        if problem is not None:
            raise OutboundRefused(problem)

    # Base URLs

    def route(self, api_base: str) -> BaseRoute:
        """The route of a base-URL call: parsed URL, allow-list entry and bound credential.

        OutboundRefused when the URL is malformed or not allowed. Addresses are checked when
        the host is resolved (`check_addresses`, or the transport before every request).
        """
        try:
            url = parse_url(api_base)
        except UrlRefused as error:
            raise OutboundRefused(f"base URL {error}") from None
        entry = matching_base(url, self.bases)
        if entry is None and self.restricted:
            raise OutboundRefused(
                "this base URL is not allowed on this server (setting GAUNTLET_ALLOWED_API_BASES)"
            )
        proxy = None
        if self.proxies is not None and not self.restricted:
            proxy = self.proxies.for_url(url)
        return BaseRoute(url=url, entry=entry, api_key=self._key_for(entry), proxy=proxy)

    def _key_for(self, entry: AllowedBase | None) -> str | None:
        if entry is None or entry.api_key_env is None:
            return None
        return self.environ.get(entry.api_key_env) or None

    def checked_base(self, api_base: str, resolve: Resolver = system_resolve) -> str:
        """The canonical form of an allowed base URL whose host resolves to permitted
        addresses now (save time); OutboundRefused otherwise, and ResolutionFailed (not a
        refusal: another try may succeed) when the resolver cannot answer now."""
        route = self.route(api_base)
        try:
            ip = route.url.ip
            addresses = [ip] if ip is not None else resolve(route.url.host, route.url.port)
            route.addresses_permitted(addresses)
        except DestinationRefused as error:
            raise OutboundRefused(str(error)) from None
        return str(route.url)
