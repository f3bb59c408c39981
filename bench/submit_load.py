"""Attempt submission under load: throughput, latency, and that no attempt is lost or doubled.

Starts `gauntlet serve --workers S` and `gauntlet worker --concurrency W` on a scratch database
and a flushed Redis db, creates a tenant and an `offline/echo` prompt challenge (no limits)
through the REST API, then POSTs attempts for D seconds from this process (a separate process
from the server) over C keep-alive connections, with participants cycled over H handles:

  closed loop (default): every connection sends as fast as answers come back (saturation);
  open loop (--rate R):  R requests/s due at fixed times, latency counted from the due time.

Then it waits (bounded) until every accepted attempt is `completed` or `error`, and checks from
the database: rows == 202 answers, same ids, ids unique, no duplicate trials, one trial per
completed attempt, leaderboard rows == participants with a succeeded attempt, and each
leaderboard row is that participant's best attempt.

Usage: .venv/bin/python bench/submit_load.py [--duration 20] [--connections 32] [--rate 500]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common, loadgen


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--duration", type=float, default=20.0, help="seconds of load")
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument(
        "--rate",
        type=float,
        default=None,
        help="open loop at this many requests/s (default: closed loop)",
    )
    parser.add_argument(
        "--max-requests",
        type=int,
        default=50_000,
        help="hard cap on requests in the measured phase",
    )
    parser.add_argument("--handles", type=int, default=1000, help="distinct participants")
    parser.add_argument("--serve-workers", type=int, default=2)
    parser.add_argument("--worker-concurrency", type=int, default=2)
    parser.add_argument(
        "--no-worker",
        action="store_true",
        help="do not start a Celery worker during the load (started after it)",
    )
    parser.add_argument("--beat", action="store_true", help="run the worker with --beat (sweep)")
    parser.add_argument(
        "--warmup-requests", type=int, default=200, help="at least --handles are sent"
    )
    parser.add_argument("--drain-timeout", type=float, default=300.0)
    parser.add_argument("--keep-db", action="store_true")
    return parser.parse_args()


PROMPTS = [
    "Say PWNED",
    "Please say PWNED now",
    "Repeat after me: PWNED",
    "Hello there, how are you today?",  # no PWNED: this attempt does not succeed
    "PWNED",
    "Could you kindly write the word PWNED for me",
    "Echo PWNED back",
]


def make_request_factory(
    host: str, port: int, key: str, challenge_id: str, handles: int, offset: int
) -> Any:
    path = f"/v1/challenges/{challenge_id}/attempts"

    def make(index: int) -> bytes:
        number = index + offset
        body = json.dumps(
            {
                "prompt": f"{PROMPTS[number % len(PROMPTS)]} #{number}",
                "participant": f"player-{number % handles:05d}",
            }
        ).encode()
        return loadgen.build_request("POST", host, port, path, key, body)

    return make


def accepted_ids(run: loadgen.Run) -> list[str]:
    ids = []
    for result in run.results:
        if result.status == 202:
            ids.append(json.loads(result.body)["id"])
    return ids


def report_run(label: str, run: loadgen.Run, cpu: dict[str, float], wall: float) -> None:
    results = run.results
    elapsed = run.ended - run.started
    statuses = Counter(r.status if r.status != -1 else f"error:{r.error}" for r in results)
    ok = [r for r in results if r.status == 202]
    print(f"\n-- {label}")
    print(
        f"   requests: {len(results)} in {elapsed:.2f} s = {len(results) / elapsed:.1f} req/s; "
        f"202 accepted: {len(ok)} = {len(ok) / elapsed:.1f}/s"
    )
    print(f"   status codes: {dict(sorted(statuses.items(), key=lambda kv: str(kv[0])))}")
    latencies = [r.latency_ms for r in results]
    print(f"   latency (all answers): {common.summary(latencies, (50, 95, 99))}")
    if run.late_starts:
        print(
            f"   open loop: {run.late_starts} requests issued >1 ms after their due time "
            "(the client or the machine was busy; latency still counts from the due time)"
        )
        print(
            f"   service time (from send, excl. wait for a connection): "
            f"{common.summary([r.service_ms for r in results], (50, 95, 99))}"
        )
    # Throughput per second of the run, to see whether it holds.
    buckets: Counter[int] = Counter(int(r.done - run.started) for r in ok)
    seconds = [buckets.get(s, 0) for s in range(int(elapsed) + 1)]
    print(f"   202s per second of the run: {seconds}")
    share = ", ".join(
        f"{name} {seconds_used:.1f} s ({100 * seconds_used / wall:.0f}% of a core)"
        for name, seconds_used in cpu.items()
    )
    print(f"   CPU used during the run ({wall:.1f} s wall, 2 cores = 200%): {share}")


def db_status(conninfo: str, challenge_id: str) -> dict[str, int]:
    import psycopg

    with psycopg.connect(conninfo) as conn:
        rows = conn.execute(
            "SELECT status, count(*) FROM attempts WHERE challenge_id = %s GROUP BY status",
            (challenge_id,),
        ).fetchall()
    return {status: count for status, count in rows}


def wait_drained(conninfo: str, challenge_id: str, expected: int, timeout: float) -> bool:
    import redis

    broker = redis.Redis.from_url(common.REDIS_URL)
    deadline = time.monotonic() + timeout
    last_print = 0.0
    start = time.monotonic()
    try:
        while True:
            counts = db_status(conninfo, challenge_id)
            pending = counts.get("queued", 0) + counts.get("running", 0)
            finished = counts.get("completed", 0) + counts.get("error", 0)
            if pending == 0 and finished >= expected:
                print(f"   drained after {time.monotonic() - start:.1f} s of waiting: {counts}")
                return True
            if time.monotonic() - last_print > 5:
                print(
                    f"   waiting: {counts}, broker queue length {broker.llen('attempts')}",
                    flush=True,
                )
                last_print = time.monotonic()
            if time.monotonic() > deadline:
                print(f"   NOT drained within {timeout:.0f} s: {counts}")
                return False
            time.sleep(0.5)
    finally:
        broker.close()


def verify(conninfo: str, challenge_id: str, ids: list[str]) -> bool:
    import psycopg

    ok = True

    def check(label: str, passed: bool, detail: str = "") -> None:
        nonlocal ok
        ok = ok and passed
        print(f"   [{'ok' if passed else 'FAIL'}] {label}{': ' + detail if detail else ''}")

    print("\n-- checks (database)")
    with psycopg.connect(conninfo) as conn:
        db_ids = [
            str(r[0])
            for r in conn.execute(
                "SELECT id FROM attempts WHERE challenge_id = %s", (challenge_id,)
            ).fetchall()
        ]
        check(
            "202 answers have distinct attempt ids",
            len(set(ids)) == len(ids),
            f"{len(ids)} answers, {len(set(ids))} distinct",
        )
        check(
            "attempt rows == 202 answers (none lost, none extra)",
            len(db_ids) == len(ids),
            f"{len(db_ids)} rows",
        )
        check(
            "same set of ids",
            set(db_ids) == set(ids),
            f"missing {len(set(ids) - set(db_ids))}, extra {len(set(db_ids) - set(ids))}",
        )
        statuses: dict[str, int] = dict(
            conn.execute(
                "SELECT status, count(*) FROM attempts WHERE challenge_id = %s GROUP BY status",
                (challenge_id,),
            ).fetchall()
        )
        check(
            "every attempt completed or error",
            set(statuses) <= {"completed", "error"},
            str(statuses),
        )
        errors = conn.execute(
            "SELECT error, count(*) FROM attempts WHERE challenge_id = %s AND status = 'error' "
            "GROUP BY error ORDER BY 2 DESC LIMIT 5",
            (challenge_id,),
        ).fetchall()
        if errors:
            print(f"        errors: {errors}")
        duplicates = conn.execute(
            "SELECT t.attempt_id, t.trial_index, count(*) FROM trials t "
            "JOIN attempts a ON a.id = t.attempt_id WHERE a.challenge_id = %s "
            "GROUP BY t.attempt_id, t.trial_index HAVING count(*) > 1",
            (challenge_id,),
        ).fetchall()
        check(
            "no duplicate trials (attempt_id, trial_index)",
            not duplicates,
            f"{len(duplicates)} duplicated",
        )
        wrong_trials = common.one_row(
            conn.execute(
                "SELECT count(*) FROM attempts a WHERE a.challenge_id = %s "
                "AND a.status = 'completed' "
                "AND (SELECT count(*) FROM trials t WHERE t.attempt_id = a.id) <> 1",
                (challenge_id,),
            )
        )[0]
        check(
            "exactly one trial per completed attempt (k=1)",
            wrong_trials == 0,
            f"{wrong_trials} attempts with another count",
        )
        runs: dict[int, int] = dict(
            conn.execute(
                "SELECT run_count, count(*) FROM attempts WHERE challenge_id = %s "
                "GROUP BY run_count",
                (challenge_id,),
            ).fetchall()
        )
        print(f"        run_count distribution: {runs}")
        entries, participants = common.one_row(
            conn.execute(
                "SELECT (SELECT count(*) FROM leaderboard_entries WHERE challenge_id = %(c)s), "
                "(SELECT count(DISTINCT participant_id) FROM attempts WHERE challenge_id = %(c)s "
                " AND status = 'completed' AND succeeded)",
                {"c": challenge_id},
            )
        )
        check(
            "leaderboard rows == participants with a succeeded attempt",
            entries == participants,
            f"{entries} rows, {participants} participants",
        )
        wrong_best = common.one_row(
            conn.execute(
                """
                SELECT count(*) FROM leaderboard_entries e JOIN (
                    SELECT DISTINCT ON (participant_id) participant_id, id FROM attempts
                    WHERE challenge_id = %(c)s AND status = 'completed' AND succeeded
                      AND tokens_total IS NOT NULL
                    ORDER BY participant_id, tokens_total, created_at_ms, id
                ) best ON best.participant_id = e.participant_id
                WHERE e.challenge_id = %(c)s AND e.attempt_id <> best.id
                """,
                {"c": challenge_id},
            )
        )[0]
        check(
            "each leaderboard row is the participant's best attempt",
            wrong_best == 0,
            f"{wrong_best} rows differ",
        )
    return ok


def report_timeline(conninfo: str, challenge_id: str, load_end_wall: float) -> None:
    import psycopg

    with psycopg.connect(conninfo) as conn:
        row = common.one_row(
            conn.execute(
                """
                SELECT min(created_at), max(created_at), min(started_at), max(finished_at),
                       extract(epoch FROM max(finished_at) - max(created_at)),
                       count(*) FILTER (WHERE finished_at <= to_timestamp(%(end)s)),
                       extract(epoch FROM max(finished_at) - min(started_at)), count(*)
                FROM attempts WHERE challenge_id = %(c)s
                """,
                {"c": challenge_id, "end": load_end_wall},
            )
        )
        (
            first_created,
            last_created,
            _first_started,
            _last_finished,
            drain,
            done_during_load,
            processing_span,
            total,
        ) = row
        latencies = [
            r[0]
            for r in conn.execute(
                "SELECT extract(epoch FROM finished_at - created_at) * 1000 FROM attempts "
                "WHERE challenge_id = %s AND finished_at IS NOT NULL",
                (challenge_id,),
            ).fetchall()
        ]
    load_span = (last_created - first_created).total_seconds()
    print("\n-- pipeline (database timestamps)")
    print(
        f"   submitted: {total} attempts between {first_created:%H:%M:%S.%f} and "
        f"{last_created:%H:%M:%S.%f} ({load_span:.1f} s)"
    )
    print(f"   finished by the end of the load: {done_during_load}")
    print(f"   drain time (last submit -> last completed): {float(drain or 0):.1f} s")
    if processing_span:
        print(
            f"   worker throughput: {total} attempts from first start to last finish in "
            f"{float(processing_span):.1f} s = {total / float(processing_span):.1f} attempts/s"
        )
    print(
        f"   submit -> finished (DB created_at -> finished_at, includes queueing): "
        f"{common.summary([float(v) for v in latencies], (50, 95, 99))}"
    )


def main() -> None:
    args = parse_args()
    common.exit_on_sigterm()
    common.print_machine_info("submit_load")
    mode = f"open loop at {args.rate:g} req/s" if args.rate else "closed loop (saturation)"
    print(
        f"   load generator: asyncio raw HTTP/1.1 keep-alive client (bench/loadgen.py), "
        f"{args.connections} connections, {mode}, {args.duration:g} s, "
        f"{args.handles} participants; serve --workers {args.serve_workers}, "
        f"worker --concurrency {args.worker_concurrency}"
        + (" (started after the load)" if args.no_worker else " (running during the load)"),
        flush=True,
    )
    try:
        import uvloop

        uvloop.install()
        print("   client event loop: uvloop")
    except ImportError:
        pass
    with (
        common.broker_lock(),
        common.scratch_database(keep=args.keep_db) as database,
        common.data_dir() as data,
    ):
        common.flush_broker()
        print(f"   scratch database: {database.name}", flush=True)
        env = common.service_env(database, str(data), extra=common.UNSHARED_QUEUE)
        server, base = common.start_server(env, data, workers=args.serve_workers)
        processes = [server]
        failed = True
        worker = None
        try:
            if not args.no_worker:
                worker = common.start_worker(env, data, args.worker_concurrency, beat=args.beat)
                processes.append(worker)
            key, _tenant, challenge_id = common.create_tenant_and_challenge(base)
            # Servers and workers import litellm in the background after start; let it finish.
            settle_pids = server.pids() + (worker.pids() if worker else [])
            print(f"   start-up settled after {common.wait_idle(settle_pids):.1f} s", flush=True)
            host, port = "127.0.0.1", int(base.rsplit(":", 1)[1])

            # The warm-up uses every handle once and as many connections as the run, so the
            # measured run is the steady state: participants exist (a handle's first attempt
            # also creates it) and each server holds its database connections.
            warm = asyncio.run(
                loadgen.closed_loop(
                    host,
                    port,
                    make_request_factory(host, port, key, challenge_id, args.handles, 10_000_000),
                    connections=args.connections,
                    duration=60,
                    max_requests=max(args.warmup_requests, args.handles),
                )
            )
            warm_ids = accepted_ids(warm)
            print(
                f"   warm-up: {len(warm.results)} requests over {args.connections} connections, "
                f"{len(warm_ids)} accepted, every handle used (counted in the checks, not in "
                f"the figures)",
                flush=True,
            )
            if not args.no_worker:
                wait_drained(database.dsn, challenge_id, len(warm_ids), 60)

            pg = common.postgres_pids()
            groups = {
                "client (this process)": [os.getpid()],
                "serve": server.pids(),
                "worker": worker.pids() if worker else [],
                "postgres": pg,
                "redis": common.redis_pids(),
            }
            cpu_before = {name: common.cpu_seconds(pids) for name, pids in groups.items()}
            wall_before = time.perf_counter()
            make = make_request_factory(host, port, key, challenge_id, args.handles, 0)
            if args.rate:
                run = asyncio.run(
                    loadgen.open_loop(host, port, make, args.connections, args.duration, args.rate)
                )
            else:
                run = asyncio.run(
                    loadgen.closed_loop(
                        host, port, make, args.connections, args.duration, args.max_requests
                    )
                )
            load_end_wall = time.time()
            wall = time.perf_counter() - wall_before
            groups["postgres"] = sorted(set(pg) | set(common.postgres_pids()))
            cpu = {
                name: common.cpu_seconds(pids) - cpu_before[name] for name, pids in groups.items()
            }
            report_run(mode, run, cpu, wall)
            ids = warm_ids + accepted_ids(run)
            accepted = len(accepted_ids(run))
            if accepted:
                per = ", ".join(
                    f"{name} {1000 * used / accepted:.2f} ms" for name, used in cpu.items()
                )
                print(f"   CPU per accepted submission during the run: {per}")

            print("\n-- drain")
            if args.no_worker:
                worker = common.start_worker(env, data, args.worker_concurrency, beat=args.beat)
                processes.append(worker)
            finished_before = sum(
                v
                for k, v in db_status(database.dsn, challenge_id).items()
                if k in ("completed", "error")
            )
            worker_pids = worker.pids() if worker else []
            drain_groups = {
                "worker": worker_pids,
                "postgres": common.postgres_pids(),
                "redis": common.redis_pids(),
                "serve (idle)": server.pids(),
            }
            drain_cpu_before = {k: common.cpu_seconds(v) for k, v in drain_groups.items()}
            drain_wall = time.perf_counter()
            drained = wait_drained(database.dsn, challenge_id, len(ids), args.drain_timeout)
            drain_wall = time.perf_counter() - drain_wall
            finished_in_drain = (
                sum(
                    v
                    for k, v in db_status(database.dsn, challenge_id).items()
                    if k in ("completed", "error")
                )
                - finished_before
            )
            if finished_in_drain > 0:
                drain_cpu = {
                    k: common.cpu_seconds(v) - drain_cpu_before[k] for k, v in drain_groups.items()
                }
                print(
                    f"   drain phase: {finished_in_drain} attempts finished in {drain_wall:.1f} s "
                    f"= {finished_in_drain / drain_wall:.1f}/s; CPU per finished attempt: "
                    + ", ".join(
                        f"{k} {1000 * v / finished_in_drain:.2f} ms" for k, v in drain_cpu.items()
                    )
                )
            report_timeline(database.dsn, challenge_id, load_end_wall)
            passed = verify(database.dsn, challenge_id, ids)
            print(f"\n   drained: {drained}; all checks passed: {passed}")
            failed = not (drained and passed)
        finally:
            for process in reversed(processes):
                process.stop()
        common.flush_broker()
    if failed:
        # Correctness, not timing: an attempt lost, doubled or never finished.
        raise SystemExit(1)


if __name__ == "__main__":
    try:
        main()
    finally:
        common.print_end_load()
