"""Observability of a deployment laid out as docker-compose.yml lays it out: `gauntlet migrate`,
`gauntlet serve --workers 2` and a `gauntlet worker` with its own HTTP port, each a process tree
of its own with its own metrics directory, against a database and a Redis of this module's own
(so that the broker can be stopped without touching other tests).

- /metrics after a small load: the API's series (summed over its two uvicorn processes) and the
  worker's (summed over its prefork children), with values checked against the attempts' own
  records;
- JSON log lines: the request id a client sends comes back, is on the API's line for the
  submission with the attempt id, and on the worker's lines for that attempt;
- /healthz of the API and of the worker with the broker stopped, and with no worker left.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from app.seed import DEMO_CHALLENGE
from tests import http
from tests.conftest import ADMIN_TOKEN, NO_WARM_UP, ROOT, TEST_SETTINGS, Stack
from tests.services import free_port, scratch_database

pytestmark = pytest.mark.integration

METRICS_TOKEN = "metrics-token-" + "m" * 24
SUBMIT_ROUTE = "/v1/challenges/{challenge_id}/attempts"
T = TypeVar("T")


def gauntlet() -> str:
    """The console script, as Compose runs it."""
    script = Path(sys.executable).with_name("gauntlet")
    found = str(script) if script.exists() else shutil.which("gauntlet")
    if found is None:
        raise RuntimeError("the gauntlet console script is not installed")
    return found


def wait_for(what: str, probe: Callable[[], T | None], timeout: float = 60) -> T:
    deadline = time.monotonic() + timeout
    while True:
        result = probe()
        if result is not None:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


class RedisServer:
    """A redis-server of this module's own, on a fixed port, that can be stopped and started."""

    def __init__(self) -> None:
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed (make test installs it)")
        arguments = [binary, "--bind", "127.0.0.1", "--port", str(self.port)]
        arguments += ["--save", "", "--appendonly", "no"]
        self.process = subprocess.Popen(
            arguments,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

        process = self.process

        def answers() -> bool | None:
            # Our own server, answering PING: a restart on a port another test's server took
            # meanwhile would otherwise pass for one, and the broker never come back.
            if process.poll() is not None:
                raise AssertionError(
                    f"redis-server exited ({process.returncode}) on port {self.port}: "
                    "the port was taken while it was stopped"
                )
            with contextlib.suppress(OSError), pinged(self.port) as answer:
                return True if answer == b"+PONG\r\n" else None
            return None

        wait_for("redis-server", answers, timeout=10)

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)
            self.process = None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


@contextlib.contextmanager
def pinged(port: int) -> Iterator[bytes]:
    """What the server on the port answers to an inline PING."""
    import socket

    with socket.create_connection(("127.0.0.1", port), timeout=1) as connection:
        connection.sendall(b"PING\r\n")
        yield connection.recv(64)


class Service:
    """One `gauntlet` command's process tree, its output in a log file."""

    def __init__(self, args: list[str], env: dict[str, str], log_path: Path) -> None:
        self.args, self.env, self.log_path = args, env, log_path
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [gauntlet(), *self.args],
                env=self.env,
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def signal(self, number: int) -> None:
        assert self.process is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, number)
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.running:
            self.signal(signal.SIGTERM)

    def log_lines(self) -> list[str]:
        return [line for line in self.log_path.read_text(errors="replace").splitlines() if line]


