"""The outbox's statements of one tenant: a message queued in its transaction and the
console's reads. A worker's claims and sweeps, which read every tenant's messages, are in
app.kit.mail.cross_tenant."""

from __future__ import annotations

import uuid

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.kit.db import page_where
from app.kit.mail.models import OutboundMail


class MailRepository:
    """A tenant's messages: queued in its transactions, read on its console."""

    def __init__(self, session: Session, tenant_id: uuid.UUID) -> None:
        self.session = session
        self.tenant_id = tenant_id

    def add(self, mail: OutboundMail) -> None:
        self.session.add(mail)
        self.session.flush()

    def page(self, limit: int, offset: int) -> tuple[list[OutboundMail], int]:
        return page_where(
            self.session,
            OutboundMail,
            [OutboundMail.tenant_id == self.tenant_id],
            (OutboundMail.created_at.desc(), OutboundMail.id),
            limit=limit,
            offset=offset,
        )

    def get(self, mail_id: uuid.UUID) -> OutboundMail | None:
        return self.session.scalar(
            select(OutboundMail).where(
                OutboundMail.tenant_id == self.tenant_id, OutboundMail.id == mail_id
            )
        )
