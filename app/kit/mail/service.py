"""Queueing a message in the caller's transaction, and the console's reads of a tenant's
messages. A worker hands them over (app.kit.mail.delivery)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from email import message_from_string
from email.policy import default

from sqlalchemy.orm import Session

from app.kit.config import get_settings
from app.kit.db import utcnow
from app.kit.mail.message import Mail, compose, one_line
from app.kit.mail.models import MailStatus, OutboundMail
from app.kit.mail.repository import MailRepository
from app.kit.unit_of_work import UnitOfWork, WorkerTask

SEND_MAIL_TASK = "gauntlet.send_mail"
SEND_MAIL = WorkerTask(
    SEND_MAIL_TASK, "the mail sweep sends it once GAUNTLET_QUEUED_REQUEUE_SECONDS have passed"
)
HEADERS_SHOWN = ("From", "To", "Subject", "Date", "List-Unsubscribe", "List-Unsubscribe-Post")


def queue(work: UnitOfWork, tenant_id: uuid.UUID, topic: str, mail: Mail) -> uuid.UUID:
    """Stores the message in this transaction; a worker sends it once the transaction commits
    (never if it rolls back). Raises `MailRefused` for a message that cannot be built."""
    now = utcnow()
    text = compose(mail, get_settings().resolved_mail_from, now)
    row = OutboundMail(
        id=uuid.uuid4(),
        tenant_id=tenant_id,
        topic=topic,
        recipient=mail.recipient,
        subject=one_line(mail.subject),
        message=text,
        status=MailStatus.QUEUED,
        created_at=now,
        enqueued_at=now,
    )
    MailRepository(work.session, tenant_id).add(row)
    work.send_after_commit(SEND_MAIL, str(row.id))
    return row.id


# The console -----------------------------------------------------------------------------------


def page_of_mail(
    session: Session, tenant_id: uuid.UUID, *, limit: int, offset: int
) -> tuple[list[OutboundMail], int]:
    """The tenant's messages, newest first, and how many it has."""
    return MailRepository(session, tenant_id).page(limit, offset)


@dataclass(frozen=True)
class MailCopy:
    """A message as the mail folder holds it: its main headers and its text."""

    mail: OutboundMail
    headers: list[tuple[str, str]]
    text: str | None


def mail_copy(session: Session, tenant_id: uuid.UUID, mail_id: uuid.UUID) -> MailCopy | None:
    """One of the tenant's messages, with its text if it was written to the mail folder (the
    database keeps no text once a message is delivered). None: no such message of the
    tenant."""
    mail = MailRepository(session, tenant_id).get(mail_id)
    if mail is None:
        return None
    path = get_settings().mail_folder / f"{mail.created_at:%Y%m%dT%H%M%S}-{mail.id}.eml"
    try:
        raw = path.read_text(errors="replace")
    except OSError:
        return MailCopy(mail, [], None)
    parsed = message_from_string(raw, policy=default)
    headers = [(name, str(parsed[name])) for name in HEADERS_SHOWN if parsed[name] is not None]
    body = parsed.get_body(preferencelist=("plain",))
    text = body.get_content() if body is not None else None
    return MailCopy(mail, headers, text)
