"""Red-blue leaderboard page reads at 10,000 participants (issue 12 target: a page under 10 ms
server-side).

In a scratch PostgreSQL database: one tenant and one red_blue challenge (made through the
service layer, the demo's rules), --participants participants, and both sides' boards written
by the worker's own `cross_tenant.write_board` (the rows a recompute writes: every participant
rated on both sides, in rank order, with points, matches and wins), then VACUUM ANALYZE.

Measured (sequential, --reads each, 50 rows a page):
  (a) `service.read_leaderboard` in this process with an open session (the page, its total and
      the board's computed_at, turned into the response model), at offset 0 and at a deep
      offset, red and blue; plus EXPLAIN ANALYZE execution times of the page and count
      statements;
  (b) GET /v1/challenges/{id}/leaderboard?side=...&limit=50&offset=... through the ASGI app in
      this process (FastAPI routing, the API-key check, the session, the service, JSON): the
      server's whole time for the request, without a network.

Usage: .venv/bin/python bench/redblue_leaderboard.py [--participants 10000] [--reads 500]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common
from bench.leaderboard_read import use_database
from bench.submit_cpu import call


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--participants", type=int, default=10_000)
    parser.add_argument("--reads", type=int, default=500, help="reads per case")
    parser.add_argument("--deep-offset", type=int, default=9_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep-db", action="store_true")
    return parser.parse_args()


def seed(participants: int, rng: random.Random) -> tuple[uuid.UUID, str]:
    """The tenant's admin key and the challenge, its boards written as a recompute does."""
    from sqlalchemy import insert

    from app.challenge.schemas import ChallengeCreate
    from app.challenge.service import create_challenge
    from app.kinds.red_blue import board_recompute, cross_tenant
    from app.kinds.red_blue.cross_tenant import RatingRow
    from app.kinds.red_blue.models import Side
    from app.kit.config import get_settings
    from app.kit.db import session_scope, utcnow
    from app.seed import DEMO_RED_BLUE
    from app.tenant.models import Participant
    from app.tenant.service import create_tenant

    with session_scope() as session:
        tenant, _row, key = create_tenant(session, "bench-rb", "bench red-blue board")
        challenge = create_challenge(
            session, tenant.id, ChallengeCreate.model_validate(DEMO_RED_BLUE)
        )
        tenant_id, challenge_id = tenant.id, challenge.id
    ids = [uuid.uuid4() for _ in range(participants)]
    now = utcnow()
    t0 = time.perf_counter()
    with session_scope() as session:
        session.execute(
            insert(Participant),
            [
                {"id": pid, "tenant_id": tenant_id, "handle": f"player-{i:05d}", "created_at": now}
                for i, pid in enumerate(ids)
            ],
        )
    rows: list[RatingRow] = []
    for side in (Side.RED, Side.BLUE):
        rated = []
        for pid in ids:
            rating = rng.gauss(1000, 150)
            spread = rng.uniform(20, 200)
            matches = rng.randint(5, 400)
            wins = rng.randint(0, matches)
            rated.append((pid, rating, spread, matches, wins))
        rated.sort(key=lambda r: -r[1])
        rank = 0
        for position, (pid, rating, spread, matches, wins) in enumerate(rated, start=1):
            # Ties share a rank (as the red_blue ratings rank overlapping intervals, roughly).
            if position == 1 or rng.random() < 0.7:
                rank = position
            rows.append(
                RatingRow(
                    participant_id=pid,
                    side=side,
                    position=position,
                    rank=rank,
                    rating=rating,
                    rating_low=rating - spread,
                    rating_high=rating + spread,
                    points=wins,
                    matches=matches,
                    wins=wins,
                )
            )
    with session_scope() as session:
        cross_tenant.land_matches(session, tenant_id, challenge_id, [], now)
    with session_scope() as session:
        claim = cross_tenant.claim_board(
            session, challenge_id, now, board_recompute.pacing(get_settings())
        )
    assert claim is not None
    with session_scope() as session:
        written = cross_tenant.write_board(
            session,
            tenant_id,
            challenge_id,
            claim.generation,
            cross_tenant.BoardWrite(
                rows=rows,
                red_points=sum(r.points for r in rows if r.side is Side.RED),
                blue_points=sum(r.points for r in rows if r.side is Side.BLUE),
                matches=sum(r.matches for r in rows if r.side is Side.RED),
                rated_seq=claim.landed_seq,
                intervals_seq=claim.landed_seq,
                intervals_computed_at=now,
            ),
            utcnow(),
        )
    assert written is not None
    print(
        f"   {participants} participants, {len(rows)} ratings rows written by write_board in "
        f"{time.perf_counter() - t0:.2f} s",
        flush=True,
    )
    return challenge_id, key


