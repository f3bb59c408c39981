"""Evaluation engine wall time: the engine alone, and a whole `gauntlet eval run` process.

40 ARC-format tasks (small grid puzzles generated here: flip, transpose, recolor), written as an
`arcagi2` data folder, run at a loopback OpenAI-compatible server (bench/latency_server.py, its
own process) that answers after a fixed latency (default 250 ms), k = 5, 50 calls in flight,
pass@k and seq@k. The server's fake solver solves a task on a fixed attempt (or never), so
seq@k stops at different attempts per task.

Rows, all measured in one run of this script:
- `engine, <client>`: `run_benchmark` in this process (the arcagi2 benchmark on that folder,
  a run folder on disk), with the client
    `sleep`   answers as the server would after sleeping the latency: no HTTP, no client
              library (the engine's own scheduling and bookkeeping);
    `direct`  LLMClient, `openai-compatible/fake` at the server: the direct transport;
    `litellm` LLMClient, `openai/fake-model` with `OPENAI_API_BASE` at the server: litellm's
              HTTP path (litellm imported and warmed up before, as the CLI does);
- `process`: `gauntlet eval run VARIANT` in a fresh process on the direct transport, from the
  spawn to the exit; split into start-up (spawn to the server's first request), the calls
  (first request to last answer) and the end (last answer to exit).

Bounds: the ideal is ceil(calls / cap) x latency for pass@k, and max(that, the most attempts
any task makes) x latency for seq@k (a task's attempts are sequential by definition); for the
process, plus the interpreter's start-up (`python -c pass`, median of 5, measured here too).

    .venv/bin/python bench/engine_wall_time.py [--latency-ms 250] [--tasks 40] [--k 5]
        [--concurrency 50] [--clients sleep,direct,litellm] [--process-runs 3] [--sequential]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENAI_API_KEY", "sk-bench-not-a-real-key")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.evaluation.commands.folder import RunFolderStore
from app.evaluation.engine.benchmark import Benchmark
from app.evaluation.engine.llm import LLMClient, warm_up_for
from app.evaluation.engine.runner import RunConfig, run_benchmark
from app.evaluation.engine.types import CallRecord, Message, ModelSpec
from bench import common
from bench.latency_server import ArcAnswers, Grid, LatencyServer

ROOT = Path(__file__).resolve().parent.parent
METRICS = ("pass@k", "seq@k")
FEEDBACK = "cell_match"  # arcagi2's own feedback mode

# ARC-format tasks


def _transform(kind: str, grid: Grid) -> Grid:
    if kind == "flip":
        return [list(reversed(row)) for row in grid]
    if kind == "transpose":
        return [list(column) for column in zip(*grid, strict=True)]
    return [[(cell + 1) % 10 for cell in row] for row in grid]


def _grid(rng: random.Random) -> Grid:
    height, width = rng.randint(3, 6), rng.randint(3, 6)
    return [[rng.randint(0, 9) for _ in range(width)] for _ in range(height)]


def write_arc_data(folder: Path, count: int, seed: int = 7) -> ArcAnswers:
    """`count` ARC task files under `folder/evaluation/` with an order file, and the fake
    solver that knows their answers."""
    rng = random.Random(seed)
    (folder / "evaluation").mkdir(parents=True)
    answers = ArcAnswers()
    order = []
    for index in range(1, count + 1):
        kind = ("flip", "transpose", "recolor")[index % 3]
        train = []
        for _ in range(3):
            grid = _grid(rng)
            train.append({"input": grid, "output": _transform(kind, grid)})
        test_input = _grid(rng)
        answer = _transform(kind, test_input)
        task_id = f"arc-{index:03d}"
        document = {"train": train, "test": [{"input": test_input, "output": answer}]}
        (folder / "evaluation" / f"{task_id}.json").write_text(json.dumps(document))
        order.append(task_id)
        answers.by_test_input[json.dumps(test_input)] = (index, answer)
    (folder / "evaluation.txt").write_text("\n".join(order) + "\n")
    return answers


# The engine in this process


class SleepingClient:
    """A CompletionClient that answers like the server after sleeping its latency, with no
    HTTP and no client library: it isolates the engine's own scheduling."""

    def __init__(self, latency_s: float, answers: ArcAnswers, cap: int) -> None:
        self.latency_s = latency_s
        self.answers = answers
        self.global_concurrency = cap
        self.gate = asyncio.Semaphore(cap)
        self.calls = 0
        self.in_flight = 0
        self.max_in_flight = 0

    async def complete(self, spec: ModelSpec, messages: list[Message]) -> CallRecord:
        async with self.gate:
            self.calls += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            try:
                await asyncio.sleep(self.latency_s)
            finally:
                self.in_flight -= 1
        output = self.answers.reply(str(messages[-1]["content"]))
        return CallRecord(model=spec.model, prompt=list(messages), output=output)


