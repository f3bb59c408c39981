"""The services the event bench loads: the production layout of a checkout's
docker-compose.yml (`gauntlet migrate`, `serve`, `worker`, `beat`), started natively as
tests/production.py starts it, or the embedded `gauntlet run` (`make run`); killing and
restarting their processes; the CPU each role uses.

Every service runs from the checkout under test (its `.venv/bin/gauntlet`, its Compose file,
its folder as working directory), so the same bench measures any commit. What a layout makes
it also removes: its own PostgreSQL database (created and dropped here), its own Celery queue
and Redis key prefix (only keys with that prefix are deleted), its own data folder.
"""

from __future__ import annotations

import abc
import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from tests.production import Service, compose_file, group_members, service_environment
from tests.services import free_port

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
# What a `.env` beside docker-compose.yml gives (.env.example); production refuses weak secrets.
DOTENV = {
    "POSTGRES_PASSWORD": "unused-the-bench-uses-its-own-postgresql",
    "GAUNTLET_ADMIN_TOKEN": "gadm_event_" + secrets.token_urlsafe(32),
    "GAUNTLET_SECRET_KEY": secrets.token_urlsafe(32),
}


@dataclass
class Kill:
    """One SIGKILL: which role, when, and when the role answered again (None: never)."""

    role: str
    killed_at: float  # time.time()
    back_at: float | None = None
    # When the API stopped answering because of this kill (None: it did not).
    api_down_from: float | None = None
    # Who brought it back: "restart" (the bench, as Compose's `restart: unless-stopped`), "itself"
    # (the layout's own supervision), or "bench restarted gauntlet run" (it did not come back).
    restarted_by: str = "restart"


def with_option(command: Sequence[str], flag: str, value: str) -> list[str]:
    """The command with `flag`'s value replaced (or the flag and value appended)."""
    parts = list(command)
    if flag in parts:
        parts[parts.index(flag) + 1] = value
    else:
        parts += [flag, value]
    return parts


def _get(url: str, timeout: float = 2) -> int:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)
    except (OSError, urllib.error.URLError):
        return -1


