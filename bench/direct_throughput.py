"""Calls per second through LLMClient: the direct transport against litellm, in one run.

A loopback OpenAI-compatible server (bench/latency_server.py, its own process) answers every
call after a fixed latency (default 20 ms). One LLMClient per transport, with 200 calls in
flight (its global and per-model caps), makes `--calls` chat completions as fast as it can:

- `direct`: `openai-compatible/fake` with the server as `api_base`: the direct transport's
  HTTP client (app.evaluation.engine.direct, app.outbound.transport), litellm never imported by it;
- `litellm`: `openai/fake-model` with `OPENAI_API_BASE` at the server: litellm's HTTP path.

Both make the same records (four token fields, cost lookup, retries armed) and are warmed up
first, as the CLI does. Both run on one event loop, as a run has one, so their connections stay
open between rounds (a first round of each, not timed, opens them). Rounds alternate between
the transports (`--rounds`, default 3 each), so a busy spell on this shared machine hits both;
printed per round: calls/s, CPU per call (this process), the most calls in flight the server
saw; then the ratio of the medians.

    .venv/bin/python bench/direct_throughput.py [--latency-ms 20] [--in-flight 200]
        [--calls 2000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENAI_API_KEY", "sk-bench-not-a-real-key")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.evaluation.engine.llm import LLMClient, warm_up_for
from app.evaluation.engine.types import ModelSpec
from bench import common
from bench.latency_server import LatencyServer

MESSAGES = [{"role": "user", "content": "Reply with ok."}]


def spec_for(transport: str, server: LatencyServer) -> ModelSpec:
    if transport == "direct":
        return ModelSpec("openai-compatible/fake", api_base=server.base_url, timeout_s=30)
    os.environ["OPENAI_API_BASE"] = server.base_url
    return ModelSpec("openai/fake-model", timeout_s=30)


async def one_round(
    client: LLMClient, spec: ModelSpec, server: LatencyServer, calls: int
) -> dict[str, float]:
    before = server.stats(reset=True)["requests"]
    cpu = time.process_time()
    started = time.perf_counter()
    await asyncio.gather(*(client.complete(spec, MESSAGES) for _ in range(calls)))
    wall = time.perf_counter() - started
    cpu = time.process_time() - cpu
    after = server.stats()
    assert after["requests"] - before == calls, "every call reached the server once"
    return {
        "calls_per_s": calls / wall,
        "cpu_ms_per_call": cpu / calls * 1000,
        "peak": float(after["max_in_flight"]),
        "wall_s": wall,
    }


async def rounds(
    server: LatencyServer, args: argparse.Namespace
) -> dict[str, list[dict[str, float]]]:
    """Both transports on one event loop, as a run has one: their connections stay open
    between rounds. A first round of each opens them and is not timed."""
    transports = ("direct", "litellm")
    specs = {name: spec_for(name, server) for name in transports}
    clients = {
        name: LLMClient(global_concurrency=args.in_flight, per_model_concurrency=args.in_flight)
        for name in transports
    }
    for name in transports:
        await one_round(clients[name], specs[name], server, args.in_flight)
    results: dict[str, list[dict[str, float]]] = {name: [] for name in transports}
    for number in range(1, args.rounds + 1):
        for name in transports:
            row = await one_round(clients[name], specs[name], server, args.calls)
            results[name].append(row)
            print(
                f"{number:>5} {name:9} {row['calls_per_s']:>8.0f} "
                f"{row['cpu_ms_per_call']:>11.2f} {row['peak']:>5.0f}",
                flush=True,
            )
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--in-flight", type=int, default=200)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    common.print_machine_info("direct transport against litellm: calls per second")
    with LatencyServer(args.latency_ms / 1000) as server:
        print(
            f"   latency {args.latency_ms:g} ms, {args.in_flight} in flight, {args.calls} calls "
            f"per round; bound: {args.in_flight / (args.latency_ms / 1000):,.0f} calls/s"
        )
        for transport in ("direct", "litellm"):
            warm_up_for([spec_for(transport, server)])
        print(f"{'round':>5} {'transport':9} {'calls/s':>8} {'CPU ms/call':>11} {'peak':>5}")
        results = {
            name: [row["calls_per_s"] for row in rows]
            for name, rows in asyncio.run(rounds(server, args)).items()
        }
        direct, litellm = (statistics.median(results[name]) for name in ("direct", "litellm"))
        print(
            f"median calls/s: direct {direct:.0f}, litellm {litellm:.0f}: "
            f"direct / litellm = {direct / litellm:.2f}x"
        )
    common.print_end_load()


if __name__ == "__main__":
    main()
