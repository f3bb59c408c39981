"""The production layout of docker-compose.yml, started natively, the way Compose starts it.

There is no Docker engine here, so each Gauntlet service of the Compose file runs as a process
group of its own (a container: SIGKILL to the group kills everything in it) with the service's
own command, unchanged, found on PATH as in the image, and the service's own environment. Only
the values that name other containers or the container's file system are replaced by their
native equivalents (`NATIVE_VALUES`); settings that Compose leaves at their defaults are set for
speed (short leases, a fast sweep) and for isolation (a queue, a Redis key prefix and a database
of this layout's own). The healthchecks are the Compose file's too, run as the Docker engine
would run them, against these processes.

The API reaches PostgreSQL and Redis through proxies the tests can break (tests/fixtures/
tcp_proxy.py); the worker and beat reach them directly.

The module has no import-time effects (it does not load tests/conftest.py), so the event
bench (bench/event_layout.py) starts the same services with it, from any checkout.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx
import yaml

from tests import http
from tests.fixtures.tcp_proxy import TcpProxy

ROOT = Path(__file__).resolve().parent.parent
COMPOSE_FILE = ROOT / "docker-compose.yml"
GAUNTLET_SERVICES = ("migrate", "api", "worker", "beat")
# What a `.env` next to docker-compose.yml gives (see .env.example).
DOTENV = {
    "POSTGRES_PASSWORD": "compose-postgres-password",
    # Generated as .env.example says (production refuses guessable secrets).
    "GAUNTLET_ADMIN_TOKEN": secrets.token_urlsafe(32),
    "GAUNTLET_SECRET_KEY": secrets.token_urlsafe(32),
    "OPENAI_API_KEY": "sk-test-not-a-real-key",
}
# The Compose environment variables whose values name other containers (hosts `postgres` and
# `redis`) or a path inside the container; each gets its native equivalent. Every other value
# of the Compose file is used as written.
# Ports too: a container has the host's ports to itself, a native process shares them.
NATIVE_VALUES = (
    "GAUNTLET_DATABASE_URL",
    "GAUNTLET_BROKER_URL",
    "GAUNTLET_DATA_DIR",
    "PORT",
    "GAUNTLET_WORKER_HTTP_PORT",
)


def compose_file(path: Path = COMPOSE_FILE) -> dict[str, Any]:
    return dict(yaml.safe_load(path.read_text()))


def interpolate(value: str, variables: Mapping[str, str]) -> str:
    """Compose's variable substitution: ${VAR}, ${VAR:-default}, ${VAR:?error}, and $$."""

    def substitute(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name, operator, argument = match.group(1), match.group(2), match.group(3) or ""
        value = variables.get(name, "")
        if value:
            return value
        if operator == ":?":
            raise ValueError(f"{name}: {argument}")
        return argument if operator == ":-" else ""

    return re.sub(r"\$\$|\$\{(\w+)(?:(:[-?])([^}]*))?\}", substitute, value)


def healthcheck_argv(test: list[str]) -> list[str]:
    """A Compose healthcheck `test` as the Docker engine runs it."""
    kind, *rest = test
    if kind == "CMD":
        return rest
    if kind == "CMD-SHELL":
        return ["/bin/sh", "-c", rest[0]]
    raise ValueError(f"unsupported healthcheck {test!r}")


def seconds(duration: str) -> float:
    """A Compose duration such as `5s` or `1m30s`."""
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h)", duration)
    assert parts, duration
    return sum(float(number) * units[unit] for number, unit in parts)


def service_environment(
    definition: Mapping[str, Any],
    dotenv: Mapping[str, str],
    native: Mapping[str, str],
    settings: Mapping[str, str],
    bin_folder: str,
) -> dict[str, str]:
    """What a Compose service's container sees, for a native process: the service's declared
    environment (interpolated from the `.env` values), with the values that name other
    containers or the container's files replaced by `native` ones, plus `settings` the Compose
    file leaves at their defaults (a setting it names must not be overridden)."""
    declared = {
        key: interpolate(str(value), dotenv)
        for key, value in (definition.get("environment") or {}).items()
    }
    replaced = {key: native[key] for key in declared if key in native}
    assert not set(settings) & set(declared), set(settings) & set(declared)
    return {
        # What a container has besides its declared environment: a PATH that finds the
        # image's programs (here, a virtualenv's) and a host name.
        "PATH": bin_folder + os.pathsep + os.environ.get("PATH", "/usr/bin:/bin"),
        "HOSTNAME": socket.gethostname(),
        "LANG": "C.UTF-8",
        **declared,
        **replaced,
        **settings,
    }


