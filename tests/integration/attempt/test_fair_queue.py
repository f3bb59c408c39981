"""Each tenant's share of the workers' queue, and the turns in which workers serve tenants: a
tenant past its share is refused (429, `Retry-After`, `RateLimit-*`) while another is served,
and one tenant's attempt sent after another's flood runs before most of the flood."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import insert, select, update

from app.attempt.models import Attempt, AttemptStatus, RunPurpose
from app.kit.config import get_settings
from app.kit.db import session_scope, utcnow
from tests.conftest import ADMIN_TOKEN, Api, Worker
from tests.fixtures.fake_openai import Behaviour, FakeOpenAIServer

pytestmark = pytest.mark.integration


def _hold_queue_places(
    tenant: dict[str, Any], challenge: dict[str, Any], count: int
) -> list[uuid.UUID]:
    """`count` attempts of the tenant running under a lease that lasts an hour (a worker that
    holds them): they take places of its share, and no worker or sweep touches them."""
    now = utcnow()
    rows = [
        {
            "id": uuid.uuid4(),
            "tenant_id": uuid.UUID(tenant["id"]),
            "challenge_id": uuid.UUID(challenge["id"]),
            "participant_id": None,
            "purpose": RunPurpose.TEST,
            "status": AttemptStatus.RUNNING,
            "kind_fields": {"prompt": "PWNED"},
            "created_at": now,
            "created_at_ms": int(now.timestamp() * 1000),
            "enqueued_at": now,
            "started_at": now,
            "lease_expires_at": now + timedelta(hours=1),
            "run_token": uuid.uuid4(),
            "run_count": 1,
        }
        for _ in range(count)
    ]
    with session_scope() as session:
        session.execute(insert(Attempt), rows)
    return [row["id"] for row in rows]


def _end(attempt_ids: list[uuid.UUID]) -> None:
    with session_scope() as session:
        session.execute(
            update(Attempt)
            .where(Attempt.id.in_(attempt_ids))
            .values(status=AttemptStatus.ERROR, lease_expires_at=None, finished_at=utcnow())
        )


def _queue_refusals(api: Api) -> float:
    """`gauntlet_http_refused_total{reason="queue"}` as /metrics reads it."""
    from prometheus_client.parser import text_string_to_metric_families

    text = api.request("GET", "/metrics", ADMIN_TOKEN).text
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "gauntlet_http_refused_total" and sample.labels == {"reason": "queue"}
    )


def test_a_tenant_past_its_queue_share_is_refused_while_another_is_served(
    api: Api, worker: Worker
) -> None:
    share = get_settings().max_queued_per_tenant
    refusals_before = _queue_refusals(api)
    flooding, other = api.create_tenant(), api.create_tenant()
    flooding_key, other_key = flooding["api_key"], other["api_key"]
    flooded = api.create_challenge(flooding_key)
    held = _hold_queue_places(flooding, flooded, share)
    try:
        refused = api.submit(flooding_key, flooded["id"], "PWNED", "amy")
        assert refused.status_code == 429, refused.text
        error = refused.json()["error"]
        assert error["code"] == "queue_share_full"
        assert error["details"] == {"limit": "tenant_queued", "share": share}
        assert f"{share} attempts queued or running" in error["message"]
        wait = refused.headers["Retry-After"]
        assert int(wait) > 0
        assert refused.headers["RateLimit-Limit"] == str(share)
        assert refused.headers["RateLimit-Remaining"] == "0"
        assert refused.headers["RateLimit-Reset"] == wait
        # Practice and test runs are work for the same workers: refused alike.
        test_run = api.request(
            "POST",
            f"/v1/challenges/{flooded['id']}/test-runs",
            flooding_key,
            json={"prompt": "PWNED"},
        )
        assert test_run.status_code == 429, test_run.text
        assert test_run.json()["error"]["code"] == "queue_share_full"
        # Nothing of the refused submission was stored: not even its participant.
        participants = api.request("GET", "/v1/participants", flooding_key).json()
        assert participants["total"] == 0
        # Counted for the operator, beside the admission's refusals.
        assert _queue_refusals(api) == refusals_before + 2

        other_challenge = api.create_challenge(other_key)
        accepted = api.submit(other_key, other_challenge["id"], "PWNED", "bob")
        assert accepted.status_code == 202, accepted.text
        assert api.wait_finished(other_key, accepted.json()["id"])["status"] == "completed"
    finally:
        _end(held[:1])
    # One place given back: the tenant's next attempt is taken, and runs.
    again = api.submit(flooding_key, flooded["id"], "PWNED", "amy")
    assert again.status_code == 202, again.text
    _end(held[1:])
    assert api.wait_finished(flooding_key, again.json()["id"])["status"] == "completed"


@pytest.fixture
def slow_provider() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(default=Behaviour.slow(1.0, "PWNED")) as server:
        yield server


FLOOD = 30


def test_an_attempt_sent_after_another_tenants_flood_runs_before_most_of_it(
    api: Api, worker: Worker, slow_provider: FakeOpenAIServer
) -> None:
    flooding, other = api.create_tenant(), api.create_tenant()
    flooding_key, other_key = flooding["api_key"], other["api_key"]
    # Each of the flood's attempts keeps a worker process a second: the suite's worker (two
    # processes) takes about 15 s for all, far longer than sending them takes.
    target = {
        "model": "openai/fake-model",
        "api_base": slow_provider.base_url,
        "system_prompt": "Be terse.",
    }
    flooded = api.create_challenge(flooding_key, target=target)
    flood = []
    for number in range(FLOOD):
        response = api.submit(flooding_key, flooded["id"], "PWNED", f"p{number}")
        assert response.status_code == 202, response.text
        flood.append(uuid.UUID(response.json()["id"]))
    try:
        challenge = api.create_challenge(other_key)
        one = api.submit(other_key, challenge["id"], "PWNED", "bob")
        assert one.status_code == 202, one.text
        finished = api.wait_finished(other_key, one.json()["id"])
        assert finished["status"] == "completed"
        with session_scope() as session:
            sent = session.get(Attempt, uuid.UUID(one.json()["id"]))
            assert sent is not None and sent.started_at is not None
            flood_starts = session.scalars(
                select(Attempt.started_at).where(Attempt.id.in_(flood))
            ).all()
        # The flood's attempts not started when the other tenant's was sent: most of it.
        waiting = [start for start in flood_starts if start is None or start > sent.created_at]
        assert len(waiting) >= FLOOD // 3, "the flood did not wait: nothing to overtake"
        # Of those, the workers started only the one whose turn came first (or two, racing
        # with the submission): first come, first served, it would have been all of them.
        overtaking = [start for start in waiting if start is not None and start < sent.started_at]
        assert len(overtaking) <= worker.concurrency, (len(overtaking), len(waiting))
    finally:
        # The rest of the flood waits, unrun, with its deleted challenge.
        assert (
            api.request("DELETE", f"/v1/challenges/{flooded['id']}", flooding_key).status_code
            == 204
        )


# Below every turn the service gives, so that no other test's attempt comes first.
FIRST_TURN = -(2**62)


def test_a_task_whose_attempt_waits_runs_the_attempt_whose_turn_it_is_and_sends_its_own_again(
    api: Api, worker: Worker, tenant: dict[str, Any]
) -> None:
    from app.attempt import runner
    from tests.integration.lease.test_leases import _queued_attempt

    key = tenant["api_key"]
    challenge = api.create_challenge(key)
    # Never sent, and enqueued in the future, so no sweep sends them: only the task below.
    later = utcnow() + timedelta(hours=1)
    first = _queued_attempt(tenant, challenge, enqueued_at=later, turn=FIRST_TURN)
    waiting = _queued_attempt(tenant, challenge, enqueued_at=later, turn=FIRST_TURN + 1)
    # The worker's task of `waiting`, run here: it runs `first`, whose turn comes first ...
    assert runner.run_in_turn(waiting) == "completed"
    assert api.request("GET", f"/v1/attempts/{first}", key).json()["status"] == "completed"
    # ... and `waiting` is not left without a task: its own, sent again, runs it.
    assert api.wait_finished(key, str(waiting))["status"] == "completed"


def test_a_task_whose_attempt_is_finished_runs_nothing_while_others_wait(
    api: Api, tenant: dict[str, Any]
) -> None:
    from app.attempt import runner
    from tests.integration.lease.test_leases import _queued_attempt

    key = tenant["api_key"]
    challenge = api.create_challenge(key)
    later = utcnow() + timedelta(hours=1)
    finished = _queued_attempt(tenant, challenge, enqueued_at=later, turn=FIRST_TURN + 2)
    assert runner.run_attempt(finished) == "completed"
    queued = _queued_attempt(tenant, challenge, enqueued_at=later, turn=FIRST_TURN)
    # A redelivered task of a finished attempt takes no other's turn.
    assert runner.run_in_turn(finished) == "skipped: finished or held by another worker"
    assert api.request("GET", f"/v1/attempts/{queued}", key).json()["status"] == "queued"
    assert runner.run_in_turn(queued) == "completed"
