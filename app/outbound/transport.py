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
"""

from __future__ import annotations

import httpx

from app.outbound.addresses import AsyncResolver, DestinationRefused, system_resolve_async
from app.outbound.policy import BaseRoute
from app.outbound.urls import UrlRefused, parse_url

_KEPT_HEADERS = frozenset(
    {"accept", "accept-encoding", "content-type", "content-length", "user-agent", "host"}
)
_KEPT_HEADER_PREFIX = "x-stainless-"  # the openai SDK's client description; no secrets


class GuardedTransport(httpx.AsyncBaseTransport):
    """An httpx transport for one base-URL route."""

    def __init__(
        self,
        route: BaseRoute,
        resolve: AsyncResolver = system_resolve_async,
        limits: httpx.Limits | None = None,
    ) -> None:
        self.route = route
        self.resolve = resolve
        # The connection pool is this inner transport's (an AsyncClient's own `limits` do not
        # reach a transport it is given).
        self._inner = httpx.AsyncHTTPTransport(
            retries=0, limits=limits if limits is not None else httpx.Limits()
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.query:
            raise DestinationRefused("a base-URL request must not carry a query")
        try:
            url = parse_url(str(request.url))
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

        for name in list(request.headers.keys()):
            lowered = name.lower()
            if lowered not in _KEPT_HEADERS and not lowered.startswith(_KEPT_HEADER_PREFIX):
                del request.headers[name]
        if route.api_key:
            request.headers["Authorization"] = f"Bearer {route.api_key}"
        if literal is None:
            request.url = request.url.copy_with(host=str(address))
            if url.scheme == "https":
                request.extensions = {**request.extensions, "sni_hostname": url.host}
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()
