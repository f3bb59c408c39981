"""Base URLs parsed into their parts, and the operator's allow-list matched on those parts.

A text prefix is no allow-list: `http://allowed.example.com` is a prefix of
`http://allowed.example.com.evil.example/`, and `http://h/v1` of `http://h/v1/../../internal`.
So every URL is parsed into scheme, host, port and path, normalised, and refused when it holds
anything a base URL does not need and an attacker could use:

- schemes other than http and https;
- user information (`user:password@`), queries and fragments;
- whitespace, control characters and backslashes anywhere;
- percent-encoding in the path (it hides dot segments and slashes: `%2e%2e`, `%2f`), dot
  segments (`.`, `..`) and empty segments (`//`);
- hosts that are not valid host names (IDNA 2008, letters, digits and hyphens per label),
  IPv4 addresses in any form but the canonical dotted quad (`127.1`, `0x7f.0.0.1`,
  `2130706433`, `0177.0.0.1` all reach 127.0.0.1 through the C resolver), and IPv6 zone ids.

Normalisation: the scheme and host are lowercased, international host names become their
ASCII (punycode) form, one trailing dot of a host name is dropped, the port is explicit (the
scheme's default when absent) and a trailing slash of the path is dropped.

An allowed base matches a URL on scheme, host and port exactly (the port may be the wildcard
`*`, meant for tests that start servers on random ports) and on the path as a prefix at segment
boundaries: `/v1` allows `/v1` and `/v1/...`, never `/v10`.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import idna

DEFAULT_PORTS = {"http": 80, "https": 443}
MAX_URL_CHARS = 2000
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
# RFC 3986 unreserved characters and sub-delimiters, ":" and "@": no "%", no "\", no space.
_PATH_CHARACTERS = re.compile(r"^[A-Za-z0-9._~!$&'()*+,;=:@/-]*$")
_PORT = re.compile(r"^[0-9]{1,5}$")
# A label the C resolver's inet_aton would read as a number: decimal, octal or hex.
_NUMERIC_LABEL = re.compile(r"^(?:0x[0-9a-f]*|[0-9]+)$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
PORT_WILDCARD = "*"

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class UrlRefused(ValueError):
    """A URL that is not an acceptable base URL; the message says why."""


@dataclass(frozen=True)
class HttpUrl:
    """A parsed, normalised http(s) URL without query or fragment."""

    scheme: str
    host: str  # lowercase ASCII; an IPv6 address without brackets
    port: int
    path: str  # "" or "/segment/..." without a trailing slash

    @property
    def ip(self) -> IPAddress | None:
        """The host as an address when it is an IP literal."""
        try:
            return ipaddress.ip_address(self.host)
        except ValueError:
            return None

    @property
    def netloc(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        if self.port == DEFAULT_PORTS[self.scheme]:
            return host
        return f"{host}:{self.port}"

    def __str__(self) -> str:
        return f"{self.scheme}://{self.netloc}{self.path}"

    def within(self, path_prefix: str) -> bool:
        """Whether the path is `path_prefix` or below it, at a segment boundary."""
        return (
            not path_prefix or self.path == path_prefix or self.path.startswith(path_prefix + "/")
        )


def _refuse_characters(text: str) -> None:
    for character in text:
        if character.isspace() or ord(character) < 0x20 or 0x7F <= ord(character) < 0xA0:
            raise UrlRefused("must not contain whitespace or control characters")
        if character == "\\":
            raise UrlRefused("must not contain backslashes")


def _normalise_host(host: str) -> str:
    if not host:
        raise UrlRefused("has no host")
    if host.startswith("["):
        if not host.endswith("]"):
            raise UrlRefused("has an unclosed IPv6 bracket")
        literal = host[1:-1]
        if "%" in literal:
            raise UrlRefused("must not name an IPv6 zone")
        try:
            return ipaddress.IPv6Address(literal).compressed
        except ValueError as error:
            raise UrlRefused(f"has an invalid IPv6 address: {error}") from None
    if host.endswith("."):
        host = host[:-1]
    if not host or any(not label for label in host.split(".")):
        raise UrlRefused("has an empty label in its host name")
    try:
        # UTS 46 maps look-alikes first (full-width dots and digits, upper case), so the checks
        # below see the host as the resolver will.
        encoded = idna.encode(host, uts46=True).decode("ascii").lower()
    except idna.IDNAError as error:
        raise UrlRefused(f"has an invalid host name: {error}") from None
    labels = encoded.split(".")
    if _NUMERIC_LABEL.match(labels[-1]) or all(_NUMERIC_LABEL.match(label) for label in labels):
        # Numbers in any other form still reach an address through inet_aton: only the
        # canonical dotted quad names an IPv4 address here.
        try:
            return str(ipaddress.IPv4Address(encoded))
        except ValueError:
            raise UrlRefused(
                "names an IPv4 address in a non-canonical form; write it as a dotted quad"
            ) from None
    return encoded


def _split_authority(authority: str, *, allow_port_wildcard: bool) -> tuple[str, int | None]:
    """(normalised host, port or None when the port is the wildcard or absent)."""
    if "@" in authority:
        raise UrlRefused("must not contain user information ('user@')")
    if authority.startswith("["):
        closing = authority.find("]")
        if closing < 0:
            raise UrlRefused("has an unclosed IPv6 bracket")
        host, rest = authority[: closing + 1], authority[closing + 1 :]
        if rest and not rest.startswith(":"):
            raise UrlRefused("has text after its IPv6 address")
        port_text = rest[1:] if rest else None
    elif ":" in authority:
        host, port_text = authority.rsplit(":", 1)
        if ":" in host:
            raise UrlRefused("has more than one ':' in its host; IPv6 goes in brackets")
    else:
        host, port_text = authority, None
    normalised = _normalise_host(host)
    if port_text is None:
        return normalised, None
    if port_text == PORT_WILDCARD and allow_port_wildcard:
        return normalised, None
    if not _PORT.match(port_text) or not 1 <= int(port_text) <= 65535:
        raise UrlRefused("has an invalid port (1-65535)")
    return normalised, int(port_text)


def _normalise_path(path: str) -> str:
    if not _PATH_CHARACTERS.match(path):
        raise UrlRefused(
            "has characters not accepted in a base URL path (percent-encoding included)"
        )
    if not path:
        return ""
    segments = path.split("/")[1:]
    if segments and segments[-1] == "":
        segments.pop()  # one trailing slash
    for segment in segments:
        if segment in ("", ".", ".."):
            raise UrlRefused("must not contain empty, '.' or '..' path segments")
    return "".join("/" + segment for segment in segments)


def _parse(text: object, *, allow_port_wildcard: bool) -> tuple[HttpUrl, bool]:
    if not isinstance(text, str):
        raise UrlRefused("must be text")
    if not text or len(text) > MAX_URL_CHARS:
        raise UrlRefused(f"must be 1 to {MAX_URL_CHARS} characters")
    _refuse_characters(text)
    scheme_match = _SCHEME.match(text)
    if scheme_match is None:
        raise UrlRefused("must start with http:// or https://")
    scheme = scheme_match.group(1).lower()
    if scheme not in DEFAULT_PORTS:
        raise UrlRefused("must use http or https")
    rest = text[scheme_match.end() :]
    if "?" in rest or "#" in rest:
        raise UrlRefused("must not have a query or a fragment")
    slash = rest.find("/")
    authority, path = (rest, "") if slash < 0 else (rest[:slash], rest[slash:])
    host, port = _split_authority(authority, allow_port_wildcard=allow_port_wildcard)
    wildcard = port is None and authority.endswith(":" + PORT_WILDCARD)
    url = HttpUrl(
        scheme=scheme,
        host=host,
        port=DEFAULT_PORTS[scheme] if port is None else port,
        path=_normalise_path(path),
    )
    return url, wildcard


def parse_url(text: object) -> HttpUrl:
    """The URL, parsed and normalised, or UrlRefused naming what is wrong with it."""
    url, _ = _parse(text, allow_port_wildcard=False)
    return url


@dataclass(frozen=True)
class AllowedBase:
    """One entry of the operator's allow-list, and the credential bound to it."""

    scheme: str
    host: str
    port: int | None  # None: any port (the wildcard)
    path: str
    # The environment variable holding the key sent to this base (as a bearer token); without
    # it, requests to this base carry no credential at all.
    api_key_env: str | None = None
    # Whether the host may resolve to loopback, private, link-local or other non-public
    # addresses. An IP literal or `localhost` in the entry already names such a destination
    # explicitly; a host name needs this flag.
    allow_private: bool = False

    def matches(self, url: HttpUrl) -> bool:
        return (
            url.scheme == self.scheme
            and url.host == self.host
            and (self.port is None or url.port == self.port)
            and url.within(self.path)
        )

    @property
    def names_private_destination(self) -> bool:
        """Whether the operator explicitly allowed non-public addresses for this base."""
        if self.allow_private or self.host == "localhost":
            return True
        try:
            ipaddress.ip_address(self.host)
        except ValueError:
            return False
        return True

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        port = PORT_WILDCARD if self.port is None else str(self.port)
        return f"{self.scheme}://{host}:{port}{self.path}"


