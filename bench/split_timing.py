"""What the time of a split challenge's attempt tells of its private part: two seq@k benchmark
challenges alike but for their private tasks' outcomes (solved at the first try in world A,
never in world B, so B's private part makes k times the calls), against a loopback model that
answers every call after a fixed latency (bench/latency_server.py), with a real worker.

Per world, over --attempts attempts submitted one at a time:
  visible: what every reader sees of the attempt: created_at -> finished_at (submission to
           completion) and started_at -> finished_at (its run: the public part);
  private: what only the tenant's admins see: the private part's own run, from its row
           (started_at -> finished_at), and the attempt's start -> that run's end, the time
           an attempt's completion waited for when both parts ran as one run.

Usage: .venv/bin/python bench/split_timing.py [--attempts 5] [--latency-ms 150] [--k 3]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common
from bench.latency_server import LatencyServer

TASKS = 6
SPLIT = {"public_fraction": 0.5, "seed": 7}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--attempts", type=int, default=5, help="per world")
    parser.add_argument("--latency-ms", type=float, default=150.0)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=120.0, help="per attempt, seconds")
    return parser.parse_args()


def tasks_file(folder: Path, private_solved: bool) -> str:
    """Six tasks: the public part's (by the split's rule) solved at the first try, at none, at
    the first; the private part's at the first try or never. The model answers "ok"."""
    from app.kinds.benchmark.config import SplitConfig
    from app.kinds.benchmark.split import private_task_ids

    ids = [f"task-{n}" for n in range(1, TASKS + 1)]
    private = private_task_ids(ids, SplitConfig(**SPLIT))
    public_answers = iter(["ok", "NEVER-SAID", "ok"])
    rows = []
    for task_id in ids:
        if task_id in private:
            regex = "ok" if private_solved else "NEVER-SAID"
        else:
            regex = next(public_answers)
        rows.append({"id": task_id, "prompt": f"Repeat this: {task_id}.", "regex": regex})
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tasks.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return f"{folder.name}/tasks.jsonl"


def main() -> None:
    args = parse_args()
    common.exit_on_sigterm()
    common.print_machine_info("split_timing")
    print(
        f"   {args.attempts} attempts per world, one at a time, seq@{args.k}, {TASKS} tasks "
        f"(3 public, 3 private), model latency {args.latency_ms:g} ms",
        flush=True,
    )
    import httpx
    import psycopg

    with (
        common.broker_lock(),
        common.scratch_database() as database,
        common.data_dir() as data,
        LatencyServer(args.latency_ms / 1000) as model,
    ):
        common.flush_broker()
        benchmarks = Path(data) / "benchmarks"
        paths = {
            "A (private solved)": tasks_file(benchmarks / "world-a", private_solved=True),
            "B (private failed)": tasks_file(benchmarks / "world-b", private_solved=False),
        }
        env = common.service_env(
            database,
            str(data),
            extra={
                "GAUNTLET_BENCHMARK_DATA_DIR": str(benchmarks),
                "GAUNTLET_ALLOWED_API_BASES": json.dumps(["http://127.0.0.1:*/v1"]),
                "OPENAI_API_KEY": "sk-bench-not-a-real-key",
            },
        )
        server, base = common.start_server(env, data)
        with common.running(server):
            worker = common.start_worker(env, data, 2)
            with common.running(worker):
                key, _tenant, _ = common.create_tenant_and_challenge(base)
                common.wait_idle(server.pids() + worker.pids())
                headers = {"Authorization": f"Bearer {key}"}
                with (
                    httpx.Client(base_url=base, timeout=60, headers=headers) as http,
                    psycopg.connect(database.dsn, autocommit=True) as conn,
                ):
                    challenges: dict[str, str] = {}  # world → challenge id
                    for world, path in paths.items():
                        created = http.post(
                            "/v1/challenges",
                            json={
                                "slug": f"split-{len(challenges)}",
                                "title": world,
                                "kind": "benchmark",
                                "benchmark": {
                                    "name": "jsonl",
                                    "options": {"path": path},
                                    "actor_api_base": model.base_url,
                                },
                                "evaluation": {
                                    "metric": "seq@k",
                                    "k": args.k,
                                    "feedback_mode": "binary",
                                },
                                "scoring": {"strategy": "metric_at_k"},
                                "split": SPLIT,
                            },
                        )
                        if created.status_code != 201:
                            raise RuntimeError(f"challenge: {created.status_code} {created.text}")
                        challenges[world] = created.json()["id"]
                    ids: dict[str, list[str]] = {world: [] for world in challenges}
                    for index in range(args.attempts):
                        for world, challenge_id in challenges.items():
                            ids[world].append(run_one(http, challenge_id, index, args.timeout))
                    figures = {world: measure(conn, found) for world, found in ids.items()}
        report(figures)
        common.flush_broker()


def run_one(http: Any, challenge_id: str, index: int, timeout: float) -> str:
    """Submits an attempt and waits until its private part has run too."""
    response = http.post(
        f"/v1/challenges/{challenge_id}/attempts",
        json={"model": "openai/bench-model", "participant": f"player-{index}"},
    )
    if response.status_code != 202:
        raise RuntimeError(f"submit: {response.status_code} {response.text}")
    attempt_id = str(response.json()["id"])
    deadline = time.monotonic() + timeout
    while True:
        read = http.get(f"/v1/attempts/{attempt_id}").json()
        sealed = (read.get("kind_metrics") or {}).get("sealed") or {}
        if read["status"] == "error" or sealed.get("status") in ("completed", "error"):
            if read["status"] != "completed" or sealed.get("status") != "completed":
                raise RuntimeError(f"attempt {attempt_id}: {read['status']}, {sealed}")
            return attempt_id
        if time.monotonic() > deadline:
            raise RuntimeError(f"attempt {attempt_id} unfinished after {timeout} s")
        time.sleep(0.02)


def measure(conn: Any, attempt_ids: list[str]) -> dict[str, list[float]]:
    rows = conn.execute(
        "SELECT extract(epoch FROM a.finished_at - a.created_at) * 1000, "
        "extract(epoch FROM a.finished_at - a.started_at) * 1000, "
        "extract(epoch FROM s.finished_at - s.started_at) * 1000, "
        "extract(epoch FROM s.finished_at - a.started_at) * 1000, "
        "(a.metrics ->> 'trials')::int, (a.kind_metrics -> 'sealed' ->> 'trials')::int "
        "FROM attempts a JOIN benchmark_sealed_runs s ON s.id = a.id WHERE a.id = ANY(%s)",
        (attempt_ids,),
    ).fetchall()
    names = ("visible_total", "visible_run", "private_run", "whole", "trials", "private_trials")
    return {name: [float(row[i]) for row in rows] for i, name in enumerate(names)}


def report(figures: dict[str, dict[str, list[float]]]) -> None:
    lines = [
        ("visible: created_at -> finished_at", "visible_total"),
        ("visible: started_at -> finished_at", "visible_run"),
        ("private run (admins): its own run", "private_run"),
        ("attempt start -> private run's end", "whole"),
    ]
    for world, found in figures.items():
        print(
            f"\n-- world {world}: trials shown {sorted(set(found['trials']))}, "
            f"private trials (admins) {sorted(set(found['private_trials']))}"
        )
        for label, name in lines:
            print(f"   {label:<38} {common.summary(found[name], (50, 90))}")


if __name__ == "__main__":
    try:
        main()
    finally:
        common.print_end_load()
