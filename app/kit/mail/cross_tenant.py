"""The outbox's statements that read every tenant's messages: a worker's claim of a message
and its outcome (through the lease statements, app.kit.lease.repository, as every leased job's
are) and the sweep's. The worker side's only; a tenant's own statements are in
app.kit.mail.repository."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import update
from sqlalchemy.orm import Session

from app.kit.db import lock_some_ids
from app.kit.lease import repository as leases
from app.kit.mail.models import MAIL_LEASES, MailStatus, OutboundMail


class ClaimedMail(NamedTuple):
    tenant_id: uuid.UUID
    recipient: str
    message: str | None
    created_at: datetime
    # This try's number (1 for the first).
    tries: int


def claim(
    session: Session, mail_id: uuid.UUID, token: uuid.UUID, now: datetime, until: datetime
) -> ClaimedMail | None:
    """The message, held under this token until `until`, if it is free (queued, or held
    under a lease that ran out); None when it is sent, failed, waiting or held."""
    row = leases.claim(
        session,
        MAIL_LEASES,
        [mail_id],
        token,
        now,
        until,
        returning=[
            OutboundMail.tenant_id,
            OutboundMail.recipient,
            OutboundMail.message,
            OutboundMail.created_at,
            OutboundMail.run_count,
        ],
    ).one_or_none()
    return None if row is None else ClaimedMail(*row)


def finish(session: Session, mail_id: uuid.UUID, token: uuid.UUID, **values: Any) -> bool:
    """The outcome of the holder's try (status and what goes with it); False when the token
    no longer holds the message (its lease ran out and another worker took it)."""
    return bool(leases.release(session, MAIL_LEASES, [mail_id], token, **values).all())


def due_for_retry(session: Session, now: datetime, limit: int) -> list[uuid.UUID]:
    """Messages whose wait before their next try is over, oldest wait first, locked."""
    return lock_some_ids(
        session,
        OutboundMail.id,
        OutboundMail.status == MailStatus.RETRYING,
        OutboundMail.next_attempt_at <= now,
        oldest_first=OutboundMail.next_attempt_at,
        limit=limit,
    )


def stuck(session: Session, now: datetime, sent_before: datetime, limit: int) -> list[uuid.UUID]:
    """Queued messages last sent to a worker before `sent_before` (the task was lost, or never
    left its process), and messages whose worker's lease ran out (it died), locked."""
    return leases.lapsed(
        session,
        MAIL_LEASES,
        now,
        sent_before,
        waiting=True,
        oldest_first=OutboundMail.enqueued_at,
        limit=limit,
    )


def requeue(
    session: Session, waited: Sequence[uuid.UUID], lost: Sequence[uuid.UUID], now: datetime
) -> None:
    """Marks the messages as sent to a worker now: those that waited for a retry as queued
    again."""
    if waited:
        session.execute(
            update(OutboundMail)
            .where(OutboundMail.id.in_(waited), OutboundMail.status == MailStatus.RETRYING)
            .values(status=MailStatus.QUEUED, enqueued_at=now, next_attempt_at=None),
            execution_options={"synchronize_session": False},
        )
    if lost:
        session.execute(
            update(OutboundMail).where(OutboundMail.id.in_(lost)).values(enqueued_at=now),
            execution_options={"synchronize_session": False},
        )
