"""A tenant's place in the workers' queue: its share of queued work, and the turns in which
workers serve tenants.

**The share.** A tenant may have `max_queued_per_tenant` attempts queued or running at once
(entries, practice and test runs; not those waiting because their challenge is deleted). A
submission past it is refused with 429 `queue_share_full`, `Retry-After` and `RateLimit-*`
fields, before anything is written. The count is one indexed read, without a lock: requests
of one tenant that count at the same moment may each pass, so the share can be passed by as
many as the tenant has submissions in flight at once, which its in-flight share bounds
(`api_max_in_flight_per_tenant`, 8). A lock of the tenant's row would make it exact at the
price of a transaction and of every submission of the tenant waiting for the one before.

**The turns.** Every attempt takes a turn when queued: the tenant's next turn after its own
unfinished attempts, and never before the turn the workers are at (the lowest turn queued).
Workers take the claimable attempt of the lowest turn (self-clocked fair queuing, one unit
per attempt). So a tenant with a thousand attempts queued holds turns far ahead, and another
tenant's one attempt, queued later, takes the turn the workers are at: it runs next, not
after the thousand; two tenants with attempts queued are served one each in turn.

A task still names one attempt, and a worker still claims under a lease (app/kit/lease/). A task
whose attempt is waiting claims the attempt whose turn it is instead, when that is another,
and sends its own attempt's task again: every waiting attempt keeps a task of its own, so
nothing waits for the sweep, and a task whose attempt is finished or held runs nothing
(the worker's claim: app/attempt/turn_claim.py).
"""

from __future__ import annotations

from app.attempt.repository import AttemptRepository
from app.kit.config import get_settings
from app.kit.error_codes import QUEUE_SHARE_FULL
from app.kit.errors import AppError
from app.kit.observability import metrics as telemetry

# What a refused submission is told to wait: attempts finish in seconds, a place with them.
QUEUE_RETRY_AFTER_SECONDS = 5


class QueueShareFull(AppError):
    """The tenant has as many attempts queued or running as its share of the queue."""

    status_code = 429
    code = QUEUE_SHARE_FULL

    def __init__(self, share: int) -> None:
        wait = str(QUEUE_RETRY_AFTER_SECONDS)
        super().__init__(
            f"this tenant has {share} attempts queued or running, its share of the workers' "
            f"queue; retry once some have finished (in {wait} s)",
            details={"limit": "tenant_queued", "share": share},
            # The RateLimit header fields of the IETF draft, as the in-flight share's refusals
            # carry them (app/kit/middleware.py): the share, none left, when to look again.
            headers={
                "Retry-After": wait,
                "RateLimit-Limit": str(share),
                "RateLimit-Remaining": "0",
                "RateLimit-Reset": wait,
            },
        )


def take_turn(repo: AttemptRepository) -> int:
    """The turn of the tenant's next attempt; 429 `queue_share_full` past its share."""
    place = repo.queue_place()
    share = get_settings().max_queued_per_tenant
    if place.unfinished >= share:
        telemetry.request_refused("queue")
        raise QueueShareFull(share)
    return place.next_turn


def next_turns(repo: AttemptRepository, count: int) -> range:
    """Turns for `count` attempts queued again together (an admin's re-run, which the share
    does not refuse: it queues what was submitted already)."""
    first = repo.queue_place().next_turn
    return range(first, first + count)
