"""A small asyncio HTTP/1.1 load generator with keep-alive connections.

Written against raw asyncio streams rather than httpx: on a 2-core machine the client shares the
CPUs with the server, and httpx's per-request overhead (several times this one's) would take
CPU from the server under test. Only what the Gauntlet API needs: Content-Length and chunked
bodies, keep-alive, reconnect after `Connection: close` or an error.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field


class HttpConnection:
    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def _ensure(self) -> None:
        if self.writer is None or self.writer.is_closing():
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None

    async def request(self, raw: bytes) -> tuple[int, bytes]:
        await self._ensure()
        assert self.reader is not None and self.writer is not None
        self.writer.write(raw)
        head = await self.reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        length = None
        chunked = False
        close = False
        for line in lines[1:]:
            name, _, value = line.partition(":")
            name = name.strip().lower()
            if name == "content-length":
                length = int(value.strip())
            elif name == "transfer-encoding" and "chunked" in value.lower():
                chunked = True
            elif name == "connection" and value.strip().lower() == "close":
                close = True
        if chunked:
            parts = []
            while True:
                size = int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16)
                if size == 0:
                    await self.reader.readuntil(b"\r\n")
                    break
                parts.append(await self.reader.readexactly(size))
                await self.reader.readexactly(2)
            body = b"".join(parts)
        elif length is not None:
            body = await self.reader.readexactly(length)
        else:
            body = await self.reader.read()
            close = True
        if close:
            self.close()
        return status, body


def build_request(
    method: str,
    host: str,
    port: int,
    path: str,
    token: str | None = None,
    body: bytes | None = None,
) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}:{port}", "Accept: application/json"]
    if token:
        lines.append(f"Authorization: Bearer {token}")
    if body is not None:
        lines.append("Content-Type: application/json")
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + (body or b"")


@dataclass
class Result:
    scheduled: float  # when the request was due (open loop) or sent (closed loop), perf_counter
    sent: float
    done: float
    status: int  # -1: transport error
    body: bytes = b""
    error: str | None = None

    @property
    def latency_ms(self) -> float:
        """From when it was due: includes waiting for a free connection in the open loop."""
        return (self.done - self.scheduled) * 1000

    @property
    def service_ms(self) -> float:
        return (self.done - self.sent) * 1000


@dataclass
class Run:
    results: list[Result] = field(default_factory=list)
    started: float = 0.0
    ended: float = 0.0
    late_starts: int = 0  # open loop: requests issued more than 1 ms after their due time


async def _send(connection: HttpConnection, raw: bytes, scheduled: float) -> Result:
    sent = time.perf_counter()
    try:
        status, body = await asyncio.wait_for(connection.request(raw), timeout=60)
        return Result(scheduled, sent, time.perf_counter(), status, body)
    except Exception as exc:  # every failure is a data point
        connection.close()
        return Result(scheduled, sent, time.perf_counter(), -1, b"", type(exc).__name__)


async def closed_loop(
    host: str,
    port: int,
    make_request: Callable[[int], bytes],
    connections: int,
    duration: float,
    max_requests: int,
) -> Run:
    """Each connection sends its next request as soon as the previous answer is in."""
    run = Run()
    counter = 0
    run.started = time.perf_counter()
    deadline = run.started + duration

    async def client() -> None:
        nonlocal counter
        connection = HttpConnection(host, port)
        try:
            while time.perf_counter() < deadline and counter < max_requests:
                index = counter
                counter += 1
                raw = make_request(index)
                now = time.perf_counter()
                run.results.append(await _send(connection, raw, now))
        finally:
            connection.close()

    await asyncio.gather(*(client() for _ in range(connections)))
    run.ended = time.perf_counter()
    return run


async def open_loop(
    host: str,
    port: int,
    make_request: Callable[[int], bytes],
    connections: int,
    duration: float,
    rate: float,
) -> Run:
    """Requests are due at a constant rate whatever the answers; latency counts from the due
    time, so a server that falls behind shows it (no coordinated omission). A request that finds
    every connection busy waits for one, and that wait is part of its latency."""
    run = Run()
    pool: asyncio.Queue[HttpConnection] = asyncio.Queue()
    for _ in range(connections):
        pool.put_nowait(HttpConnection(host, port))
    total = int(duration * rate)
    tasks = []

    async def one(index: int, due: float) -> None:
        connection = await pool.get()
        try:
            run.results.append(await _send(connection, make_request(index), due))
        finally:
            pool.put_nowait(connection)

    run.started = time.perf_counter()
    for index in range(total):
        due = run.started + index / rate
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        elif delay < -0.001:
            run.late_starts += 1
        tasks.append(asyncio.create_task(one(index, due)))
    await asyncio.gather(*tasks)
    run.ended = time.perf_counter()
    while not pool.empty():
        pool.get_nowait().close()
    return run