def parse_allowed_base(entry: str | Mapping[str, Any]) -> AllowedBase:
    """An allow-list entry: a URL (`http://host:port/path`, the port may be `*`), or an object
    `{"url": ..., "api_key_env": "NAME", "allow_private": false}`."""
    if isinstance(entry, str):
        options: Mapping[str, Any] = {"url": entry}
    elif isinstance(entry, Mapping):
        options = entry
    else:
        raise UrlRefused("must be a URL or an object with 'url'")
    unknown = set(options) - {"url", "api_key_env", "allow_private"}
    if unknown:
        raise UrlRefused(f"has unknown keys: {', '.join(sorted(map(str, unknown)))}")
    url, wildcard = _parse(options.get("url"), allow_port_wildcard=True)
    api_key_env = options.get("api_key_env")
    if api_key_env is not None and (
        not isinstance(api_key_env, str) or not _ENV_NAME.match(api_key_env)
    ):
        raise UrlRefused("api_key_env must be an environment variable name")
    allow_private = options.get("allow_private", False)
    if not isinstance(allow_private, bool):
        raise UrlRefused("allow_private must be true or false")
    return AllowedBase(
        scheme=url.scheme,
        host=url.host,
        port=None if wildcard else url.port,
        path=url.path,
        api_key_env=api_key_env,
        allow_private=allow_private,
    )


def matching_base(url: HttpUrl, bases: tuple[AllowedBase, ...]) -> AllowedBase | None:
    """The allow-list entry for `url`: the one with the longest path when several match, so a
    keyed `/team-a/v1` entry wins over a general `/` entry of the same host."""
    found = [base for base in bases if base.matches(url)]
    if not found:
        return None
    return max(found, key=lambda base: (len(base.path), base.port is not None))
