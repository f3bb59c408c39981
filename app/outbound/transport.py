"""The HTTP client of base-URL calls: the policy's decision enforced on every request.

Before each request it resolves the host, refuses non-public addresses the allow-list entry
does not name (`addresses`), and connects to the address it checked; the Host header and the
TLS server name (SNI, and so certificate verification) stay the host name. A DNS answer that
changes between the check and the connection (DNS rebinding) therefore cannot redirect the
request. Connections are kept per checked address, so a name that now resolves elsewhere gets
connections of its own.

A request carries what this module writes and nothing else: Host, the JSON content headers, a
User-Agent and the credential bound to the destination (`Authorization: Bearer <key>`), or
none. Nothing is read from the environment (no proxies, no `.netrc`, no extra headers) and
redirects are not followed: a 3xx is an error like any other status.

The operator's own runs (an unrestricted policy) may go through the operator's proxy
(app.outbound.proxy, `route.proxy`): an `https` base through a `CONNECT` tunnel (TLS and the
certificate check end to end), an `http` one forwarded with its absolute URL. The proxy then
resolves the host; the operator's runs permit every address anyway.

The protocol is HTTP/1.1, framed by h11 on asyncio's streams, with connections kept open
between calls. A client library would add what a self-hosted server's pace cannot afford: the
`openai` SDK takes ~0.5 s to import and a third of a millisecond of CPU per call to build its
request; httpx's pool polls every pooled socket on each request; aiohttp takes ~0.2 s to
import. Measured figures are in bench/README.md.

Failures keep the class names of the OpenAI API's errors (as litellm's do), so a failed call
reads the same on both transports: `APIConnectionError` (not reached, or the connection broke;
retried), `APITimeoutError`, and per status `RateLimitError`, `InternalServerError`, ...
Certificates are verified against the host name (`SSL_CERT_FILE` / `SSL_CERT_DIR`, else
certifi's bundle, as httpx does; a variable naming nothing is an error, not certifi's bundle:
app.outbound.trust).
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import ssl
import zlib
from collections.abc import Mapping
from typing import Any

import h11

from app.outbound.addresses import AsyncResolver, system_resolve_async
from app.outbound.policy import BaseRoute
from app.outbound.proxy import Proxy
from app.outbound.trust import TrustedAuthorities
from app.outbound.urls import IPAddress

# An idle connection older than this is closed rather than reused: below the 5 s for which
# uvicorn-based servers (vLLM, SGLang) keep one open, so a call never goes out on a
# connection the server is closing.
KEEPALIVE_S = 4.0
# Each address of a host gets this long to accept a connection before the next is tried
# (within the call's own timeout): `localhost` resolving to ::1 first must reach a server
# that listens on 127.0.0.1 only.
CONNECT_EACH_S = 2.0
# A chat completion is text; an answer this large is a hostile or broken server. Callers pass
# a smaller cap tied to what the request asked for (app.evaluation.engine.bounds).
MAX_RESPONSE_BYTES = 32 * 1024 * 1024
_READ_SIZE = 65536
_EXCERPT_LIMIT = 300
_USER_AGENT = b"gauntlet"
# The pool's key of connections through the operator's proxy; others are keyed by address.
_PROXIED = None
_Target = IPAddress | None


class APIConnectionError(ConnectionError):
    """The server was not reached, or the connection broke before the answer was complete."""


class APICertificateError(APIConnectionError):
    """The server's TLS certificate is not trusted by the authorities of `tls_context` (the
    `SSL_CERT_FILE` file or `SSL_CERT_DIR` folder, else certifi's bundle): not retried."""

    transient = False


class APIProxyError(APIConnectionError):
    """The operator's proxy refused to open a tunnel; retried only on its 5xx."""

    def __init__(self, message: str, status_code: int) -> None:
        super().__init__(message)
        self.transient = status_code >= 500


class APITimeoutError(TimeoutError):
    """The call took longer than its timeout."""


class APIStatusError(Exception):
    """The server answered with an error status (any status outside 2xx)."""

    def __init__(self, status_code: int, headers: dict[str, str], body: bytes) -> None:
        excerpt = body[:_EXCERPT_LIMIT].decode("utf-8", "replace")
        super().__init__(f"HTTP {status_code}: {excerpt}")
        self.status_code = status_code
        self.headers = headers  # names lowercased: Retry-After is read from here


class ResponseTooLarge(Exception):
    """The answer exceeded the request's cap on its bytes, `limit_bytes` (not retried): what
    came beyond it was not read."""

    def __init__(self, limit_bytes: int) -> None:
        super().__init__(f"the answer exceeds {limit_bytes} bytes")
        self.limit_bytes = limit_bytes


