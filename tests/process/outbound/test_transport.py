"""The base-URL HTTP client (app.outbound.transport) against a scripted loopback server.

What the shared fake server (tests/fixtures/fake_openai.py) cannot do, this one does: answer in
chunks, close a kept-alive connection as the next request arrives, redirect, stall mid-answer,
answer with more than a chat completion could hold. Each test runs the server and the client
on one event loop.
"""

from __future__ import annotations

import asyncio
import gzip
import ipaddress
import json
import ssl
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h11
import pytest

from app.evaluation.engine.direct import ConnectionPools
from app.evaluation.engine.llm import LLMClient, is_transient
from app.evaluation.engine.types import InfrastructureError, ModelSpec, RetryPolicy
from app.outbound import transport
from app.outbound.addresses import DestinationRefused, ResolutionFailed
from app.outbound.policy import OutboundPolicy
from app.outbound.proxy import ProxySettings
from app.outbound.transport import (
    APIConnectionError,
    APITimeoutError,
    GuardedClient,
    ResponseTooLarge,
)
from tests.fixtures.tls import private_authority

COMPLETION = {
    "choices": [{"message": {"role": "assistant", "content": "hi"}}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1},
}

# A handler answers one request: (connection number, request number on it, the request's
# headers) -> the raw bytes to send, or None to close the connection without answering.
Handler = Callable[[int, int, dict[str, str]], Awaitable[bytes | None]]


def answer(status: int = 200, body: bytes | None = None, headers: str = "") -> bytes:
    content = json.dumps(COMPLETION).encode() if body is None else body
    head = f"HTTP/1.1 {status} X\r\nContent-Length: {len(content)}\r\n{headers}\r\n"
    return head.encode() + content


@dataclass
class ScriptedServer:
    handler: Handler
    connections: int = 0
    requests: list[dict[str, str]] = field(default_factory=list)
    server: asyncio.Server | None = None
    handlers: set[asyncio.Task[None]] = field(default_factory=set)
    tls: ssl.SSLContext | None = None

    async def __aenter__(self) -> ScriptedServer:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.tls)
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self.server is not None
        self.server.close()
        for handler in self.handlers:
            handler.cancel()
        await asyncio.gather(*self.handlers, return_exceptions=True)

    @property
    def base_url(self) -> str:
        assert self.server is not None
        port = self.server.sockets[0].getsockname()[1]
        scheme = "http" if self.tls is None else "https"
        return f"{scheme}://127.0.0.1:{port}/v1"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.handlers.add(task)
        self.connections += 1
        number = self.connections
        parser = h11.Connection(h11.SERVER)
        served = 0
        try:
            while True:
                event = parser.next_event()
                if event is h11.NEED_DATA:
                    data = await reader.read(65536)
                    if not data:
                        return
                    parser.receive_data(data)
                elif isinstance(event, h11.Request):
                    headers = {k.decode(): v.decode() for k, v in event.headers}
                    self.requests.append(headers)
                elif isinstance(event, h11.EndOfMessage):
                    served += 1
                    reply = await self.handler(number, served, self.requests[-1])
                    if reply is None:
                        return
                    writer.write(reply)
                    await writer.drain()
                    parser = h11.Connection(h11.SERVER)  # the reply was written raw
        finally:
            writer.close()


def client_for(server: ScriptedServer) -> GuardedClient:
    return GuardedClient(OutboundPolicy.unrestricted().route(server.base_url))


async def failing_call(handler: Handler, *, timeout_s: float) -> None:
    """One call that must fail; afterwards the client holds no connection."""
    async with ScriptedServer(handler) as server:
        client = client_for(server)
        try:
            await client.post_json("/chat/completions", {}, timeout_s)
        finally:
            assert client.count_open() == 0
            await client.aclose()


async def ok(_connection: int, _request: int, _headers: dict[str, str]) -> bytes:
    return answer()


def test_a_request_carries_exactly_the_headers_written_here() -> None:
    async def scenario() -> dict[str, str]:
        async with ScriptedServer(ok) as server:
            client = client_for(server)
            assert await client.post_json("/chat/completions", {"a": 1}, 5) == COMPLETION
            await client.aclose()
            return server.requests[0]

    headers = asyncio.run(scenario())
    assert set(headers) == {
        "host",
        "user-agent",
        "accept",
        "accept-encoding",
        "content-type",
        "content-length",
    }
    assert headers["content-type"] == "application/json"
    assert headers["host"].startswith("127.0.0.1:")


