"""A loopback OpenAI-compatible server with a fixed latency, in a process of its own.

Every `POST .../chat/completions` is answered after `latency_s` (keep-alive, Nagle off, a deep
accept backlog), with a usage block of 100 prompt and 10 completion tokens. A real provider is
not in the client's process, and a threaded server sharing the client's interpreter lock would
slow the client down: hence the process.

What it answers: with ARC tasks (`ArcAnswers`), a fake solver keyed on the prompt's test input
(see `ArcAnswers.reply`); without, "ok". `GET /stats` returns the requests served and the most
in flight at once, the time of the first request and of the last answer (`/stats/reset` also
resets the last three).
"""

from __future__ import annotations

import json
import multiprocessing
import re
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Grid = list[list[int]]
TEST_INPUT = re.compile(r"--Test Input--\n(\[.*?\])\n--End of Test Input--", re.DOTALL)
ATTEMPT_LINE = re.compile(r"This is attempt (\d+) of")


def solved_on(index: int, k: int) -> int | None:
    """The attempt on which the fake solver solves task `index` under seq@k: 1..k, or never
    for every 4th task."""
    return None if index % 4 == 0 else 1 + index % k


@dataclass
class ArcAnswers:
    """The fake solver: seq@k solves task i on attempt `solved_on(i, k)`; pass@k answers every
    3rd call right. Tasks are recognised by their test input grid as the prompt renders it."""

    by_test_input: dict[str, tuple[int, Grid]] = field(default_factory=dict)
    k: int = 5
    pass_counter: int = 0

    def reply(self, content: str) -> str:
        found = TEST_INPUT.search(content)
        task = self.by_test_input.get(found.group(1)) if found else None
        if task is None:
            return "ok"
        index, answer = task
        attempt_line = ATTEMPT_LINE.search(content)
        if attempt_line is None:  # pass@k: independent samples
            self.pass_counter += 1
            right = self.pass_counter % 3 == 0
        else:
            right = int(attempt_line.group(1)) == solved_on(index, self.k)
        return json.dumps(answer) if right else "[[0]]"


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # the default backlog of 5 drops bursts of connections

    def __init__(self, latency_s: float, answers: ArcAnswers) -> None:
        self.latency_s = latency_s
        self.answers = answers
        self.lock = threading.Lock()
        self.requests = 0
        self.in_flight = 0
        self.max_in_flight = 0
        # Wall-clock times (time.time(), comparable across processes) of the first request and
        # the last answer since the last reset.
        self.first_request_at: float | None = None
        self.last_answer_at: float | None = None
        super().__init__(("127.0.0.1", 0), _Handler)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"  # keep-alive, as real providers do
    # http.server writes the headers and the body as two segments; with Nagle's algorithm the
    # body waits for the client's delayed ACK of the headers, ~40 ms on every call.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        """Silenced."""

    def do_GET(self) -> None:
        server = self.server
        with server.lock:
            payload = json.dumps(
                {
                    "requests": server.requests,
                    "max_in_flight": server.max_in_flight,
                    "first_request_at": server.first_request_at,
                    "last_answer_at": server.last_answer_at,
                }
            ).encode()
            if self.path == "/stats/reset":
                server.max_in_flight = 0
                server.first_request_at = server.last_answer_at = None
        self._send(payload)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        server = self.server
        with server.lock:
            if server.first_request_at is None:
                server.first_request_at = time.time()
            server.requests += 1
            server.in_flight += 1
            server.max_in_flight = max(server.max_in_flight, server.in_flight)
        try:
            time.sleep(server.latency_s)
            with server.lock:
                text = server.answers.reply(str(body["messages"][-1]["content"]))
        finally:
            with server.lock:
                server.in_flight -= 1
        payload = json.dumps(
            {
                "id": "chatcmpl-bench",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "fake-model"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
            }
        ).encode()
        self._send(payload)
        with server.lock:
            server.last_answer_at = time.time()

    def _send(self, payload: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


def _serve(latency_s: float, answers: ArcAnswers, port: Any) -> None:
    server = _Server(latency_s, answers)
    port.value = server.server_address[1]
    server.serve_forever(poll_interval=0.05)


class LatencyServer:
    """The server in a forked process; `stop()` ends it."""

    def __init__(self, latency_s: float, answers: ArcAnswers | None = None) -> None:
        self.latency_s = latency_s
        context = multiprocessing.get_context("fork")
        port = context.Value("i", 0)
        self.process = context.Process(
            target=_serve, args=(latency_s, answers or ArcAnswers(), port), daemon=True
        )
        self.process.start()
        deadline = time.monotonic() + 10
        while port.value == 0:
            if time.monotonic() > deadline:
                raise RuntimeError("the bench server did not start")
            time.sleep(0.01)
        self.port = int(port.value)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def stats(self, *, reset: bool = False) -> dict[str, Any]:
        path = "/stats/reset" if reset else "/stats"
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=5) as reply:
            data: dict[str, Any] = json.loads(reply.read())
        return data

    def stop(self) -> None:
        self.process.terminate()
        self.process.join(timeout=5)

    def __enter__(self) -> LatencyServer:
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()
