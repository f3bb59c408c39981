"""What the ETag of a conditional read costs (app/kit/conditional.py): hashing the body of a 100-row
board against the rest of its request.

In a scratch database (bench/leaderboard_read.py's loader): one tenant, one challenge,
`--participants` participants with succeeded attempts and the leaderboard table built from
them, a row each. The app runs in this process, called as ASGI directly (bench/submit_cpu.py's
way), and reads the board with `limit` = the participants: process CPU per request (the thread
pool's included)
for a plain GET (200, the body tagged) and for a poll naming the current ETag (304, the body
computed, tagged and left unsent), rounds alternating. Then, on that exact body, the time of
its tag (SHA-256, the one used) and of alternatives, of matching an If-None-Match, and of
serializing the board (what every read already pays).

    .venv/bin/python bench/conditional.py [--participants 100] [--requests 1000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import random
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common
from bench.leaderboard_read import (
    build_leaderboard,
    create_tenant_and_challenge,
    load_rows,
    use_database,
)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--participants", type=int, default=100, help="rows on the board")
    parser.add_argument("--requests", type=int, default=1000, help="requests per round and kind")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=20_000, help="calls per micro measurement")
    parser.add_argument("--seed", type=int, default=1)
    return parser.parse_args()


async def get(app: Any, path: str, query: bytes, headers: list[tuple[bytes, bytes]]) -> Any:
    """One GET to the ASGI app: its status, headers and body."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query,
        "root_path": "",
        "headers": [(b"host", b"bench"), *headers],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 80),
    }
    sent = False
    start: dict[str, Any] = {}
    chunks: list[bytes] = []

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            await asyncio.sleep(3600)  # as a server does: no disconnect while the app works
        sent = True
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            start.update(message)
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app(scope, receive, send)
    return start["status"], dict(start["headers"]), b"".join(chunks)


def per_call_us(function: Callable[[], object], calls: int) -> float:
    """The median of five runs of `calls` calls, in microseconds of CPU per call (CPU time, not
    wall time: on a shared machine it varies far less)."""
    runs = []
    for _ in range(5):
        started = time.process_time()
        for _ in range(calls):
            function()
        runs.append((time.process_time() - started) / calls * 1e6)
    return statistics.median(runs)


async def measure_requests(
    args: argparse.Namespace, key: str, challenge_id: uuid.UUID
) -> tuple[bytes, float]:
    """The board's body, and the median CPU per plain GET in ms."""
    from app.main import create_app

    app = create_app()
    path = f"/v1/challenges/{challenge_id}/leaderboard"
    query = f"limit={args.participants}".encode()
    credential = [(b"authorization", f"Bearer {key}".encode())]
    status, headers, body = await get(app, path, query, credential)
    if status != 200:
        raise RuntimeError(f"{status}: {body[:300]!r}")
    rows = body.count(b'"attempt_id"')
    etag = headers[b"etag"]
    print(f"\n-- GET {path}?limit={args.participants}, in process (ASGI)")
    print(f"   body: {len(body):,} bytes, {rows} rows; ETag {etag.decode()}")
    polled = [*credential, (b"if-none-match", etag)]
    for _ in range(200):  # warm-up: caches, the thread pool, the connection pool
        await get(app, path, query, credential)
    plain = []
    for round_number in range(1, args.rounds + 1):
        figures = {}
        for label, headers_sent, expected in (("200", credential, 200), ("304", polled, 304)):
            started = time.process_time()
            for _ in range(args.requests):
                status, _, _ = await get(app, path, query, headers_sent)
                if status != expected:
                    raise RuntimeError(f"{label}: got {status}")
            figures[label] = (time.process_time() - started) / args.requests * 1000
        print(
            f"   round {round_number}: CPU per request {figures['200']:.3f} ms (200, body sent), "
            f"{figures['304']:.3f} ms (304)",
            flush=True,
        )
        plain.append(figures["200"])
    return body, statistics.median(plain)


def measure_body(body: bytes, calls: int, request_ms: float) -> None:
    from app.kit.conditional import entity_tag, none_match
    from app.leaderboard.schemas import Leaderboard

    tag = entity_tag(body)
    board = Leaderboard.model_validate_json(body)
    header = f'"{"0" * 32}", W/{tag}'
    print(f"\n-- on that body ({len(body):,} bytes), CPU per call (median of 5 runs of {calls:,})")
    figures = {
        "entity_tag (SHA-256, 128 bits hex, quoted: the one used)": lambda: entity_tag(body),
        "blake2b-128 hexdigest": lambda: hashlib.blake2b(body, digest_size=16).hexdigest(),
        "md5 hexdigest": lambda: hashlib.md5(body, usedforsecurity=False).hexdigest(),
        "none_match (two tags, the second weak)": lambda: none_match(header, tag),
        "the board serialized (model_dump_json, paid by every read)": board.model_dump_json,
    }
    measured = {label: per_call_us(function, calls) for label, function in figures.items()}
    for label, value in measured.items():
        print(f"   {label}: {value:.2f} µs")
    tag_us = next(iter(measured.values()))
    print(
        f"   the tag is {tag_us / (request_ms * 1000) * 100:.2f} % of a plain GET's CPU "
        f"({request_ms:.3f} ms, the rounds' median)"
    )


def main() -> None:
    args = parse_args()
    common.exit_on_sigterm()
    common.print_machine_info("conditional", sys.argv)
    rng = random.Random(args.seed)
    with common.scratch_database() as database, common.data_dir() as data:
        os.environ.update(common.service_env(database, str(data)))
        use_database(database.url)
        tenant_id, challenge_id, key = create_tenant_and_challenge()
        load_rows(
            database.dsn,
            tenant_id,
            challenge_id,
            args.participants,
            # Ten attempts each on average: every participant has one (a row each).
            args.participants * 10,
            1.0,
            rng,
        )
        build_leaderboard(database.dsn, challenge_id)
        body, request_ms = asyncio.run(measure_requests(args, key, challenge_id))
        measure_body(body, args.calls, request_ms)
        from app.kit.db import get_engine

        get_engine().dispose()


if __name__ == "__main__":
    try:
        main()
    finally:
        common.print_end_load()
