"""Fair timing on the real worker: every pool process makes litellm's cold first call before it
takes work, so no attempt's `elapsed_ms` holds litellm's lazy imports (tests/unit/
test_eval_timing.py shows what the warm-up removes from the timed span)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.conftest import Api, Worker

pytestmark = pytest.mark.integration

_PROCESS = re.compile(r"^\[[^\]]*: \w+/(ForkPoolWorker-\d+)\] (.*)$")
WARMED = "pool process warmed up"
BANNER = " -------------- celery@"


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

    ran_attempts: set[str] = set()
    warmed: set[str] = set()
    for line in worker.log_path.read_text(errors="replace").splitlines():
        if line.startswith(BANNER):
            warmed.clear()  # a restarted worker numbers its pool processes from 1 again
            continue
        match = _PROCESS.match(line)
        if match is None:
            continue
        process, message = match.groups()
        if WARMED in message:
            warmed.add(process)
        elif "Task gauntlet.run_attempt[" in message:
            assert process in warmed, f"{process} ran an attempt before warming up:\n{line}"
            ran_attempts.add(process)
    assert ran_attempts, "the log shows no attempt run by a pool process"
    assert "warm-up call failed" not in worker.log_path.read_text(errors="replace")
