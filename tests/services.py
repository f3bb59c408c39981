"""PostgreSQL and Redis for the test suite.

In order of preference: the URLs in GAUNTLET_TEST_DATABASE_URL / GAUNTLET_TEST_REDIS_URL, the
services on their usual local ports, or private throwaway instances started from the installed
server binaries (`make test` installs them with apt-get where missing). A private instance
lives in a temporary folder and is stopped when the tests end.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import redis


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _postgres_reachable(url: str) -> bool:
    try:
        with psycopg.connect(url, connect_timeout=2):
            return True
    except psycopg.Error:
        return False


def _redis_reachable(url: str) -> bool:
    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=2).ping())
    except redis.RedisError:
        return False


def _pg_binary(name: str) -> str:
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)
    found = candidates[0] if candidates else shutil.which(name)
    if not found:
        raise RuntimeError(f"PostgreSQL's {name} is not installed (make test installs it)")
    return found


def _as_postgres_user() -> list[str]:
    """PostgreSQL refuses to run as root; run its binaries as the `postgres` user then."""
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--"]
    return []


@contextlib.contextmanager
def private_postgres() -> Iterator[str]:
    folder = Path(tempfile.mkdtemp(prefix="gauntlet-pg-"))
    data = folder / "data"
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
    port = free_port()
    prefix = _as_postgres_user()
    subprocess.run(
        [
            *prefix,
            _pg_binary("initdb"),
            "-D",
            str(data),
            "-U",
            "postgres",
            "--auth=trust",
            "-E",
            "UTF8",
        ],
        check=True,
        capture_output=True,
    )
    subprocess.run(
        [
            *prefix,
            _pg_binary("pg_ctl"),
            "-D",
            str(data),
            "-l",
            str(folder / "log"),
            "-w",
            "-o",
            f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c max_connections=300 -c synchronous_commit=off",
            "start",
        ],
        check=True,
        capture_output=True,
    )
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            [*prefix, _pg_binary("pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
            capture_output=True,
        )
        shutil.rmtree(folder, ignore_errors=True)


def start_redis() -> tuple[str, subprocess.Popen[bytes]]:
    """A redis-server of its own on a free port, keeping nothing on disk, once it answers: its
    URL and its process (the caller stops it)."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError("redis-server is not installed (make test installs it)")
    port = free_port()
    process = subprocess.Popen(
        [binary, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    deadline = time.monotonic() + 10
    while not _redis_reachable(url):
        if time.monotonic() > deadline:
            process.kill()
            raise RuntimeError("private redis-server did not start")
        time.sleep(0.05)
    return url, process


@contextlib.contextmanager
def private_redis() -> Iterator[str]:
    url, process = start_redis()
    try:
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


@dataclass(frozen=True)
class Services:
    admin_url: str  # a PostgreSQL URL (libpq form) allowed to create databases
    redis_url: str


@contextlib.contextmanager
def services() -> Iterator[Services]:
    with contextlib.ExitStack() as stack:
        pg = (
            os.environ.get("GAUNTLET_TEST_DATABASE_URL")
            or "postgresql://postgres@127.0.0.1:5432/test"
        )
        pg = pg.replace("postgresql+psycopg://", "postgresql://")
        if not _postgres_reachable(pg):
            pg = stack.enter_context(private_postgres())
        rd = os.environ.get("GAUNTLET_TEST_REDIS_URL") or "redis://127.0.0.1:6379/0"
        if not _redis_reachable(rd):
            rd = stack.enter_context(private_redis())
        yield Services(admin_url=pg, redis_url=rd)


@contextlib.contextmanager
def scratch_database(admin_url: str) -> Iterator[str]:
    """A new, empty database for one test session; dropped afterwards."""
    name = f"gauntlet_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin_url, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    base, _, _ = admin_url.rpartition("/")
    try:
        yield f"{base}/{name}".replace("postgresql://", "postgresql+psycopg://", 1)
    finally:
        with psycopg.connect(admin_url, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