def client_spec(client: str, server: LatencyServer) -> ModelSpec:
    if client == "litellm":
        # litellm's openai provider reads the server's address from the environment.
        os.environ["OPENAI_API_BASE"] = server.base_url
        return ModelSpec("openai/fake-model", timeout_s=30)
    return ModelSpec("openai-compatible/fake", api_base=server.base_url, timeout_s=30)


def ideal_seconds(metric: str, calls: int, per_task: list[int], cap: int, latency: float) -> float:
    rounds = math.ceil(calls / cap)
    if metric == "seq@k":
        rounds = max(rounds, max(per_task, default=0))
    return rounds * latency


def attempts_per_task(folder: Path) -> list[int]:
    return [len(list(task.glob("attempt-*.json"))) for task in sorted(folder.rglob("task-*"))]


def measure_engine(
    metric: str,
    client: str,
    data_dir: Path,
    server: LatencyServer,
    answers: ArcAnswers,
    args: argparse.Namespace,
) -> dict[str, Any]:
    benchmark = Benchmark.load("arcagi2")
    spec = client_spec(client, server)
    llm: Any
    if client == "sleep":
        llm = SleepingClient(server.latency_s, answers, args.concurrency)
    else:
        llm = LLMClient(global_concurrency=args.concurrency, per_model_concurrency=args.concurrency)
    config = RunConfig(
        benchmark="arcagi2",
        metric=metric,  # type: ignore[arg-type]
        k=args.k,
        feedback_mode=FEEDBACK,
        actor=spec,
        options={"data_dir": str(data_dir), "split": "evaluation"},
    )
    answers.pass_counter = 0
    with tempfile.TemporaryDirectory(prefix="gauntlet-bench-") as folder:
        store = RunFolderStore(Path(folder))
        before = server.stats(reset=True)["requests"]
        started = time.perf_counter()
        result = asyncio.run(run_benchmark(benchmark, config, store, llm))
        engine_s = time.perf_counter() - started
        after = server.stats()
        per_task = attempts_per_task(Path(folder))
        prompts = [
            json.loads(path.read_text())["actor"]["messages"]
            for path in sorted(Path(folder).rglob("attempt-*.json"))
        ]
    if client == "sleep":
        calls, peak = llm.calls, llm.max_in_flight
    else:
        calls, peak = after["requests"] - before, after["max_in_flight"]
    ideal_s = ideal_seconds(metric, calls, per_task, args.concurrency, server.latency_s)
    row = {
        "row": f"engine, {client}",
        "metric": metric,
        "calls": calls,
        "peak": peak,
        "wall_s": engine_s,
        "ideal_s": ideal_s,
        "ratio": engine_s / ideal_s,
        "curve": result.summary["curves"]["pass_at" if metric == "pass@k" else "seq_at"],
    }
    if args.sequential:
        one: Any = (
            SleepingClient(server.latency_s, answers, 1) if client == "sleep" else LLMClient()
        )

        async def loop() -> float:
            started = time.perf_counter()
            for messages in prompts:
                await one.complete(spec, messages)
            return time.perf_counter() - started

        row["sequential_s"] = asyncio.run(loop())
    return row


# The whole process


