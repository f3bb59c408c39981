"""Handing the queued messages over, on a worker: one try per task under a lease, trying again
with backoff, and the sweep that sends again the messages whose wait is over or whose task
or worker was lost. Reads every tenant's messages (app.kit.mail.cross_tenant): the worker side's
only."""

from __future__ import annotations

import logging
import random
import uuid
from datetime import timedelta
from urllib.parse import urlsplit

from app.kit.config import Settings, get_settings
from app.kit.db import session_scope, utcnow
from app.kit.mail import cross_tenant
from app.kit.mail.cross_tenant import ClaimedMail
from app.kit.mail.models import MailStatus
from app.kit.mail.service import SEND_MAIL
from app.kit.mail.transport import MailNotSent, send_smtp, write_to_folder
from app.kit.observability import metrics as telemetry
from app.kit.unit_of_work import unit_of_work
from app.outbound.smtp import one_address

log = logging.getLogger(__name__)

# A try holds its message this long; the task's time limit (app/kit/mail/tasks.py) ends a try
# well before, so a message is taken over only from a worker that died.
LEASE_SECONDS = 150
SEND_TIME_LIMIT_SECONDS = 120
# The longest wait between two tries.
MAX_RETRY_DELAY_SECONDS = 3600.0
SWEEP_BATCH = 200


def retry_delay(tries: int, base_seconds: float, jitter: float = 1.0) -> float:
    """Seconds to wait after the `tries`-th failed try: `base_seconds` after the first,
    doubling after each, at most an hour; times `jitter` (0.8 to 1.2 in use), so messages
    that failed together are not all tried again at the same instant."""
    doubled = base_seconds * 2.0 ** min(max(tries, 1) - 1, 32)
    return min(doubled, MAX_RETRY_DELAY_SECONDS) * jitter


def _hand_over(settings: Settings, mail_id: uuid.UUID, claimed: ClaimedMail) -> str:
    if claimed.message is None:
        raise MailNotSent("the message's text is gone", permanent=True)
    server = settings.smtp_server
    if server is None:
        try:
            name = write_to_folder(
                settings.mail_folder, mail_id, claimed.created_at, claimed.message
            )
        except OSError as exc:
            raise MailNotSent(f"cannot write to {settings.mail_folder}: {exc}") from None
        return f"file {name}"
    sender = one_address(settings.resolved_mail_from).addr_spec
    recipient = one_address(claimed.recipient).addr_spec
    local_hostname = urlsplit(settings.resolved_public_url).hostname or "localhost"
    return send_smtp(server, sender, recipient, claimed.message, local_hostname)


def deliver(mail_id: uuid.UUID) -> str:
    """One try at handing the message over (a worker's task); returns its outcome. A message
    that is sent, failed, waiting for its next try or held by another worker is left alone,
    so a task delivered twice sends once."""
    settings = get_settings()
    token = uuid.uuid4()
    now = utcnow()
    with session_scope() as session:
        claimed = cross_tenant.claim(
            session, mail_id, token, now, now + timedelta(seconds=LEASE_SECONDS)
        )
    if claimed is None:
        return "not claimed"
    try:
        delivery = _hand_over(settings, mail_id, claimed)
    except MailNotSent as exc:
        ended = utcnow()
        if exc.permanent or claimed.tries >= settings.mail_max_tries:
            outcome = "failed"
            values: dict[str, object] = {
                "status": MailStatus.FAILED,
                "finished_at": ended,
                "message": None,
                "error_detail": exc.reason,
            }
        else:
            outcome = "retry"
            wait = retry_delay(
                claimed.tries, settings.mail_retry_base_seconds, random.uniform(0.8, 1.2)
            )
            values = {
                "status": MailStatus.RETRYING,
                "next_attempt_at": ended + timedelta(seconds=wait),
                "error_detail": exc.reason,
            }
        log.warning(
            "mail %s not sent (try %d, %s): %s", mail_id, claimed.tries, outcome, exc.reason
        )
    else:
        outcome = "sent"
        values = {
            "status": MailStatus.SENT,
            "finished_at": utcnow(),
            # The text may hold a single-use link: once delivered, it is the recipient's only.
            "message": None,
            "error_detail": None,
            "delivery": delivery,
        }
        log.info("mail %s sent (try %d): %s", mail_id, claimed.tries, delivery)
    with session_scope() as session:
        if not cross_tenant.finish(session, mail_id, token, **values):
            return "lease lost"
    telemetry.mail_tried(outcome)
    return outcome


def sweep() -> dict[str, int]:
    """Sends again the messages whose wait is over, those whose task was lost or never left
    its process, and those whose worker died."""
    settings = get_settings()
    now = utcnow()
    with unit_of_work() as work:
        waited = cross_tenant.due_for_retry(work.session, now, SWEEP_BATCH)
        lost = cross_tenant.stuck(
            work.session, now, now - timedelta(seconds=settings.queued_requeue_seconds), SWEEP_BATCH
        )
        cross_tenant.requeue(work.session, waited, lost, now)
        for mail_id in [*waited, *lost]:
            work.send_after_commit(SEND_MAIL, str(mail_id))
    if lost:
        log.info("mail sweep sent %d lost messages again", len(lost))
    return {"retried": len(waited), "lost": len(lost)}
