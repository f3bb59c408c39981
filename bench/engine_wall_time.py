"""Engine wall time against the ideal bound and against a strictly sequential loop.

A loopback OpenAI-compatible server answers every chat completion after a fixed latency
(100 ms). 40 ARC-format tasks (small grid puzzles generated here: flip, transpose, recolor) run
through the real engine (`run_benchmark`: litellm, the LLMClient caps, a run folder on disk) as
`openai/fake-model` at that server, k = 5, concurrency 50, with pass@k and with seq@k. The server
solves a task on a fixed attempt (or never), so seq@k stops at different attempts per task.

Printed per metric:
- engine: wall time of `run_benchmark` (litellm imported and warmed up beforehand);
- ideal: pass@k: ceil(calls / cap) x latency; seq@k: max(ceil(calls / cap), the most attempts
  any task makes) x latency, since a task's attempts are sequential by definition;
- sequential: the same actor calls (the exact prompts the engine sent), one after another;
- engine / ideal and sequential / engine.

    .venv/bin/python bench/engine_wall_time.py [--latency-ms 100] [--tasks 40] [--k 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import multiprocessing
import os
import random
import re
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENAI_API_KEY", "sk-bench-not-a-real-key")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.evalcli.folder import RunFolderStore
from app.evaluation.benchmark import AttemptView, Benchmark, Task
from app.evaluation.llm import LLMClient, load_litellm
from app.evaluation.runner import RunConfig, run_benchmark
from app.evaluation.types import CallRecord, Message, ModelSpec, VerifierResult

Grid = list[list[int]]
TASK_LINE = re.compile(r"ARC task (\d+)")
ATTEMPT_LINE = re.compile(r"This is attempt (\d+) of")

# ARC-like tasks


def _transform(kind: str, grid: Grid) -> Grid:
    if kind == "flip":
        return [list(reversed(row)) for row in grid]
    if kind == "transpose":
        return [list(column) for column in zip(*grid, strict=True)]
    return [[(cell + 1) % 10 for cell in row] for row in grid]


def _grid(rng: random.Random) -> Grid:
    height, width = rng.randint(3, 6), rng.randint(3, 6)
    return [[rng.randint(0, 9) for _ in range(width)] for _ in range(height)]


def arc_tasks(count: int, seed: int = 7) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    tasks = []
    for index in range(1, count + 1):
        kind = ("flip", "transpose", "recolor")[index % 3]
        train = []
        for _ in range(3):
            grid = _grid(rng)
            train.append({"input": grid, "output": _transform(kind, grid)})
        test_input = _grid(rng)
        tasks.append(
            {
                "index": index,
                "train": train,
                "test": [{"input": test_input, "output": _transform(kind, test_input)}],
            }
        )
    return tasks


def arc_prompt(task: dict[str, Any]) -> str:
    return (
        f"ARC task {task['index']}. Find the rule that maps each input grid to its output grid, "
        "then apply it to the test input. Reply with the output grid as JSON only.\n"
        f"Training pairs: {json.dumps(task['train'])}\n"
        f"Test input: {json.dumps(task['test'][0]['input'])}"
    )


def solved_on(index: int, k: int) -> int | None:
    """The attempt on which the fake model solves a task: 1..k, or never for every 4th."""
    return None if index % 4 == 0 else 1 + index % k


def build_benchmark(tasks: list[dict[str, Any]]) -> Benchmark:
    module = ModuleType("benchmarks.arc_bench")
    module.VERIFIER = "deterministic"  # type: ignore[attr-defined]

    def load_tasks(**options: Any) -> Iterator[Task]:
        for task in tasks:
            yield Task(
                task_id=f"arc-{task['index']:03d}",
                canonical_index=task["index"],
                prompt=arc_prompt(task),
                answer=task["test"][0]["output"],
            )

    def verify(task: Task, attempt: AttemptView, *, judge_model: str | None) -> VerifierResult:
        try:
            grid = json.loads(attempt.output)
        except json.JSONDecodeError:
            grid = None
        success = grid == task.answer
        return VerifierResult(
            success=success,
            score=1.0 if success else 0.0,
            raw_eval_output="grid matches" if success else "grid differs",
        )

    module.load_tasks = load_tasks  # type: ignore[attr-defined]
    module.verify = verify  # type: ignore[attr-defined]
    return Benchmark(module, "arc_bench")


# The server


class FixedLatencyServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 512  # the default backlog of 5 refuses bursts of 50 connections

    def __init__(self, latency_s: float, tasks: list[dict[str, Any]], k: int) -> None:
        self.latency_s = latency_s
        self.answers = {task["index"]: task["test"][0]["output"] for task in tasks}
        self.k = k
        self.lock = threading.Lock()
        self.requests = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.pass_counter = 0
        super().__init__(("127.0.0.1", 0), _Handler)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def reply(self, body: dict[str, Any]) -> str:
        # pass@k samples are independent: every 3rd call per server is right.
        with self.lock:
            return _reply(self, str(body["messages"][-1]["content"]))


class _Handler(BaseHTTPRequestHandler):
    server: FixedLatencyServer
    protocol_version = "HTTP/1.1"  # keep-alive, as real providers do
    # http.server writes the headers and the body as two segments; with Nagle's algorithm the
    # body waits for the client's delayed ACK of the headers, ~40 ms on every call.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        """Silenced."""

    def do_GET(self) -> None:
        # The counters live in the server's process; the bench reads them here.
        server = self.server
        with server.lock:
            payload = json.dumps(
                {"requests": server.requests, "max_in_flight": server.max_in_flight}
            ).encode()
            if self.path == "/stats/reset":
                server.max_in_flight = 0
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        server = self.server
        with server.lock:
            server.requests += 1
            server.in_flight += 1
            server.max_in_flight = max(server.max_in_flight, server.in_flight)
        try:
            time.sleep(server.latency_s)
            text = server.reply(body)
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
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


def _serve(latency_s: float, tasks: list[dict[str, Any]], k: int, port: Any) -> None:
    server = FixedLatencyServer(latency_s, tasks, k)
    port.value = server.server_address[1]
    server.serve_forever(poll_interval=0.05)


class ServerProcess:
    """The server in a process of its own: a provider is not in the client's process, and a
    threaded server sharing the client's interpreter lock would slow the client down."""

    def __init__(self, latency_s: float, tasks: list[dict[str, Any]], k: int) -> None:
        self.latency_s = latency_s
        context = multiprocessing.get_context("fork")
        port = context.Value("i", 0)
        self.process = context.Process(target=_serve, args=(latency_s, tasks, k, port))
        self.process.daemon = True
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

    def stats(self, *, reset: bool = False) -> dict[str, int]:
        path = "/stats/reset" if reset else "/stats"
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=5) as reply:
            data: dict[str, int] = json.loads(reply.read())
        return data

    def stop(self) -> None:
        self.process.terminate()
        self.process.join(timeout=5)


