"""Leaderboard reads over a large challenge: the service's page query, HTTP, and a naive query.

In a scratch database: one tenant and one challenge (made through the service layer), N
participants and M completed attempts bulk-loaded with COPY, then the leaderboard table built
the way the workers maintain it (one row per participant: their best attempt under
`fewest_tokens`, ties to the earlier attempt, then the smaller attempt id), VACUUM ANALYZE.

Measured:
  (a) `LeaderboardRepository.page` (app.leaderboard.repository), bound to the bench's tenant,
      in-process (the exact statements the service runs), at offset 0 and at a deep offset,
      plus EXPLAIN ANALYZE execution times of those statements;
  (b) GET /v1/challenges/{id}/leaderboard?limit=50 through `gauntlet serve`, sequential,
      client-side;
  (c) for contrast, the naive query over the attempts table (best attempt per participant);
  (d) `LeaderboardRepository.offer` (the upsert done when an attempt completes).

Usage: .venv/bin/python bench/leaderboard_read.py [--attempts 1000000] [--participants 10000]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import statistics
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common

if TYPE_CHECKING:
    from app.leaderboard.ranking import PlacedAttempt


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--attempts", type=int, default=1_000_000)
    parser.add_argument("--participants", type=int, default=10_000)
    parser.add_argument("--success-rate", type=float, default=0.9)
    parser.add_argument("--reads", type=int, default=500, help="page() calls per offset")
    parser.add_argument("--deep-offset", type=int, default=None, help="default: participants - 50")
    parser.add_argument("--explain-runs", type=int, default=50)
    parser.add_argument("--http-requests", type=int, default=500)
    parser.add_argument("--serve-workers", type=int, default=1)
    parser.add_argument("--naive-runs", type=int, default=20)
    parser.add_argument("--offers", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--skip-http", action="store_true")
    parser.add_argument("--keep-db", action="store_true", help="do not drop the scratch database")
    return parser.parse_args()


def use_database(url: str) -> None:
    """Points the app's settings and cached engine at the scratch database."""
    os.environ["GAUNTLET_DATABASE_URL"] = url
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from app.kit.config import get_settings
    from app.kit.db import get_engine, get_sessionmaker

    get_settings.cache_clear()
    get_engine.cache_clear()
    get_sessionmaker.cache_clear()


# Data --------------------------------------------------------------------------------------


def create_tenant_and_challenge() -> tuple[uuid.UUID, uuid.UUID, str]:
    from app.challenge.schemas import ChallengeCreate
    from app.challenge.service import create_challenge
    from app.kit.db import session_scope
    from app.seed import DEMO_CHALLENGE
    from app.tenant.service import create_tenant

    with session_scope() as session:
        tenant, _row, key = create_tenant(session, "bench-lb", "bench leaderboard")
        challenge = create_challenge(
            session,
            tenant.id,
            ChallengeCreate.model_validate(DEMO_CHALLENGE),
        )
        return tenant.id, challenge.id, key