class Service:
    """One Compose service as a process group: started, killed and restarted like a container."""

    def __init__(
        self,
        name: str,
        definition: dict[str, Any],
        env: dict[str, str],
        log_path: Path,
        *,
        cwd: Path = ROOT,
        command: list[str] | None = None,
    ) -> None:
        self.name, self.definition, self.env, self.log_path = name, definition, env, log_path
        self.cwd = cwd
        self.command: list[str] = command or [str(part) for part in definition["command"]]
        self.process: subprocess.Popen[bytes] | None = None
        self.log_offset = 0

    def start(self) -> None:
        self.log_offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                self.command,
                env=self.env,
                cwd=self.cwd,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log(self) -> str:
        """What the service wrote since it was last started."""
        with self.log_path.open("rb") as log:
            log.seek(self.log_offset)
            return log.read().decode(errors="replace")

    def wait_for_log(self, text: str, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.log():
            if not self.running():
                raise AssertionError(f"{self.name} exited:\n{self.log()[-3000:]}")
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.name} never logged {text!r}:\n{self.log()[-3000:]}")
            time.sleep(0.1)

    def kill(self) -> None:
        """SIGKILL to every process of the service, as `docker kill` does to a container."""
        assert self.process is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)
        # A container's processes all die with it; here, wait until the group is gone.
        deadline = time.monotonic() + 10
        while group_members(self.process.pid):
            assert time.monotonic() < deadline, f"{self.name}'s processes outlived SIGKILL"
            time.sleep(0.05)

    def healthcheck(self) -> subprocess.CompletedProcess[str]:
        """Runs the service's Compose healthcheck once, as the Docker engine would."""
        check = self.definition["healthcheck"]
        argv = healthcheck_argv([interpolate(str(part), {}) for part in check["test"]])
        try:
            return subprocess.run(
                argv,
                env=self.env,
                cwd=self.cwd,
                capture_output=True,
                text=True,
                timeout=seconds(check.get("timeout", "30s")) + 10,
            )
        except subprocess.TimeoutExpired as expired:
            return subprocess.CompletedProcess(argv, -1, str(expired.stdout), "timed out")


