"""The production layout of docker-compose.yml (`gauntlet migrate`, `gauntlet serve --workers 2`,
`gauntlet worker`, `gauntlet beat`), started as Compose starts it (tests/production.py), and the
faults it must recover from by itself: each process killed mid-load, an API killed between its
commit and its send, the broker or the database down, an attempt over its time limit, and one
tenant's flood beside another tenant's requests.

The processes are shared by the tests of this module; each test leaves them running.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
import redis
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from app.attempt.models import Attempt, AttemptStatus, Trial
from app.kit.db import make_engine, utcnow
from app.leaderboard.models import LeaderboardEntry
from tests import http
from tests.conftest import NO_WARM_UP, TEST_SETTINGS, Api, Stack
from tests.fixtures.fake_openai import Behaviour, FakeOpenAIServer
from tests.fixtures.tenant_flood import finish_flood, measure, start_flood
from tests.production import ProductionLayout

pytestmark = pytest.mark.integration

REQUEUE_SECONDS = 3
TIME_LIMIT_SECONDS = 10


@pytest.fixture(scope="module")
def layout(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProductionLayout]:
    from tests.services import scratch_database

    run = uuid.uuid4().hex[:12]
    prefix = f"gauntlet-production-{run}:"
    settings = {
        # Speed: what the session's worker uses (tests/conftest.py).
        **{
            name: TEST_SETTINGS[name]
            for name in (
                "GAUNTLET_ATTEMPT_LEASE_SECONDS",
                "GAUNTLET_SWEEP_INTERVAL_SECONDS",
                "GAUNTLET_MODEL_RETRY_BASE_DELAY_SECONDS",
                "GAUNTLET_MODEL_TIMEOUT_SECONDS",
                "GAUNTLET_ALLOWED_API_BASES",
            )
        },
        "GAUNTLET_QUEUED_REQUEUE_SECONDS": str(REQUEUE_SECONDS),
        # Its workers call offline models and servers by base URL only, and restart often.
        **NO_WARM_UP,
        "GAUNTLET_ATTEMPT_TIME_LIMIT_SECONDS": str(TIME_LIMIT_SECONDS),
        # Isolation from the session's worker and from other runs sharing this Redis.
        "GAUNTLET_QUEUE": f"production-{run}",
        "GAUNTLET_REDIS_KEY_PREFIX": prefix,
    }
    folder = tmp_path_factory.mktemp("production")
    with scratch_database(stack.admin_url) as database_url:
        production = ProductionLayout(
            database_url=database_url,
            redis_url=stack.broker_url,
            folder=folder,
            test_settings=settings,
        )
        try:
            production.migrate()
            for name in ("api", "worker", "beat"):
                production[name].start()
            for name in ("api", "worker", "beat"):
                production.wait_ready(name)
            yield production
        finally:
            production.stop()
            broker = redis.Redis.from_url(stack.broker_url)
            written = list(broker.scan_iter(match=f"{prefix}*"))
            if written:
                broker.delete(*written)


@pytest.fixture(scope="module")
def engine(layout: ProductionLayout) -> Iterator[Engine]:
    """The layout's database, read directly (not through the API's proxy)."""
    database = make_engine(layout.database_url)
    yield database
    database.dispose()


@pytest.fixture(autouse=True)
def _healed(layout: ProductionLayout) -> Iterator[None]:
    """Whatever a test broke, the next one finds every service running and its peers up."""
    yield
    layout.heal()


@pytest.fixture
def api(layout: ProductionLayout) -> Iterator[Api]:
    client = Api(layout.base_url, admin_token=layout.admin_token)
    yield client
    client.http.close()


@pytest.fixture
def key(api: Api) -> str:
    return str(api.create_tenant()["api_key"])


def _attempts(engine: Engine, challenge_id: str) -> list[Attempt]:
    with Session(engine) as session:
        return list(
            session.scalars(select(Attempt).where(Attempt.challenge_id == uuid.UUID(challenge_id)))
        )


def _wait_for_rows(engine: Engine, challenge_id: str, count: int) -> list[Attempt]:
    deadline = time.monotonic() + 30
    while len(rows := _attempts(engine, challenge_id)) < count:
        assert time.monotonic() < deadline, f"{len(rows)} of {count} attempts stored"
        time.sleep(0.02)
    return rows


def test_the_compose_healthchecks_pass_against_the_running_services(
    layout: ProductionLayout,
) -> None:
    for name in ("api", "worker"):
        result = layout[name].healthcheck()
        assert result.returncode == 0, (name, result.stdout, result.stderr)


def test_attempts_run_through_two_api_processes_and_a_separate_beat(
    layout: ProductionLayout, api: Api, key: str
) -> None:
    # uvicorn's supervisor starts its server processes with multiprocessing's spawn.
    servers = [line for line in layout.processes("api").values() if "spawn_main" in line]
    assert len(servers) == 2, layout.processes("api")
    challenge = api.create_challenge(key)
    ids = [api.submit(key, challenge["id"], "PWNED", f"p{n}").json()["id"] for n in range(6)]
    for attempt_id in ids:
        assert api.wait_finished(key, attempt_id)["status"] == "completed"
    board = api.request("GET", f"/v1/challenges/{challenge['id']}/leaderboard", key).json()
    assert board["total"] == 6


def test_attempts_whose_task_never_left_a_killed_api_are_sent_by_a_replay_or_the_sweep(
    layout: ProductionLayout, api: Api, key: str, engine: Engine
) -> None:
    challenge = api.create_challenge(key)
    # No sweep for now, so nothing but a replay can send an attempt.
    layout["beat"].kill()
    layout.broker_proxy.hold()  # the API commits, then waits on Redis forever
    answers: dict[str, Any] = {}

    def submit(name: str) -> None:
        try:
            answers[name] = api.submit(
                key, challenge["id"], "PWNED", name, headers={"Idempotency-Key": name}
            )
        except httpx.HTTPError as error:
            answers[name] = error

    # One after the other, so the replayed attempt holds the earlier turn: a task claims the
    # attempt whose turn it is (app/attempt/turns.py), and the replay's task must not run the
    # other one first.
    clients = [threading.Thread(target=submit, args=(name,)) for name in ("replayed", "swept")]
    for stored, client in enumerate(clients, start=1):
        client.start()
        _wait_for_rows(engine, challenge["id"], stored)
    layout["api"].kill()  # between the commit and the send
    for client in clients:
        client.join(timeout=30)
    assert all(isinstance(answer, httpx.HTTPError) for answer in answers.values()), answers
    layout.broker_proxy.restore()
    layout.start("api")

    # Queued long enough for a replay to count as stalled; nothing has sent either attempt.
    rows = {row.idempotency_key: row for row in _attempts(engine, challenge["id"])}
    stalled_at = max(row.enqueued_at for row in rows.values()) + timedelta(seconds=REQUEUE_SECONDS)
    time.sleep(max(0.0, (stalled_at - utcnow()).total_seconds()) + 0.1)
    assert {row.status for row in _attempts(engine, challenge["id"])} == {"queued"}

    replay = api.submit(
        key, challenge["id"], "PWNED", "replayed", headers={"Idempotency-Key": "replayed"}
    )
    assert replay.status_code == 202 and replay.headers["Idempotent-Replayed"] == "true"
    assert replay.json()["id"] == str(rows["replayed"].id)
    assert api.wait_finished(key, replay.json()["id"])["status"] == "completed"
    # The replay sent its own attempt only; the other waits for the sweep.
    swept = str(rows["swept"].id)
    assert api.request("GET", f"/v1/attempts/{swept}", key).json()["status"] == "queued"
    layout.start("beat")
    assert api.wait_finished(key, swept)["status"] == "completed"


def test_an_attempt_submitted_while_the_broker_is_down_runs_once_it_is_back(
    layout: ProductionLayout, api: Api, key: str
) -> None:
    challenge = api.create_challenge(key)
    layout.broker_proxy.refuse()
    accepted = api.submit(key, challenge["id"], "PWNED", "patient")
    # Stored and accepted: the send failed, the sweep will send it.
    assert accepted.status_code == 202, accepted.text
    assert accepted.json()["status"] == "queued"
    layout.broker_proxy.restore()
    result = api.wait_finished(key, accepted.json()["id"], timeout=60)
    assert result["status"] == "completed"
    assert result["metrics"]["succeeded"] is True


def test_healthz_answers_503_while_the_database_is_down(layout: ProductionLayout) -> None:
    healthz = f"{layout.base_url}/healthz"
    assert http.get(healthz).status_code == 200
    layout.database_proxy.refuse()
    # Several requests, so both API processes are likely asked (which process takes a
    # connection is up to the kernel).
    for _ in range(6):
        down = http.get(healthz, timeout=10)
        assert down.status_code == 503, down.text
        assert down.json()["error"]["code"] == "unavailable"
        assert "database unreachable" in down.json()["error"]["message"]
    assert layout["api"].healthcheck().returncode != 0
    layout.database_proxy.restore()
    deadline = time.monotonic() + 30
    while http.get(healthz, timeout=10).status_code != 200:
        assert time.monotonic() < deadline, "the API never found its database again"
        time.sleep(0.1)
    # Every process answers 200 from now on, also one that no request reached during the
    # outage and whose pool still holds connections the outage cut.
    for _ in range(6):
        assert http.get(healthz, timeout=10).status_code == 200
    assert layout["api"].healthcheck().returncode == 0


def test_an_attempt_over_its_time_limit_ends_in_error_and_does_not_count(
    layout: ProductionLayout, api: Api, key: str
) -> None:
    with FakeOpenAIServer(default=Behaviour.slow(120, "PWNED")) as provider:
        challenge = api.create_challenge(
            key,
            target={"model": "openai/fake-model", "api_base": provider.base_url},
            limits={"max_attempts_total": 1},
        )
        attempt = api.submit(key, challenge["id"], "PWNED", "slowpoke").json()
        result = api.wait_finished(key, attempt["id"], timeout=TIME_LIMIT_SECONDS + 50)
        assert result["status"] == "error", result
        assert result["error"] == f"time limit of {TIME_LIMIT_SECONDS} s exceeded"
        assert result["trials"] == [] and result["metrics"] is None
        provider.default = Behaviour.ok("PWNED")
        again = api.submit(key, challenge["id"], "PWNED", "slowpoke")
        assert again.status_code == 202, again.text
        assert api.wait_finished(key, again.json()["id"])["status"] == "completed"


class Load:
    """Clients submitting attempts at a steady pace, one new participant each. A client whose
    request fails (the API killed, restarting) retries with the same Idempotency-Key until the
    attempt is accepted, as a well-behaved client does."""

    def __init__(self, api: Api, key: str, challenge_id: str, clients: int = 2) -> None:
        self.base_url, self.key = api.base_url, key
        self.path = f"/v1/challenges/{challenge_id}/attempts"
        self.accepted: dict[str, str] = {}  # Idempotency-Key → attempt id
        self.problems: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._client, args=(number,), daemon=True)
            for number in range(clients)
        ]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=90)
        assert not any(thread.is_alive() for thread in self._threads)

    def wait_accepted(self, count: int, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while len(self.accepted) < count:
            assert not self.problems, self.problems
            assert time.monotonic() < deadline, f"{len(self.accepted)} of {count} accepted"
            time.sleep(0.05)

    def _client(self, number: int) -> None:
        with http.client(base_url=self.base_url, timeout=15) as session:
            sequence = 0
            while not self._stop.is_set():
                sequence += 1
                self._submit(session, f"load-{number}-{sequence}", f"p{number}-{sequence}")
                self._stop.wait(0.3)

    def _submit(self, http: httpx.Client, idempotency_key: str, participant: str) -> None:
        headers = {"Authorization": f"Bearer {self.key}", "Idempotency-Key": idempotency_key}
        body = {"prompt": "PWNED", "participant": participant}
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                response = http.post(self.path, json=body, headers=headers)
            except httpx.HTTPError:
                time.sleep(0.1)
                continue
            if response.status_code == 202:
                with self._lock:
                    known = self.accepted.setdefault(idempotency_key, response.json()["id"])
                if known != response.json()["id"]:
                    self.problems.append(f"{idempotency_key}: two attempts")
                return
            if response.status_code < 500:
                self.problems.append(f"{idempotency_key}: {response.status_code} {response.text}")
                return
            time.sleep(0.1)
        self.problems.append(f"{idempotency_key}: never accepted")


def test_killing_each_process_mid_load_loses_and_repeats_nothing(
    layout: ProductionLayout, api: Api, key: str, engine: Engine
) -> None:
    """SIGKILL to the worker (mid-attempt), the API (mid-request) and beat, in turn, each
    restarted as Compose restarts it, while clients keep submitting: every accepted attempt
    completes, once, with its trials once and its leaderboard row once."""
    with FakeOpenAIServer(default=Behaviour.slow(0.5, "PWNED")) as provider:
        challenge = api.create_challenge(
            key,
            target={"model": "openai/fake-model", "api_base": provider.base_url},
            evaluation={"metric": "pass@k", "k": 2},
        )
        load = Load(api, key, challenge["id"])
        load.start()
        try:
            load.wait_accepted(5)
            # The worker, while it runs attempts: those still running once it is dead (and its
            # last transactions have ended) were interrupted.
            deadline = time.monotonic() + 30
            while not _running(engine, challenge["id"]):
                assert time.monotonic() < deadline, "no attempt was ever seen running"
                time.sleep(0.01)
            layout["worker"].kill()
            interrupted = _interrupted(engine, challenge["id"])
            assert interrupted, "the worker was not killed mid-attempt"
            assert layout["worker"].healthcheck().returncode != 0
            layout.start("worker")
            assert layout["worker"].healthcheck().returncode == 0
            load.wait_accepted(len(load.accepted) + 5)
            # The API, while clients send to it.
            layout["api"].kill()
            assert layout["api"].healthcheck().returncode != 0
            layout.start("api")
            assert layout["api"].healthcheck().returncode == 0
            load.wait_accepted(len(load.accepted) + 5)
            # The scheduler.
            layout["beat"].kill()
            layout.start("beat")
            load.wait_accepted(len(load.accepted) + 5)
        finally:
            load.stop()
        assert not load.problems, load.problems
        accepted = set(load.accepted.values())

        deadline = time.monotonic() + 120
        while True:
            rows = _attempts(engine, challenge["id"])
            if all(row.status in ("completed", "error") for row in rows):
                break
            assert time.monotonic() < deadline, {
                str(row.id): row.status for row in rows if row.status not in ("completed",)
            }
            time.sleep(0.2)

    # Every accepted attempt, and only those (a retried request made no second attempt).
    assert {str(row.id) for row in rows} == accepted
    assert {row.status for row in rows} == {"completed"}, [row.error for row in rows]
    by_id = {row.id: row for row in rows}
    # The attempts the killed worker was running were finished by another run.
    assert all(by_id[attempt_id].run_count >= 2 for attempt_id in interrupted)
    with engine.connect() as connection:
        trials = dict(
            connection.execute(
                select(Trial.attempt_id, func.count())
                .where(Trial.attempt_id.in_(by_id))
                .group_by(Trial.attempt_id)
            ).all()
        )
        board = connection.execute(
            select(LeaderboardEntry.participant_id, LeaderboardEntry.attempt_id).where(
                LeaderboardEntry.challenge_id == uuid.UUID(challenge["id"])
            )
        ).all()
    assert trials == {attempt_id: 2 for attempt_id in by_id}
    assert sorted((p, a) for p, a in board) == sorted((row.participant_id, row.id) for row in rows)
    assert all(row.metrics is not None and row.metrics.trials == 2 for row in rows)
    listed = api.request("GET", f"/v1/challenges/{challenge['id']}/leaderboard", key).json()
    assert listed["total"] == len(accepted)


def _running(engine: Engine, challenge_id: str) -> list[uuid.UUID]:
    return [row.id for row in _attempts(engine, challenge_id) if row.status == "running"]


def _interrupted(engine: Engine, challenge_id: str) -> list[uuid.UUID]:
    """The attempts a worker killed just now left running.

    Its processes being gone is not enough: a COMMIT it sent just before SIGKILL (an attempt
    completed, or ended in error) is still applied by PostgreSQL afterwards, and a plain read
    made in between sees the attempt running, although no other run will ever take it. Every
    transaction that ends an attempt holds its row lock until it ends, so this read waits for
    the dead worker's last transactions to commit or abort (PostgreSQL aborts those whose
    client is gone), then takes the rows as they left them."""
    with Session(engine) as session, session.begin():
        return list(
            session.scalars(
                select(Attempt.id)
                .where(
                    Attempt.challenge_id == uuid.UUID(challenge_id),
                    Attempt.status == AttemptStatus.RUNNING,
                )
                .with_for_update()
            )
        )


FLOOD_SECONDS = 20.0


def test_a_tenants_flood_is_refused_at_its_share_and_another_tenant_is_served(
    api: Api, layout: ProductionLayout
) -> None:
    """300 connections of one tenant's key, from 40 addresses, over its own attempts list,
    sending again the moment an answer is in (Retry-After ignored), for 20 s, at both API
    processes: the other tenant's admin key gets at least 90 % of its answers 200 meanwhile,
    and the flood gets 429s carrying Retry-After and the RateLimit fields of its share. (The
    latencies are bench/tenant_flood.py's to print.)"""
    keys = []
    for _ in range(2):
        key = str(api.create_tenant()["api_key"])
        challenge = api.create_challenge(key)
        for number in range(5):
            assert api.submit(key, challenge["id"], "PWNED", f"p{number}").status_code == 202
        keys.append((key, challenge["id"]))
    (flood_key, _), (other_key, other_challenge) = keys
    flood = start_flood(layout.port, "/v1/attempts?limit=50", flood_key, duration=FLOOD_SECONDS)
    try:
        measured = measure(
            layout.port,
            ["/v1/attempts?limit=20", f"/v1/challenges/{other_challenge}"],
            other_key,
            duration=FLOOD_SECONDS,
        )
    finally:
        record = finish_flood(flood)
    statuses = {int(status): count for status, count in record["statuses"].items()}
    assert set(statuses) <= {200, 429, 503}, record
    assert statuses.get(429, 0) > statuses.get(200, 0) > 0, record
    assert record["refused_headers"], record
    share = {"retry-after": "1", "ratelimit-limit": "8", "ratelimit-remaining": "0"}
    refusals = [headers for headers in record["refused_headers"] if headers["status"] == "429"]
    assert refusals, record
    for headers in refusals:
        assert {name: headers[name] for name in share} == share, headers
        assert int(headers["ratelimit-reset"]) >= 1
    assert len(measured.answers) >= 10, measured.summary()
    assert measured.served_share >= 0.9, measured.summary()