# Measurements


class SleepingClient:
    """A CompletionClient that answers like the server after sleeping its latency, with no
    litellm and no HTTP: it isolates the engine's own scheduling (`--client sleep`)."""

    def __init__(self, latency_s: float, tasks: list[dict[str, Any]], k: int, cap: int) -> None:
        self.latency_s = latency_s
        self.answers = {task["index"]: task["test"][0]["output"] for task in tasks}
        self.k = k
        self.global_concurrency = cap
        self.gate = asyncio.Semaphore(cap)
        self.calls = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.pass_counter = 0

    def reply(self, content: str) -> str:
        return _reply(self, content)

    async def complete(self, spec: ModelSpec, messages: list[Message]) -> CallRecord:
        async with self.gate:
            self.calls += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            try:
                await asyncio.sleep(self.latency_s)
            finally:
                self.in_flight -= 1
        output = self.reply(str(messages[-1]["content"]))
        return CallRecord(model=spec.model, prompt=list(messages), output=output)


def _reply(state: Any, content: str) -> str:
    """The fake model: solves task i on attempt solved_on(i) (seq@k), every 3rd pass@k call."""
    task = TASK_LINE.search(content)
    index = int(task.group(1)) if task else 0
    attempt_match = ATTEMPT_LINE.search(content)
    if attempt_match is not None:
        attempt = int(attempt_match.group(1))
    else:
        state.pass_counter += 1
        attempt = 1 if state.pass_counter % 3 == 0 else 0
    target = solved_on(index, state.k) if attempt_match is not None else 1
    if target is not None and attempt == target and index in state.answers:
        return json.dumps(state.answers[index])
    return "[[0]]"


async def sequential(llm: Any, spec: ModelSpec, prompts: list[list[Message]]) -> float:
    started = time.perf_counter()
    for messages in prompts:
        await llm.complete(spec, messages)
    return time.perf_counter() - started