def interpreter_start_s(python: str, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run([python, "-c", "pass"], check=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def cli_start_s(gauntlet: str, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run([gauntlet, "--help"], check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def measure_process(
    metric: str,
    data_dir: Path,
    server: LatencyServer,
    answers: ArcAnswers,
    args: argparse.Namespace,
    workdir: Path,
    run_number: int,
) -> dict[str, Any]:
    variant = workdir / f"{metric[:-2]}k-{run_number}.yaml"
    variant.write_text(
        json.dumps(  # JSON is YAML
            {
                "benchmark": "arcagi2",
                "metric": metric,
                "k": args.k,
                "feedback_mode": FEEDBACK,
                "model": {
                    "model": "openai-compatible/fake",
                    "api_base": server.base_url,
                    "timeout_s": 30,
                },
                "concurrency": args.concurrency,
                "options": {"data_dir": str(data_dir), "split": "evaluation"},
            }
        )
    )
    runs = workdir / f"runs-{metric[:-2]}k-{run_number}"
    server.stats(reset=True)
    before = server.stats()["requests"]
    env = {key: value for key, value in os.environ.items() if not key.startswith("GAUNTLET_")}
    env["GAUNTLET_DATA_DIR"] = str(workdir / "data")
    spawned = time.time()
    started = time.perf_counter()
    done = subprocess.run(
        [common.gauntlet_bin(), "eval", "run", str(variant), "--runs-root", str(runs)],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    wall_s = time.perf_counter() - started
    exited = spawned + wall_s
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    after = server.stats()
    calls = after["requests"] - before
    per_task = attempts_per_task(runs)
    ideal_s = ideal_seconds(metric, calls, per_task, args.concurrency, server.latency_s)
    return {
        "row": "process, direct",
        "metric": metric,
        "calls": calls,
        "peak": after["max_in_flight"],
        "wall_s": wall_s,
        "ideal_s": ideal_s,
        "start_s": after["first_request_at"] - spawned,
        "calls_s": after["last_answer_at"] - after["first_request_at"],
        "end_s": exited - after["last_answer_at"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency-ms", type=float, default=250.0)
    parser.add_argument("--tasks", type=int, default=40)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--clients", default="sleep,direct,litellm")
    parser.add_argument("--process-runs", type=int, default=3, help="0: no process rows")
    parser.add_argument(
        "--sequential", action="store_true", help="also time the same calls one at a time"
    )
    args = parser.parse_args()
    clients = [name for name in args.clients.split(",") if name]

    common.print_machine_info("evaluation engine wall time")
    with tempfile.TemporaryDirectory(prefix="gauntlet-engine-bench-") as scratch:
        workdir = Path(scratch)
        data_dir = workdir / "arc"
        answers = write_arc_data(data_dir, args.tasks)
        answers.k = args.k
        with LatencyServer(args.latency_ms / 1000, answers) as server:
            print(
                f"   {args.tasks} ARC-format tasks, k={args.k}, latency {args.latency_ms:g} ms, "
                f"{args.concurrency} in flight"
            )
            python = sys.executable
            interpreter_s = interpreter_start_s(python)
            print(f"   interpreter start-up (`python -c pass`, median of 5): {interpreter_s:.3f} s")
            print(f"   `gauntlet --help` (median of 3): {cli_start_s(common.gauntlet_bin()):.3f} s")
            print()
            print(
                f"{'row':17} {'metric':7} {'calls':>5} {'peak':>4} {'wall s':>7} {'ideal s':>7}"
                f" {'ratio':>7}  detail"
            )
            # The whole-process rows first: the in-process rows then load litellm, whose
            # background threads would share the two cores with the process being timed.
            for run_number in range(1, args.process_runs + 1):
                for metric in METRICS:
                    row = measure_process(
                        metric, data_dir, server, answers, args, workdir, run_number
                    )
                    bound = row["ideal_s"] + interpreter_s
                    print(
                        f"{row['row']:17} {metric:7} {row['calls']:>5} {row['peak']:>4} "
                        f"{row['wall_s']:>7.3f} {row['ideal_s']:>7.3f} "
                        f"{row['wall_s'] / bound:>6.2f}x  of ideal + interpreter start-up "
                        f"({bound:.3f} s); start-up {row['start_s']:.3f} s, calls "
                        f"{row['calls_s']:.3f} s, end {row['end_s']:.3f} s",
                        flush=True,
                    )
            for client in clients:
                if client != "sleep":
                    # What the client needs is loaded before it is timed, as the CLI does.
                    warm_up_for([client_spec(client, server)])
                for metric in METRICS:
                    row = measure_engine(metric, client, data_dir, server, answers, args)
                    detail = f"curve {[round(value, 3) for value in row['curve']]}"
                    if "sequential_s" in row:
                        detail += (
                            f", sequential loop {row['sequential_s']:.2f} s "
                            f"({row['sequential_s'] / row['wall_s']:.1f}x the engine)"
                        )
                    print(
                        f"{row['row']:17} {metric:7} {row['calls']:>5} {row['peak']:>4} "
                        f"{row['wall_s']:>7.3f} {row['ideal_s']:>7.3f} {row['ratio']:>6.2f}x  "
                        f"{detail}",
                        flush=True,
                    )
    common.print_end_load()


if __name__ == "__main__":
    main()
