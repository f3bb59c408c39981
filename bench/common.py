"""Shared helpers of the benchmark scripts: scratch databases, service processes, statistics.

Everything here talks to 127.0.0.1 only: PostgreSQL on 5432 (user postgres, trust auth) and
Redis on 6379. Each helper that starts something is a context manager that stops it again, so a
benchmark interrupted with Ctrl-C (or SIGTERM) leaves no database and no process behind.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

ROOT = Path(__file__).resolve().parent.parent
PG_HOST = os.environ.get("BENCH_PG_HOST", "127.0.0.1")
PG_PORT = int(os.environ.get("BENCH_PG_PORT", "5432"))
PG_USER = os.environ.get("BENCH_PG_USER", "postgres")
PG_ADMIN_DB = os.environ.get("BENCH_PG_ADMIN_DB", "test")
REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/10")
# Production refuses weak secrets; these are random (and public: benchmarks only).
ADMIN_TOKEN = "gadm_bench_xrKlfuvJZKcCVzgkr4yejqR4vIXvqUjwjRJEPI-WeIg"
SECRET_KEY = "sLyhUjb2ERvE5VGciciRL0ohT4OU7CZG_PbFn6JymO0"


def gauntlet_bin() -> str:
    candidate = ROOT / ".venv" / "bin" / "gauntlet"
    if candidate.exists():
        return str(candidate)
    found = shutil.which("gauntlet")
    if not found:
        raise RuntimeError("the `gauntlet` console script is not installed")
    return found


def admin_dsn() -> str:
    return f"postgresql://{PG_USER}@{PG_HOST}:{PG_PORT}/{PG_ADMIN_DB}"


def dsn(database: str) -> str:
    """A plain libpq DSN, for psycopg."""
    return f"postgresql://{PG_USER}@{PG_HOST}:{PG_PORT}/{database}"


def sqlalchemy_url(database: str) -> str:
    return f"postgresql+psycopg://{PG_USER}@{PG_HOST}:{PG_PORT}/{database}"


# Signals -----------------------------------------------------------------------------------


def exit_on_sigterm() -> None:
    """Turns SIGTERM into SystemExit so `finally` blocks (and context managers) still clean up."""

    def handler(signum: int, _frame: Any) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, handler)


# Machine info ------------------------------------------------------------------------------


def machine_info() -> dict[str, str]:
    cpu = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem = f"{int(line.split()[1]) // 1024} MiB"
                break
    load = "unknown"
    with contextlib.suppress(OSError):
        load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    info = {
        "date": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "nproc": str(os.cpu_count()),
        "cpu": cpu,
        "memory": mem,
        "loadavg (1/5/15 min) at start": load,
        "python": platform.python_version(),
        "kernel": platform.release(),
    }
    with contextlib.suppress(Exception):
        import psycopg

        with psycopg.connect(admin_dsn(), connect_timeout=5) as conn:
            row = conn.execute("SHOW server_version").fetchone()
            info["postgresql"] = str(row[0]) if row else "?"
            for setting in ("shared_buffers", "synchronous_commit", "max_connections"):
                row = conn.execute(f"SHOW {setting}").fetchone()
                info[f"pg {setting}"] = str(row[0]) if row else "?"
    return info


def print_machine_info(title: str, argv: Sequence[str] | None = None) -> None:
    print(f"== {title}")
    print(f"   command: {' '.join(argv if argv is not None else sys.argv)}")
    for key, value in machine_info().items():
        print(f"   {key}: {value}")
    print("   note: preliminary figures; the machine is shared with other work", flush=True)


def print_end_load() -> None:
    with contextlib.suppress(OSError):
        load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
        print(
            f"   loadavg (1/5/15 min) at end: {load} (2 cores; above 2 means other work competed)"
        )


# Statistics --------------------------------------------------------------------------------


def percentile(values: Sequence[float], p: float) -> float:
    """The p-th percentile (0..100) with linear interpolation between closest ranks."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    if len(ordered) == 1:
        return float(ordered[0])
    position = (len(ordered) - 1) * p / 100.0
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    fraction = position - low
    return float(ordered[low] + (ordered[high] - ordered[low]) * fraction)


def summary(values: Sequence[float], percentiles: Sequence[float] = (50, 90, 99)) -> str:
    """A one-line summary of timings given in milliseconds."""
    if not values:
        return "n=0"
    parts = [f"n={len(values)}"]
    parts += [f"p{p:g}={percentile(values, p):.2f}" for p in percentiles]
    parts += [
        f"min={min(values):.2f}",
        f"max={max(values):.2f}",
        f"mean={sum(values) / len(values):.2f}",
    ]
    return " ".join(parts) + " (ms)"