def _ts(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat()


def load_rows(
    conninfo: str,
    tenant_id: uuid.UUID,
    challenge_id: uuid.UUID,
    participants: int,
    attempts: int,
    success_rate: float,
    rng: random.Random,
) -> list[uuid.UUID]:
    import psycopg

    participant_ids = [uuid.UUID(int=rng.getrandbits(128), version=4) for _ in range(participants)]
    start_ms = int((datetime.now(UTC) - timedelta(days=30)).timestamp() * 1000)
    # Spread the attempts over ~29 days, strictly increasing.
    step_ms = max(1, (29 * 86_400_000) // max(attempts, 1))
    tenant, challenge = str(tenant_id), str(challenge_id)
    with psycopg.connect(conninfo) as conn:
        t0 = time.perf_counter()
        with (
            conn.cursor() as cur,
            cur.copy(
                "COPY participants (id, tenant_id, handle, password_hash, created_at) FROM STDIN"
            ) as copy,
        ):
            created = _ts(start_ms - 86_400_000)
            buffer = io.StringIO()
            for index, pid in enumerate(participant_ids):
                buffer.write(f"{pid}\t{tenant}\tplayer-{index:06d}\t\\N\t{created}\n")
            copy.write(buffer.getvalue())
        conn.commit()
        t1 = time.perf_counter()
        print(f"   COPY participants: {participants} rows in {t1 - t0:.2f} s", flush=True)

        columns = (
            "id, tenant_id, challenge_id, participant_id, status, kind_fields, "
            "request_fingerprint, created_at, created_at_ms, enqueued_at, started_at, "
            "finished_at, run_count, succeeded, tokens_total, elapsed_ms, cost_usd, metrics"
        )
        chunk = 50_000
        with conn.cursor() as cur, cur.copy(f"COPY attempts ({columns}) FROM STDIN") as copy:
            buffer = io.StringIO()
            for index in range(attempts):
                created_ms = start_ms + index * step_ms
                participant = participant_ids[rng.randrange(participants)]
                succeeded = rng.random() < success_rate
                tokens = rng.randint(8, 4000)
                elapsed = rng.randint(5, 2000)
                created = _ts(created_ms)
                metrics = (
                    f'{{"succeeded": {"true" if succeeded else "false"}, "tokens_total": {tokens}, '
                    f'"elapsed_ms": {elapsed}, "rating": null, "created_at": {created_ms}, '
                    f'"cost_usd": 0.0, "trials": 1}}'
                )
                buffer.write(
                    f"{uuid.UUID(int=rng.getrandbits(128), version=4)}\t{tenant}\t{challenge}\t"
                    f'{participant}\tcompleted\t{{"prompt": "Say PWNED please {index}"}}\t'
                    f"\\N\t{created}\t"
                    f"{created_ms}\t{created}\t{created}\t{_ts(created_ms + elapsed)}\t1\t"
                    f"{'t' if succeeded else 'f'}\t{tokens}\t{elapsed}\t0\t{metrics}\n"
                )
                if (index + 1) % chunk == 0:
                    copy.write(buffer.getvalue())
                    buffer = io.StringIO()
            copy.write(buffer.getvalue())
        conn.commit()
        t2 = time.perf_counter()
        print(
            f"   COPY attempts: {attempts} rows in {t2 - t1:.2f} s "
            "(Python row generation included; the table's 6 indexes maintained)",
            flush=True,
        )
    return participant_ids


# The leaderboard as the workers maintain it: for fewest_tokens, rank_key = tokens_total of a
# succeeded attempt (app.leaderboard.ranking.rank_key), rank_tiebreak 0; among equal keys the
# earlier attempt (created_at_ms), then the smaller attempt id (uuid order = its text order).
BUILD_LEADERBOARD = """
INSERT INTO leaderboard_entries (challenge_id, participant_id, tenant_id, attempt_id, rank_key,
    rank_tiebreak, attempt_created_at_ms, score, succeeded, tokens_total, elapsed_ms, rating,
    updated_at)
SELECT DISTINCT ON (a.participant_id) a.challenge_id, a.participant_id, a.tenant_id, a.id,
    a.tokens_total::float8, 0.0, a.created_at_ms, a.score, a.succeeded, a.tokens_total,
    a.elapsed_ms, a.rating, now()
FROM attempts a
WHERE a.challenge_id = %(challenge)s AND a.status = 'completed' AND a.succeeded
  AND a.tokens_total IS NOT NULL
ORDER BY a.participant_id, a.tokens_total, a.created_at_ms, a.id
"""


def build_leaderboard(conninfo: str, challenge_id: uuid.UUID) -> int:
    import psycopg

    with psycopg.connect(conninfo) as conn:
        t0 = time.perf_counter()
        count = conn.execute(BUILD_LEADERBOARD, {"challenge": challenge_id}).rowcount
        conn.commit()
        print(f"   leaderboard built: {count} rows in {time.perf_counter() - t0:.2f} s")
    with psycopg.connect(conninfo, autocommit=True) as conn:
        t0 = time.perf_counter()
        conn.execute("VACUUM ANALYZE")
        print(f"   VACUUM ANALYZE: {time.perf_counter() - t0:.2f} s", flush=True)
    return count


def fewest_tokens_entry(
    challenge_id: uuid.UUID,
    participant_id: uuid.UUID,
    attempt_id: uuid.UUID,
    tenant_id: uuid.UUID,
    created_ms: int,
    tokens: int,
    elapsed: int,
    succeeded: bool = True,
) -> PlacedAttempt | None:
    """An attempt row as app.leaderboard.ranking places it on a fewest_tokens board (a
    PlacedAttempt), or None if it does not rank."""
    from app.kit.db import from_epoch_ms
    from app.leaderboard.ranking import RankedAttempt, placed
    from app.scoring.measures import AttemptMetrics

    metrics = AttemptMetrics(
        succeeded=succeeded,
        created_at=from_epoch_ms(created_ms),
        elapsed_ms=elapsed,
        tokens_total=tokens,
    )
    ranked = RankedAttempt(
        tenant_id=tenant_id,
        challenge_id=challenge_id,
        participant_id=participant_id,
        attempt_id=attempt_id,
        metrics=metrics,
        score=None,
    )
    return placed("fewest_tokens", ranked)


def check_against_ranking(
    conninfo: str,
    challenge_id: uuid.UUID,
    participant_ids: list[uuid.UUID],
    rng: random.Random,
    samples: int = 20,
) -> None:
    """The built rows agree with app.leaderboard.ranking for a sample of participants."""
    import psycopg

    mismatches = 0
    with psycopg.connect(conninfo) as conn:
        for participant in rng.sample(participant_ids, min(samples, len(participant_ids))):
            rows = conn.execute(
                "SELECT id, tenant_id, created_at_ms, tokens_total, elapsed_ms, succeeded "
                "FROM attempts WHERE challenge_id = %s AND participant_id = %s",
                (challenge_id, participant),
            ).fetchall()
            best = None
            for row in rows:
                candidate = fewest_tokens_entry(challenge_id, participant, *row)
                if candidate is not None and (best is None or candidate.place() < best.place()):
                    best = candidate
            stored = conn.execute(
                "SELECT attempt_id FROM leaderboard_entries WHERE challenge_id = %s "
                "AND participant_id = %s",
                (challenge_id, participant),
            ).fetchone()
            expected = best.attempt.attempt_id if best else None
            got = stored[0] if stored else None
            if expected != got:
                mismatches += 1
    print(
        f"   check vs app.leaderboard.ranking on {samples} participants: "
        f"{'OK' if mismatches == 0 else f'{mismatches} MISMATCHES'}"
    )


# Measurements ------------------------------------------------------------------------------


class StatementCapture:
    """Records the SQL and parameters SQLAlchemy sends, to EXPLAIN exactly those statements."""

    def __init__(self, engine: Any) -> None:
        from sqlalchemy import event

        self.statements: list[tuple[str, Any]] = []
        self.enabled = False
        event.listen(engine, "before_cursor_execute", self._record)

    def _record(self, _conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        if self.enabled:
            self.statements.append((statement, parameters))


def measure_page(
    engine: Any,
    tenant_id: uuid.UUID,
    challenge_id: uuid.UUID,
    offset: int,
    reads: int,
    explain_runs: int,
) -> dict[str, Any]:
    from sqlalchemy.orm import Session

    from app.leaderboard.repository import LeaderboardRepository

    capture = StatementCapture(engine)
    # Warm-up (also captures the statements).
    with Session(engine) as session:
        capture.enabled = True
        rows, total = LeaderboardRepository(session, tenant_id).page(
            challenge_id, limit=50, offset=offset
        )
        capture.enabled = False
    assert len(rows) == min(50, max(total - offset, 0)), (len(rows), total, offset)
    for _ in range(20):
        with Session(engine) as session:
            LeaderboardRepository(session, tenant_id).page(challenge_id, limit=50, offset=offset)

    # In one open session (connection already checked out, transaction open): the 2 queries.
    in_session = []
    with Session(engine) as session:
        boards = LeaderboardRepository(session, tenant_id)
        for _ in range(reads):
            t0 = time.perf_counter()
            boards.page(challenge_id, limit=50, offset=offset)
            in_session.append((time.perf_counter() - t0) * 1000)
    # As a request does it: new session, pool checkout (with pre-ping), the repository bound to
    # the tenant, queries, close.
    unit_of_work = []
    for _ in range(reads):
        t0 = time.perf_counter()
        with Session(engine) as session:
            LeaderboardRepository(session, tenant_id).page(challenge_id, limit=50, offset=offset)
        unit_of_work.append((time.perf_counter() - t0) * 1000)

    # EXPLAIN ANALYZE of the captured statements, on the raw DBAPI connection.
    explains: list[dict[str, Any]] = []
    raw = engine.raw_connection()
    try:
        cursor = raw.cursor()
        for statement, parameters in capture.statements:
            executions, plannings, plan_text = [], [], ""
            for run in range(explain_runs):
                cursor.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + statement, parameters)
                plan = cursor.fetchone()[0]
                if isinstance(plan, str):
                    plan = json.loads(plan)
                executions.append(plan[0]["Execution Time"])
                plannings.append(plan[0]["Planning Time"])
                if run == 0:
                    cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + statement, parameters)
                    plan_text = "\n".join(r[0] for r in cursor.fetchall())
            explains.append(
                {
                    "sql": statement,
                    "params": parameters,
                    "execution": executions,
                    "planning": plannings,
                    "plan": plan_text,
                }
            )
        # The same statements on the raw DBAPI connection, rows fetched as tuples: the database
        # and round-trip share of page(), without SQLAlchemy's ORM work.
        raw_ms = []
        for _ in range(reads):
            t0 = time.perf_counter()
            for statement, parameters in capture.statements:
                cursor.execute(statement, parameters)
                cursor.fetchall()
            raw_ms.append((time.perf_counter() - t0) * 1000)
        raw.rollback()
    finally:
        raw.close()
    return {
        "in_session": in_session,
        "unit_of_work": unit_of_work,
        "explains": explains,
        "raw": raw_ms,
    }


def print_page_results(label: str, result: dict[str, Any], show_plans: bool) -> None:
    print(f"\n-- (a) LeaderboardRepository.page(limit=50, {label})")
    print(
        f"   page() in an open session (2 statements: page + count): "
        f"{common.summary(result['in_session'])}"
    )
    print(
        f"   new session per call (pool checkout + pre-ping + page + count + close): "
        f"{common.summary(result['unit_of_work'])}"
    )
    print(
        f"   same 2 statements on the raw psycopg connection (no ORM): "
        f"{common.summary(result['raw'])}"
    )
    for index, item in enumerate(result["explains"], start=1):
        sql_one_line = " ".join(item["sql"].split())
        print(
            f"   statement {index}: {sql_one_line[:160]}{'...' if len(sql_one_line) > 160 else ''}"
        )
        print(f"     EXPLAIN ANALYZE execution: {common.summary(item['execution'])}")
        print(f"     planning: p50={statistics.median(item['planning']):.3f} ms")
        if show_plans:
            for line in item["plan"].splitlines():
                print(f"       | {line}")


def measure_http(
    base: str, key: str, challenge_id: uuid.UUID, requests: int, offset: int = 0
) -> list[float]:
    import httpx

    url = f"/v1/challenges/{challenge_id}/leaderboard"
    params = {"limit": 50, "offset": offset}
    headers = {"Authorization": f"Bearer {key}"}
    timings = []
    with httpx.Client(base_url=base, timeout=30) as http:
        # Warm-up: at least 30 requests and 6 s, so the server's background litellm import
        # (started at boot, it holds the GIL for seconds) is over before measuring.
        warm_until = time.monotonic() + 6
        warm = 0
        while warm < 30 or time.monotonic() < warm_until:
            response = http.get(url, params=params, headers=headers)
            response.raise_for_status()
            warm += 1
        assert len(response.json()["items"]) == 50
        for _ in range(requests):
            t0 = time.perf_counter()
            response = http.get(url, params=params, headers=headers)
            timings.append((time.perf_counter() - t0) * 1000)
            if response.status_code != 200:
                raise RuntimeError(f"leaderboard request failed: {response.status_code}")
    return timings


NAIVE_DISTINCT_ON = """
SELECT best.participant_id, p.handle, best.id, best.tokens_total, best.created_at_ms
FROM (
    SELECT DISTINCT ON (participant_id) participant_id, id, tokens_total, created_at_ms
    FROM attempts
    WHERE challenge_id = %(challenge)s AND status = 'completed' AND succeeded
      AND tokens_total IS NOT NULL
    ORDER BY participant_id, tokens_total, created_at_ms, id
) best JOIN participants p ON p.id = best.participant_id
ORDER BY best.tokens_total, best.created_at_ms, best.id
LIMIT 50
"""

NAIVE_WINDOW = """
SELECT ranked.participant_id, p.handle, ranked.id, ranked.tokens_total, ranked.created_at_ms
FROM (
    SELECT participant_id, id, tokens_total, created_at_ms,
           row_number() OVER (PARTITION BY participant_id
                              ORDER BY tokens_total, created_at_ms, id) AS position
    FROM attempts
    WHERE challenge_id = %(challenge)s AND status = 'completed' AND succeeded
      AND tokens_total IS NOT NULL
) ranked JOIN participants p ON p.id = ranked.participant_id
WHERE ranked.position = 1
ORDER BY ranked.tokens_total, ranked.created_at_ms, ranked.id
LIMIT 50
"""


def measure_naive(
    conninfo: str, challenge_id: uuid.UUID, runs: int, service_top: list[str]
) -> None:
    import psycopg

    print(f"\n-- (c) naive query over the attempts table (top 50), {runs} runs each")
    with psycopg.connect(conninfo) as conn:
        for label, sql in (
            ("DISTINCT ON", NAIVE_DISTINCT_ON),
            ("window row_number()", NAIVE_WINDOW),
        ):
            rows = conn.execute(sql, {"challenge": challenge_id}).fetchall()  # warm-up
            same = [str(r[2]) for r in rows] == service_top
            timings = []
            for _ in range(runs):
                t0 = time.perf_counter()
                conn.execute(sql, {"challenge": challenge_id}).fetchall()
                timings.append((time.perf_counter() - t0) * 1000)
            plan = conn.execute("EXPLAIN (ANALYZE) " + sql, {"challenge": challenge_id}).fetchall()
            execution = next((r[0] for r in plan if r[0].startswith("Execution Time")), "?")
            print(
                f"   {label}: {common.summary(timings, (50, 90))}; EXPLAIN ANALYZE {execution}; "
                f"same top 50 as the leaderboard table: {same}"
            )
            if label == "DISTINCT ON":
                for line in plan:
                    print(f"       | {line[0]}")
            conn.rollback()


def measure_offer(
    engine: Any,
    conninfo: str,
    tenant_id: uuid.UUID,
    challenge_id: uuid.UUID,
    count: int,
    rng: random.Random,
) -> None:
    """The upsert run when an attempt completes, for existing attempts of random participants."""
    import psycopg
    from sqlalchemy.orm import Session

    from app.leaderboard.repository import LeaderboardRepository

    with psycopg.connect(conninfo) as conn:
        # Random succeeded attempts (TABLESAMPLE keeps this cheap on 1M rows).
        candidates = conn.execute(
            "SELECT id, tenant_id, participant_id, created_at_ms, tokens_total, elapsed_ms "
            "FROM attempts TABLESAMPLE SYSTEM (2) WHERE challenge_id = %s AND succeeded "
            "LIMIT %s",
            (challenge_id, count * 2),
        ).fetchall()
        # A fifth of the offers beat the participant's current best (tokens lowered below it),
        # as when a participant improves; the rest lose, as most completions do.
        best: dict[uuid.UUID, float] = dict(
            conn.execute(
                "SELECT participant_id, rank_key FROM leaderboard_entries WHERE challenge_id = %s",
                (challenge_id,),
            ).fetchall()
        )
    rng.shuffle(candidates)
    candidates = candidates[:count]
    started = datetime.now(UTC)
    improving = 0
    execute_ms, commit_ms, total_ms = [], [], []
    with Session(engine) as session:
        boards = LeaderboardRepository(session, tenant_id)
        for attempt_id, attempt_tenant, participant_id, created_ms, tokens, elapsed in candidates:
            if rng.random() < 0.2 and participant_id in best and best[participant_id] > 1:
                tokens = max(1, int(best[participant_id]) - 1)
                best[participant_id] = tokens
                improving += 1
            entry = fewest_tokens_entry(
                challenge_id,
                participant_id,
                attempt_id,
                attempt_tenant,
                created_ms,
                tokens,
                elapsed,
            )
            assert entry is not None
            t0 = time.perf_counter()
            boards.offer(entry)
            t1 = time.perf_counter()
            session.commit()
            t2 = time.perf_counter()
            execute_ms.append((t1 - t0) * 1000)
            commit_ms.append((t2 - t1) * 1000)
            total_ms.append((t2 - t0) * 1000)
    with psycopg.connect(conninfo) as conn:
        changed = common.one_row(
            conn.execute(
                "SELECT count(*) FROM leaderboard_entries WHERE challenge_id = %s "
                "AND updated_at >= %s",
                (challenge_id, started),
            )
        )[0]
    print(
        f"\n-- (d) LeaderboardRepository.offer (leaderboard upsert on completion), "
        f"{len(candidates)} calls, {improving} meant to improve, {changed} rows replaced"
    )
    print(f"   offer() statement:          {common.summary(execute_ms)}")
    print(f"   commit (WAL flush):          {common.summary(commit_ms)}")
    print(f"   offer() + commit:            {common.summary(total_ms)}")


def main() -> None:
    args = parse_args()
    common.exit_on_sigterm()
    common.print_machine_info("leaderboard_read")
    rng = random.Random(args.seed)
    deep_offset = (
        args.deep_offset if args.deep_offset is not None else max(args.participants - 50, 0)
    )
    started = time.perf_counter()
    with common.scratch_database(keep=args.keep_db) as database, common.data_dir() as data:
        print(f"   scratch database: {database.name}", flush=True)
        use_database(database.url)
        from app.kit.db import get_engine

        tenant_id, challenge_id, key = create_tenant_and_challenge()
        participant_ids = load_rows(
            database.dsn,
            tenant_id,
            challenge_id,
            args.participants,
            args.attempts,
            args.success_rate,
            rng,
        )
        entries = build_leaderboard(database.dsn, challenge_id)
        check_against_ranking(database.dsn, challenge_id, participant_ids, rng)
        engine = get_engine()

        results = {}
        for label, offset in (("offset=0", 0), (f"offset={deep_offset}", deep_offset)):
            results[label] = measure_page(
                engine, tenant_id, challenge_id, offset, args.reads, args.explain_runs
            )
            print_page_results(label, results[label], show_plans=True)

        from sqlalchemy.orm import Session

        from app.leaderboard.repository import LeaderboardRepository

        with Session(engine) as session:
            rows, _ = LeaderboardRepository(session, tenant_id).page(
                challenge_id, limit=50, offset=0
            )
            service_top = [str(entry.attempt_id) for entry, _handle in rows]

        if not args.skip_http:
            env = common.service_env(database, str(data))
            server, base = common.start_server(env, data, workers=args.serve_workers)
            with common.running(server):
                print(
                    f"\n-- (b) HTTP GET /v1/challenges/{{id}}/leaderboard?limit=50 "
                    f"(gauntlet serve --workers {args.serve_workers}; httpx keep-alive client, "
                    "sequential; client-side)"
                )
                for offset in (0, deep_offset):
                    timings = measure_http(base, key, challenge_id, args.http_requests, offset)
                    print(f"   offset={offset}: {common.summary(timings)}")

        measure_naive(database.dsn, challenge_id, args.naive_runs, service_top)
        measure_offer(engine, database.dsn, tenant_id, challenge_id, args.offers, rng)
        engine.dispose()
        print(
            f"\n   data: {args.participants} participants, {args.attempts} attempts, "
            f"{entries} leaderboard rows; total run time {time.perf_counter() - started:.1f} s"
        )


if __name__ == "__main__":
    try:
        main()
    finally:
        common.print_end_load()
