"""Fair timing on the real worker: every pool process makes litellm's cold first call before it
takes work, so no attempt's `elapsed_ms` holds litellm's lazy imports (tests/process/
test_eval_timing.py shows what the warm-up removes from the timed span)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import Api, Worker

pytestmark = pytest.mark.integration

WARMED = "pool process warmed up"
# Celery logs a task's success from the pool process that ran it ("received" comes from the
# main process), so the line's pid names the process that ran the attempt.
RAN = ("Task gauntlet.run_attempt[", "succeeded in")


def test_every_pool_process_warms_up_before_its_first_attempt(
    api: Api, worker: Worker, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    challenge = api.create_challenge(key)
    attempts = [api.submit(key, challenge["id"], "PWNED", f"p{n}").json()["id"] for n in range(4)]
    for attempt_id in attempts:
        finished = api.wait_finished(key, attempt_id)
        assert finished["status"] == "completed"
        assert isinstance(finished["metrics"]["elapsed_ms"], int)

    ran_attempts: set[int] = set()
    warmed: set[int] = set()
    for line in worker.log_path.read_text(errors="replace").splitlines():
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
    assert "warm-up call failed" not in worker.log_path.read_text(errors="replace")
