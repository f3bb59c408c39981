"""A tenant's share of the workers' queue and the turns: what they cost, and what they buy.

1. Statements (in this process, on a scratch database): TENANTS tenants with QUEUED queued
   attempts each, among FINISHED finished ones each; the time of the submission's read of its
   tenant's place (`AttemptRepository.queue_place`: the share's count and the next turn), for
   a tenant at its share and for one with nothing queued, and of a worker's choice of the next
   attempt (`cross_tenant.in_turn`, what a worker's claim in turn runs, in a transaction):
   medians over --calls calls, and the server's own execution time (EXPLAIN ANALYZE).
2. End to end (`gauntlet serve` and `gauntlet worker --concurrency W` on a scratch database):
   one tenant queues --flood attempts whose model call takes --call-seconds (a fake
   OpenAI-compatible server), then another tenant sends --others attempts of `offline/echo`,
   one after the other; for each: its wait (sent → completed), the flood's attempts waiting
   when it was sent (what first come, first served would have run before it), and those the
   workers started between its sending and its start.

Usage: .venv/bin/python bench/fair_queue.py [--tenants 20] [--queued 500] [--finished 5000]
       [--calls 300] [--flood 100] [--call-seconds 0.5] [--others 5] [--worker-concurrency 2]
       [--skip-statements] [--skip-end-to-end]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common

if TYPE_CHECKING:
    from sqlalchemy import Select


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tenants", type=int, default=20)
    parser.add_argument("--queued", type=int, default=500, help="queued attempts per tenant")
    parser.add_argument("--finished", type=int, default=5000, help="finished ones per tenant")
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--flood", type=int, default=100)
    parser.add_argument("--call-seconds", type=float, default=0.5)
    parser.add_argument("--others", type=int, default=5)
    parser.add_argument("--worker-concurrency", type=int, default=2)
    parser.add_argument("--skip-statements", action="store_true")
    parser.add_argument("--skip-end-to-end", action="store_true")
    return parser.parse_args()


def _fill(database: common.ScratchDatabase, tenants: int, queued: int, finished: int) -> list[Any]:
    import psycopg

    ids = []
    with psycopg.connect(database.dsn, autocommit=True) as conn:
        for number in range(tenants):
            tenant, challenge = uuid.uuid4(), uuid.uuid4()
            ids.append(tenant)
            conn.execute(
                "INSERT INTO tenants (id, slug, name, created_at, status) "
                "VALUES (%s, %s, %s, now(), 'active')",
                (tenant, f"t{number}", f"t{number}"),
            )
            conn.execute(
                "INSERT INTO challenges (id, tenant_id, slug, title, goal, kind, scoring, limits, "
                "visibility, state, created_at, updated_at) VALUES (%s, %s, 'c', 'c', '', "
                "'prompt', '{}', '{}', 'private', 'published', now(), now())",
                (challenge, tenant),
            )
            conn.execute(
                "INSERT INTO attempts (id, tenant_id, challenge_id, status, created_at, "
                "created_at_ms, enqueued_at, run_count, turn, purpose, baseline, spent_usd) "
                "SELECT gen_random_uuid(), %s, %s, CASE WHEN g <= %s THEN 'queued' ELSE "
                "'completed' END, now(), 0, now(), 0, g, 'entry', false, 0 "
                "FROM generate_series(1, %s) g",
                (tenant, challenge, queued, queued + finished),
            )
        conn.execute("ANALYZE")
    return ids


def _median_ms(call: Any, calls: int) -> float:
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def statements(args: argparse.Namespace) -> None:
    import os

    with common.scratch_database() as database:
        tenants = _fill(database, args.tenants, args.queued, args.finished)
        os.environ["GAUNTLET_DATABASE_URL"] = database.url
        os.environ.setdefault("GAUNTLET_ADMIN_TOKEN", common.ADMIN_TOKEN)
        from app.attempt import cross_tenant, repository
        from app.attempt.repository import AttemptRepository
        from app.kit.db import get_sessionmaker, utcnow

        rows = args.tenants * (args.queued + args.finished)
        print(
            f"-- statements: {args.tenants} tenants x {args.queued} queued "
            f"(attempts table: {rows} rows)"
        )
        with get_sessionmaker()() as session:
            full = AttemptRepository(session, tenants[0])
            empty = AttemptRepository(session, uuid.uuid4())

            def choose() -> None:
                # In one transaction, as in a claim's (a row it locked is its own to lock again).
                cross_tenant.in_turn(session, utcnow())

            for name, call in (
                ("queue_place, a tenant at its share", full.queue_place),
                ("queue_place, a tenant with none queued", empty.queue_place),
                ("in_turn (a worker's choice)", choose),
            ):
                call()
                print(f"   {name}: median {_median_ms(call, args.calls):.3f} ms per call")
            session.rollback()
            # The statements those calls run (`AttemptRepository.queue_place`,
            # `cross_tenant.in_turn`), with their parameters.
            explained: tuple[tuple[str, Select[Any], dict[str, Any]], ...] = (
                ("queue_place (at its share)", repository._QUEUE_PLACE, {"tenant_id": tenants[0]}),
                ("in_turn", cross_tenant._IN_TURN, {"now": utcnow()}),
            )
            for name, statement, parameters in explained:
                connection = session.connection()
                compiled = statement.compile(dialect=connection.dialect)
                sql = "EXPLAIN (ANALYZE, FORMAT JSON) " + str(compiled)
                times = []
                for _ in range(20):
                    plan = connection.exec_driver_sql(sql, compiled.construct_params(parameters))
                    times.append(plan.scalar_one()[0]["Execution Time"])
                session.rollback()
                print(f"   {name}: PostgreSQL execution median {statistics.median(times):.3f} ms")


def end_to_end(args: argparse.Namespace) -> None:
    import httpx
    import psycopg

    from tests.fixtures.fake_openai import Behaviour, FakeOpenAIServer

    print(
        f"-- end to end: a flood of {args.flood} attempts of {args.call_seconds} s, worker "
        f"concurrency {args.worker_concurrency}, then {args.others} of another tenant"
    )
    extra = {
        "GAUNTLET_ALLOWED_API_BASES": '["http://127.0.0.1:*/v1"]',
        "OPENAI_API_KEY": "sk-bench-not-a-real-key",
        "GAUNTLET_API_MAX_IN_FLIGHT_PER_TENANT": "64",
    }
    slow = Behaviour.slow(args.call_seconds, "PWNED")
    with (
        FakeOpenAIServer(default=slow) as provider,
        common.broker_lock(),
        common.scratch_database() as database,
        common.data_dir() as folder,
    ):
        common.flush_broker()
        env = common.service_env(database, str(folder), extra=extra)
        server, base = common.start_server(env, folder)
        worker = common.start_worker(env, folder, concurrency=args.worker_concurrency)
        with common.running(server, worker), httpx.Client(base_url=base, timeout=60) as http:
            target = {
                "model": "openai/fake-model",
                "api_base": provider.base_url,
                "system_prompt": "Be terse.",
            }
            flood_key, _, flooded = common.create_tenant_and_challenge(base, target=target)
            other_key, _, other = common.create_tenant_and_challenge(base)
            started = time.monotonic()
            for number in range(args.flood):
                response = http.post(
                    f"/v1/challenges/{flooded}/attempts",
                    json={"prompt": "PWNED", "participant": f"p{number}"},
                    headers={"Authorization": f"Bearer {flood_key}"},
                )
                response.raise_for_status()
            print(f"   flood sent in {time.monotonic() - started:.1f} s")
            for number in range(args.others):
                sent = time.monotonic()
                response = http.post(
                    f"/v1/challenges/{other}/attempts",
                    json={"prompt": "PWNED", "participant": f"o{number}"},
                    headers={"Authorization": f"Bearer {other_key}"},
                )
                response.raise_for_status()
                attempt = response.json()["id"]
                while True:
                    state = http.get(
                        f"/v1/attempts/{attempt}", headers={"Authorization": f"Bearer {other_key}"}
                    ).json()
                    if state["status"] in ("completed", "error"):
                        break
                    time.sleep(0.02)
                waited = time.monotonic() - sent
                with psycopg.connect(database.dsn) as conn:
                    created, began, tenant = common.one_row(
                        conn.execute(
                            "SELECT created_at, started_at, tenant_id FROM attempts WHERE id = %s",
                            (attempt,),
                        )
                    )
                    waiting, overtaking = common.one_row(
                        conn.execute(
                            "SELECT count(*) FILTER (WHERE started_at IS NULL OR started_at > %s), "
                            "count(*) FILTER (WHERE started_at > %s AND started_at < %s) "
                            "FROM attempts WHERE tenant_id <> %s",
                            (created, created, began, tenant),
                        )
                    )
                print(
                    f"   other tenant's attempt {number + 1}: {state['status']} after "
                    f"{waited:.2f} s; the flood's attempts waiting when it was sent: {waiting}; "
                    f"started between its sending and its start: {overtaking}"
                )


def main() -> None:
    args = parse_args()
    common.exit_on_sigterm()
    common.print_machine_info("fair queue: the queue's share and the turns")
    if not args.skip_statements:
        statements(args)
    if not args.skip_end_to_end:
        end_to_end(args)
    common.print_end_load()


if __name__ == "__main__":
    main()