def vacuum(database: Any) -> None:
    import psycopg

    with psycopg.connect(database.dsn, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")


def service_reads(challenge_id: uuid.UUID, reads: int, deep: int) -> None:
    from app.auth.subjects import Audience
    from app.challenge.models import Challenge
    from app.kinds.red_blue import service
    from app.kinds.red_blue.models import Side
    from app.kit.db import get_sessionmaker

    with get_sessionmaker()() as session:
        challenge = session.get(Challenge, challenge_id)
        assert challenge is not None
        for side in (Side.RED, Side.BLUE):
            for offset in (0, deep):
                times = []
                for _ in range(reads):
                    t0 = time.perf_counter()
                    page = service.read_leaderboard(
                        session, challenge, side, Audience.PARTICIPANT, limit=50, offset=offset
                    )
                    times.append((time.perf_counter() - t0) * 1000)
                    session.rollback()  # as a request ends its transaction
                assert len(page.items) == 50 and page.total > 0, page
                figures = common.summary(times, (50, 99))
                print(f"   service {side.value:4} offset {offset:5}: {figures}")
        # What PostgreSQL spends on each statement, as SQLAlchemy would send them.
        from app.kinds.red_blue.repository import RedBlueRepository

        statements: list[tuple[str, Any]] = []

        def capture(conn: Any, cursor: Any, statement: str, params: Any, *_: Any) -> None:
            statements.append((statement, params))

        from sqlalchemy import event

        engine = session.get_bind()
        event.listen(engine, "before_cursor_execute", capture)
        try:
            for offset in (0, deep):
                statements.clear()
                RedBlueRepository(session, challenge.tenant_id).ratings_page(
                    challenge_id, Side.RED, limit=50, offset=offset
                )
                for statement, params in [s for s in statements if "redblue_ratings" in s[0]]:
                    runs = []
                    for _ in range(30):
                        plan = session.connection().exec_driver_sql(
                            "EXPLAIN (ANALYZE, FORMAT JSON) " + statement, params
                        )
                        runs.append(float(plan.scalar_one()[0]["Execution Time"]))
                    kind = "page" if "ORDER BY" in statement else "total"
                    print(
                        f"   EXPLAIN ANALYZE offset {offset:5} {kind:5}: "
                        f"{common.summary(runs, (50,))}"
                    )
        finally:
            event.remove(engine, "before_cursor_execute", capture)
        session.rollback()


async def http_reads(challenge_id: uuid.UUID, key: str, reads: int, deep: int) -> None:
    from app.main import create_app

    app = create_app()
    for side in ("red", "blue"):
        for offset in (0, deep):
            path = f"/v1/challenges/{challenge_id}/leaderboard"
            times = []
            for index in range(reads + 20):
                t0 = time.perf_counter()
                status, answer = await call_query(
                    app, path, f"side={side}&limit=50&offset={offset}", key
                )
                if index >= 20:  # the first requests warm caches and the pool
                    times.append((time.perf_counter() - t0) * 1000)
                if status != 200 or len(answer["items"]) != 50:
                    raise RuntimeError(f"{status}: {answer}")
            print(f"   HTTP GET {side:4} offset {offset:5}: {common.summary(times, (50, 99))}")


async def call_query(app: Any, path: str, query: str, key: str) -> tuple[int, Any]:
    # bench.submit_cpu.call with a query string.
    original = app

    async def with_query(scope: dict[str, Any], receive: Any, send: Any) -> None:
        scope["query_string"] = query.encode()
        await original(scope, receive, send)

    return await call(with_query, "GET", path, key)


def main() -> None:
    args = parse_args()
    common.exit_on_sigterm()
    common.print_machine_info("redblue_leaderboard")
    with common.scratch_database(keep=args.keep_db) as database:
        use_database(database.url)
        challenge_id, key = seed(args.participants, random.Random(args.seed))
        vacuum(database)
        print("\n-- service.read_leaderboard (open session, 50 rows)")
        service_reads(challenge_id, args.reads, args.deep_offset)
        print("\n-- GET /v1/challenges/{id}/leaderboard through the ASGI app (in process)")
        asyncio.run(http_reads(challenge_id, key, args.reads, args.deep_offset))
        from app.kit.db import get_engine

        get_engine().dispose()


if __name__ == "__main__":
    try:
        main()
    finally:
        common.print_end_load()
