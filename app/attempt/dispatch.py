"""Sending attempts to the workers. Called only after the commit that makes the rows visible."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable

RUN_ATTEMPT_TASK = "gauntlet.run_attempt"

log = logging.getLogger(__name__)


def enqueue_attempts(attempt_ids: Iterable[uuid.UUID]) -> int:
    """Sends one task per attempt; returns how many were sent.

    A broker outage does not lose an attempt: its row stays queued and the periodic sweep sends
    it again, so a failure here is logged, not raised to the client who already has a 202.
    """
    from app.config import get_settings
    from app.observability import metrics as telemetry
    from workers.celery_app import celery_app

    queue = get_settings().queue
    sent = 0
    for attempt_id in attempt_ids:
        args = [str(attempt_id)]
        try:
            # The representations monitoring tools show, given rather than computed by
            # Celery's safe repr (~10 % of a publish).
            celery_app.send_task(
                RUN_ATTEMPT_TASK, args=args, queue=queue, argsrepr=repr(args), kwargsrepr="{}"
            )
            sent += 1
        except Exception:
            log.exception("could not enqueue attempt %s; the sweep will send it again", attempt_id)
            telemetry.enqueue_failed()
    return sent