def test_a_chunked_answer_is_read_whole() -> None:
    body = json.dumps(COMPLETION).encode()

    async def chunked(_c: int, _r: int, _h: dict[str, str]) -> bytes:
        head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        parts = [body[:10], body[10:]]
        return head + b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"

    async def scenario() -> Any:
        async with ScriptedServer(chunked) as server:
            client = client_for(server)
            first = await client.post_json("/chat/completions", {}, 5)
            second = await client.post_json("/chat/completions", {}, 5)
            await client.aclose()
            return first, second, server.connections

    first, second, connections = asyncio.run(scenario())
    assert first == second == COMPLETION
    assert connections == 1  # kept alive after a chunked answer


def test_a_kept_alive_connection_the_server_drops_is_replaced_at_once() -> None:
    # The server closes each connection when its second request arrives, without answering:
    # it never saw that request, so the client sends it again on a new connection, with no
    # retry delay and no error.
    async def drop_second(_c: int, request: int, _h: dict[str, str]) -> bytes | None:
        return None if request == 2 else answer()

    async def scenario() -> tuple[int, int]:
        async with ScriptedServer(drop_second) as server:
            client = client_for(server)
            for _ in range(3):
                assert await client.post_json("/chat/completions", {}, 5) == COMPLETION
            await client.aclose()
            return server.connections, len(server.requests)

    connections, requests = asyncio.run(scenario())
    # Calls 1 and 2 on the first connection (2 dropped, sent again on a second one), call 3
    # dropped there and sent on a third.
    assert (connections, requests) == (3, 5)


def _body(value: str) -> bytes:
    return json.dumps({**COMPLETION, "id": value}).encode()


def test_bytes_written_past_an_answer_are_never_read_as_the_next_one() -> None:
    # The first connection's server writes a second, unasked-for answer right behind the first.
    async def extra(connection: int, _r: int, _h: dict[str, str]) -> bytes:
        if connection == 1:
            return answer(body=_body("asked")) + answer(body=_body("unasked"))
        return answer(body=_body(f"fresh {connection}"))

    async def scenario() -> tuple[list[str], int]:
        async with ScriptedServer(extra) as server:
            client = client_for(server)
            ids = [(await client.post_json("/chat/completions", {}, 5))["id"] for _ in range(2)]
            await client.aclose()
            return ids, server.connections

    ids, connections = asyncio.run(scenario())
    assert ids == ["asked", "fresh 2"]
    assert connections == 2


def test_bytes_that_arrive_while_a_connection_is_idle_retire_it() -> None:
    async def scenario() -> tuple[list[str], int]:
        async with ScriptedServer(
            lambda c, _r, _h: asyncio.sleep(0, answer(body=_body(f"on {c}")))
        ) as server:
            client = client_for(server)
            ids = [(await client.post_json("/chat/completions", {}, 5))["id"]]
            (idle,) = client._open
            idle.reader.feed_data(answer(body=_body("late")))  # as if the server wrote it now
            ids.append((await client.post_json("/chat/completions", {}, 5))["id"])
            await client.aclose()
            return ids, server.connections

    ids, connections = asyncio.run(scenario())
    assert ids == ["on 1", "on 2"]
    assert connections == 2


def _encoded(encoding: str, data: bytes) -> bytes:
    if encoding == "gzip":
        return gzip.compress(data)
    if encoding == "deflate":
        return zlib.compress(data)
    raw = zlib.compressobj(wbits=-zlib.MAX_WBITS)  # "deflate" as some servers send it
    return raw.compress(data) + raw.flush()


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "raw-deflate"])
def test_an_encoded_answer_is_decoded_though_none_was_asked_for(encoding: str) -> None:
    name = "deflate" if encoding == "raw-deflate" else encoding
    body = _encoded(encoding, json.dumps(COMPLETION).encode())

    async def encoded(_c: int, _r: int, _h: dict[str, str]) -> bytes:
        return answer(body=body, headers=f"Content-Encoding: {name}\r\n")

    async def scenario() -> Any:
        async with ScriptedServer(encoded) as server:
            client = client_for(server)
            result = await client.post_json("/chat/completions", {}, 5)
            await client.aclose()
            return result

    assert asyncio.run(scenario()) == COMPLETION