def measure(
    metric: str,
    benchmark: Benchmark,
    server: ServerProcess,
    k: int,
    cap: int,
    sleeping: SleepingClient | None = None,
) -> dict[str, Any]:
    spec = ModelSpec("openai/fake-model", api_base=server.base_url, timeout_s=30)
    llm: Any = sleeping or LLMClient(global_concurrency=cap, per_model_concurrency=cap)
    config = RunConfig(
        benchmark="arc_bench",
        metric=metric,
        k=k,
        feedback_mode="raw",
        actor=spec,  # type: ignore[arg-type]
    )
    with tempfile.TemporaryDirectory(prefix="gauntlet-bench-") as folder:
        store = RunFolderStore(Path(folder))
        started_requests = server.stats(reset=True)["requests"]
        started = time.perf_counter()
        result = asyncio.run(run_benchmark(benchmark, config, store, llm))
        engine_s = time.perf_counter() - started
        after = server.stats()
        calls = after["requests"] - started_requests
        peak = after["max_in_flight"]
        if sleeping is not None:
            calls, peak = sleeping.calls, sleeping.max_in_flight
        per_task = []
        prompts: list[list[Message]] = []
        for task_dir in sorted(Path(folder).glob("task-*")):
            attempts = sorted(task_dir.glob("attempt-*.json"))
            per_task.append(len(attempts))
            for path in attempts:
                prompt = json.loads(path.read_text())["actor"]["prompt"]
                prompts.append(prompt)
    latency = server.latency_s
    ideal_rounds = math.ceil(calls / cap)
    if metric == "seq@k":
        ideal_rounds = max(ideal_rounds, max(per_task))
    ideal_s = ideal_rounds * latency
    one_at_a_time: Any = (
        SleepingClient(sleeping.latency_s, [], k, 1) if sleeping is not None else LLMClient()
    )
    sequential_s = asyncio.run(sequential(one_at_a_time, spec, prompts))
    curve = result.summary["curves"]
    name = "pass_at" if metric == "pass@k" else "seq_at"
    return {
        "metric": metric,
        "calls": calls,
        "peak_in_flight": peak,
        "engine_s": engine_s,
        "ideal_s": ideal_s,
        "sequential_s": sequential_s,
        "engine_over_ideal": engine_s / ideal_s,
        "sequential_over_engine": sequential_s / engine_s,
        "curve": [round(value, 3) for value in curve[name]],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("--tasks", type=int, default=40)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument(
        "--client",
        choices=("litellm", "sleep"),
        default="litellm",
        help="litellm (the real path, to the loopback server) or sleep (no litellm, no HTTP: "
        "the engine's own scheduling)",
    )
    args = parser.parse_args()

    tasks = arc_tasks(args.tasks)
    benchmark = build_benchmark(tasks)
    server = ServerProcess(args.latency_ms / 1000, tasks, args.k)
    try:
        # Priced like a real model: litellm prices every response, and for a model missing
        # from its price map it walks its fallbacks on every call, several ms of CPU each.
        load_litellm().register_model(
            {
                "openai/fake-model": {
                    "litellm_provider": "openai",
                    "mode": "chat",
                    "input_cost_per_token": 1e-6,
                    "output_cost_per_token": 2e-6,
                }
            }
        )
        warm = ModelSpec("openai/fake-model", api_base=server.base_url, timeout_s=30)
        # The first call builds litellm's HTTP client; it is start-up, not engine time.
        asyncio.run(LLMClient().complete(warm, [{"role": "user", "content": "warm up"}]))
        print(
            f"{args.tasks} ARC-format tasks, k={args.k}, latency {args.latency_ms:g} ms, "
            f"concurrency {args.concurrency}, {os.cpu_count()} CPUs"
        )
        header = (
            f"{'metric':7} {'calls':>5} {'peak':>4} {'engine s':>9} {'ideal s':>8} "
            f"{'seq. loop s':>11} {'engine/ideal':>12} {'loop/engine':>11}  curve"
        )
        print(header)
        for metric in ("pass@k", "seq@k"):
            sleeping = None
            if args.client == "sleep":
                sleeping = SleepingClient(args.latency_ms / 1000, tasks, args.k, args.concurrency)
            row = measure(metric, benchmark, server, args.k, args.concurrency, sleeping)
            print(
                f"{row['metric']:7} {row['calls']:>5} {row['peak_in_flight']:>4} "
                f"{row['engine_s']:>9.3f} {row['ideal_s']:>8.3f} {row['sequential_s']:>11.3f} "
                f"{row['engine_over_ideal']:>11.2f}x {row['sequential_over_engine']:>10.1f}x  "
                f"{row['curve']}"
            )
    finally:
        server.stop()


if __name__ == "__main__":
    main()
