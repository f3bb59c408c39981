"""The turn a tenant's next attempt takes, and the refusal past its share of the queue."""

from __future__ import annotations

import pytest

from app.attempt.repository import QueuePlace
from app.attempt.turns import QUEUE_RETRY_AFTER_SECONDS, QueueShareFull


def test_a_tenant_with_nothing_unfinished_takes_the_turn_the_workers_are_at() -> None:
    assert QueuePlace(unfinished=0, last_turn=None, clock=41).next_turn == 41


def test_a_tenant_with_attempts_ahead_of_the_workers_queues_after_its_own() -> None:
    assert QueuePlace(unfinished=1000, last_turn=1040, clock=41).next_turn == 1041


def test_a_tenant_whose_attempts_the_workers_passed_takes_their_turn_not_an_old_one() -> None:
    # Its unfinished attempts are running (turns below the queue's head): it does not go
    # ahead of the tenants queued since.
    assert QueuePlace(unfinished=2, last_turn=3, clock=41).next_turn == 41


@pytest.mark.parametrize("clock", [0, -5, 2**62])
def test_the_turn_follows_the_clock_at_its_edges(clock: int) -> None:
    assert QueuePlace(unfinished=0, last_turn=None, clock=clock).next_turn == clock
    assert QueuePlace(unfinished=1, last_turn=clock, clock=clock).next_turn == clock + 1


def test_the_refusal_names_the_share_and_carries_the_rate_limit_fields() -> None:
    refusal = QueueShareFull(500)
    assert refusal.status_code == 429
    assert refusal.code == "queue_share_full"
    assert refusal.details == {"limit": "tenant_queued", "share": 500}
    wait = str(QUEUE_RETRY_AFTER_SECONDS)
    assert refusal.headers == {
        "Retry-After": wait,
        "RateLimit-Limit": "500",
        "RateLimit-Remaining": "0",
        "RateLimit-Reset": wait,
    }
