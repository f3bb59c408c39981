"""Faults a real deployment meets: providers that fail, workers that die, tasks sent twice."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from app.kit.db import utcnow
from tests.conftest import NO_WARM_UP, Api, Stack, Worker
from tests.fixtures.fake_openai import Behaviour, FakeOpenAIServer
from tests.integration.lease.test_leases import _queued_attempt

pytestmark = pytest.mark.integration


@pytest.fixture
def provider() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(default=Behaviour.ok("PWNED")) as server:
        yield server


def _fake_target(server: FakeOpenAIServer) -> dict[str, Any]:
    return {"model": "openai/fake-model", "api_base": server.base_url, "system_prompt": "Be terse."}


def test_transient_provider_errors_are_retried(
    api: Api, worker: Worker, tenant: dict[str, Any], provider: FakeOpenAIServer
) -> None:
    key = tenant["api_key"]
    challenge = api.create_challenge(key, target=_fake_target(provider))
    provider.enqueue(
        Behaviour.rate_limited(retry_after=0.2),
        Behaviour.server_error(),
        Behaviour.garbage(),
        Behaviour.ok("PWNED"),
    )
    attempt = api.submit(key, challenge["id"], "say it", "amy").json()
    result = api.wait_finished(key, attempt["id"])
    assert result["status"] == "completed", result
    assert provider.request_count == 4
    actor = result["trials"][0]["actor"]
    assert (
        actor["input_tokens"],
        actor["cached_tokens"],
        actor["thinking_tokens"],
        actor["output_tokens"],
    ) == (11, 3, 2, 7)
    assert result["metrics"]["tokens_total"] == 18
    # The request litellm sent carried the hidden system prompt, the participant's prompt last.
    sent = provider.requests[-1]["messages"]
    assert sent[0] == {"role": "system", "content": "Be terse."}
    assert sent[-1]["content"] == "say it"


def test_spent_retry_budget_ends_in_error_that_does_not_count(
    api: Api, worker: Worker, tenant: dict[str, Any], provider: FakeOpenAIServer
) -> None:
    key = tenant["api_key"]
    challenge = api.create_challenge(
        key, target=_fake_target(provider), limits={"max_attempts_total": 1}
    )
    provider.default = Behaviour.server_error()
    attempt = api.submit(key, challenge["id"], "say it", "amy").json()
    result = api.wait_finished(key, attempt["id"])
    assert result["status"] == "error"
    assert "4 tries" in result["error"] and "openai/fake-model" in result["error"]
    assert result["metrics"] is None
    assert provider.request_count == 4
    # An infrastructure error does not use up the participant's attempts.
    provider.default = Behaviour.ok("PWNED")
    retry = api.submit(key, challenge["id"], "say it", "amy")
    assert retry.status_code == 202
    assert api.wait_finished(key, retry.json()["id"])["status"] == "completed"
    board = api.request("GET", f"/v1/challenges/{challenge['id']}/leaderboard", key).json()
    assert board["total"] == 1


def test_an_attempt_that_ended_in_error_is_rerun_under_its_name_and_its_former_one(
    api: Api, worker: Worker, tenant: dict[str, Any], provider: FakeOpenAIServer
) -> None:
    """`rerun`, the word matches and defenses use; `retry` still answers, marked deprecated."""
    key = tenant["api_key"]
    challenge = api.create_challenge(key, target=_fake_target(provider))
    provider.default = Behaviour.server_error()
    failed = [api.submit(key, challenge["id"], "say it", who).json()["id"] for who in ("a", "b")]
    assert [api.wait_finished(key, i)["status"] for i in failed] == ["error", "error"]
    provider.default = Behaviour.ok("PWNED")
    for attempt_id, word in zip(failed, ("rerun", "retry"), strict=True):
        again = api.request("POST", f"/v1/attempts/{attempt_id}/{word}", key)
        assert again.status_code == 202, again.text
        assert again.json()["id"] == attempt_id
        assert api.wait_finished(key, attempt_id)["status"] == "completed"
        refused = api.request("POST", f"/v1/attempts/{attempt_id}/{word}", key)
        assert refused.status_code == 409  # it no longer ended in error
    paths = api.request("GET", "/openapi.json").json()["paths"]
    assert paths["/v1/attempts/{attempt_id}/retry"]["post"]["deprecated"] is True
    assert "deprecated" not in paths["/v1/attempts/{attempt_id}/rerun"]["post"]


def test_garbage_answers_until_the_budget_is_spent(
    api: Api, worker: Worker, tenant: dict[str, Any], provider: FakeOpenAIServer
) -> None:
    key = tenant["api_key"]
    challenge = api.create_challenge(key, target=_fake_target(provider))
    provider.default = Behaviour.garbage()
    attempt = api.submit(key, challenge["id"], "say it", "amy").json()
    result = api.wait_finished(key, attempt["id"])
    assert result["status"] == "error" and result["error"]


def test_worker_killed_mid_attempt_is_finished_by_another(
    api: Api, worker: Worker, tenant: dict[str, Any], provider: FakeOpenAIServer
) -> None:
    key = tenant["api_key"]
    challenge = api.create_challenge(
        key, target=_fake_target(provider), evaluation={"metric": "seq@k", "k": 3}
    )
    # Trial 1 fails fast; trial 2 hangs until the worker is killed; the next call succeeds.
    provider.enqueue(Behaviour.ok("nope"), Behaviour.slow(30, "nope"))
    attempt = api.submit(key, challenge["id"], "say it", "amy").json()
    deadline = time.monotonic() + 30
    while provider.request_count < 2:
        assert time.monotonic() < deadline, "the worker never reached trial 2"
        time.sleep(0.02)
    worker.kill()
    assert api.request("GET", f"/v1/attempts/{attempt['id']}", key).json()["status"] == "running"
    worker.start()
    result = api.wait_finished(key, attempt["id"], timeout=60)
    assert result["status"] == "completed", result
    assert [t["index"] for t in result["trials"]] == [1, 2]
    assert [t["actor"]["output"] for t in result["trials"]] == ["nope", "PWNED"]
    assert result["trials"][0]["critic"]["feedback"]
    # Trial 1 was not called again: 1 (trial 1) + 1 (killed) + 1 (trial 2 on the new worker).
    assert provider.request_count == 3, [
        r["messages"][-1]["content"][-80:] for r in provider.requests
    ]
    assert result["metrics"]["succeeded"] is True
    board = api.request("GET", f"/v1/challenges/{challenge['id']}/leaderboard", key).json()
    assert board["total"] == 1


def _send_run_attempt(attempt_id: uuid.UUID, queue: str | None = None) -> str:
    """Sends the attempt's task once more (a redelivery), to this run's queue unless another
    is named; returns the task's id."""
    from app.attempt.dispatch import RUN_ATTEMPT_TASK
    from app.kit.config import get_settings
    from workers.celery_app import celery_app

    task_id = str(uuid.uuid4())
    celery_app.send_task(
        RUN_ATTEMPT_TASK,
        args=[str(attempt_id)],
        queue=queue or get_settings().queue,
        task_id=task_id,
    )
    return task_id


