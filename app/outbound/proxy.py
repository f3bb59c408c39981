"""The operator's egress proxy, for the operator's own runs (`gauntlet eval run`) only.

Read from the CLI's environment as curl and httpx read it: `HTTPS_PROXY` for `https` base URLs
(a `CONNECT` tunnel; TLS and its certificate check stay end to end), `HTTP_PROXY` for `http`
ones (the request forwarded with its absolute URL), `ALL_PROXY` for either when the other is
unset (lowercase names win over uppercase), and `NO_PROXY` for hosts reached directly. A proxy
URL is `http://[user:password@]host[:port]` (the credentials go as `Proxy-Authorization:
Basic`).

A tenant's call never goes through a proxy: only an unrestricted policy (app.outbound.policy)
may hold these settings, and the service's workers build restricted ones.
"""

from __future__ import annotations

import base64
import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from app.outbound.urls import HttpUrl

_DEFAULT_PROXY_PORT = 8080


@dataclass(frozen=True)
class Proxy:
    host: str  # an IPv6 address without brackets
    port: int
    authorization: str | None  # the Proxy-Authorization value, or None

    @property
    def netloc(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    def __str__(self) -> str:  # never the credentials
        return f"http://{self.netloc}"


def parse_proxy(text: str) -> Proxy:
    """A proxy URL (ValueError naming what is wrong: it is the operator's setting)."""
    parts = urlsplit(text.strip() if "://" in text else f"http://{text.strip()}")
    if parts.scheme != "http":
        raise ValueError(f"proxy {parts.scheme}:// is not supported (only http://host:port)")
    if not parts.hostname:
        raise ValueError("the proxy URL names no host")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ValueError("the proxy URL must be http://[user:password@]host[:port]")
    authorization = None
    if parts.username is not None:
        pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        authorization = "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii")
    return Proxy(parts.hostname, parts.port or _DEFAULT_PROXY_PORT, authorization)


def _environment(environ: Mapping[str, str], name: str) -> str:
    return (environ.get(name.lower()) or environ.get(name.upper()) or "").strip()


@dataclass(frozen=True)
class ProxySettings:
    http: Proxy | None = None
    https: Proxy | None = None
    # NO_PROXY's entries, lowercased: "*", host names (their subdomains included; a leading
    # dot is ignored), IP addresses and networks, each optionally with ":port".
    bypass: tuple[str, ...] = ()

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> ProxySettings:
        """The settings of HTTPS_PROXY, HTTP_PROXY, ALL_PROXY and NO_PROXY (ValueError, naming
        the variable, for a URL that is not a proxy's)."""
        proxies: dict[str, Proxy | None] = {}
        every = _environment(environ, "ALL_PROXY")
        for scheme in ("http", "https"):
            name = f"{scheme.upper()}_PROXY"
            own = _environment(environ, name)
            try:
                proxies[scheme] = parse_proxy(own or every) if own or every else None
            except ValueError as error:
                raise ValueError(f"{name if own else 'ALL_PROXY'}: {error}") from None
        bypass = tuple(
            entry.strip().lower()
            for entry in _environment(environ, "NO_PROXY").split(",")
            if entry.strip()
        )
        return cls(http=proxies["http"], https=proxies["https"], bypass=bypass)

    def for_url(self, url: HttpUrl) -> Proxy | None:
        """The proxy a request to `url` goes through, or None (directly)."""
        proxy = self.https if url.scheme == "https" else self.http
        if proxy is None or any(_bypasses(entry, url) for entry in self.bypass):
            return None
        return proxy


def _bypasses(entry: str, url: HttpUrl) -> bool:
    if entry == "*":
        return True
    host, port = entry, None
    if entry.startswith("["):  # [v6]:port
        host, _, rest = entry[1:].partition("]")
        port = rest.removeprefix(":") or None
    elif entry.count(":") == 1:
        host, port = entry.split(":")
    if port is not None and port != str(url.port):
        return False
    try:
        network = ipaddress.ip_network(host, strict=False)
    except ValueError:
        name = host.lstrip(".").rstrip(".")
        return bool(name) and (url.host == name or url.host.endswith("." + name))
    address = url.ip
    return address is not None and address.version == network.version and address in network
