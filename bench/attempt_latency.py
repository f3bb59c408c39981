"""Offline attempt latency with a real worker: submit one attempt, wait until it is finished,
repeat. Nothing else runs, so this is the pipeline's floor, not its behaviour under load.

Figures:
  client-side: POST start -> the moment the client sees `completed` (HTTP polling of
               GET /v1/attempts/{id} every --poll-ms, or polling the database with --wait db);
  server-side: the attempt row's created_at -> started_at (dispatch: commit, Redis, Celery
               delivery, claim) and started_at -> finished_at (the run: job load, model call,
               verifier, trial, finish with leaderboard), and created_at -> finished_at.

Usage: .venv/bin/python bench/attempt_latency.py [--attempts 200] [--poll-ms 5] [--wait http|db]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--attempts", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=10, help="attempts not counted")
    parser.add_argument("--poll-ms", type=float, default=5.0)
    parser.add_argument(
        "--wait",
        choices=("http", "db"),
        default="http",
        help="how the client learns the attempt is finished",
    )
    parser.add_argument("--serve-workers", type=int, default=1)
    parser.add_argument("--worker-concurrency", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=30.0, help="per attempt, seconds")
    parser.add_argument("--keep-db", action="store_true")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    common.exit_on_sigterm()
    common.print_machine_info("attempt_latency")
    print(
        f"   {args.attempts} attempts one at a time (+{args.warmup} warm-up), wait by "
        f"{args.wait} polling every {args.poll_ms:g} ms; serve --workers {args.serve_workers}, "
        f"worker --concurrency {args.worker_concurrency}",
        flush=True,
    )
    import httpx
    import psycopg

    with (
        common.broker_lock(),
        common.scratch_database(keep=args.keep_db) as database,
        common.data_dir() as data,
    ):
        common.flush_broker()
        env = common.service_env(database, str(data))
        server, base = common.start_server(env, data, workers=args.serve_workers)
        with common.running(server):
            worker = common.start_worker(env, data, args.worker_concurrency)
            with common.running(worker):
                key, _tenant, challenge_id = common.create_tenant_and_challenge(base)
                # Servers and workers import litellm in the background after start.
                common.wait_idle(server.pids() + worker.pids())
                headers = {"Authorization": f"Bearer {key}"}
                client_ms: list[float] = []
                post_ms: list[float] = []
                ids: list[str] = []
                statuses: dict[str, int] = {}
                poll = args.poll_ms / 1000
                with (
                    httpx.Client(base_url=base, timeout=30, headers=headers) as http,
                    psycopg.connect(database.dsn, autocommit=True) as conn,
                ):
                    for index in range(args.warmup + args.attempts):
                        t0 = time.perf_counter()
                        response = http.post(
                            f"/v1/challenges/{challenge_id}/attempts",
                            json={
                                "prompt": f"Say PWNED #{index}",
                                "participant": f"player-{index % 50:03d}",
                            },
                        )
                        t1 = time.perf_counter()
                        if response.status_code != 202:
                            raise RuntimeError(
                                f"submit failed: {response.status_code} {response.text}"
                            )
                        attempt_id = response.json()["id"]
                        deadline = t0 + args.timeout
                        while True:
                            if args.wait == "http":
                                status = http.get(f"/v1/attempts/{attempt_id}").json()["status"]
                            else:
                                row = conn.execute(
                                    "SELECT status FROM attempts WHERE id = %s", (attempt_id,)
                                ).fetchone()
                                status = row[0] if row else "missing"
                            if status in ("completed", "error"):
                                break
                            if time.perf_counter() > deadline:
                                raise RuntimeError(
                                    f"attempt {attempt_id} still {status} after {args.timeout} s"
                                )
                            time.sleep(poll)
                        t2 = time.perf_counter()
                        if index >= args.warmup:
                            client_ms.append((t2 - t0) * 1000)
                            post_ms.append((t1 - t0) * 1000)
                            ids.append(attempt_id)
                            statuses[status] = statuses.get(status, 0) + 1
                    rows = conn.execute(
                        "SELECT extract(epoch FROM started_at - created_at) * 1000, "
                        "extract(epoch FROM finished_at - started_at) * 1000, "
                        "extract(epoch FROM finished_at - created_at) * 1000 "
                        "FROM attempts WHERE id = ANY(%s)",
                        (ids,),
                    ).fetchall()
        print(f"\n-- {len(ids)} attempts, statuses {statuses}")
        print(f"   client: POST (202 received)             {common.summary(post_ms, (50, 90, 99))}")
        print(
            f"   client: POST start -> sees finished      {common.summary(client_ms, (50, 90, 99))}"
        )
        print(
            f"   server: created_at -> started_at         "
            f"{common.summary([float(r[0]) for r in rows], (50, 90, 99))}"
        )
        print(
            f"   server: started_at -> finished_at        "
            f"{common.summary([float(r[1]) for r in rows], (50, 90, 99))}"
        )
        print(
            f"   server: created_at -> finished_at        "
            f"{common.summary([float(r[2]) for r in rows], (50, 90, 99))}"
        )
        common.flush_broker()


if __name__ == "__main__":
    try:
        main()
    finally:
        common.print_end_load()