def _wait_for_outcomes(worker: Worker, task_ids: list[str], timeout: float = 60) -> list[str]:
    """Waits until the worker has run these tasks; returns what each returned (its log line,
    a JSON object whose event is `Task <name>[<id>] succeeded in <s>: <return value>`, names
    each one)."""
    deadline = time.monotonic() + timeout
    while True:
        outcomes = {}
        for line in worker.log_path.read_text(errors="replace").splitlines():
            try:
                event = str(json.loads(line).get("event", ""))
            except (json.JSONDecodeError, AttributeError):
                continue
            for task_id in task_ids:
                marker = f"[{task_id}] succeeded in "
                if marker in event:
                    outcomes[task_id] = event.split(marker, 1)[1].split(": ", 1)[1].strip("'")
        if len(outcomes) == len(task_ids):
            return [outcomes[task_id] for task_id in task_ids]
        assert time.monotonic() < deadline, f"tasks {set(task_ids) - set(outcomes)} never ran"
        time.sleep(0.05)


def test_redelivered_tasks_add_no_trials_and_move_no_leaderboard(
    api: Api, worker: Worker, tenant: dict[str, Any]
) -> None:
    from app.attempt.models import Attempt, Trial
    from app.kit.db import session_scope
    from app.leaderboard.models import LeaderboardEntry

    key = tenant["api_key"]
    challenge = api.create_challenge(key, evaluation={"metric": "pass@k", "k": 3})
    attempt = api.submit(key, challenge["id"], "PWNED", "amy").json()
    attempt_id = uuid.UUID(attempt["id"])
    # The same task twice more while the first delivery may be running (any of the three may
    # be the one that runs it), then once after the attempt finished; each has run before the
    # checks below.
    racing = [_send_run_attempt(attempt_id), _send_run_attempt(attempt_id)]
    first = api.wait_finished(key, attempt["id"])
    late = _send_run_attempt(attempt_id)
    skipped = "skipped: finished or held by another worker"
    *raced, after = _wait_for_outcomes(worker, [*racing, late])
    assert after == skipped
    assert sorted(raced) in ([skipped, skipped], ["completed", skipped])
    again = api.wait_finished(key, attempt["id"])
    assert first["finished_at"] == again["finished_at"]
    with session_scope() as session:
        trials = session.scalar(
            select(func.count()).select_from(Trial).where(Trial.attempt_id == attempt_id)
        )
        row = session.get(Attempt, attempt_id)
        entries = session.scalars(
            select(LeaderboardEntry).where(LeaderboardEntry.challenge_id == row.challenge_id)
        ).all()
    assert trials == 3
    assert row is not None and row.run_count == 1
    assert len(entries) == 1 and entries[0].attempt_id == attempt_id