def group_members(group: int) -> list[int]:
    """The processes of a process group, zombies (dead, not yet reaped) left out."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            members.append(int(stat.parent.name))
    return members


class ProductionLayout:
    """migrate, api, worker and beat of docker-compose.yml against this test run's services."""

    def __init__(
        self,
        *,
        database_url: str,
        redis_url: str,
        folder: Path,
        test_settings: Mapping[str, str],
    ) -> None:
        self.compose = compose_file()
        self.folder = folder
        self.database_url = database_url
        self.redis_url = redis_url
        database = urllib.parse.urlsplit(database_url)
        redis = urllib.parse.urlsplit(redis_url)
        # The API's peers, breakable; the worker and beat connect directly.
        self.database_proxy = TcpProxy(database.hostname or "", database.port or 5432).start()
        self.broker_proxy = TcpProxy(redis.hostname or "", redis.port or 6379).start()
        self.port = _free_port()
        self.worker_http_port = _free_port()
        self.test_settings = dict(test_settings)
        self.database_faults_healed = 0
        self.services = {
            name: Service(
                name,
                self.compose["services"][name],
                self.environment(name),
                folder / f"{name}.log",
            )
            for name in GAUNTLET_SERVICES
        }

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def admin_token(self) -> str:
        return DOTENV["GAUNTLET_ADMIN_TOKEN"]

    def __getitem__(self, name: str) -> Service:
        return self.services[name]

    def environment(self, name: str) -> dict[str, str]:
        through_proxies = name == "api"
        database = self.database_url
        broker = self.redis_url
        if through_proxies:
            database = _with_port(database, self.database_proxy.port)
            broker = _with_port(broker, self.broker_proxy.port)
        native = {
            "GAUNTLET_DATABASE_URL": database,
            "GAUNTLET_BROKER_URL": broker,
            "GAUNTLET_DATA_DIR": str(self.folder / f"{name}-data"),
            "PORT": str(self.port),
            "GAUNTLET_WORKER_HTTP_PORT": str(self.worker_http_port),
        }
        return service_environment(
            self.compose["services"][name],
            DOTENV,
            {key: native[key] for key in NATIVE_VALUES},
            self.test_settings,
            str(Path(sys.executable).parent),
        )

    def migrate(self) -> None:
        """Runs `migrate` to completion, as Compose does before it starts the others."""
        migrate = self.services["migrate"]
        migrate.start()
        assert migrate.process is not None
        assert migrate.process.wait(timeout=120) == 0, migrate.log()[-3000:]

    def start(self, name: str) -> None:
        """Starts a service (again, after a kill: Compose's `restart: unless-stopped`) and
        waits until it is ready."""
        self.services[name].start()
        self.wait_ready(name)

    def wait_ready(self, name: str) -> None:
        service = self.services[name]
        if name == "api":
            self.wait_healthy()
        elif name == "worker":
            service.wait_for_log(" ready.")
            # Then healthy, as the Docker engine would see it within the check's start period:
            # the worker's first heartbeat reaches the database just after it is ready.
            self.wait_check_passes(name)
        elif name == "beat":
            service.wait_for_log("beat: Starting...")

    def processes(self, name: str) -> dict[int, str]:
        """The live processes of a service (its process group), with their command lines."""
        process = self.services[name].process
        members = [] if process is None else group_members(process.pid)
        command_lines = {}
        for pid in members:
            with contextlib.suppress(OSError):
                raw = Path(f"/proc/{pid}/cmdline").read_bytes()
                command_lines[pid] = raw.replace(b"\0", b" ").decode(errors="replace")
        return command_lines

    def wait_check_passes(self, name: str, timeout: float = 60) -> None:
        service = self.services[name]
        deadline = time.monotonic() + timeout
        while (result := service.healthcheck()).returncode != 0:
            assert service.running(), service.log()[-3000:]
            assert time.monotonic() < deadline, (result.stdout, result.stderr[-2000:])
            time.sleep(0.2)

    def wait_healthy(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                if http.get(f"{self.base_url}/healthz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            api = self.services["api"]
            assert api.running(), api.log()[-3000:]
            assert time.monotonic() < deadline, api.log()[-3000:]
            time.sleep(0.1)

    def heal(self) -> None:
        """Back to the layout's normal state: peers reachable, every service running, and no
        API process left with database connections that a fault cut.

        Its pool has no pre-ping (app/kit/db.py): an API process that holds such connections
        answers its next request that needs the database with a 503 (then it connects
        afresh). That is the service's documented behaviour after its database went away,
        not something the next test should meet by chance: the API is restarted instead."""
        self.database_proxy.restore()
        self.broker_proxy.restore()
        if self.database_proxy.faults != self.database_faults_healed:
            if self.services["api"].running():
                self.services["api"].kill()
            self.database_faults_healed = self.database_proxy.faults
        for name in ("api", "worker", "beat"):
            if not self.services[name].running():
                self.start(name)

    def stop(self) -> None:
        # Nothing is checked at this point: the quickest way down, as `docker compose kill`.
        for name in ("beat", "api", "worker"):
            if self.services[name].running():
                self.services[name].kill()
        self.database_proxy.stop()
        self.broker_proxy.stop()


def _with_port(url: str, port: int) -> str:
    """The URL with its host and port replaced by a proxy's on 127.0.0.1."""
    parts = urllib.parse.urlsplit(url)
    credentials = parts.netloc.rpartition("@")[0]
    netloc = f"{credentials}@127.0.0.1:{port}" if credentials else f"127.0.0.1:{port}"
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


def _free_port() -> int:
    from tests.services import free_port

    return free_port()
