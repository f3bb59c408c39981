"""Exports of a large challenge: time, throughput and the API process's memory while it streams.

In a scratch database: one tenant and one prompt challenge (made through the service layer),
N participants and M completed attempts bulk-loaded with COPY (bench/leaderboard_read.py's
loader), one trial per attempt, the leaderboard built as the workers keep it, VACUUM ANALYZE.
Then, through `gauntlet serve`, each export is downloaded (httpx, streamed, read as it
arrives) while a thread samples the server's resident memory (VmRSS of its processes, every
20 ms): the peak minus the resident size before the download is what the export held.

Run it at two sizes: an export that holds one batch at a time grows by the same amount at
10,000 attempts as at 100,000. Last, a leaderboard page (GET .../leaderboard?limit=50) is
timed with the server idle and while an export streams: each batch is one trip to the
thread pool, so other requests are served between them.

Usage: .venv/bin/python bench/export_stream.py [--attempts 100000] [--participants 10000]
"""

from __future__ import annotations

import argparse
import random
import sys
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common
from bench.leaderboard_read import (
    build_leaderboard,
    create_tenant_and_challenge,
    load_rows,
    use_database,
)

TRIALS = """
INSERT INTO trials (id, tenant_id, attempt_id, task_index, trial_index, success, score, actor,
    judge, critic, created_at)
SELECT gen_random_uuid(), a.tenant_id, a.id, 0, 1, a.succeeded,
    CASE WHEN a.succeeded THEN 1.0 ELSE 0.0 END,
    jsonb_build_object('model', 'offline/echo', 'prompt',
        jsonb_build_array(jsonb_build_object('role', 'user', 'content', a.kind_fields->>'prompt')),
        'output', a.kind_fields->>'prompt', 'input_tokens', a.tokens_total, 'output_tokens', 3),
    jsonb_build_object('success', a.succeeded, 'score',
        CASE WHEN a.succeeded THEN 1.0 ELSE 0.0 END, 'raw_eval_output', 'contains PWNED'),
    '{}'::jsonb, a.created_at
FROM attempts a WHERE a.challenge_id = %(challenge)s
"""


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--attempts", type=int, default=100_000)
    parser.add_argument("--participants", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep-db", action="store_true", help="do not drop the scratch database")
    return parser.parse_args()


def add_trials(conninfo: str, challenge_id: uuid.UUID) -> None:
    import psycopg

    with psycopg.connect(conninfo) as conn:
        started = time.perf_counter()
        count = conn.execute(TRIALS, {"challenge": challenge_id}).rowcount
        conn.commit()
        print(f"   trials: {count} rows in {time.perf_counter() - started:.2f} s", flush=True)


def resident_bytes(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            continue
    return total


class MemorySampler:
    """The peak resident size of some processes, sampled from a thread."""

    def __init__(self, pids: list[int], every_s: float = 0.02) -> None:
        self.pids = pids
        self.every_s = every_s
        self.peak = resident_bytes(pids)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, resident_bytes(self.pids))
            time.sleep(self.every_s)

    def __enter__(self) -> MemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def download(base: str, key: str, path: str, pids: list[int]) -> None:
    import httpx

    before = resident_bytes(pids)
    size = lines = chunks = 0
    with (
        httpx.Client(base_url=base, timeout=600) as client,
        MemorySampler(pids) as memory,
    ):
        started = time.perf_counter()
        with client.stream("GET", path, headers={"Authorization": f"Bearer {key}"}) as response:
            response.raise_for_status()
            for chunk in response.iter_raw():
                size += len(chunk)
                lines += chunk.count(b"\n")
                chunks += 1
        elapsed = time.perf_counter() - started
    mb = size / 1e6
    print(
        f"   {path.split('/exports/')[1]:<24} {lines:>9,} lines {mb:8.1f} MB in {elapsed:6.2f} s "
        f"({mb / elapsed:6.1f} MB/s, {lines / elapsed:9,.0f} lines/s); server RSS "
        f"{before / 1e6:.0f} MB before, peak +{(memory.peak - before) / 1e6:.1f} MB",
        flush=True,
    )


def page_latencies(base: str, key: str, path: str, stop: threading.Event) -> list[float]:
    """Milliseconds of sequential GETs of `path` until `stop` is set."""
    import httpx

    timings: list[float] = []
    with httpx.Client(base_url=base, timeout=60) as client:
        while not stop.is_set():
            started = time.perf_counter()
            client.get(path, headers={"Authorization": f"Bearer {key}"}).raise_for_status()
            timings.append((time.perf_counter() - started) * 1000)
    return timings


def pages_during(base: str, key: str, page: str, export: str | None, idle_s: float) -> str:
    """Leaderboard page latencies while `export` downloads (or for `idle_s` when None)."""
    import httpx

    stop = threading.Event()
    found: list[float] = []
    reader = threading.Thread(target=lambda: found.extend(page_latencies(base, key, page, stop)))
    reader.start()
    if export is None:
        time.sleep(idle_s)
    else:
        with (
            httpx.Client(base_url=base, timeout=600) as client,
            client.stream("GET", export, headers={"Authorization": f"Bearer {key}"}) as response,
        ):
            for _ in response.iter_raw():
                pass
    stop.set()
    reader.join()
    return common.summary(found)


def main() -> None:
    args = parse_args()
    common.exit_on_sigterm()
    common.print_machine_info("export_stream")
    rng = random.Random(args.seed)
    started = time.perf_counter()
    with common.scratch_database(keep=args.keep_db) as database, common.data_dir() as data:
        print(f"   scratch database: {database.name}", flush=True)
        use_database(database.url)
        from app.kit.db import get_engine

        tenant_id, challenge_id, key = create_tenant_and_challenge()
        load_rows(database.dsn, tenant_id, challenge_id, args.participants, args.attempts, 0.9, rng)
        add_trials(database.dsn, challenge_id)
        build_leaderboard(database.dsn, challenge_id)
        get_engine().dispose()

        env = common.service_env(database, str(data))
        server, base = common.start_server(env, data, workers=1)
        with common.running(server):
            common.wait_idle(server.pids())
            pids = server.pids()
            print("\n-- GET /v1/challenges/{id}/exports/... (gauntlet serve, 1 process)")
            exports = f"/v1/challenges/{challenge_id}/exports"
            for name, output in (
                ("attempts", "csv"),
                ("attempts", "json"),
                ("trials", "json"),
                ("leaderboard", "csv"),
            ):
                download(base, key, f"{exports}/{name}?format={output}", pids)
            page = f"/v1/challenges/{challenge_id}/leaderboard?limit=50"
            print("\n-- GET .../leaderboard?limit=50, sequential, client-side")
            print(f"   idle:                      {pages_during(base, key, page, None, 5)}")
            during = pages_during(base, key, page, f"{exports}/trials?format=json", 0)
            print(f"   while trials?format=json streams: {during}")
        print(
            f"\n   data: {args.participants} participants, {args.attempts} attempts and trials; "
            f"total run time {time.perf_counter() - started:.1f} s"
        )


if __name__ == "__main__":
    try:
        main()
    finally:
        common.print_end_load()
