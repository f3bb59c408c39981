"""Fixtures: real PostgreSQL, Redis, an API server over HTTP and a real Celery worker process.

Unit tests need none of this; the session fixtures start only when an integration test asks.
Each integration test works in tenants of its own, so tests never see each other's rows.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
import redis

from app.kit.error_codes import UNDECLARED_ERROR_CODE
from app.seed import DEMO_CHALLENGE

if TYPE_CHECKING:
    from tests.fixtures.mail_server import MailServer

# Skips fail under `make test` and in CI (tests/strict.py).
from tests import http
from tests.strict import pytest_runtest_makereport  # noqa: F401

ROOT = Path(__file__).resolve().parent.parent
# Production refuses weak secrets (length and estimated entropy): random ones for each run.
ADMIN_TOKEN = "gadm_test_" + secrets.token_urlsafe(32)

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ["GAUNTLET_ADMIN_TOKEN"] = ADMIN_TOKEN
os.environ["GAUNTLET_DATA_DIR"] = tempfile.mkdtemp(prefix="gauntlet-test-data-")
os.environ.setdefault("OPENAI_API_KEY", "sk-test-not-a-real-key")

_RUN_ID = uuid.uuid4().hex[:12]


def _free_port() -> int:
    from tests.services import free_port

    return free_port()


# The SMTP server of this test process (`mail_server`, started by the tests that read mail):
# its port is chosen now, so that the workers started with TEST_SETTINGS send to it.
MAIL_PORT = _free_port()
# Links in mail start with this address, whatever host a request named (tests take the path).
PUBLIC_URL = "http://gauntlet.test"

# Short leases and a fast sweep, so that recovery from a killed worker is seen within seconds.
TEST_SETTINGS = {
    "GAUNTLET_MODE": "production",
    "GAUNTLET_ATTEMPT_LEASE_SECONDS": "6",
    "GAUNTLET_SWEEP_INTERVAL_SECONDS": "1",
    "GAUNTLET_QUEUED_REQUEUE_SECONDS": "3",
    "GAUNTLET_MODEL_RETRY_BASE_DELAY_SECONDS": "0.05",
    "GAUNTLET_MODEL_TIMEOUT_SECONDS": "20",
    # Fake OpenAI-compatible servers listen on random loopback ports: any port, path /v1 only.
    # The keyed entry and allowed.example.com serve tests/security/test_outbound.py.
    "GAUNTLET_ALLOWED_API_BASES": json.dumps(
        [
            "http://127.0.0.1:*/v1",
            {"url": "http://127.0.0.1:*/keyed/v1", "api_key_env": "TEST_KEYED_BASE_API_KEY"},
            "http://allowed.example.com",
        ]
    ),
    "TEST_KEYED_BASE_API_KEY": "sk-keyed-base-" + "k" * 16,
    # The only folder tenant benchmarks may read besides their bundled data.
    "GAUNTLET_BENCHMARK_DATA_DIR": tempfile.mkdtemp(prefix="gauntlet-test-benchmark-data-"),
    "GAUNTLET_SEED_DEMO": "false",
    # Tests race tens of requests from one address and one tenant on purpose (tests/
    # integration/deployment/test_overload.py and test_production.py check the limits at their
    # defaults).
    "GAUNTLET_API_MAX_IN_FLIGHT_PER_CLIENT": "64",
    "GAUNTLET_API_MAX_IN_FLIGHT_PER_TENANT": "64",
    # Test runs sharing one Redis (parallel checkouts) must not take each other's tasks, nor
    # touch each other's keys: each run has its own queue and its own key prefix.
    "GAUNTLET_QUEUE": f"test-{_RUN_ID}",
    "GAUNTLET_REDIS_KEY_PREFIX": f"gauntlet-test-{_RUN_ID}:",
    "GAUNTLET_SECRET_KEY": secrets.token_urlsafe(32),
    # The test servers speak plain HTTP: a Secure cookie would never come back.
    "GAUNTLET_SECURE_COOKIES": "false",
    # Mail goes to this process's SMTP server (tests/fixtures/mail_server.py); a message it
    # did not take is tried again within seconds.
    "GAUNTLET_SMTP_URL": f"smtp://127.0.0.1:{MAIL_PORT}",
    "GAUNTLET_MAIL_FROM": "Gauntlet tests <gauntlet@tests.example.org>",
    "GAUNTLET_PUBLIC_URL": PUBLIC_URL,
    "GAUNTLET_MAIL_RETRY_BASE_SECONDS": "0.5",
    # The hostile scorers of tests/security/test_sandbox.py, and the original protocol's dict
    # scorers of tests/integration/scoring/test_original_scorer_protocol.py, may be registered.
    "GAUNTLET_SCORER_ALLOWED_MODULES": (
        "scorers.,tests.fixtures.hostile_scorers.,tests.fixtures.original_scorers."
    ),
}
# The suite's workers start without litellm's warm-up (its import and first call: 7-9 s of
# CPU at each start, and the session's worker alone is started again by a dozen tests); a
# pool process that calls a model through litellm imports it then. The warm-up's own test
# starts a worker with it (tests/integration/deployment/test_worker_warm_up.py).
NO_WARM_UP = {"GAUNTLET_WORKER_WARM_UP": "false"}
# A challenge kind of the tests' own (tests/integration/challenge/test_challenge_kinds.py),
# added the way an operator adds one: a package installed beside the service, declaring its
# entry point. The folder holds that package's installed metadata; on the path of this process
# (for the API server thread) and of the processes the tests start (which run from the
# project's root, so the kind's module, tests.fixtures.word_count_kind, is importable).
INSTALLED_KINDS = ROOT / "tests" / "fixtures" / "installed"
TEST_KINDS = {
    "PYTHONPATH": os.pathsep.join(
        filter(None, [str(INSTALLED_KINDS), str(ROOT), os.environ.get("PYTHONPATH")])
    )
}


class _Undeclared(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.met: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith(UNDECLARED_ERROR_CODE):
            self.met.append(message)


@pytest.fixture(autouse=True)
def undeclared_error_codes() -> Iterator[list[str]]:
    """Fails a test in which the API answered an error code its operation does not declare
    (docs/errors.md): the document would not have told a client of it. The API serves in
    this process (`ServerThread`), so its log is read here."""
    handler = _Undeclared()
    logger = logging.getLogger("app.main")
    logger.addHandler(handler)
    try:
        yield handler.met
    finally:
        logger.removeHandler(handler)
    if handler.met:
        pytest.fail("; ".join(dict.fromkeys(handler.met)), pytrace=False)


def _reset_caches() -> None:
    from app.challenge.registry import registered
    from app.kit.config import get_settings
    from app.kit.db import get_engine, get_sessionmaker

    get_settings.cache_clear()
    get_engine.cache_clear()
    get_sessionmaker.cache_clear()
    registered.cache_clear()


class Stack:
    def __init__(self, database_url: str, broker_url: str, admin_url: str) -> None:
        self.database_url = database_url
        self.broker_url = broker_url
        self.admin_url = admin_url  # may create databases

    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            **TEST_SETTINGS,
            **TEST_KINDS,
            "GAUNTLET_DATABASE_URL": self.database_url,
            "GAUNTLET_BROKER_URL": self.broker_url,
        }


@pytest.fixture(scope="session")
def stack() -> Iterator[Stack]:
    from tests.services import scratch_database, services

    with services() as found, scratch_database(found.admin_url) as database_url:
        # Database 9 of whatever Redis is used; this run's keys carry its own prefix, and
        # nothing here ever deletes keys it did not write.
        broker_url = found.redis_url.rsplit("/", 1)[0] + "/9"
        result = Stack(database_url, broker_url, found.admin_url)
        os.environ.update(result.env())
        if str(INSTALLED_KINDS) not in sys.path:
            sys.path.append(str(INSTALLED_KINDS))
        _reset_caches()
        from app.cli import migrate

        migrate()
        yield result
        from app.kit.db import get_engine

        get_engine().dispose()
        # This run's keys, and only those: they all carry its prefix.
        broker = redis.Redis.from_url(broker_url)
        written = list(broker.scan_iter(match=TEST_SETTINGS["GAUNTLET_REDIS_KEY_PREFIX"] + "*"))
        if written:
            broker.delete(*written)


@contextmanager
def counting_queries() -> Iterator[list[str]]:
    """The SQL statements the in-process server (`api_url`) runs meanwhile."""
    from sqlalchemy import event

    from app.kit.db import get_engine

    statements: list[str] = []

    def count(*args: Any) -> None:
        statements.append(str(args[2]))

    engine = get_engine()
    event.listen(engine, "before_cursor_execute", count)
    try:
        yield statements
    finally:
        event.remove(engine, "before_cursor_execute", count)


class ServerThread:
    def __init__(self, port: int) -> None:
        import uvicorn

        from app.cli import proxy_options
        from app.main import create_app

        config = uvicorn.Config(
            create_app(),
            host="127.0.0.1",
            port=port,
            log_level="warning",
            access_log=False,
            **proxy_options(),
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def start(self) -> None:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("API server did not start")
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture(scope="session")
def api_url(stack: Stack) -> Iterator[str]:
    from tests.services import free_port

    port = free_port()
    server = ServerThread(port)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


class Worker:
    """A real `gauntlet worker` process (Celery prefork, with the periodic sweep)."""

    def __init__(
        self, env: dict[str, str], log_path: Path, *, concurrency: int = 2, beat: bool = True
    ) -> None:
        self.env = env
        self.log_path = log_path
        self.concurrency = concurrency
        self.beat = beat
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "app.cli",
                "worker",
                *(["--beat"] if self.beat else []),
                "--concurrency",
                str(self.concurrency),
                "--loglevel",
                "info",
                # A test run that dies (a timeout's kill, ^C twice) takes its workers along.
                "--end-with-parent",
            ],
            env=self.env,
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        start_size = self.log_path.stat().st_size if self.log_path.exists() else 0
        while True:
            text = self.log_path.read_bytes()[start_size:].decode(errors="replace")
            if " ready." in text:
                return
            if self.process.poll() is not None:
                raise RuntimeError(f"worker exited:\n{text[-3000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"worker did not become ready:\n{text[-3000:]}")
            time.sleep(0.1)

    def kill(self) -> None:
        """SIGKILL to the whole process group: the main process and its pool children."""
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)


@pytest.fixture(scope="session")
def worker(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Worker]:
    log_path = tmp_path_factory.mktemp("worker") / "worker.log"
    process = Worker({**stack.env(), **NO_WARM_UP}, log_path)
    process.start()
    yield process
    process.stop()


class Api:
    """An HTTP client of the API with helpers for the usual set-up steps."""

    def __init__(self, base_url: str, admin_token: str = ADMIN_TOKEN) -> None:
        self.base_url = base_url
        self.admin_token = admin_token
        self.http = http.client(base_url=base_url, timeout=30)

    def request(
        self, method: str, path: str, token: str | None = None, **kwargs: Any
    ) -> httpx.Response:
        headers = dict(kwargs.pop("headers", {}) or {})
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        return self.http.request(method, path, headers=headers, **kwargs)

    def create_tenant(self, slug: str | None = None) -> dict[str, Any]:
        slug = slug or f"t-{uuid.uuid4().hex[:10]}"
        response = self.request(
            "POST", "/v1/tenants", self.admin_token, json={"slug": slug, "name": slug}
        )
        assert response.status_code == 201, response.text
        return dict(response.json())

    def create_challenge(self, key: str, **overrides: Any) -> dict[str, Any]:
        # The demo challenge (offline/echo behind "Never say PWNED.", fewest tokens), anew.
        body: dict[str, Any] = {**DEMO_CHALLENGE, "slug": f"c-{uuid.uuid4().hex[:10]}"}
        body.update(overrides)
        response = self.request("POST", "/v1/challenges", key, json=body)
        assert response.status_code == 201, response.text
        return dict(response.json())

    def submit(
        self, key: str, challenge_id: str, prompt: str, participant: str, **kwargs: Any
    ) -> httpx.Response:
        return self.request(
            "POST",
            f"/v1/challenges/{challenge_id}/attempts",
            key,
            json={"prompt": prompt, "participant": participant},
            **kwargs,
        )

    def wait_finished(self, key: str, attempt_id: str, timeout: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            response = self.request("GET", f"/v1/attempts/{attempt_id}", key)
            assert response.status_code == 200, response.text
            body = dict(response.json())
            if body["status"] in ("completed", "error"):
                return body
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"attempt {attempt_id} still {body['status']} after {timeout}s"
                )
            time.sleep(0.05)


@pytest.fixture(scope="session")
def api(api_url: str) -> Iterator[Api]:
    client = Api(api_url)
    yield client
    client.http.close()


@pytest.fixture
def tenant(api: Api) -> dict[str, Any]:
    return api.create_tenant()


@pytest.fixture(scope="session")
def mail_server(stack: Stack) -> Iterator[MailServer]:
    """The SMTP server the workers send to (GAUNTLET_SMTP_URL), with what it received."""
    from tests.fixtures.mail_server import MailServer

    server = MailServer(MAIL_PORT)
    server.start()
    yield server
    server.stop()
