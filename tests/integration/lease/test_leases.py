"""A worker that loses its lease (another took the attempt over after it seemed dead) stops
without writing anything more: no trial, no progress, no finish, no leaderboard row.

The run is the worker's own code (`runner.run_attempt`), called in this process so the test can
take the lease away at a chosen moment, as a second worker's claim would.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import func, select, update

from app.attempt import runner
from app.attempt.models import ATTEMPT_LEASES, Attempt, AttemptTask, Trial
from app.kit.config import get_settings
from app.kit.db import session_scope, utcnow
from app.kit.lease.heartbeat import Heartbeat
from app.kit.lease.service import renewer
from app.leaderboard.models import LeaderboardEntry
from app.tenant.repository import ParticipantRepository
from tests.conftest import Api
from tests.fixtures.fake_openai import Behaviour, FakeOpenAIServer

pytestmark = pytest.mark.integration


@pytest.fixture
def provider() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(default=Behaviour.slow(3, "PWNED")) as server:
        yield server


def _queued_attempt(tenant: dict[str, Any], challenge: dict[str, Any], **values: Any) -> uuid.UUID:
    """A stored, queued attempt whose task was never sent: only this test runs it."""
    tenant_id = uuid.UUID(tenant["id"])
    now = utcnow()
    with session_scope() as session:
        participant = ParticipantRepository(session, tenant_id).id_for_handle("amy")
        attempt = Attempt(
            id=uuid.uuid4(),
            tenant_id=tenant_id,
            challenge_id=uuid.UUID(challenge["id"]),
            participant_id=participant,
            status="queued",
            created_at=now,
            created_at_ms=int(now.timestamp() * 1000),
            run_count=0,
            **{"enqueued_at": now, "kind_fields": {"prompt": "PWNED"}, **values},
        )
        session.add(attempt)
    return attempt.id


def _run_in_background(attempt_id: uuid.UUID) -> tuple[threading.Thread, list[str]]:
    outcome: list[str] = []
    thread = threading.Thread(target=lambda: outcome.append(runner.run_attempt(attempt_id)))
    thread.start()
    return thread, outcome


def _take_over(attempt_id: uuid.UUID) -> uuid.UUID:
    """What a second worker's claim does once the lease has run out: a new run token and
    lease. (Its lease lasts an hour, so the sweep leaves the attempt alone.)"""
    thief = uuid.uuid4()
    with session_scope() as session:
        taken = session.execute(
            update(Attempt)
            .where(Attempt.id == attempt_id, Attempt.status == "running")
            .values(run_token=thief, lease_expires_at=utcnow() + timedelta(hours=1))
        )
        assert taken.rowcount == 1  # type: ignore[attr-defined]
    return thief


def _wait_for_calls(provider: FakeOpenAIServer, count: int) -> None:
    deadline = time.monotonic() + 60
    while provider.request_count < count:
        assert time.monotonic() < deadline, "the run never called the model"
        time.sleep(0.01)


def test_a_prompt_attempt_taken_over_mid_call_writes_nothing_more(
    api: Api, tenant: dict[str, Any], provider: FakeOpenAIServer
) -> None:
    challenge = api.create_challenge(
        tenant["api_key"], target={"model": "openai/fake-model", "api_base": provider.base_url}
    )
    attempt_id = _queued_attempt(tenant, challenge, kind_fields={"prompt": "PWNED"})
    thread, outcome = _run_in_background(attempt_id)
    _wait_for_calls(provider, 1)
    thief = _take_over(attempt_id)
    thread.join(timeout=60)
    assert outcome == ["stopped: lease taken over by another worker"]
    with session_scope() as session:
        row = session.get(Attempt, attempt_id)
        assert row is not None
        assert (row.status, row.run_token, row.finished_at) == ("running", thief, None)
        trials = session.scalar(select(func.count()).where(Trial.attempt_id == attempt_id))
        board = session.scalar(
            select(func.count()).where(LeaderboardEntry.challenge_id == row.challenge_id)
        )
    assert (trials, board) == (0, 0)


def test_a_benchmark_attempt_taken_over_mid_run_writes_nothing_more(
    api: Api, tenant: dict[str, Any], provider: FakeOpenAIServer
) -> None:
    challenge = api.create_challenge(
        tenant["api_key"],
        kind="benchmark",
        target=None,
        verifier=None,
        benchmark={
            "name": "jsonl",
            "options": {"path": "example.jsonl"},
            "judge_model": "offline/judge",
            "task_indices": [1, 2],
            "actor_api_base": provider.base_url,
        },
        evaluation={"metric": "pass@k", "k": 1},
        scoring={"strategy": "metric_at_k"},
    )
    attempt_id = _queued_attempt(tenant, challenge, kind_fields={"model": "openai/fake-model"})
    thread, outcome = _run_in_background(attempt_id)
    # The second task's call in flight. (Until a paid call has been priced, an attempt's paid
    # calls run one at a time (app/kit/lease/budget.py), so the first task may have finished.)
    _wait_for_calls(provider, 2)
    thief = _take_over(attempt_id)
    with session_scope() as session:
        row = session.get(Attempt, attempt_id)
        assert row is not None
        progress_at_takeover = row.progress
        summaries_at_takeover = list(
            session.scalars(select(AttemptTask.summary).where(AttemptTask.attempt_id == attempt_id))
        )
        trials_at_takeover = session.scalar(
            select(func.count()).where(Trial.attempt_id == attempt_id)
        )
    thread.join(timeout=60)
    assert outcome == ["stopped: lease taken over by another worker"]
    with session_scope() as session:
        row = session.get(Attempt, attempt_id)
        assert row is not None
        assert (row.status, row.run_token, row.metrics) == ("running", thief, None)
        assert row.progress == progress_at_takeover
        summaries = list(
            session.scalars(select(AttemptTask.summary).where(AttemptTask.attempt_id == attempt_id))
        )
        trials = session.scalar(select(func.count()).where(Trial.attempt_id == attempt_id))
    assert summaries == summaries_at_takeover
    assert trials == trials_at_takeover


def test_the_heartbeat_stops_once_the_lease_is_lost(
    api: Api, tenant: dict[str, Any], provider: FakeOpenAIServer
) -> None:
    """A heartbeat that no longer holds the lease ends instead of retrying forever, and never
    extends the new holder's lease."""
    challenge = api.create_challenge(
        tenant["api_key"], target={"model": "openai/fake-model", "api_base": provider.base_url}
    )
    attempt_id = _queued_attempt(tenant, challenge, kind_fields={"prompt": "PWNED"})
    thief = uuid.uuid4()
    lease = utcnow() + timedelta(hours=1)
    with session_scope() as session:
        session.execute(
            update(Attempt)
            .where(Attempt.id == attempt_id)
            .values(status="running", run_token=thief, lease_expires_at=lease)
        )
    settings = get_settings()
    heartbeat = Heartbeat(
        renewer(ATTEMPT_LEASES, [attempt_id], uuid.uuid4(), settings), settings, "the attempt"
    )
    with heartbeat:
        # Its first beat comes a third of a lease in; it finds the lease gone and ends.
        heartbeat._thread.join(timeout=settings.attempt_lease_seconds * 3)
        assert not heartbeat._thread.is_alive()
    with session_scope() as session:
        row = session.get(Attempt, attempt_id)
        assert row is not None and (row.run_token, row.lease_expires_at) == (thief, lease)
