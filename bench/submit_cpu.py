"""CPU per attempt submission, in one process, one request at a time.

The load test (`submit_load.py`) varies by a third between runs on a shared 2-core machine;
this compares code paths of `POST /v1/challenges/{id}/attempts` more steadily. The app runs
in this process, called as ASGI directly (the same FastAPI stack and thread pool as under
uvicorn, without the HTTP parsing; the calling code is a few dozen lines, so nearly all that is
counted is the server's), against a scratch PostgreSQL database and Redis db 10 as the broker
(queue `bench-submit-cpu`, flushed after). Printed per repetition: process CPU per submission,
the same for a request that FastAPI answers 404 without the database (the framework floor),
and wall time per submission.

    .venv/bin/python bench/submit_cpu.py [--requests 1500] [--repeat 3] [--participants 500]

CPU time on a shared machine varies by a fifth between runs. Instruction counts do not: run
under callgrind with instrumentation off, and `--instructions` switches it on for the
submissions only (valgrind prints "Collected : N"; divide by --requests):

    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=/tmp/cg.%p \
        .venv/bin/python bench/submit_cpu.py --instructions --requests 100
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=1500, help="submissions per repetition")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--participants", type=int, default=500, help="distinct handles")
    parser.add_argument("--warmup", type=int, default=300)
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="under callgrind: count instructions of one repetition's submissions only",
    )
    return parser.parse_args()


def callgrind_instrumentation(on: bool) -> None:
    import subprocess

    state = "on" if on else "off"
    subprocess.run(["callgrind_control", "-i", state, str(os.getpid())], check=True)


async def call(app: Any, method: str, path: str, token: str, body: Any = None) -> tuple[int, Any]:
    """One request to the ASGI app: its status and JSON answer (None when not JSON)."""
    content = b"" if body is None else json.dumps(body).encode()
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"bench"),
            (b"authorization", f"Bearer {token}".encode()),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(content)).encode()),
        ],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 80),
    }
    sent = False
    status = 0
    chunks: list[bytes] = []

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            await asyncio.sleep(3600)  # as a server does: no disconnect while the app works
        sent = True
        return {"type": "http.request", "body": content, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app(scope, receive, send)
    answer = b"".join(chunks)
    try:
        return status, json.loads(answer)
    except ValueError:
        return status, None


async def measure(args: argparse.Namespace) -> None:
    from app.main import create_app
    from app.seed import DEMO_CHALLENGE

    app = create_app()
    status, answer = await call(
        app, "POST", "/v1/tenants", common.ADMIN_TOKEN, {"slug": "cpu", "name": "cpu"}
    )
    if status != 201:
        raise RuntimeError(f"tenant: {status} {answer}")
    key = answer["api_key"]
    status, answer = await call(app, "POST", "/v1/challenges", key, {**DEMO_CHALLENGE, "slug": "c"})
    if status != 201:
        raise RuntimeError(f"challenge: {status} {answer}")
    path = f"/v1/challenges/{answer['id']}/attempts"

    async def submit(count: int) -> None:
        for index in range(count):
            body = {"participant": f"p{index % args.participants}", "prompt": "hello"}
            status, answer = await call(app, "POST", path, key, body)
            if status != 202:
                raise RuntimeError(f"{status}: {answer}")

    await submit(max(args.warmup, args.participants))  # every participant exists after this
    if args.instructions:
        callgrind_instrumentation(True)
        await submit(args.requests)
        callgrind_instrumentation(False)
        print(f"   {args.requests} submissions instrumented", flush=True)
        return
    for repetition in range(1, args.repeat + 1):
        started_cpu = time.process_time()
        for _ in range(args.requests):
            await call(app, "GET", "/no-such-page", key)
        floor_ms = (time.process_time() - started_cpu) / args.requests * 1000
        started_cpu, started = time.process_time(), time.perf_counter()
        await submit(args.requests)
        cpu_ms = (time.process_time() - started_cpu) / args.requests * 1000
        wall_ms = (time.perf_counter() - started) / args.requests * 1000
        print(
            f"   repetition {repetition}: CPU {cpu_ms:.2f} ms per submission "
            f"(404 floor {floor_ms:.2f} ms), wall {wall_ms:.2f} ms",
            flush=True,
        )


def main() -> None:
    args = parse_args()
    common.print_machine_info("submit_cpu")
    with (
        common.broker_lock(),
        common.scratch_database() as database,
        common.data_dir() as data,
    ):
        common.flush_broker()
        os.environ.update(
            common.service_env(
                database,
                str(data),
                extra={"GAUNTLET_QUEUE": "bench-submit-cpu", **common.UNSHARED_QUEUE},
            )
        )
        try:
            asyncio.run(measure(args))
        finally:
            common.flush_broker()
    common.print_end_load()


if __name__ == "__main__":
    main()