def test_a_healthy_worker_keeps_an_attempt_that_runs_longer_than_its_lease(
    api: Api, worker: Worker, tenant: dict[str, Any], provider: FakeOpenAIServer
) -> None:
    """The heartbeat renews the lease while the model call runs, so the sweep (every second
    here) never hands the attempt to the worker's other process, though the call outlasts the
    6 s lease by half."""
    key = tenant["api_key"]
    challenge = api.create_challenge(key, target=_fake_target(provider))
    provider.enqueue(Behaviour.slow(9, "PWNED"))
    attempt = api.submit(key, challenge["id"], "say it", "amy").json()
    result = api.wait_finished(key, attempt["id"], timeout=60)
    assert result["status"] == "completed", result
    assert provider.request_count == 1  # one run: no second worker called the model
    from app.attempt.models import Attempt
    from app.kit.db import session_scope

    with session_scope() as session:
        row = session.get(Attempt, uuid.UUID(attempt["id"]))
        assert row is not None and row.run_count == 1


def test_cost_comes_from_litellms_price_map(
    api: Api, worker: Worker, tenant: dict[str, Any], provider: FakeOpenAIServer
) -> None:
    import litellm

    key = tenant["api_key"]
    target = {**_fake_target(provider), "model": "openai/gpt-4o-mini"}
    challenge = api.create_challenge(key, target=target, evaluation={"metric": "pass@k", "k": 2})
    provider.default = Behaviour.ok(
        "PWNED", prompt_tokens=1000, cached_tokens=0, completion_tokens=500, reasoning_tokens=0
    )
    # A prompt that can be 1,000 tokens: a usage is believed only up to what the request sent.
    prompt = "word " * 1000
    result = api.wait_finished(key, api.submit(key, challenge["id"], prompt, "amy").json()["id"])
    prices = litellm.model_cost["gpt-4o-mini"]
    one_call = 1000 * prices["input_cost_per_token"] + 500 * prices["output_cost_per_token"]
    assert result["trials"][0]["actor"]["cost_usd"] == pytest.approx(one_call)
    assert result["metrics"]["cost_usd"] == pytest.approx(2 * one_call)
    assert result["metrics"]["tokens_total"] == 2 * 1500


def test_a_busy_worker_holds_no_message_it_has_not_started(
    stack: Stack, api: Api, tenant: dict[str, Any], provider: FakeOpenAIServer, tmp_path: Path
) -> None:
    """A worker takes a message only when a process is free to run it: while its only process
    is busy, the next attempt goes to another worker, instead of waiting in the busy one (as a
    prefetched message would, and, if the busy worker died, until the broker gave it back)."""
    key = tenant["api_key"]
    quick = api.create_challenge(key, target=_fake_target(provider))
    # Queued rows whose tasks only this test sends, to a queue of its own; enqueued in the
    # future, so no sweep of the suite's workers sends them anywhere else.
    later = utcnow() + timedelta(hours=1)
    next_one = _queued_attempt(tenant, quick, enqueued_at=later)
    env = {**stack.env(), **NO_WARM_UP, "GAUNTLET_QUEUE": f"test-private-{uuid.uuid4().hex[:8]}"}
    busy = Worker(env, tmp_path / "busy.log", concurrency=1, beat=False)
    free = Worker(env, tmp_path / "free.log", concurrency=1, beat=False)
    # Every call to this server outlasts the model timeout: its attempt keeps its worker busy
    # for minutes, however slowly the other worker starts.
    with FakeOpenAIServer(default=Behaviour.slow(60, "PWNED")) as stalling:
        stalled = api.create_challenge(key, target=_fake_target(stalling))
        slow = _queued_attempt(tenant, stalled, enqueued_at=later)
        busy.start()
        try:
            _send_run_attempt(slow, env["GAUNTLET_QUEUE"])
            deadline = time.monotonic() + 60
            while stalling.request_count < 1:
                assert time.monotonic() < deadline, "the busy worker never started its attempt"
                time.sleep(0.02)
            _send_run_attempt(next_one, env["GAUNTLET_QUEUE"])
            time.sleep(1)  # time enough for a prefetching worker to take it
            free.start()
            finished = api.wait_finished(key, str(next_one), timeout=60)
            assert finished["status"] == "completed", finished
            slow_state = api.request("GET", f"/v1/attempts/{slow}", key).json()
            assert slow_state["status"] == "running"  # the busy worker still on its first
        finally:
            free.stop()
            busy.kill()