def _wait(what: str, done: Any, alive: Any, timeout: float, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if not alive():
            raise RuntimeError(f"{what}: the process exited:\n{_tail(log)}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what}: not within {timeout:g} s:\n{_tail(log)}")
        time.sleep(0.1)


def _tail(path: Path, chars: int = 3000) -> str:
    try:
        return path.read_bytes()[-chars:].decode(errors="replace")
    except OSError:
        return ""


def gauntlet_of(checkout: Path) -> Path:
    binary = checkout / ".venv" / "bin" / "gauntlet"
    if not binary.exists():
        raise SystemExit(f"{binary} is missing: run `make install` in {checkout} first")
    return binary


class Layout(abc.ABC):
    """What the bench needs of a running layout."""

    kind = ""
    roles: tuple[str, ...] = ()
    killable: tuple[str, ...] = ()
    base_url = ""
    admin_token = ""
    database_url = ""  # SQLAlchemy URL, read by the checks

    @abc.abstractmethod
    def start(self) -> None:
        """Starts every role; returns once the API answers (the others may still be
        starting: `wait_ready`)."""

    @abc.abstractmethod
    def wait_ready(self) -> None:
        """Waits until every role is ready."""

    @abc.abstractmethod
    def stop(self) -> None: ...

    @abc.abstractmethod
    def kill(self, kill: Kill) -> None:
        """SIGKILL to the role's processes; back as the layout brings it back (`kill` records
        when, and how)."""

    @abc.abstractmethod
    def pids(self) -> dict[str, list[int]]:
        """The live processes of each role."""

    def task_log(self) -> Iterator[tuple[datetime, str, float]]:
        """(when, task name, seconds) of every task the workers logged as finished."""
        return iter(())

    def broker_depth(self) -> int | None:
        return None

    @abc.abstractmethod
    def describe(self) -> str: ...


# The production layout ------------------------------------------------------------------------


class ProductionLayout(Layout):
    kind = "production"
    roles = ("api", "worker", "beat")
    killable = ("api", "worker", "beat")

    def __init__(
        self,
        *,
        checkout: Path,
        admin_url: str,
        redis_url: str,
        folder: Path,
        api_processes: int,
        worker_concurrency: int,
        settings: dict[str, str],
    ) -> None:
        self.checkout = checkout
        self.admin_url = admin_url
        self.redis_url = redis_url
        self.folder = folder
        self.api_processes = api_processes
        self.worker_concurrency = worker_concurrency
        run = uuid.uuid4().hex[:12]
        self.database = f"gauntlet_event_{run}"
        base, _, _ = admin_url.rpartition("/")
        self.database_url = f"{base}/{self.database}".replace(
            "postgresql://", "postgresql+psycopg://", 1
        )
        self.queue = f"event-{run}"
        self.key_prefix = f"gauntlet-event-{run}:"
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.admin_token = DOTENV["GAUNTLET_ADMIN_TOKEN"]
        self.compose = compose_file(checkout / "docker-compose.yml")
        native = {
            "GAUNTLET_DATABASE_URL": self.database_url,
            "GAUNTLET_BROKER_URL": redis_url,
            "PORT": str(self.port),
            "GAUNTLET_WORKER_HTTP_PORT": str(free_port()),
            # The Compose network is private; here, loopback is.
            "GAUNTLET_WORKER_HTTP_HOST": "127.0.0.1",
        }
        own = {
            # Its own queue and key prefix: nothing of another deployment on this Redis is
            # consumed or touched.
            "GAUNTLET_QUEUE": self.queue,
            "GAUNTLET_REDIS_KEY_PREFIX": self.key_prefix,
            # The crowd's requests name their client addresses, as a reverse proxy would.
            "GAUNTLET_TRUSTED_PROXIES": "127.0.0.1",
            **settings,
        }
        binary = gauntlet_of(checkout)
        commands = {
            "migrate": None,
            "api": with_option(
                with_option(self._command("api"), "--host", "127.0.0.1"),
                "--workers",
                str(api_processes),
            ),
            "worker": with_option(
                self._command("worker"), "--concurrency", str(worker_concurrency)
            ),
            "beat": None,
        }
        self.services = {
            name: Service(
                name,
                self.compose["services"][name],
                service_environment(
                    self.compose["services"][name],
                    DOTENV,
                    {**native, "GAUNTLET_DATA_DIR": str(folder / f"{name}-data")},
                    {
                        key: value
                        for key, value in own.items()
                        if key not in (self.compose["services"][name].get("environment") or {})
                    },
                    str(binary.parent),
                ),
                folder / f"{name}.log",
                cwd=checkout,
                command=command,
            )
            for name, command in commands.items()
        }
        self._database_created = False

    def _command(self, name: str) -> list[str]:
        return [str(part) for part in self.compose["services"][name]["command"]]

    def describe(self) -> str:
        return "; ".join(
            f"{name}: {' '.join(self.services[name].command)}"
            for name in ("migrate", "api", "worker", "beat")
        )

    def start(self) -> None:
        import psycopg

        with psycopg.connect(self.admin_url, autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{self.database}"')
        self._database_created = True
        migrate = self.services["migrate"]
        migrate.start()
        assert migrate.process is not None
        if migrate.process.wait(timeout=180) != 0:
            raise RuntimeError(f"gauntlet migrate failed:\n{migrate.log()[-3000:]}")
        for name in self.roles:
            self.services[name].start()
        self._wait_ready("api")

    def wait_ready(self) -> None:
        for name in self.roles:
            self._wait_ready(name)

    def _wait_ready(self, name: str) -> None:
        service = self.services[name]
        if name == "api":
            # Several answers in a row, so that each server process is likely up.
            in_a_row = [0]

            def healthy() -> bool:
                in_a_row[0] = in_a_row[0] + 1 if _get(f"{self.base_url}/healthz") == 200 else 0
                return in_a_row[0] >= 2 * self.api_processes

            _wait("the API", healthy, service.running, 120, service.log_path)
        elif name == "worker":
            _wait(
                "the worker",
                lambda: " ready." in service.log(),
                service.running,
                180,
                service.log_path,
            )
        else:
            _wait(
                "beat",
                lambda: "beat: Starting..." in service.log(),
                service.running,
                120,
                service.log_path,
            )

    def kill(self, kill: Kill) -> None:
        # Compose's `restart: unless-stopped`: the container is started again at once.
        if kill.role == "api":
            kill.api_down_from = time.time()
        self.services[kill.role].kill()
        self.services[kill.role].start()
        self._wait_ready(kill.role)
        kill.back_at = time.time()

    def pids(self) -> dict[str, list[int]]:
        found = {}
        for name in self.roles:
            process = self.services[name].process
            found[name] = [] if process is None else group_members(process.pid)
        found["postgresql"] = self._backends()
        return found

    def _backends(self) -> list[int]:
        """The PostgreSQL backends serving this layout's database."""
        import psycopg

        try:
            with psycopg.connect(self.admin_url, autocommit=True, connect_timeout=5) as connection:
                rows = connection.execute(
                    "SELECT pid FROM pg_stat_activity WHERE datname = %s", (self.database,)
                ).fetchall()
        except psycopg.Error:
            return []
        return [int(row[0]) for row in rows]

    def task_log(self) -> Iterator[tuple[datetime, str, float]]:
        """Celery's "Task NAME[ID] succeeded in Xs" lines of the worker's log (JSON lines in
        production), every run of the worker since the bench started it."""
        pattern = re.compile(
            r"Task ([\w.]+)\[[^\]]+\] (?:succeeded|raised \w+|retry\S*) in ([\d.]+)s"
        )
        with contextlib.suppress(OSError), self.services["worker"].log_path.open("rb") as log:
            for raw in log:
                if b"Task " not in raw:
                    continue
                try:
                    line = json.loads(raw)
                    event, stamp = str(line.get("event", "")), str(line.get("timestamp", ""))
                except (json.JSONDecodeError, AttributeError):
                    continue
                match = pattern.search(event)
                if match and stamp:
                    with contextlib.suppress(ValueError):
                        when = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
                        yield when, match.group(1), float(match.group(2))

    def broker_depth(self) -> int | None:
        import redis

        try:
            client = redis.Redis.from_url(self.redis_url, socket_timeout=2)
            try:
                # kombu's Redis transport: one list per queue and priority step.
                keys = list(client.scan_iter(match=f"{self.key_prefix}{self.queue}*", count=100))
                return sum(int(client.llen(key)) for key in keys if client.type(key) == b"list")
            finally:
                client.close()
        except redis.RedisError:
            return None

    def stop(self) -> None:
        for name in ("beat", "api", "worker", "migrate"):
            service = self.services[name]
            if service.running():
                with contextlib.suppress(Exception):
                    service.kill()
        if self._database_created:
            import psycopg

            with psycopg.connect(self.admin_url, autocommit=True) as connection:
                connection.execute(f'DROP DATABASE IF EXISTS "{self.database}" WITH (FORCE)')
        import redis

        client = redis.Redis.from_url(self.redis_url)
        try:
            written = list(client.scan_iter(match=f"{self.key_prefix}*", count=1000))
            if written:
                client.delete(*written)
        finally:
            client.close()


# The embedded mode ----------------------------------------------------------------------------


class EmbeddedLayout(Layout):
    """`gauntlet run` (what `make run` starts): the API and, as its child, a worker with the
    periodic sweep, on a SQLite file and the folder broker in a data folder of its own."""

    kind = "embedded"
    roles = ("api", "worker")
    killable = ("api", "worker")

    def __init__(
        self,
        *,
        checkout: Path,
        folder: Path,
        worker_concurrency: int | None,
        settings: dict[str, str],
        worker_back_within: float,
    ) -> None:
        self.checkout = checkout
        self.folder = folder
        self.data_dir = folder / "embedded-data"
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.admin_token = "gadm_event_" + secrets.token_urlsafe(24)
        self.database_url = f"sqlite:///{(self.data_dir / 'gauntlet.db').resolve()}"
        self.worker_back_within = worker_back_within
        binary = gauntlet_of(checkout)
        env = {k: v for k, v in os.environ.items() if not k.startswith("GAUNTLET_")}
        env.update(
            PATH=str(binary.parent) + os.pathsep + os.environ.get("PATH", "/usr/bin:/bin"),
            GAUNTLET_DATA_DIR=str(self.data_dir),
            GAUNTLET_ADMIN_TOKEN=self.admin_token,
            LITELLM_LOCAL_MODEL_COST_MAP="True",
            # The crowd's requests name their client addresses, as a reverse proxy would.
            GAUNTLET_TRUSTED_PROXIES="127.0.0.1",
            **settings,
        )
        if worker_concurrency is not None:
            env["GAUNTLET_WORKER_CONCURRENCY"] = str(worker_concurrency)
        command = [str(binary), "run", "--port", str(self.port)]
        self.run = Service(
            "run", {"command": command}, env, folder / "run.log", cwd=checkout, command=command
        )

    def describe(self) -> str:
        return " ".join(self.run.command) + f" (data in {self.data_dir})"

    def start(self) -> None:
        self.run.start()
        self._wait_healthy()

    def wait_ready(self) -> None:
        # The worker is `gauntlet run`'s own child: ready when `gauntlet run` is up.
        self._wait_healthy()

    def _wait_healthy(self) -> None:
        _wait(
            "gauntlet run",
            lambda: _get(f"{self.base_url}/healthz") == 200,
            self.run.running,
            120,
            self.run.log_path,
        )

    def _worker_pids(self) -> list[int]:
        """The worker `gauntlet run` started, with its pool: processes of the run's group whose
        command line runs the worker."""
        if self.run.process is None:
            return []
        found = []
        for pid in group_members(self.run.process.pid):
            with contextlib.suppress(OSError):
                command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                if b"worker" in command:
                    found.append(pid)
        return found

    def pids(self) -> dict[str, list[int]]:
        if self.run.process is None:
            return {"api": [], "worker": []}
        everything = group_members(self.run.process.pid)
        worker = self._worker_pids()
        return {"api": [pid for pid in everything if pid not in worker], "worker": worker}

    def kill(self, kill: Kill) -> None:
        if kill.role == "api":
            # The whole `gauntlet run` (what a user sees die), started again as they would.
            kill.api_down_from = time.time()
            self._restart_run()
            kill.back_at = time.time()
            return
        killed = set(self._worker_pids())
        for pid in killed:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        # `gauntlet run` supervising its worker starts a new one; else nothing does.
        deadline = time.monotonic() + self.worker_back_within
        while time.monotonic() < deadline:
            if set(self._worker_pids()) - killed:
                kill.back_at = time.time()
                kill.restarted_by = "itself"
                return
            time.sleep(0.2)
        kill.restarted_by = "bench restarted gauntlet run"
        # The API is down from here until the new `gauntlet run` answers.
        kill.api_down_from = time.time()
        self._restart_run()
        kill.back_at = time.time()

    def _restart_run(self) -> None:
        self.run.kill()
        self.run.start()
        self._wait_healthy()

    def stop(self) -> None:
        if self.run.running():
            with contextlib.suppress(Exception):
                self.run.kill()
        shutil.rmtree(self.data_dir, ignore_errors=True)


# CPU per role ---------------------------------------------------------------------------------


def _cpu_of(pid: int) -> tuple[int, float, float] | None:
    """(start time, user + system CPU seconds, seconds spent runnable but waiting for a CPU)
    of a live process, from /proc/<pid>/stat and /proc/<pid>/schedstat."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        waited = int(Path(f"/proc/{pid}/schedstat").read_text().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return None
    return int(fields[19]), (int(fields[11]) + int(fields[12])) / CLOCK_TICKS, waited


def _redis_server_pids() -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if (entry / "comm").read_text().strip().startswith("redis-server"):
                    found.append(int(entry.name))
    return found


@dataclass
class CpuMeter:
    """CPU seconds used by each role's processes, sampled from /proc every few seconds.

    A process is known by (pid, start time), so a reused pid is a new process; its last
    sample is what it used, so a process that died (killed, or a pool child replaced) keeps
    its CPU up to its last sample (at most one interval of it is missed)."""

    layout: Layout
    last: dict[tuple[str, int, int], tuple[float, float]] = field(default_factory=dict)
    # (time.time(), {role: cumulative CPU seconds}) and (…, {role: cumulative seconds waited})
    used: list[tuple[float, dict[str, float]]] = field(default_factory=list)
    waited: list[tuple[float, dict[str, float]]] = field(default_factory=list)

    def sample(self) -> None:
        roles = self.layout.pids()
        roles["redis-server (whole, shared)"] = _redis_server_pids()
        roles["bench (locust, this process)"] = [os.getpid()]
        for role, pids in roles.items():
            for pid in pids:
                measured = _cpu_of(pid)
                if measured is not None:
                    started, seconds, waited = measured
                    self.last[(role, pid, started)] = (seconds, waited)
        used: dict[str, float] = {}
        waited_for: dict[str, float] = {}
        for (role, _pid, _started), (seconds, waited) in self.last.items():
            used[role] = used.get(role, 0.0) + seconds
            waited_for[role] = waited_for.get(role, 0.0) + waited
        now = time.time()
        self.used.append((now, used))
        self.waited.append((now, waited_for))

    def used_between(self, start: float, end: float) -> dict[str, float]:
        """CPU seconds each role used between two moments (the samples nearest them)."""
        return _difference(self.used, start, end)

    def waited_between(self, start: float, end: float) -> dict[str, float]:
        """Seconds each role's processes were runnable but waited for a CPU (the machine's
        other work, or the layout's own processes, had them)."""
        return _difference(self.waited, start, end)


def _difference(
    series: list[tuple[float, dict[str, float]]], start: float, end: float
) -> dict[str, float]:
    if not series:
        return {}
    before = min(series, key=lambda sample: abs(sample[0] - start))[1]
    after = min(series, key=lambda sample: abs(sample[0] - end))[1]
    return {role: after.get(role, 0.0) - before.get(role, 0.0) for role in after}