def test_an_encoded_answer_is_bounded_once_decoded() -> None:
    bomb = gzip.compress(b" " * 5_000_000)  # about 5 KB that decode to 5 MB

    async def encoded(_c: int, _r: int, _h: dict[str, str]) -> bytes:
        return answer(body=bomb, headers="Content-Encoding: gzip\r\n")

    async def scenario() -> None:
        async with ScriptedServer(encoded) as server:
            client = client_for(server)
            try:
                await client.post_json("/chat/completions", {}, 5, max_response_bytes=100_000)
            finally:
                await client.aclose()

    with pytest.raises(ResponseTooLarge):
        asyncio.run(scenario())


def test_an_answer_in_an_unknown_encoding_is_a_connection_error() -> None:
    async def brotli(_c: int, _r: int, _h: dict[str, str]) -> bytes:
        return answer(body=b"\x0b\x02\x80{}\x03", headers="Content-Encoding: br\r\n")

    async def scenario() -> None:
        async with ScriptedServer(brotli) as server:
            client = client_for(server)
            try:
                await client.post_json("/chat/completions", {}, 5)
            finally:
                await client.aclose()

    with pytest.raises(APIConnectionError, match="'br'"):
        asyncio.run(scenario())


def test_every_address_of_a_host_is_tried_in_turn() -> None:
    # The name resolves to ::1 first, where nothing listens; the server is on 127.0.0.1 only.
    async def scenario() -> Any:
        async with ScriptedServer(ok) as server:
            port = server.base_url.split(":")[2].split("/")[0]
            route = OutboundPolicy.unrestricted().route(f"http://models.test:{port}/v1")

            async def resolve(_host: str, _port: int) -> list[Any]:
                return [ipaddress.ip_address("::1"), ipaddress.ip_address("127.0.0.1")]

            client = GuardedClient(route, resolve=resolve)
            result = await client.post_json("/chat/completions", {}, 5)
            await client.aclose()
            return result, server.connections

    assert asyncio.run(scenario()) == (COMPLETION, 1)


def test_a_fresh_connection_dropped_without_an_answer_is_a_connection_error() -> None:
    async def drop(_c: int, _r: int, _h: dict[str, str]) -> bytes | None:
        return None

    with pytest.raises(APIConnectionError) as caught:
        asyncio.run(failing_call(drop, timeout_s=5))
    assert is_transient(caught.value)


def test_idle_connections_expire(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transport, "KEEPALIVE_S", 0.0)

    async def scenario() -> tuple[int, int]:
        async with ScriptedServer(ok) as server:
            client = client_for(server)
            for _ in range(3):
                await client.post_json("/chat/completions", {}, 5)
            still_open = client.count_open()
            await client.aclose()
            return server.connections, still_open

    connections, still_open = asyncio.run(scenario())
    assert connections == 3
    assert still_open == 1  # expired ones are closed as newer ones are put back


def test_redirects_are_errors_not_followed() -> None:
    async def redirect(_c: int, _r: int, _h: dict[str, str]) -> bytes:
        return answer(307, b"", "Location: http://169.254.169.254/latest\r\n")

    async def scenario() -> int:
        async with ScriptedServer(redirect) as server:
            client = LLMClient(pools=ConnectionPools(), retry=RetryPolicy(max_attempts=3))
            spec = ModelSpec("openai-compatible/m", api_base=server.base_url, timeout_s=5)
            try:
                with pytest.raises(InfrastructureError) as caught:
                    await client.complete(spec, [{"role": "user", "content": "x"}])
            finally:
                await client.aclose()
            assert str(caught.value) == "model openai-compatible/m failed: HTTP 307 (not retried)"
            assert "APIStatusError" in caught.value.detail
            return len(server.requests)

    assert asyncio.run(scenario()) == 1


