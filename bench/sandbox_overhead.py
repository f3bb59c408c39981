"""Prints what the scorer sandbox costs and how precisely it kills.

    .venv/bin/python bench/sandbox_overhead.py [--calls 2000] [--hangs 20] [--isolation ...]

1. Per-call latency of WeightedScorer in-process and through the sandbox (p50, p99), and the
   sandbox's overhead as the difference.
2. For a hung scorer with a 200 ms timeout: how late the call returns after its deadline, and
   how long from that return until the pool's next successful call.
3. What isolation costs at start: the one-off probe, the pool's start, and a call for another
   tenant when the only warm process has served someone else (it waits for a fresh sandbox).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

# Run as a plain script from anywhere: make the project importable without installing it.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.scoring.sandbox.launch import ISOLATION_SETTINGS, choose_launcher
from app.scoring.sandbox.pool import ScorerSandbox
from bench import common
from scorers.protocol import AttemptMetrics, ScoringContext
from scorers.weighted import WeightedScorer

WEIGHTED = "scorers.weighted:WeightedScorer"
METRICS = {"succeeded": True, "rating": 8, "elapsed_ms": 5000, "tokens_total": 1000}
CTX: dict[str, Any] = {
    "tenant_id": "t1",
    "challenge_id": "c1",
    "participant_id": "p1",
    "timeout_ms": 5000,
}


def percentile(samples: list[float], share: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def microseconds(seconds: float) -> str:
    return f"{seconds * 1e6:8.1f} µs"


def milliseconds(seconds: float) -> str:
    return f"{seconds * 1e3:7.2f} ms"


def in_process_latencies(calls: int) -> list[float]:
    # Includes building AttemptMetrics and ScoringContext, as the child does for each call.
    scorer = WeightedScorer()
    latencies = []
    for _ in range(calls):
        started = time.perf_counter()
        scorer.score(AttemptMetrics.from_dict(METRICS), {}, ScoringContext.from_dict(CTX))
        latencies.append(time.perf_counter() - started)
    return latencies


def sandbox_latencies(sandbox: ScorerSandbox, calls: int) -> list[float]:
    for _ in range(100):  # warm every child's instance cache
        sandbox.score(WEIGHTED, METRICS, {}, CTX, 5000)
    latencies = []
    for _ in range(calls):
        started = time.perf_counter()
        outcome = sandbox.score(WEIGHTED, METRICS, {}, CTX, 5000)
        latencies.append(time.perf_counter() - started)
        if outcome.score != 165.0:
            raise SystemExit(f"unexpected outcome: {outcome}")
    return latencies


def kill_figures(sandbox: ScorerSandbox, runs: int, timeout_ms: int) -> tuple[list[float], ...]:
    late_by: list[float] = []
    next_ok_after: list[float] = []
    for _ in range(runs):
        sandbox.score(WEIGHTED, METRICS, {}, CTX, 5000)  # the pool is warm before each hang
        time.sleep(0.15)  # and any replacement from the previous run has booted
        started = time.perf_counter()
        outcome = sandbox.score("scorers.testing:HangingScorer", {}, {}, CTX, timeout_ms)
        returned = time.perf_counter()
        if outcome.error != f"timed out after {timeout_ms} ms":
            raise SystemExit(f"unexpected outcome: {outcome}")
        late_by.append(returned - started - timeout_ms / 1000)
        outcome = sandbox.score(WEIGHTED, METRICS, {}, CTX, 5000)
        next_ok_after.append(time.perf_counter() - returned)
        if outcome.score != 165.0:
            raise SystemExit(f"unexpected outcome: {outcome}")
    return late_by, next_ok_after


def tenant_switch_latencies(sandbox: ScorerSandbox, switches: int) -> list[float]:
    """Calls alternating between two tenants on a pool of one: each call finds the only warm
    process used by the other tenant and waits for a fresh sandbox."""
    latencies = []
    for index in range(switches):
        ctx = {**CTX, "tenant_id": f"tenant-{index % 2}"}
        started = time.perf_counter()
        outcome = sandbox.score(WEIGHTED, METRICS, {}, ctx, 5000)
        latencies.append(time.perf_counter() - started)
        if outcome.score != 165.0:
            raise SystemExit(f"unexpected outcome: {outcome}")
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--hangs", type=int, default=20)
    parser.add_argument("--timeout-ms", type=int, default=200)
    parser.add_argument("--isolation", choices=ISOLATION_SETTINGS, default="bubblewrap")
    options = parser.parse_args()
    common.print_machine_info("sandbox_overhead")

    local = in_process_latencies(options.calls)
    started = time.perf_counter()
    launcher, _ = choose_launcher(options.isolation, ("scorers.",))
    probe_seconds = time.perf_counter() - started
    started = time.perf_counter()
    with ScorerSandbox(pool_size=2, isolation=options.isolation) as sandbox:
        start_seconds = time.perf_counter() - started
        remote = sandbox_latencies(sandbox, options.calls)
        late_by, next_ok_after = kill_figures(sandbox, options.hangs, options.timeout_ms)
    with ScorerSandbox(pool_size=1, isolation=options.isolation) as single:
        _, single_next_ok_after = kill_figures(single, max(options.hangs // 2, 1), 200)
        switches = tenant_switch_latencies(single, max(options.hangs, 2))

    print(f"Python {sys.version.split()[0]}, {options.calls} calls of WeightedScorer")
    print(f"isolation: {launcher.describe()}")
    print(f"probe (one sandbox, once per process):  {milliseconds(probe_seconds)}")
    print(f"pool start (2 children, parallel):      {milliseconds(start_seconds)}")
    print(
        f"in-process        p50 {microseconds(percentile(local, 0.5))}"
        f"   p99 {microseconds(percentile(local, 0.99))}"
    )
    print(
        f"sandbox           p50 {microseconds(percentile(remote, 0.5))}"
        f"   p99 {microseconds(percentile(remote, 0.99))}"
    )
    overhead_p50 = percentile(remote, 0.5) - percentile(local, 0.5)
    overhead_p99 = percentile(remote, 0.99) - percentile(local, 0.99)
    print(f"sandbox overhead  p50 {microseconds(overhead_p50)}   p99 {microseconds(overhead_p99)}")
    print(f"hung scorer, timeout {options.timeout_ms} ms, {options.hangs} runs (pool of 2):")
    print(
        f"  return after deadline   p50 {milliseconds(statistics.median(late_by))}"
        f"   max {milliseconds(max(late_by))}"
    )
    print(
        f"  kill -> next success    p50 {milliseconds(statistics.median(next_ok_after))}"
        f"   max {milliseconds(max(next_ok_after))}"
    )
    print(
        f"  same with a pool of 1   p50 {milliseconds(statistics.median(single_next_ok_after))}"
        f"   max {milliseconds(max(single_next_ok_after))}   (waits for a fresh interpreter)"
    )
    print(
        f"call for another tenant, pool of 1   p50 {milliseconds(statistics.median(switches))}"
        f"   max {milliseconds(max(switches))}   (waits for a fresh sandbox)"
    )
    common.print_end_load()


if __name__ == "__main__":
    main()
