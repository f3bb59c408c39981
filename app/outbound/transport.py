"""The HTTP transport of base-URL calls: the policy's decision enforced on every request.

Before each request it resolves the host, refuses non-public addresses the allow-list entry
does not name (`addresses`), and connects to the address it checked: the request URL is
rewritten to that address, the Host header and the TLS server name (SNI, and so certificate
verification) stay the host name. A DNS answer that changes between the check and the
connection (DNS rebinding) therefore cannot redirect the request.

Headers are rebuilt from an allow-list: whatever a client library adds from the environment
(`OPENAI_ORG_ID`, `OPENAI_PROJECT_ID`, `OPENAI_CUSTOM_HEADERS`, ...) is dropped, and the only
credential is the one bound to the destination (`Authorization: Bearer <key>`), or none.
Redirects are not followed (httpx's default); environment proxies and `.netrc` are not used.

The requests themselves are sent by aiohttp (through httpx-aiohttp's transport): httpx's own
connection pool polls every pooled socket on each request, which with a few hundred
connections to one server cost more CPU per call than everything else together; aiohttp's
does not. The pool has no connection cap: the engine's concurrency caps bound what is in
flight. Certificates are verified as httpx would (`SSL_CERT_FILE` / `SSL_CERT_DIR`, else
certifi), against the host name.
"""

from __future__ import annotations

import functools
import os
import ssl

import aiohttp
import httpx
from httpx_aiohttp import AiohttpTransport

from app.outbound.addresses import AsyncResolver, DestinationRefused, system_resolve_async
from app.outbound.policy import BaseRoute
from app.outbound.urls import HttpUrl, UrlRefused, parse_url

_KEPT_HEADERS = frozenset(
    {"accept", "accept-encoding", "content-type", "content-length", "user-agent", "host"}
)
_KEPT_HEADER_PREFIX = "x-stainless-"  # the openai SDK's client description; no secrets


class GuardedTransport(httpx.AsyncBaseTransport):
    """An httpx transport for one base-URL route."""

    def __init__(self, route: BaseRoute, resolve: AsyncResolver = system_resolve_async) -> None:
        self.route = route
        self.resolve = resolve
        tls = tls_context(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
        # The session is made on first use, on the loop that sends (aiohttp sessions belong
        # to one loop).
        self._inner = AiohttpTransport(verify=tls, client=lambda: _session(tls))

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.query:
            raise DestinationRefused("a base-URL request must not carry a query")
        try:
            url = _parsed(str(request.url))
        except UrlRefused as error:
            raise DestinationRefused(f"request URL {error}") from None
        route = self.route
        if (url.scheme, url.host, url.port) != (
            route.url.scheme,
            route.url.host,
            route.url.port,
        ) or not url.within(route.url.path):
            raise DestinationRefused("request URL outside its base URL")
        literal = url.ip
        addresses = [literal] if literal is not None else await self.resolve(url.host, url.port)
        address = route.addresses_permitted(addresses)[0]

        # Rebuilt in one go (deleting from httpx's headers one by one copies them each time).
        kept = [
            (name, value)
            for name, value in request.headers.raw
            if (lowered := name.lower().decode("latin-1")) in _KEPT_HEADERS
            or lowered.startswith(_KEPT_HEADER_PREFIX)
        ]
        if route.api_key:
            kept.append((b"Authorization", f"Bearer {route.api_key}".encode("latin-1")))
        request.headers = httpx.Headers(kept)
        if literal is None:
            request.url = request.url.copy_with(host=str(address))
            if url.scheme == "https":
                request.extensions = {**request.extensions, "sni_hostname": url.host}
        try:
            return await self._inner.handle_async_request(request)
        except httpx.ConnectTimeout as error:
            # httpx-aiohttp maps every aiohttp connection error to a timeout; a refused or
            # unreachable address is a connection error, and is reported as one.
            cause = error.__cause__
            if isinstance(cause, aiohttp.ClientConnectorError):
                raise httpx.ConnectError(str(cause), request=request) from cause
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()


def _session(tls: ssl.SSLContext) -> aiohttp.ClientSession:
    return aiohttp.ClientSession(
        # limit=0: no cap of its own (a cap below the engine's would queue calls inside
        # their timed span). Hosts are never resolved here: requests go to checked addresses.
        connector=aiohttp.TCPConnector(limit=0, ssl=tls, use_dns_cache=False),
        trust_env=False,
    )


@functools.lru_cache(maxsize=1024)
def _parsed(url: str) -> HttpUrl:
    """`parse_url`, remembered: a client sends to the same few URLs over and over, and parsing
    one is a good share of the transport's own work per request (a refusal is not cached)."""
    return parse_url(url)


@functools.lru_cache(maxsize=4)
def tls_context(cert_file: str | None, cert_dir: str | None) -> ssl.SSLContext:
    """The context httpx would make (certifi, or the `SSL_CERT_FILE` / `SSL_CERT_DIR` the
    arguments name), made once per process: loading the certificates takes tens of ms."""
    return httpx.create_ssl_context(trust_env=True)