# Rows --------------------------------------------------------------------------------------

_Row = TypeVar("_Row", covariant=True)


class _OneRow(Protocol[_Row]):
    def fetchone(self) -> _Row | None: ...


def one_row(cursor: _OneRow[_Row]) -> _Row:
    """The row a statement that always returns one (an aggregate, a row just written) gave."""
    row = cursor.fetchone()
    if row is None:
        raise RuntimeError("the statement returned no row")
    return row


# Scratch databases -------------------------------------------------------------------------


@dataclass
class ScratchDatabase:
    name: str

    @property
    def dsn(self) -> str:
        return dsn(self.name)

    @property
    def url(self) -> str:
        return sqlalchemy_url(self.name)


def migrate(database_url: str, env: dict[str, str] | None = None) -> None:
    run_env = {
        **os.environ,
        **(env or {}),
        "GAUNTLET_DATABASE_URL": database_url,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    result = subprocess.run(
        [gauntlet_bin(), "migrate"],
        env=run_env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if result.returncode != 0:
        raise RuntimeError(f"gauntlet migrate failed:\n{result.stdout}\n{result.stderr}")


@contextlib.contextmanager
def scratch_database(migrated: bool = True, keep: bool = False) -> Iterator[ScratchDatabase]:
    """CREATE DATABASE gauntlet_bench_<hex>, migrated with `gauntlet migrate`; dropped at exit."""
    import psycopg

    name = f"gauntlet_bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin_dsn(), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    database = ScratchDatabase(name)
    try:
        if migrated:
            migrate(database.url)
        yield database
    finally:
        if keep:
            print(f"   (kept scratch database {name})")
        else:
            with psycopg.connect(admin_dsn(), autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextlib.contextmanager
def broker_lock(url: str = REDIS_URL) -> Iterator[None]:
    """One benchmark at a time per Redis db: a second run would flush the first one's queue, and
    the workers of each would consume (and drop, as unknown attempts) the other's tasks."""
    import fcntl

    safe = "".join(ch if ch.isalnum() else "_" for ch in url)
    path = Path(tempfile.gettempdir()) / f"gauntlet-bench-{safe}.lock"
    with path.open("w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SystemExit(
                f"another benchmark is using the broker {url}; wait for it, or set "
                "BENCH_REDIS_URL to another Redis db"
            ) from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def flush_broker(url: str = REDIS_URL) -> None:
    import redis

    client = redis.Redis.from_url(url)
    try:
        client.flushdb()
    finally:
        client.close()


# The submission benches send far more than a tenant's share of the workers' queue from one
# tenant: they measure the submission path, not the share (`fair_queue.py` does), unless told.
UNSHARED_QUEUE = {
    "GAUNTLET_MAX_QUEUED_PER_TENANT": os.environ.get("GAUNTLET_MAX_QUEUED_PER_TENANT", "1000000")
}


def service_env(
    database: ScratchDatabase,
    data_dir: str,
    broker_url: str = REDIS_URL,
    extra: dict[str, str] | None = None,
) -> dict[str, str]:
    env = {
        **os.environ,
        "GAUNTLET_MODE": "production",
        "GAUNTLET_DATABASE_URL": database.url,
        "GAUNTLET_BROKER_URL": broker_url,
        "GAUNTLET_ADMIN_TOKEN": ADMIN_TOKEN,
        # Newer production settings also require a secret key; harmless where it is unknown.
        "GAUNTLET_SECRET_KEY": SECRET_KEY,
        "GAUNTLET_DATA_DIR": data_dir,
        "GAUNTLET_SEED_DEMO": "false",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    env.update(extra or {})
    return env


# Service processes -------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _tail(path: Path, chars: int = 3000) -> str:
    try:
        return path.read_bytes()[-chars:].decode(errors="replace")
    except OSError:
        return ""


@dataclass
class Process:
    """A service started in its own process group, logging to a file."""

    name: str
    argv: list[str]
    env: dict[str, str]
    log_path: Path
    process: subprocess.Popen[bytes] | None = field(default=None, init=False)

    def start(self) -> None:
        log = self.log_path.open("ab")
        try:
            self.process = subprocess.Popen(
                self.argv,
                env=self.env,
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        finally:
            log.close()

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def pids(self) -> list[int]:
        """The process and its descendants (server workers, Celery pool children)."""
        if self.process is None:
            return []
        found = [self.process.pid]
        frontier = [self.process.pid]
        while frontier:
            parent = frontier.pop()
            children_file = Path(f"/proc/{parent}/task/{parent}/children")
            with contextlib.suppress(OSError):
                for child in children_file.read_text().split():
                    found.append(int(child))
                    frontier.append(int(child))
        return found

    def stop(self, timeout: float = 15) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)
        # Pool children that outlived their parent, if any.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)


def start_server(
    env: dict[str, str],
    log_dir: Path,
    port: int | None = None,
    workers: int = 1,
    timeout: float = 60,
) -> tuple[Process, str]:
    import httpx

    port = port or free_port()
    server = Process(
        "serve",
        [
            gauntlet_bin(),
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            str(workers),
        ],
        env,
        log_dir / "serve.log",
    )
    server.start()
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    healthy_in_a_row = 0
    while True:
        if not server.alive():
            raise RuntimeError(f"gauntlet serve exited:\n{_tail(server.log_path)}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(base + "/healthz", timeout=2).status_code == 200:
                healthy_in_a_row += 1
                # With several server processes, give each a chance to come up.
                if healthy_in_a_row >= 3 * workers:
                    break
        log_tail = _tail(server.log_path, 20_000)
        if time.monotonic() > deadline or "ValidationError" in log_tail:
            server.stop()
            raise RuntimeError(f"gauntlet serve not healthy:\n{_tail(server.log_path)}")
        time.sleep(0.1)
    return server, base


def start_worker(
    env: dict[str, str],
    log_dir: Path,
    concurrency: int = 2,
    beat: bool = False,
    loglevel: str = "info",
    timeout: float = 90,
) -> Process:
    argv = [gauntlet_bin(), "worker", "--concurrency", str(concurrency), "--loglevel", loglevel]
    if beat:
        argv.append("--beat")
    worker = Process("worker", argv, env, log_dir / "worker.log")
    worker.start()
    deadline = time.monotonic() + timeout
    while True:
        if " ready." in _tail(worker.log_path, 100_000):
            return worker
        if not worker.alive():
            raise RuntimeError(f"gauntlet worker exited:\n{_tail(worker.log_path)}")
        if time.monotonic() > deadline:
            worker.stop()
            raise RuntimeError(f"gauntlet worker not ready:\n{_tail(worker.log_path)}")
        time.sleep(0.1)


@contextlib.contextmanager
def data_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="gauntlet-bench-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def running(*processes: Process) -> Iterator[None]:
    try:
        yield
    finally:
        for process in reversed(processes):
            process.stop()


# CPU accounting ----------------------------------------------------------------------------


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pids: Sequence[int]) -> float:
    """User + system CPU time of the given processes, from /proc (processes gone count 0)."""
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total / CLOCK_TICKS


def wait_idle(
    pids: Sequence[int], *, busy_share: float = 0.05, window_s: float = 0.5, timeout_s: float = 60
) -> float:
    """Waits until the processes use under `busy_share` of a core over `window_s` (start-up
    work done: servers and workers import litellm in a background thread after they answer).
    Returns the seconds waited; raises RuntimeError after `timeout_s`."""
    started = time.monotonic()
    while True:
        before = cpu_seconds(pids)
        time.sleep(window_s)
        if cpu_seconds(pids) - before < busy_share * window_s:
            return time.monotonic() - started
        if time.monotonic() - started > timeout_s:
            raise RuntimeError(f"processes {list(pids)} still busy after {timeout_s:g} s")


def postgres_pids() -> list[int]:
    """Backends of the PostgreSQL server (readable when it runs as a visible user)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            comm = (entry / "comm").read_text().strip()
            if comm.startswith("postgres") or comm.startswith("postmaster"):
                found.append(int(entry.name))
    return found


def redis_pids() -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if (entry / "comm").read_text().strip().startswith("redis-server"):
                found.append(int(entry.name))
    return found


# REST set-up -------------------------------------------------------------------------------


def create_tenant_and_challenge(base: str, **challenge_overrides: Any) -> tuple[str, str, str]:
    """A tenant (its admin key) and an offline prompt challenge: (key, tenant id, challenge id)."""
    import httpx

    from app.seed import DEMO_CHALLENGE

    with httpx.Client(base_url=base, timeout=60) as http:
        slug = f"bench-{uuid.uuid4().hex[:10]}"
        response = http.post(
            "/v1/tenants",
            json={"slug": slug, "name": slug},
            headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
        )
        response.raise_for_status()
        tenant = response.json()
        key = tenant["api_key"]
        body: dict[str, Any] = {**DEMO_CHALLENGE, "slug": f"c-{uuid.uuid4().hex[:10]}"}
        body.update(challenge_overrides)
        response = http.post(
            "/v1/challenges", json=body, headers={"Authorization": f"Bearer {key}"}
        )
        if response.status_code != 201:
            raise RuntimeError(f"challenge creation failed: {response.status_code} {response.text}")
        return key, tenant["id"], response.json()["id"]
