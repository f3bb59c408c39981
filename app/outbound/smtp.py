"""The operator's SMTP server, named by one URL (`GAUNTLET_SMTP_URL`), and the sender address
(`GAUNTLET_MAIL_FROM`), parsed and checked when the settings load (and any address a message
goes to, when it is built: `one_address`).

- `smtp://[user:password@]host[:port]` (port 25 when absent; 587 is the usual submission
  port): the connection is upgraded with STARTTLS whenever the server offers it, the server's
  certificate checked against the host name. Credentials are sent only over TLS: to a server
  that offers no STARTTLS they are not sent (the send fails and is retried), unless the host
  is a loopback address, where the traffic never leaves the machine.
- `smtps://[user:password@]host[:port]` (port 465 when absent): TLS from the first byte.

The user and password are percent-decoded (`%40` for an `@` in a user name). Anything else a
URL may hold (a path, a query, a fragment) is refused, and no message ever repeats the
password.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from email.headerregistry import Address
from email.policy import default
from urllib.parse import unquote, urlsplit

DEFAULT_PORTS = {"smtp": 25, "smtps": 465}
# Whitespace and control characters have no place in a host, a user or a sender address (and
# CR or LF in a header would start another header).
_UNSAFE = re.compile(r"[\x00-\x20\x7f]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_HOST = re.compile(r"^[A-Za-z0-9.-]{1,253}$")


@dataclass(frozen=True)
class SmtpServer:
    """Where mail is handed over: TLS from the start (`implicit_tls`, smtps) or STARTTLS when
    offered (smtp), and the credentials to log in with, if any."""

    host: str
    port: int
    implicit_tls: bool
    username: str | None = None
    password: str | None = field(default=None, repr=False)

    @property
    def loopback(self) -> bool:
        """On this machine: `localhost` or a loopback address."""
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False

    @classmethod
    def parse(cls, url: str) -> SmtpServer:
        """The server the URL names; ValueError saying what is wrong (never the password)."""
        scheme, _, rest = url.partition("://")
        scheme = scheme.lower()
        if scheme not in DEFAULT_PORTS or not rest:
            raise ValueError("must be smtp://host[:port] or smtps://host[:port]")
        if _UNSAFE.search(url):
            raise ValueError("must not contain spaces or control characters")
        parts = urlsplit(url)
        if parts.path not in ("", "/") or parts.query or parts.fragment:
            raise ValueError("takes no path, query or fragment: smtp(s)://user:pass@host:port")
        host = parts.hostname or ""
        try:
            port = parts.port or DEFAULT_PORTS[scheme]
        except ValueError:
            raise ValueError("has a port that is not a number from 1 to 65535") from None
        if not host:
            raise ValueError("names no host")
        if not _HOST.match(host):
            try:
                ipaddress.IPv6Address(host)
            except ValueError:
                raise ValueError("has a host that is not a host name or an address") from None
        username = unquote(parts.username) if parts.username else None
        password = unquote(parts.password) if parts.password is not None else None
        if password is not None and username is None:
            raise ValueError("has a password without a user name")
        return cls(host, port, scheme == "smtps", username, password)


def one_address(value: str) -> Address:
    """One address, `Name <address>` or a bare one (the sender, a recipient); ValueError
    saying what is wrong. Checked for what would break a header (a line break, a second
    address, a missing domain), not for deliverability: the server decides what it takes."""
    if _CONTROL.search(value):
        raise ValueError("must be one line without control characters")
    header = default.header_factory("From", value)
    addresses: tuple[Address, ...] = getattr(header, "addresses", ())
    if len(addresses) != 1 or header.defects or not addresses[0].domain:
        raise ValueError("must be one address such as 'Gauntlet <gauntlet@example.org>'")
    return addresses[0]