def _status_error_class(name: str) -> type[APIStatusError]:
    return type(name, (APIStatusError,), {"__module__": __name__})


# The OpenAI API's names for its error statuses.
_STATUS_ERRORS: dict[int, type[APIStatusError]] = {
    status: _status_error_class(name)
    for status, name in (
        (400, "BadRequestError"),
        (401, "AuthenticationError"),
        (403, "PermissionDeniedError"),
        (404, "NotFoundError"),
        (409, "ConflictError"),
        (422, "UnprocessableEntityError"),
        (429, "RateLimitError"),
    )
}
InternalServerError = _status_error_class("InternalServerError")


def status_error(status_code: int, headers: dict[str, str], body: bytes) -> APIStatusError:
    kind = _STATUS_ERRORS.get(status_code)
    if kind is None:
        kind = InternalServerError if status_code >= 500 else APIStatusError
    return kind(status_code, headers, body)


class _Connection:
    __slots__ = ("idle_since", "protocol", "reader", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.protocol = h11.Connection(h11.CLIENT)
        self.idle_since = 0.0

    def reusable(self, now: float) -> bool:
        return (
            now - self.idle_since < KEEPALIVE_S
            and not self.reader.at_eof()
            and not self.writer.is_closing()
            # Bytes that came while it was idle answer no request of ours; read as the next
            # call's answer they would hand it another's. (StreamReader has no public way to
            # ask what it holds.)
            and not getattr(self.reader, "_buffer", None)
        )

    def close(self) -> None:
        self.writer.transport.abort()


class GuardedClient:
    """POSTs JSON to one base-URL route, with a pool of kept-alive connections per checked
    address. Belongs to the event loop that first uses it (its connections cannot move)."""

    def __init__(self, route: BaseRoute, resolve: AsyncResolver = system_resolve_async) -> None:
        self.route = route
        self.resolve = resolve
        url = route.url
        self._literal = url.ip
        headers = [
            (b"Host", url.netloc.encode("ascii")),
            (b"User-Agent", _USER_AGENT),
            (b"Accept", b"application/json"),
            (b"Accept-Encoding", b"identity"),
            (b"Content-Type", b"application/json"),
        ]
        if route.api_key:
            headers.append((b"Authorization", f"Bearer {route.api_key}".encode("latin-1")))
        self._target_prefix = url.path
        proxy = route.proxy
        if proxy is not None and url.scheme == "http":
            # Forwarded by the proxy: the request names its whole URL.
            self._target_prefix = str(url)
            if proxy.authorization is not None:
                headers.append((b"Proxy-Authorization", proxy.authorization.encode("latin-1")))
        self._headers = headers
        self._tls = (
            tls_context(TrustedAuthorities.from_environ(os.environ))
            if url.scheme == "https"
            else None
        )
        self._idle: dict[_Target, list[_Connection]] = {}
        self._open: set[_Connection] = set()

    async def post_json(
        self,
        path: str,
        payload: Mapping[str, Any],
        timeout_s: float,
        max_response_bytes: int | None = None,
    ) -> Any:
        """POSTs `payload` to the base URL's path plus `path`; the answer's JSON (a
        json.JSONDecodeError when it is not JSON). Raises the errors above (ResponseTooLarge
        past `max_response_bytes` of body, never more than MAX_RESPONSE_BYTES), and
        DestinationRefused (app.outbound.addresses) when the policy refuses every address."""
        limit = MAX_RESPONSE_BYTES
        if max_response_bytes is not None:
            limit = min(max_response_bytes, limit)
        data = json.dumps(payload).encode("ascii")
        request = h11.Request(
            method="POST",
            target=(self._target_prefix + path).encode("ascii"),
            headers=[*self._headers, (b"Content-Length", str(len(data)).encode("ascii"))],
        )
        try:
            async with asyncio.timeout(timeout_s):
                addresses = await self._addresses()
                address, connection = self._idle_connection(addresses)
                if connection is not None:
                    try:
                        status, headers, body = await self._exchange(
                            connection, request, data, limit
                        )
                    except _Stale:
                        # The server closed the kept-alive connection as the request went out;
                        # it never saw the request: once more, on a new connection.
                        connection = None
                if connection is None:
                    address, connection = await self._connect_any(addresses)
                    status, headers, body = await self._exchange(connection, request, data, limit)
        except TimeoutError as error:
            raise APITimeoutError(f"no answer within {timeout_s:g} s") from error
        self._release(address, connection)
        body = _decoded(body, headers, limit)
        if not 200 <= status < 300:
            raise status_error(status, headers, body)
        return json.loads(body)

    async def _addresses(self) -> list[_Target]:
        """The permitted addresses, the families interleaved from the resolver's first; the
        proxy (`_PROXIED`) alone when the route goes through one."""
        if self.route.proxy is not None:
            return [_PROXIED]
        url = self.route.url
        literal = self._literal
        addresses = [literal] if literal is not None else await self.resolve(url.host, url.port)
        permitted: list[IPAddress] = self.route.addresses_permitted(addresses)
        first = [a for a in permitted if a.version == permitted[0].version]
        other = [a for a in permitted if a.version != permitted[0].version]
        interleaved: list[_Target] = []
        for pair in zip(first, other, strict=False):
            interleaved.extend(pair)
        longer = first if len(first) > len(other) else other
        return interleaved + longer[min(len(first), len(other)) :]

    async def _connect_any(self, addresses: list[_Target]) -> tuple[_Target, _Connection]:
        """A new connection to the first address that accepts one, each given CONNECT_EACH_S
        (the last one the rest of the call's time). A certificate failure is final."""
        failure: BaseException | None = None
        for position, address in enumerate(addresses):
            last = position == len(addresses) - 1
            try:
                if last:
                    return address, await self._connect(address)
                async with asyncio.timeout(CONNECT_EACH_S):
                    return address, await self._connect(address)
            except APICertificateError:
                raise
            except (APIConnectionError, TimeoutError) as error:
                if last:
                    raise
                failure = error
        raise APIConnectionError("no address to connect to") from failure

    def _idle_connection(self, addresses: list[_Target]) -> tuple[_Target, _Connection | None]:
        """A kept-alive connection to one of `addresses` (those checked for this call)."""
        now = asyncio.get_running_loop().time()
        for address in addresses:
            idle = self._idle.get(address)
            while idle:
                connection = idle.pop()
                if connection.reusable(now):
                    return address, connection
                self._forget(connection)
        return addresses[0], None

    async def _connect(self, address: _Target) -> _Connection:
        url = self.route.url
        proxy = self.route.proxy
        try:
            if proxy is not None:
                reader, writer = await self._through(proxy)
            else:
                reader, writer = await asyncio.open_connection(
                    str(address),
                    url.port,
                    ssl=self._tls,
                    server_hostname=url.host if self._tls is not None else None,
                    limit=_READ_SIZE,
                )
        except ssl.SSLCertVerificationError as error:
            # The same certificate would fail the same way on another try.
            raise APICertificateError(f"certificate not trusted: {error}") from error
        except APIConnectionError:
            raise  # the proxy's answer, already told
        except OSError as error:  # refused, unreachable, reset, other TLS failures
            raise APIConnectionError(f"connection failed: {error}") from error
        connection = _Connection(reader, writer)
        self._open.add(connection)
        return connection

    async def _through(self, proxy: Proxy) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A connection through `proxy`: to the proxy itself for an `http` base (requests are
        forwarded), a CONNECT tunnel to the base's host with TLS inside for an `https` one."""
        url = self.route.url
        reader, writer = await asyncio.open_connection(proxy.host, proxy.port, limit=_READ_SIZE)
        if self._tls is None:
            return reader, writer
        try:
            authority = f"[{url.host}]:{url.port}" if ":" in url.host else f"{url.host}:{url.port}"
            head = f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n"
            if proxy.authorization is not None:
                head += f"Proxy-Authorization: {proxy.authorization}\r\n"
            writer.write((head + "\r\n").encode("latin-1"))
            await writer.drain()
            try:
                answer = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError as error:
                raise APIConnectionError(f"the proxy {proxy} closed the tunnel") from error
            except asyncio.LimitOverrunError as error:
                raise APIConnectionError(f"the proxy {proxy} answered garbage") from error
            status_line = answer.split(b"\r\n", 1)[0].decode("latin-1")
            version, _, rest = status_line.partition(" ")
            code = rest[:3]
            if not version.startswith("HTTP/1.") or not code.isdigit():
                raise APIConnectionError(f"the proxy {proxy} answered {status_line[:100]!r}")
            if not 200 <= int(code) < 300:
                raise APIProxyError(
                    f"the proxy {proxy} refused a tunnel to {authority}: {status_line[:100]}",
                    int(code),
                )
            await writer.start_tls(self._tls, server_hostname=url.host)
        except BaseException:
            writer.transport.abort()
            raise
        return reader, writer

    async def _exchange(
        self, connection: _Connection, request: h11.Request, data: bytes, limit: int
    ) -> tuple[int, dict[str, str], bytes]:
        """One request and its whole answer on `connection`; on any failure (cancellation
        included) the connection is closed, never reused."""
        protocol = connection.protocol
        received = False
        try:
            parts = (
                protocol.send(request),
                protocol.send(h11.Data(data=data)),
                protocol.send(h11.EndOfMessage()),
            )
            connection.writer.write(b"".join(part for part in parts if part))
            await connection.writer.drain()
            status = 0
            headers: dict[str, str] = {}
            chunks: list[bytes] = []
            size = 0
            while True:
                event = protocol.next_event()
                if event is h11.NEED_DATA:
                    chunk = await connection.reader.read(_READ_SIZE)
                    received = received or bool(chunk)
                    protocol.receive_data(chunk)  # b"": the server closed the connection
                elif type(event) is h11.Data:
                    size += len(event.data)
                    if size > limit:
                        raise ResponseTooLarge(limit)
                    chunks.append(event.data)
                elif type(event) is h11.Response:
                    status = event.status_code
                    headers = {
                        name.decode("latin-1"): value.decode("latin-1")
                        for name, value in event.headers
                    }
                elif type(event) is h11.EndOfMessage:
                    return status, headers, b"".join(chunks)
                elif type(event) is h11.ConnectionClosed:
                    raise h11.RemoteProtocolError("the connection closed before the answer")
                # h11.InformationalResponse (1xx): the final answer follows.
        except BaseException as error:
            self._forget(connection)
            stale = connection.idle_since > 0 and not received
            if isinstance(error, OSError | h11.ProtocolError):
                if stale:
                    raise _Stale from error
                raise APIConnectionError(f"connection broken: {error}") from error
            raise

    def _release(self, address: _Target, connection: _Connection) -> None:
        protocol = connection.protocol
        trailing, closed = protocol.trailing_data
        if trailing or closed:
            # The server wrote past the end of its answer (or closed): what follows is no
            # answer to any request of ours, so the connection is never used again.
            self._forget(connection)
        elif protocol.our_state is h11.DONE and protocol.their_state is h11.DONE:
            protocol.start_next_cycle()
            now = asyncio.get_running_loop().time()
            connection.idle_since = now
            idle = self._idle.setdefault(address, [])
            # Taken from the top, so the oldest sit at the bottom: closed there once expired.
            while idle and not idle[0].reusable(now):
                self._forget(idle.pop(0))
            idle.append(connection)
        else:  # the server asked to close, or answered before reading the request
            self._forget(connection)

    def _forget(self, connection: _Connection) -> None:
        self._open.discard(connection)
        connection.close()

    def count_open(self) -> int:
        """Connections open (idle or in use)."""
        return len(self._open)

    async def aclose(self) -> None:
        """Closes every connection."""
        for connection in list(self._open):
            self._forget(connection)
        self._idle.clear()


def _decoded(body: bytes, headers: dict[str, str], limit: int) -> bytes:
    """The body as sent before its `Content-Encoding` (gzip or deflate, though the request
    asked for none), never more than `limit` bytes once decoded."""
    # h11 gives header names in lower case.
    encoding = headers.get("content-encoding", "identity").strip().lower()
    if encoding in ("identity", ""):
        return body
    if encoding in ("gzip", "x-gzip"):
        decoders = [zlib.decompressobj(16 + zlib.MAX_WBITS)]
    elif encoding == "deflate":
        # zlib-wrapped as the standard says, or raw as some servers send it.
        decoders = [zlib.decompressobj(), zlib.decompressobj(-zlib.MAX_WBITS)]
    else:
        raise APIConnectionError(f"an answer encoded as {encoding!r}, which is not decoded here")
    for decoder in decoders:
        try:
            decoded = decoder.decompress(body, limit + 1)
        except zlib.error:
            continue
        if len(decoded) > limit or decoder.unconsumed_tail:
            raise ResponseTooLarge(limit)
        return decoded
    raise APIConnectionError(f"an answer whose {encoding} encoding is broken")


class _Stale(Exception):
    """A kept-alive connection failed before any byte of the answer."""


@functools.lru_cache(maxsize=4)
def tls_context(authorities: TrustedAuthorities) -> ssl.SSLContext:
    """The context httpx would make (the `SSL_CERT_FILE` file or `SSL_CERT_DIR` folder, else
    certifi's bundle), made once per process: loading the certificates takes tens of ms."""
    if authorities.cert_file is not None:
        context = ssl.create_default_context(cafile=authorities.cert_file)
    elif authorities.cert_dir is not None:
        context = ssl.create_default_context(capath=authorities.cert_dir)
    else:
        # certifi loads only where the system gives no CA file or folder.
        import certifi

        context = ssl.create_default_context(cafile=certifi.where())
    context.set_alpn_protocols(["http/1.1"])
    return context
