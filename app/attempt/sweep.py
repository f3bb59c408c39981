"""The periodic sweep: no attempt stays unfinished.

Attempts still queued long after they were sent (the broker lost the message, or it could not
be sent at all) are sent again, and so are attempts running under an expired lease (their
worker died), as soon as it has expired: a dead worker's attempt waits for its lease, not for
the re-send window (`app.kit.lease.repository.lapsed`).
The run that picks one up either claims it or sees it is taken; runs beyond the limit end it
with an error.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from app.attempt import cross_tenant
from app.attempt.dispatch import RUN_ATTEMPT
from app.kit.config import get_settings
from app.kit.db import utcnow
from app.kit.observability import metrics as telemetry
from app.kit.unit_of_work import unit_of_work

log = logging.getLogger(__name__)

BATCH = 500


def sweep() -> dict[str, int]:
    settings = get_settings()
    now = utcnow()
    with unit_of_work() as work:
        queued = cross_tenant.stuck_queued(
            work.session, now - timedelta(seconds=settings.queued_requeue_seconds), BATCH
        )
        running = cross_tenant.stuck_running(
            work.session, now, now - timedelta(seconds=settings.queued_requeue_seconds), BATCH
        )
        cross_tenant.mark_enqueued(work.session, queued + running, now)
        for attempt_id in queued + running:
            work.send_after_commit(RUN_ATTEMPT, str(attempt_id))
    sent = work.sent
    telemetry.sweep_ran(queued=len(queued), orphaned=len(running))
    if queued or running:
        log.info("sweep re-sent %d queued and %d orphaned attempts", len(queued), len(running))
    return {"queued": len(queued), "orphaned": len(running), "sent": sent}
