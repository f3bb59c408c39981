"""Hostile scorer plugins against the scorer sandbox (which once leaked every secret), through the
API.

Each hostile scorer of tests/fixtures/hostile_scorers is registered by the platform admin,
attached to a challenge, and run by a real attempt on a real worker against PostgreSQL and Redis.
Each attack must fail safely: no secret in any API answer or stored row, no process left
running, and the attempt still completes (with `score = null` and a reason where the scorer's
answer is unusable).
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from sqlalchemy import text

from tests.conftest import ADMIN_TOKEN, TEST_SETTINGS, Api, Stack, Worker
from tests.fixtures.processes import processes_named, unique_comm

pytestmark = pytest.mark.integration

HOSTILE = "tests.fixtures.hostile_scorers"
DATA_DIR_CANARY = "canary-" + uuid.uuid4().hex


@pytest.fixture(scope="module")
def secrets(stack: Stack) -> list[str]:
    """Every secret the API and the worker hold, and one planted in the data dir."""
    data_dir = Path(os.environ["GAUNTLET_DATA_DIR"])
    (data_dir / "canary").write_text(DATA_DIR_CANARY)
    values = [
        ADMIN_TOKEN,
        TEST_SETTINGS["GAUNTLET_SECRET_KEY"],
        stack.database_url,
        urlsplit(stack.database_url).netloc,
        os.environ["OPENAI_API_KEY"],
        DATA_DIR_CANARY,
    ]
    return [value for value in values if value]


class Replay:
    """Registers a hostile scorer, runs one attempt with it, and keeps every answer seen."""

    def __init__(self, api: Api, tenant: dict[str, Any]) -> None:
        self.api = api
        self.key = tenant["api_key"]
        self.answers: list[httpx.Response] = []

    def register(self, entrypoint: str) -> httpx.Response:
        plugin_id = f"hostile.{entrypoint.rsplit(':', 1)[1].lower()}.{uuid.uuid4().hex[:6]}"
        response = self.api.request(
            "POST",
            "/v1/scorers",
            ADMIN_TOKEN,
            json={"plugin_id": plugin_id, "entrypoint": entrypoint},
        )
        self.answers.append(response)
        return response

    def attempt(
        self, scorer: str, config: dict[str, Any] | None = None, timeout_ms: int = 5000
    ) -> dict[str, Any]:
        registered = self.register(f"{HOSTILE}.{scorer}")
        assert registered.status_code == 201, registered.text
        challenge = self.api.create_challenge(
            self.key,
            scoring={
                "strategy": "custom",
                "plugin_id": registered.json()["plugin_id"],
                "config": config or {},
                "timeout_ms": timeout_ms,
            },
        )
        submitted = self.api.submit(self.key, challenge["id"], "PWNED", "mallory")
        assert submitted.status_code == 202, submitted.text
        result = self.api.wait_finished(self.key, submitted.json()["id"], timeout=90)
        self.answers.append(self.api.request("GET", f"/v1/attempts/{result['id']}", self.key))
        self.answers.append(
            self.api.request("GET", f"/v1/challenges/{challenge['id']}/leaderboard", self.key)
        )
        assert result["status"] == "completed", (result["error"], result["score_details"])
        return result

    def assert_no_secret_anywhere(self, secrets: list[str], attempt_ids: list[str]) -> None:
        from app.kit.db import session_scope

        seen = [response.text for response in self.answers]
        with session_scope() as session:
            for attempt_id in attempt_ids:
                for statement in (
                    "SELECT row_to_json(a)::text FROM attempts a WHERE a.id = :id",
                    "SELECT row_to_json(t)::text FROM trials t WHERE t.attempt_id = :id",
                    "SELECT row_to_json(l)::text FROM leaderboard_entries l "
                    "WHERE l.attempt_id = :id",
                ):
                    seen += session.scalars(text(statement), {"id": attempt_id}).all()
        assert seen
        for secret in secrets:
            for answer in seen:
                assert secret not in answer, f"a secret leaked into: {answer[:300]}"


@pytest.fixture
def replay(api: Api, tenant: dict[str, Any], worker: Worker) -> Replay:
    """Its attempts run on the session's worker, which this asks for: without it they would
    stay queued whenever no earlier test of the run had started the worker."""
    return Replay(api, tenant)


def test_the_worker_says_bubblewrap_isolates_plugins(worker: Worker) -> None:
    # Fails, never skips, where bubblewrap is missing: `make test` and the image install it.
    deadline = time.monotonic() + 30
    while "scorer sandbox:" not in worker.log_path.read_text(errors="replace"):
        assert time.monotonic() < deadline, "the worker logged nothing about its scorer sandbox"
        time.sleep(0.1)
    line = next(
        line for line in worker.log_path.read_text().splitlines() if "scorer sandbox:" in line
    )
    assert "scorer sandbox: bubblewrap" in line, line


def test_environments_of_worker_and_api_are_out_of_reach(
    replay: Replay, worker: Worker, secrets: list[str]
) -> None:
    assert worker.process is not None
    result = replay.attempt(
        "theft:EnvironThief", {"pids": [worker.process.pid, os.getpid(), os.getppid()]}
    )
    assert result["score"] == 1.0
    details = result["score_details"]
    # Its own PID namespace: the sandbox's init and the scorer, nothing else.
    assert details["visible_pids"] == [1, 2]
    replay.assert_no_secret_anywhere(secrets, [result["id"]])


def test_files_of_the_service_are_out_of_reach(
    replay: Replay, secrets: list[str], stack: Stack
) -> None:
    data_dir = os.environ["GAUNTLET_DATA_DIR"]
    root = Path(__file__).resolve().parents[2]
    result = replay.attempt(
        "theft:FileThief",
        {
            "paths": [f"{data_dir}/canary", str(root / ".env"), str(root / "app" / "config.py")],
            "folders": [data_dir, str(root), str(root / "app")],
        },
    )
    read = result["score_details"]["read"]
    assert read[f"{data_dir}/canary"].startswith("refused")
    assert read[str(root / "app" / "config.py")].startswith("refused")
    listed = result["score_details"]["listed"]
    assert listed[data_dir].startswith("refused")
    assert ".git" not in listed[str(root)] and "app" not in listed[str(root)]
    replay.assert_no_secret_anywhere(secrets, [result["id"]])


def test_postgresql_redis_and_the_internet_are_unreachable(
    replay: Replay, secrets: list[str], stack: Stack
) -> None:
    database = urlsplit(stack.database_url)
    broker = urlsplit(stack.broker_url)
    hosts = [[database.hostname, database.port or 5432], [broker.hostname, broker.port or 6379]]
    result = replay.attempt("escape:NetworkProbe", {"hosts": hosts})
    details = result["score_details"]
    assert f"{database.hostname}:{database.port or 5432}" in details
    for target, outcome in details.items():
        assert outcome.startswith("refused"), (target, outcome)
    replay.assert_no_secret_anywhere(secrets, [result["id"]])


def test_a_fork_bomb_is_refused_and_leaves_nothing(replay: Replay, secrets: list[str]) -> None:
    comm = unique_comm()
    result = replay.attempt("escape:ForkBomb", {"comm": comm})
    details = result["score_details"]
    assert details["refused"] == "Resource temporarily unavailable"
    assert 0 < details["forks"] < 16
    assert processes_named(comm) == []
    replay.assert_no_secret_anywhere(secrets, [result["id"]])


@pytest.mark.parametrize("hang", [False, True])
def test_a_setsid_grandchild_does_not_survive(
    replay: Replay, secrets: list[str], hang: bool
) -> None:
    comm = unique_comm()
    result = replay.attempt("escape:SetsidEscape", {"comm": comm, "hang": hang}, timeout_ms=1000)
    if hang:
        assert result["score"] is None
        assert result["score_details"]["error"] == "timed out after 1000 ms"
    else:
        assert result["score"] == 1.0
    # The attempt completes only after the sandbox, grandchild included, is gone.
    assert processes_named(comm) == []
    replay.assert_no_secret_anywhere(secrets, [result["id"]])


def test_files_are_written_only_to_a_small_private_tmp(replay: Replay, secrets: list[str]) -> None:
    data_dir = os.environ["GAUNTLET_DATA_DIR"]
    root = Path(__file__).resolve().parents[2]
    targets = [f"{data_dir}/planted", str(root / "scorers" / "planted.py"), "/tmp/planted-host"]
    result = replay.attempt("escape:FileWriter", {"paths": targets})
    details = result["score_details"]
    for target in targets[:2]:
        assert details[target].startswith("refused"), (target, details[target])
    # /tmp is the sandbox's own: the write succeeds there and never reaches the host's /tmp.
    assert details["/tmp/planted-host"] == "written"
    for target in targets:
        assert not Path(target).exists(), target
    assert details["big file"] == "refused: File too large"
    assert details["fill"].startswith("stopped after")
    replay.assert_no_secret_anywhere(secrets, [result["id"]])


def test_huge_deep_and_non_json_details_are_bounded_data(
    replay: Replay, secrets: list[str]
) -> None:
    too_large = replay.attempt("answers:HugeDetails", {"size": 10_000_000})
    assert too_large["score"] is None
    assert too_large["score_details"]["error"].startswith("result too large")
    cut = replay.attempt("answers:HugeDetails", {"size": 60_000})
    assert cut["score"] == 1.0 and cut["score_details"]["details_truncated"] is True
    assert len(cut["score_details"]["blob"]) == 2000
    deep = replay.attempt("answers:DeepDetails", {"depth": 800})
    assert deep["score_details"]["details_truncated"] is True
    assert len(str(deep["score_details"])) < 1000
    wide = replay.attempt("answers:WideDetails", {"keys": 3000})
    assert len(wide["score_details"]) <= 65
    odd = replay.attempt("answers:NonJsonDetails")
    assert odd["score"] == 1.0
    assert odd["score_details"]["nan"] == "NaN"
    assert odd["score_details"]["huge"] == str(10**40)
    # Kept visible, escaped where it is stored (app/evaluation/engine/storable.py).
    assert odd["score_details"]["surrogate"] == "\\ud800 alone"
    unserializable = replay.attempt("answers:NonJsonDetails", {"unserializable": True})
    assert unserializable["score"] is None
    assert "not JSON-serializable" in unserializable["score_details"]["error"]
    forged = replay.attempt("answers:ForgedFrame")
    assert forged["score"] is None
    assert forged["score_details"]["error"] == "scorer process sent an unreadable answer"
    attempts = [too_large, cut, deep, wide, odd, unserializable, forged]
    replay.assert_no_secret_anywhere(secrets, [attempt["id"] for attempt in attempts])


def test_registration_imports_in_the_sandbox_and_gets_nothing(
    replay: Replay, secrets: list[str]
) -> None:
    module = f"{HOSTILE}.at_import"
    response = replay.register(f"{module}:Anything")
    assert response.status_code == 422, response.text
    message = response.json()["error"]["message"]
    assert f"cannot import '{module}'" in message and "loot" in message
    assert "database': 'refused" in message
    # The API process (this test process runs the API server) never imported it.
    assert module not in sys.modules
    assert processes_named("gt-importspawn") == []
    replay.assert_no_secret_anywhere(secrets, [])