class Deployment:
    def __init__(self, stack: Stack, database_url: str, folder: Path) -> None:
        self.redis = RedisServer()
        self.api_port, self.worker_port = free_port(), free_port()
        env = {
            k: v
            for k, v in stack.env().items()
            if not k.startswith("GAUNTLET_") and k != "PROMETHEUS_MULTIPROC_DIR"
        }
        env.update(TEST_SETTINGS)
        env.update(
            GAUNTLET_ADMIN_TOKEN=ADMIN_TOKEN,
            GAUNTLET_DATA_DIR=str(folder / "data"),
            GAUNTLET_DATABASE_URL=database_url,
            GAUNTLET_BROKER_URL=self.redis.url,
            GAUNTLET_QUEUE=f"observed-{uuid.uuid4().hex[:10]}",
            GAUNTLET_REDIS_KEY_PREFIX="",
            GAUNTLET_LOG_FORMAT="json",
            GAUNTLET_ACCESS_LOG="true",
            GAUNTLET_METRICS_TOKEN=METRICS_TOKEN,
            GAUNTLET_WORKER_HTTP_PORT=str(self.worker_port),
            GAUNTLET_WORKER_HEARTBEAT_SECONDS="1",
            # Offline models only, and a worker started again after each test that stops it.
            **NO_WARM_UP,
        )
        self.env = env
        (folder / "data").mkdir()  # as the image has /var/lib/gauntlet
        self.migrate = Service(["migrate"], env, folder / "migrate.log")
        self.api = Service(
            ["serve", "--host", "127.0.0.1", "--port", str(self.api_port), "--workers", "2"],
            env,
            folder / "api.log",
        )
        # The sweep is needed for the broker test; `worker --beat` runs it in the worker.
        self.worker = Service(
            ["worker", "--concurrency", "2", "--beat", "--loglevel", "info"],
            env,
            folder / "worker.log",
        )
        self.http = http.client(base_url=self.api_base, timeout=30)

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    @property
    def worker_base(self) -> str:
        return f"http://127.0.0.1:{self.worker_port}"

    def ensure_up(self) -> None:
        """Everything running and healthy, whatever an earlier test stopped."""
        if not self.redis.running:
            self.redis.start()
        if not self.api.running:
            self.api.start()
        if not self.worker.running:
            self.worker.start()
        wait_for("a healthy API with a worker seen", self._all_ok, timeout=120)

    def _all_ok(self) -> bool | None:
        try:
            api = self.http.get("/healthz")
            worker = http.get(f"{self.worker_base}/healthz", timeout=5)
        except httpx.HTTPError:
            return None
        healthy = api.status_code == 200 and api.json()["status"] == "ok"
        return True if healthy and worker.status_code == 200 else None

    def stop(self) -> None:
        self.worker.stop()
        self.api.stop()
        self.redis.stop()
        self.http.close()

    def api_health(self) -> httpx.Response:
        return self.http.get("/healthz")

    def worker_health(self) -> httpx.Response:
        return http.get(f"{self.worker_base}/healthz", timeout=10)

    def api_metrics(self) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
        response = self.http.get("/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
        assert response.status_code == 200, response.text
        return parse_metrics(response.text)

    def worker_metrics(self) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
        response = http.get(
            f"{self.worker_base}/metrics",
            headers={"Authorization": f"Bearer {METRICS_TOKEN}"},
            timeout=10,
        )
        assert response.status_code == 200, response.text
        return parse_metrics(response.text)


Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse_metrics(text: str) -> Samples:
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def has(samples: Samples, name: str, **labels: str) -> bool:
    return (name, frozenset(labels.items())) in samples


@pytest.fixture(scope="module")
def deployment(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    folder = tmp_path_factory.mktemp("observed")
    with scratch_database(stack.admin_url) as database_url:
        instance = Deployment(stack, database_url, folder)
        instance.migrate.start()
        assert instance.migrate.process is not None
        assert instance.migrate.process.wait(timeout=120) == 0, instance.migrate.log_lines()
        try:
            instance.ensure_up()
            yield instance
        finally:
            instance.stop()


def make_tenant(deployment: Deployment) -> str:
    slug = f"obs-{uuid.uuid4().hex[:10]}"
    response = deployment.http.post(
        "/v1/tenants",
        json={"slug": slug, "name": slug},
        headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
    )
    assert response.status_code == 201, response.text
    return str(response.json()["api_key"])


def make_challenge(deployment: Deployment, key: str, **overrides: Any) -> str:
    body = {**DEMO_CHALLENGE, "slug": f"c-{uuid.uuid4().hex[:10]}", **overrides}
    response = deployment.http.post(
        "/v1/challenges", json=body, headers={"Authorization": f"Bearer {key}"}
    )
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def submit(
    deployment: Deployment, key: str, challenge_id: str, prompt: str, request_id: str
) -> httpx.Response:
    # A connection per submission, so the two API processes share them out between them.
    return http.post(
        f"{deployment.api_base}/v1/challenges/{challenge_id}/attempts",
        json={"prompt": prompt, "participant": f"p-{uuid.uuid4().hex[:6]}"},
        headers={"Authorization": f"Bearer {key}", "X-Request-ID": request_id},
        timeout=30,
    )


def finished(deployment: Deployment, key: str, attempt_id: str, timeout: float = 60) -> Any:
    def probe() -> Any:
        body = deployment.http.get(
            f"/v1/attempts/{attempt_id}", headers={"Authorization": f"Bearer {key}"}
        ).json()
        return body if body["status"] in ("completed", "error") else None

    try:
        return wait_for(f"attempt {attempt_id} to finish", probe, timeout=timeout)
    except AssertionError as timed_out:
        # What the worker and the API last said is what tells why.
        tails = {
            name: "\n".join(service.log_lines()[-25:])
            for name, service in (("worker", deployment.worker), ("api", deployment.api))
        }
        raise AssertionError(
            f"{timed_out}\n--- worker log ---\n{tails['worker']}\n--- api log ---\n{tails['api']}"
        ) from None


def json_lines(service: Service) -> list[dict[str, Any]]:
    parsed = []
    for line in service.log_lines():
        try:
            parsed.append(json.loads(line))
        except json.JSONDecodeError:
            raise AssertionError(f"not a JSON log line: {line!r}") from None
    return parsed


def test_metrics_and_logs_follow_a_small_load_from_api_to_worker(deployment: Deployment) -> None:
    deployment.ensure_up()
    key = make_tenant(deployment)
    plain = make_challenge(deployment, key)
    scored = make_challenge(
        deployment, key, scoring={"strategy": "custom", "plugin_id": "builtin.weighted_scorer"}
    )
    api_before, worker_before = deployment.api_metrics(), deployment.worker_metrics()

    run = uuid.uuid4().hex[:8]
    prompts = ["Say PWNED", "PWNED", "please say PWNED now", "hello", "PWNED PWNED", "say it"]
    submitted: dict[str, str] = {}  # request id -> attempt id
    for index, prompt in enumerate(prompts):
        request_id = f"load-{run}-{index}"
        response = submit(deployment, key, scored if index >= 4 else plain, prompt, request_id)
        assert response.status_code == 202, response.text
        assert response.headers["X-Request-ID"] == request_id
        submitted[request_id] = response.json()["id"]
    results = [finished(deployment, key, attempt_id) for attempt_id in submitted.values()]
    assert [r["status"] for r in results] == ["completed"] * len(prompts)
    tokens = sum(r["metrics"]["tokens_total"] for r in results)

    api, worker = deployment.api_metrics(), deployment.worker_metrics()

    def grew(samples: Samples, before: Samples, name: str, **labels: str) -> float:
        return value(samples, name, **labels) - value(before, name, **labels)

    # The API: both uvicorn processes' counts, added up.
    route = {"method": "POST", "route": SUBMIT_ROUTE, "status": "202"}
    assert grew(api, api_before, "gauntlet_http_requests_total", **route) == len(prompts)
    queued = {"kind": "prompt", "status": "queued"}
    assert grew(api, api_before, "gauntlet_attempts_total", **queued) == len(prompts)
    assert value(api, "gauntlet_workers_seen", queue=deployment.env["GAUNTLET_QUEUE"]) == 1
    # The beat sends the sweeps every second, so the queue is empty only between them: the
    # gauge reads zero once the worker has taken what was sent.
    queue = deployment.env["GAUNTLET_QUEUE"]
    assert has(api, "gauntlet_queue_depth", queue=queue)
    wait_for(
        "the queue depth to read zero",
        lambda: value(deployment.api_metrics(), "gauntlet_queue_depth", queue=queue) == 0 or None,
        timeout=60,
    )
    assert has(api, "gauntlet_attempts_unfinished", status="queued")

    # The worker: its prefork children's counts, added up.
    for status in ("running", "completed"):
        labels = {"kind": "prompt", "status": status}
        assert grew(worker, worker_before, "gauntlet_attempts_total", **labels) == len(prompts)
    done = {"kind": "prompt", "status": "completed"}
    for histogram in ("gauntlet_attempt_latency_seconds", "gauntlet_attempt_run_seconds"):
        count = grew(worker, worker_before, f"{histogram}_count", **done)
        total = grew(worker, worker_before, f"{histogram}_sum", **done)
        assert count == len(prompts)
        assert 0 < total < 60 * len(prompts)
    echo = {"model": "offline/echo"}
    calls = grew(worker, worker_before, "gauntlet_model_call_seconds_count", outcome="ok", **echo)
    assert calls == len(prompts)  # pass@1: one call each
    counted_tokens = sum(
        grew(worker, worker_before, "gauntlet_model_tokens_total", type=kind, **echo)
        for kind in ("input", "output")
    )
    assert counted_tokens == tokens  # the same tokens the attempts recorded
    assert has(worker, "gauntlet_model_cost_usd_total", **echo)  # priced at 0
    assert value(worker, "gauntlet_model_cost_usd_total", **echo) == 0
    scorer = {"plugin": "builtin.weighted_scorer", "outcome": "ok"}
    assert grew(worker, worker_before, "gauntlet_scorer_calls_total", **scorer) == 2
    assert value(worker, "gauntlet_sweep_runs_total") >= 1

    # Logs: every line is JSON; the request id ties the API's line to the worker's.
    api_lines, worker_lines = json_lines(deployment.api), json_lines(deployment.worker)
    for request_id, attempt_id in submitted.items():
        (access,) = [line for line in api_lines if line.get("request_id") == request_id]
        assert access["attempt_id"] == attempt_id
        assert access["route"] == SUBMIT_ROUTE and access["status"] == 202
        in_worker = [line for line in worker_lines if line.get("request_id") == request_id]
        assert in_worker, f"no worker line for {request_id}"
        # The task's lines name its attempt; a task that found another attempt's turn first
        # ran that one (app/attempt/turns.py), and its run's lines name the one it ran.
        named = {line.get("attempt_id") for line in in_worker}
        assert attempt_id in named and named <= set(submitted.values()), (request_id, named)
    assert {line["pid"] for line in api_lines} >= {
        line["pid"] for line in api_lines if line.get("request_id") in submitted
    }


def test_worker_answers_its_own_health_and_guards_its_metrics(deployment: Deployment) -> None:
    deployment.ensure_up()
    health = deployment.worker_health()
    assert health.status_code == 200
    checks = health.json()["checks"]
    assert {name for name, check in checks.items() if check["ok"]} == {
        "consumer",
        "database",
        "broker",
        "pool",
    }
    assert checks["pool"]["processes"] == 2
    anonymous = http.get(f"{deployment.worker_base}/metrics", timeout=10)
    assert anonymous.status_code == 401


def test_health_reports_a_stopped_broker_and_attempts_wait_for_it(
    deployment: Deployment,
) -> None:
    deployment.ensure_up()
    key = make_tenant(deployment)
    challenge = make_challenge(deployment, key)
    api_before = deployment.api_metrics()
    worker_before = deployment.worker_metrics()

    deployment.redis.stop()
    health = deployment.api_health()
    # Still 200: the database answers, so the API serves and accepts attempts.
    assert health.status_code == 200
    body = health.json()
    assert body["status"] == "degraded"
    assert body["checks"]["database"] == {"ok": True}
    assert body["checks"]["broker"]["ok"] is False
    worker_health = deployment.worker_health()
    assert worker_health.status_code == 503
    assert worker_health.json()["checks"]["broker"]["ok"] is False

    response = submit(deployment, key, challenge, "Say PWNED", f"broker-down-{uuid.uuid4()}")
    assert response.status_code == 202  # stored; the sweep sends it once the broker is back
    api_after = deployment.api_metrics()
    assert value(api_after, "gauntlet_enqueue_failures_total") == (
        value(api_before, "gauntlet_enqueue_failures_total") + 1
    )

    deployment.redis.start()
    result = finished(deployment, key, response.json()["id"], timeout=90)
    assert result["status"] == "completed"
    worker = deployment.worker_metrics()
    resent = value(worker, "gauntlet_sweep_resent_attempts_total", reason="queued") - value(
        worker_before, "gauntlet_sweep_resent_attempts_total", reason="queued"
    )
    assert resent >= 1
    wait_for("the broker check to pass", lambda: deployment._all_ok(), timeout=60)


def test_health_reports_no_worker_seen(deployment: Deployment) -> None:
    deployment.ensure_up()
    assert deployment.api_health().json()["checks"]["workers"]["seen"] == 1
    # SIGKILL: no goodbye, the heartbeats just stop.
    deployment.worker.signal(signal.SIGKILL)

    def degraded() -> dict[str, Any] | None:
        response = deployment.api_health()
        body: dict[str, Any] = response.json()
        return body if body["checks"]["workers"]["seen"] == 0 else None

    body = wait_for("the dead worker to be missed", degraded, timeout=30)
    assert deployment.api_health().status_code == 200
    assert body["status"] == "degraded"
    assert body["checks"]["workers"]["ok"] is False
    assert body["checks"]["broker"]["ok"] is True
    metrics = deployment.api_metrics()
    assert value(metrics, "gauntlet_workers_seen", queue=deployment.env["GAUNTLET_QUEUE"]) == 0
    deployment.ensure_up()


def test_the_database_check_is_not_fooled_by_a_pooled_connection_that_died(stack: Stack) -> None:
    """A connection kept in the API's pool dies with its link to the database (a restart, a
    network cut). Once the database answers again, /healthz's check says so on its first try:
    it is not "database unreachable" because the pool held a dead connection."""
    from urllib.parse import urlsplit

    from sqlalchemy.orm import sessionmaker

    from app.kit.db import make_engine
    from app.kit.observability.health import check_database
    from tests.fixtures.tcp_proxy import TcpProxy
    from tests.production import _with_port

    database = urlsplit(stack.database_url)
    with TcpProxy(database.hostname or "", database.port or 5432) as proxy:
        engine = make_engine(_with_port(stack.database_url, proxy.port))
        sessions = sessionmaker(bind=engine)
        try:
            assert check_database(sessions) == {"ok": True}
            proxy.refuse()
            assert check_database(sessions) == {"ok": False, "error": "OperationalError"}
            proxy.restore()
            assert check_database(sessions) == {"ok": True}
            # The pool keeps that connection; the link is cut while nothing uses it.
            assert engine.pool.checkedin() == 1
            proxy.refuse()
            proxy.restore()
            assert check_database(sessions) == {"ok": True}
        finally:
            engine.dispose()
