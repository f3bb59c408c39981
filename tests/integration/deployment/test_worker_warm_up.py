"""Fair timing on the real worker: every pool process makes litellm's cold first call before it
takes work, so no attempt's `elapsed_ms` holds litellm's lazy imports (tests/process/
test_eval_timing.py shows what the warm-up removes from the timed span). The suite's other
workers start without it (tests/conftest.py); this one starts as a deployment's does."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from app.kit.db import utcnow
from tests.conftest import Api, Stack, Worker
from tests.integration.deployment.test_reliability import _send_run_attempt
from tests.integration.lease.test_leases import _queued_attempt

pytestmark = pytest.mark.integration

WARMED = "pool process warmed up"
# Celery logs a task's success from the pool process that ran it ("received" comes from the
# main process), so the line's pid names the process that ran the attempt.
RAN = ("Task gauntlet.run_attempt[", "succeeded in")


@pytest.fixture
def warmed_worker(stack: Stack, tmp_path: Path) -> Iterator[Worker]:
    """A worker with the default warm-up, on a queue of its own."""
    env = {**stack.env(), "GAUNTLET_QUEUE": f"test-warm-{uuid.uuid4().hex[:8]}"}
    worker = Worker(env, tmp_path / "warmed.log", concurrency=2, beat=False)
    worker.start()
    yield worker
    worker.stop()


def test_every_pool_process_warms_up_before_its_first_attempt(
    api: Api, warmed_worker: Worker, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    challenge = api.create_challenge(key)
    # Queued rows whose tasks only this test sends, to its worker's queue; enqueued in the
    # future, so no sweep of the suite's workers sends them anywhere else.
    later = utcnow() + timedelta(hours=1)
    attempts = [_queued_attempt(tenant, challenge, enqueued_at=later) for _ in range(4)]
    for attempt_id in attempts:
        _send_run_attempt(attempt_id, warmed_worker.env["GAUNTLET_QUEUE"])
    for attempt_id in attempts:
        finished = api.wait_finished(key, str(attempt_id))
        assert finished["status"] == "completed"
        assert isinstance(finished["metrics"]["elapsed_ms"], int)

    log = warmed_worker.log_path.read_text(errors="replace")
    ran_attempts: set[int] = set()
    warmed: set[int] = set()
    for line in log.splitlines():
        try:
            entry = json.loads(line)  # the worker logs JSON lines (production format)
        except json.JSONDecodeError:
            continue
        process, message = entry.get("pid"), str(entry.get("event", ""))
        if not isinstance(process, int):
            continue
        if WARMED in message:
            warmed.add(process)
        elif all(part in message for part in RAN):
            assert process in warmed, f"pid {process} ran an attempt before warming up:\n{line}"
            ran_attempts.add(process)
    assert ran_attempts, "the log shows no attempt run by a pool process"
    assert "warm-up call failed" not in log
    assert "warm-up off" not in log
