"""Recovery in seconds, with the sweep's re-send window at its default (a minute): a run that a
transient database error stopped is retried at once, and a dead worker's attempt is taken
over by a live one as soon as its lease runs out. Neither waits for that window, which only a
message lost on its way to a worker needs.

The session's worker is restarted for this module with that window at its default (the suite
shortens it for lost messages), and restarted as it was afterwards.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from app.attempt.models import Attempt
from app.kit.config import Settings
from app.kit.db import session_scope, utcnow
from tests.conftest import NO_WARM_UP, Api, Worker
from tests.fixtures.fake_openai import Behaviour, FakeOpenAIServer
from tests.integration.deployment.test_reliability import _send_run_attempt
from tests.integration.lease.test_leases import _queued_attempt

pytestmark = pytest.mark.integration

# What the suite shortens (tests/conftest.py), left here at its default.
REQUEUE_SETTING = "GAUNTLET_QUEUED_REQUEUE_SECONDS"
DEFAULT_REQUEUE_SECONDS = Settings.model_fields["queued_requeue_seconds"].default
# The bounds these tests hold the service to: far below the re-send window.
RETRIED_WITHIN_SECONDS = 15
TAKEN_OVER_WITHIN_SECONDS = 20


@pytest.fixture(scope="module")
def recovering_worker(worker: Worker) -> Iterator[Worker]:
    """The session's worker, with the sweep's re-send window at its default."""
    assert DEFAULT_REQUEUE_SECONDS >= 60
    suite_env = worker.env
    worker.stop()
    worker.env = {name: value for name, value in suite_env.items() if name != REQUEUE_SETTING}
    worker.start()
    try:
        yield worker
    finally:
        worker.stop()
        worker.env = suite_env
        worker.start()


def _runs(attempt_id: str) -> int:
    with session_scope() as session:
        attempt = session.get(Attempt, uuid.UUID(attempt_id))
        assert attempt is not None
        return attempt.run_count


# Where the injected error strikes: a trial's write (during the run) or the attempt's completion
# (its row, then its leaderboard row), each for this test's tenant only.
FAULTS = {
    "a trial's write": ("trials", "INSERT", "NEW.tenant_id = :tenant_id"),
    "the completion": (
        "attempts",
        "UPDATE",
        "NEW.tenant_id = :tenant_id AND NEW.status = 'completed' AND OLD.status <> 'completed'",
    ),
}


class DeadlockOnce:
    """PostgreSQL answers the first matching statement with a real `deadlock_detected` error
    (SQLSTATE 40P01), as if it had chosen that transaction as a deadlock's victim. A sequence
    counts the hits: its increments survive the rollback the error causes."""

    def __init__(self, table: str, event: str, condition: str, tenant_id: str) -> None:
        self.name = f"test_deadlock_once_{uuid.uuid4().hex[:12]}"
        self.table, self.event = table, event
        self.condition = condition.replace(":tenant_id", f"'{uuid.UUID(tenant_id)}'::uuid")

    def __enter__(self) -> DeadlockOnce:
        name = self.name
        with session_scope() as session:
            session.execute(text(f"CREATE SEQUENCE {name}"))
            session.execute(
                text(
                    f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                    f"IF nextval('{name}') = 1 THEN RAISE EXCEPTION 'deadlock detected "
                    f"(injected)' USING ERRCODE = 'deadlock_detected'; END IF; RETURN NEW; "
                    f"END $$"
                )
            )
            session.execute(
                text(
                    f"CREATE TRIGGER {name} BEFORE {self.event} ON {self.table} FOR EACH ROW "
                    f"WHEN ({self.condition}) EXECUTE FUNCTION {name}()"
                )
            )
        return self

    def hits(self) -> int:
        with session_scope() as session:
            called = session.scalar(text(f"SELECT is_called FROM {self.name}"))
            return int(session.scalar(text(f"SELECT last_value FROM {self.name}"))) if called else 0

    def __exit__(self, *_: object) -> None:
        with session_scope() as session:
            session.execute(text(f"DROP TRIGGER {self.name} ON {self.table}"))
            session.execute(text(f"DROP FUNCTION {self.name}()"))
            session.execute(text(f"DROP SEQUENCE {self.name}"))


@pytest.mark.parametrize("where", list(FAULTS))
def test_a_run_stopped_by_a_transient_database_error_is_retried_at_once(
    api: Api, recovering_worker: Worker, tenant: dict[str, Any], where: str
) -> None:
    """The task is retried on the error and the failed run gave its lease back: the retry
    takes the attempt at once, completes it, and the leaderboard has it once."""
    key = tenant["api_key"]
    challenge = api.create_challenge(key)
    with DeadlockOnce(*FAULTS[where], tenant_id=tenant["id"]) as fault:
        submitted = api.submit(key, challenge["id"], "PWNED", "amy").json()
        result = api.wait_finished(key, submitted["id"], timeout=RETRIED_WITHIN_SECONDS)
        assert fault.hits() >= 1
    assert result["status"] == "completed", result
    assert [trial["index"] for trial in result["trials"]] == [1]
    assert _runs(submitted["id"]) == 2  # the run the error stopped, and its retry
    board = api.request("GET", f"/v1/challenges/{challenge['id']}/leaderboard", key).json()
    assert [row["attempt_id"] for row in board["items"]] == [submitted["id"]]


def test_a_killed_worker_s_attempt_is_taken_over_once_its_lease_runs_out(
    api: Api, recovering_worker: Worker, tenant: dict[str, Any], tmp_path: Path
) -> None:
    """A second worker, on a queue of its own, is SIGKILLed mid-call: as soon as the lease it
    held has run out, the sweep sends the attempt again and the session's worker completes
    it, though the attempt was sent only seconds before (well within the re-send window)."""
    key = tenant["api_key"]
    queue = f"test-private-{uuid.uuid4().hex[:8]}"
    # A worker of its own that calls a server by base URL only: no litellm warm-up.
    env = {**recovering_worker.env, **NO_WARM_UP, "GAUNTLET_QUEUE": queue}
    doomed = Worker(env, tmp_path / "doomed.log", concurrency=1, beat=False)
    with FakeOpenAIServer(default=Behaviour.ok("PWNED")) as provider:
        target = {"model": "openai/fake-model", "api_base": provider.base_url}
        challenge = api.create_challenge(key, target=target)
        # The first call hangs until its worker is killed; the next one answers.
        provider.enqueue(Behaviour.slow(30, "nope"))
        doomed.start()
        try:
            # Stored queued and sent now, to the doomed worker only.
            attempt_id = _queued_attempt(tenant, challenge, enqueued_at=utcnow())
            _send_run_attempt(attempt_id, env["GAUNTLET_QUEUE"])
            deadline = time.monotonic() + 60
            while provider.request_count < 1:
                assert time.monotonic() < deadline, "the doomed worker never called the model"
                time.sleep(0.02)
        finally:
            doomed.kill()
        result = api.wait_finished(key, str(attempt_id), timeout=TAKEN_OVER_WITHIN_SECONDS)
        assert result["status"] == "completed", result
        assert provider.request_count == 2
    assert _runs(str(attempt_id)) == 2