def test_an_answer_beyond_the_limit_is_refused_and_not_retried(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(transport, "MAX_RESPONSE_BYTES", 1000)

    async def huge(_c: int, _r: int, _h: dict[str, str]) -> bytes:
        return answer(body=b"x" * 5000)

    with pytest.raises(ResponseTooLarge) as caught:
        asyncio.run(failing_call(huge, timeout_s=5))
    assert not is_transient(caught.value)


def test_a_stalled_answer_times_out_and_its_connection_is_closed() -> None:
    async def stall(_c: int, _r: int, _h: dict[str, str]) -> bytes:
        await asyncio.sleep(30)
        return answer()

    with pytest.raises(APITimeoutError) as caught:
        asyncio.run(failing_call(stall, timeout_s=0.2))
    assert is_transient(caught.value)


def test_a_private_authority_is_trusted_through_ssl_cert_file_and_only_then(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ca_file, server_tls = private_authority(tmp_path)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)

    async def call(server: ScriptedServer) -> tuple[Any, int]:
        client = LLMClient(pools=ConnectionPools(), retry=RetryPolicy(max_attempts=3))
        spec = ModelSpec("openai-compatible/m", api_base=server.base_url, timeout_s=5)
        try:
            record = await client.complete(spec, [{"role": "user", "content": "x"}])
            return record.output, client.calls_made
        except InfrastructureError as error:
            return error, client.calls_made
        finally:
            await client.aclose()

    async def scenario() -> tuple[tuple[Any, int], tuple[Any, int]]:
        async with ScriptedServer(ok, tls=server_tls) as server:
            monkeypatch.setenv("SSL_CERT_FILE", str(ca_file))
            trusted = await call(server)
            monkeypatch.delenv("SSL_CERT_FILE")  # certifi's bundle: the authority is unknown
            untrusted = await call(server)
            return trusted, untrusted

    (output, trusted_calls), (error, untrusted_calls) = asyncio.run(scenario())
    assert (output, trusted_calls) == ("hi", 1)
    assert isinstance(error, InfrastructureError)
    assert "certificate not trusted" in error.detail
    assert "(not retried)" in str(error)
    assert untrusted_calls == 1  # a certificate that fails once fails every time


def test_a_resolver_failing_now_is_tried_again_and_a_refusal_is_final() -> None:
    answers: list[Any] = [
        ResolutionFailed("models.test cannot be resolved now"),
        [ipaddress.ip_address("127.0.0.1")],
    ]

    async def flaky(_host: str, _port: int) -> list[Any]:
        found = answers.pop(0) if answers else DestinationRefused("models.test: no such name")
        if isinstance(found, BaseException):
            raise found
        return list(found)

    async def call(client: LLMClient, port: str) -> Any:
        spec = ModelSpec("openai-compatible/m", api_base=f"http://models.test:{port}/v1")
        try:
            return (await client.complete(spec, [{"role": "user", "content": "x"}])).output
        except InfrastructureError as error:
            return error

    async def scenario() -> tuple[Any, int, Any, int]:
        async with ScriptedServer(ok) as server:
            port = server.base_url.split(":")[2].split("/")[0]
            retry = RetryPolicy(max_attempts=3, base_delay_s=0.0)
            client = LLMClient(pools=ConnectionPools(), retry=retry, resolve=flaky)
            answered = await call(client, port)
            answered_calls = client.calls_made
            await client.aclose()
            client = LLMClient(pools=ConnectionPools(), retry=retry, resolve=flaky)
            refused = await call(client, port)
            await client.aclose()
            return answered, answered_calls, refused, client.calls_made

    answered, answered_calls, refused, refused_calls = asyncio.run(scenario())
    assert (answered, answered_calls) == ("hi", 2)
    assert isinstance(refused, InfrastructureError) and "no such name" in refused.detail
    assert refused_calls == 1


@dataclass
class RecordingProxy:
    """A forward proxy on loopback: tunnels CONNECT, forwards other requests to the host of
    their absolute URL, and records each request's head."""

    heads: list[list[str]] = field(default_factory=list)
    server: asyncio.Server | None = None
    pipes: set[asyncio.Task[None]] = field(default_factory=set)

    async def __aenter__(self) -> RecordingProxy:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self.server is not None
        self.server.close()
        for pipe in self.pipes:
            pipe.cancel()
        await asyncio.gather(*self.pipes, return_exceptions=True)

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://user:secret@127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")[:-2]
        self.heads.append(lines)
        method, target, _ = lines[0].split(" ")
        authority = target if method == "CONNECT" else target.split("/")[2]
        host, port = authority.rsplit(":", 1)
        upstream_reader, upstream_writer = await asyncio.open_connection(host, int(port))
        if method == "CONNECT":
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        else:
            upstream_writer.write(head)
        for source, sink in ((reader, upstream_writer), (upstream_reader, writer)):
            task = asyncio.create_task(self._pipe(source, sink))
            self.pipes.add(task)

    @staticmethod
    async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        try:
            while data := await source.read(65536):
                sink.write(data)
                await sink.drain()
        finally:
            sink.close()


def test_the_operator_s_proxy_carries_the_operator_s_runs_and_never_a_tenant_s(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ca_file, server_tls = private_authority(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(ca_file))

    async def call(policy: OutboundPolicy, base_url: str) -> Any:
        client = LLMClient(outbound=policy, pools=ConnectionPools())
        spec = ModelSpec("openai-compatible/m", api_base=base_url, timeout_s=5)
        try:
            return (await client.complete(spec, [{"role": "user", "content": "x"}])).output
        finally:
            await client.aclose()

    async def scenario() -> tuple[list[Any], list[list[str]], str]:
        async with (
            RecordingProxy() as proxy,
            ScriptedServer(ok, tls=server_tls) as tls_server,
            ScriptedServer(ok) as plain_server,
        ):
            environ = {"HTTPS_PROXY": proxy.url, "http_proxy": proxy.url}
            policy = OutboundPolicy.unrestricted(proxies=ProxySettings.from_environ(environ))
            bypassing = OutboundPolicy.unrestricted(
                proxies=ProxySettings.from_environ({**environ, "NO_PROXY": "localhost,127.0.0.1"})
            )
            outputs = [
                await call(policy, tls_server.base_url),  # tunnelled, TLS end to end
                await call(policy, plain_server.base_url),  # forwarded
                await call(bypassing, plain_server.base_url),  # directly
            ]
            return outputs, proxy.heads, plain_server.base_url

    outputs, heads, plain_base = asyncio.run(scenario())
    assert outputs == ["hi", "hi", "hi"]
    (tunnel, forwarded) = heads
    assert tunnel[0].startswith("CONNECT 127.0.0.1:") and tunnel[0].endswith(" HTTP/1.1")
    assert "Proxy-Authorization: Basic dXNlcjpzZWNyZXQ=" in tunnel
    assert forwarded[0] == f"POST {plain_base}/chat/completions HTTP/1.1"
    assert "Proxy-Authorization: Basic dXNlcjpzZWNyZXQ=" in forwarded
    # A tenant's call (a restricted policy) can hold no proxy.
    with pytest.raises(ValueError, match="never for tenants"):
        OutboundPolicy(proxies=ProxySettings.from_environ({"HTTPS_PROXY": "http://p:3128"}))


def test_an_address_that_does_not_answer_yields_to_the_next_family_after_its_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(transport, "CONNECT_EACH_S", 0.05)
    resolved = [ipaddress.ip_address(a) for a in ("::2", "::1", "127.0.0.2", "127.0.0.1")]
    tried: list[str] = []
    open_connection = asyncio.open_connection

    async def silent_but_127_0_0_1(host: str, port: int, **options: Any) -> Any:
        tried.append(host)
        if host != "127.0.0.1":
            await asyncio.sleep(30)  # a SYN nobody answers
        return await open_connection(host, port, **options)

    monkeypatch.setattr(transport.asyncio, "open_connection", silent_but_127_0_0_1)

    async def scenario() -> Any:
        async with ScriptedServer(ok) as server:
            port = server.base_url.split(":")[2].split("/")[0]
            route = OutboundPolicy.unrestricted().route(f"http://models.test:{port}/v1")

            async def resolve(_host: str, _port: int) -> list[Any]:
                return resolved

            client = GuardedClient(route, resolve=resolve)
            try:
                return await client.post_json("/chat/completions", {}, 5)
            finally:
                await client.aclose()

    assert asyncio.run(scenario()) == COMPLETION
    # The families alternate from the resolver's first answer.
    assert tried == ["::2", "127.0.0.2", "::1", "127.0.0.1"]
