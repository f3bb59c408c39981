"""Web UI pages over a leaderboard of 10,000 participants: server time per page.

Creates a public prompt challenge, bulk-loads N participants each with one completed attempt
and a leaderboard row (COPY-free: one INSERT ... SELECT per table), then requests each page
R times, sequentially, and reports the server's own time (the `Server-Timing: app;dur=` header
the web UI sets) and the client-side time.

Usage: .venv/bin/python bench/web_pages.py [--rows 10000] [--requests 200]
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
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--keep-db", action="store_true")
    return parser.parse_args()


SEED_SQL = """
INSERT INTO participants (id, tenant_id, handle, created_at)
SELECT gen_random_uuid(), %(tenant)s, 'player' || lpad(i::text, 6, '0'), now()
FROM generate_series(1, %(rows)s) AS i;

INSERT INTO attempts (id, tenant_id, challenge_id, participant_id, status, kind_fields, created_at,
                      created_at_ms, enqueued_at, run_count, succeeded, tokens_total,
                      elapsed_ms, metrics)
SELECT gen_random_uuid(), %(tenant)s, %(challenge)s, p.id, 'completed',
       '{"prompt": "PWNED"}', now(),
       (extract(epoch from now()) * 1000)::bigint, now(), 1, true,
       10 + substring(p.handle from 7)::int, 50,
       jsonb_build_object('succeeded', true, 'tokens_total', 10 + substring(p.handle from 7)::int,
                          'elapsed_ms', 50, 'rating', null, 'cost_usd', 0, 'trials', 1,
                          'created_at', (extract(epoch from now()) * 1000)::bigint)
FROM participants p WHERE p.tenant_id = %(tenant)s;

INSERT INTO leaderboard_entries (challenge_id, participant_id, tenant_id, attempt_id, rank_key,
                                 rank_tiebreak, attempt_created_at_ms, score, succeeded,
                                 tokens_total, elapsed_ms, rating, updated_at)
SELECT a.challenge_id, a.participant_id, a.tenant_id, a.id, a.tokens_total, 0, a.created_at_ms,
       null, true, a.tokens_total, a.elapsed_ms, null, now()
FROM attempts a WHERE a.challenge_id = %(challenge)s;
"""


def main() -> None:
    args = parse_args()
    common.exit_on_sigterm()
    common.print_machine_info("web_pages")
    import httpx
    import psycopg

    with common.scratch_database(keep=args.keep_db) as database, common.data_dir() as data:
        env = common.service_env(database, str(data))
        server, base = common.start_server(env, data, workers=1)
        with common.running(server):
            _key, tenant_id, challenge_id = common.create_tenant_and_challenge(base)
            with httpx.Client(base_url=base, timeout=30) as http:
                tenant_slug = http.get(
                    "/v1/tenant", headers={"Authorization": f"Bearer {_key}"}
                ).json()["slug"]
                challenge_slug = http.get(
                    f"/v1/challenges/{challenge_id}", headers={"Authorization": f"Bearer {_key}"}
                ).json()["slug"]
                started = time.perf_counter()
                with psycopg.connect(common.dsn(database.name), autocommit=True) as connection:
                    values = {"tenant": tenant_id, "challenge": challenge_id, "rows": args.rows}
                    for statement in filter(str.strip, SEED_SQL.split(";")):
                        connection.execute(statement, values)
                    connection.execute("VACUUM ANALYZE")
                seconds = time.perf_counter() - started
                print(f"   seeded {args.rows} leaderboard rows in {seconds:.1f} s")
                last_page = max(1, (args.rows + 49) // 50)
                challenge_path = f"/t/{tenant_slug}/challenges/{challenge_slug}"
                board = f"{challenge_path}/leaderboard"
                pages = {
                    "home": "/",
                    "challenge list": f"/t/{tenant_slug}/",
                    "challenge page": challenge_path,
                    "leaderboard page 1": board,
                    f"leaderboard page {last_page // 2}": f"{board}?page={last_page // 2}",
                    f"leaderboard page {last_page}": f"{board}?page={last_page}",
                }
                print(f"\n-- {args.requests} sequential requests per page, anonymous visitor")
                for name, path in pages.items():
                    for _ in range(5):
                        http.get(path)
                    server_ms: list[float] = []
                    client_ms: list[float] = []
                    for _ in range(args.requests):
                        begin = time.perf_counter()
                        response = http.get(path)
                        client_ms.append((time.perf_counter() - begin) * 1000)
                        if response.status_code != 200:
                            raise RuntimeError(f"{path}: {response.status_code}")
                        timing = response.headers.get("server-timing", "")
                        server_ms.append(float(timing.split("dur=")[1]) if "dur=" in timing else 0)
                    print(f"   {name:<24} server {common.summary(server_ms)}")
                    print(f"   {'':<24} client {common.summary(client_ms)}")
    common.print_end_load()


if __name__ == "__main__":
    main()
