"""Which addresses a destination may have: public ones, unless the operator said otherwise.

A base URL that the allow-list accepts names a host; the host names addresses, and those can be
anything its DNS says: loopback (the service's own Redis and PostgreSQL), the private network,
link-local cloud metadata (169.254.169.254). Every address a host resolves to is checked; one
non-public address refuses the whole destination, unless the allow-list entry names such a
destination explicitly (an IP literal, `localhost`, or `allow_private: true`).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterable

from app.outbound.urls import AllowedBase, HttpUrl, IPAddress

Resolver = Callable[[str, int], list[IPAddress]]
AsyncResolver = Callable[[str, int], Awaitable[list[IPAddress]]]


class DestinationRefused(Exception):
    """A destination the policy refuses; the message is for logs and the tenant admin."""


class ResolutionFailed(ConnectionError):
    """The resolver could not answer now (EAI_AGAIN: its server timed out or failed): another
    try may succeed, unlike a name that does not exist."""


_TEMPORARY_RESOLVER_ERRORS = {socket.EAI_AGAIN}


def non_public_reason(address: IPAddress) -> str | None:
    """Why `address` is not a public internet address, or None when it is one.

    An IPv6 address that carries an IPv4 one is judged by it: IPv4-mapped (`::ffff:a.b.c.d`) as
    that address; 6to4 (`2002::/16`) and Teredo (`2001::/32`, by its client address) by the
    IPv4 address they embed first, then as themselves (a relay would deliver to the embedded
    one: `2002:7f00:1::` is loopback)."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        else:
            embedded = address.sixtofour or (address.teredo[1] if address.teredo else None)
            if embedded is not None:
                reason = non_public_reason(embedded)
                if reason is not None:
                    return f"{reason} (embedded {embedded})"
    for reason, test in (
        ("unspecified", address.is_unspecified),
        ("loopback", address.is_loopback),
        ("link-local", address.is_link_local),
        ("private", address.is_private),
        ("multicast", address.is_multicast),
        ("reserved", address.is_reserved),
    ):
        if test:
            return reason
    if not address.is_global:
        return "not globally routable"
    return None


def _addresses(infos: Iterable[tuple[object, ...]]) -> list[IPAddress]:
    found: list[IPAddress] = []
    for info in infos:
        sockaddr = info[4]
        assert isinstance(sockaddr, tuple)
        # An IPv6 scope id ("fe80::1%eth0") is not part of the address itself.
        address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        if address not in found:
            found.append(address)
    return found


def system_resolve(host: str, port: int) -> list[IPAddress]:
    """Every address the system resolver gives for `host` (blocking); a temporary resolver
    failure is a ResolutionFailed, any other a DestinationRefused."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as error:
        raise _resolution_error(host, error) from None
    return _addresses(infos)


async def system_resolve_async(host: str, port: int) -> list[IPAddress]:
    """`system_resolve` without blocking the event loop; a temporary resolver failure is a
    ResolutionFailed (retried as a connection error is), any other a DestinationRefused."""
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as error:
        raise _resolution_error(host, error) from None
    return _addresses(infos)


def _resolution_error(host: str, error: OSError | UnicodeError) -> Exception:
    if isinstance(error, socket.gaierror) and error.errno in _TEMPORARY_RESOLVER_ERRORS:
        return ResolutionFailed(f"{host} cannot be resolved now: {error}")
    return DestinationRefused(f"{host} cannot be resolved: {error}")


def permitted_addresses(
    url: HttpUrl, base: AllowedBase | None, addresses: list[IPAddress]
) -> list[IPAddress]:
    """`addresses` when the destination may use them all; DestinationRefused otherwise.

    `base` None means the operator's own run (the CLI), where every address is permitted.
    """
    if not addresses:
        raise DestinationRefused(f"{url.host} resolves to no address")
    if base is None or base.names_private_destination:
        return addresses
    for address in addresses:
        reason = non_public_reason(address)
        if reason is not None:
            raise DestinationRefused(
                f"{url.host} resolves to {address}, a {reason} address; allow it explicitly "
                "with an IP literal or allow_private in GAUNTLET_ALLOWED_API_BASES"
            )
    return addresses
