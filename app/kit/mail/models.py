"""The outbox: one row per message, from the moment a transaction asks for it until the
server took it (or it failed for good)."""

from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum

from sqlalchemy import ForeignKey, Index, String, Text, Uuid
from sqlalchemy.orm import Mapped, mapped_column

from app.kit.db import Base, StrEnumColumn, UTCDateTime, new_id, utcnow
from app.kit.lease.models import Leased, LeasedTable


class MailStatus(StrEnum):
    QUEUED = "queued"  # waiting for a worker
    SENDING = "sending"  # a worker holds it (its lease)
    RETRYING = "retrying"  # not taken by the server; waits until `next_attempt_at`
    SENT = "sent"
    FAILED = "failed"


class OutboundMail(Leased, Base):
    """A message to one recipient. `message` is the whole RFC 5322 text as it goes out (ASCII:
    headers encoded, body quoted-printable), kept until delivered; `run_count` counts the
    tries; `delivery` says where it went (the SMTP server, or the .eml file's name)."""

    __tablename__ = "outbound_mail"
    __table_args__ = (
        Index("ix_outbound_mail_tenant_id_created_at", "tenant_id", "created_at"),
        Index("ix_outbound_mail_status_next_attempt_at", "status", "next_attempt_at"),
    )

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=new_id)
    tenant_id: Mapped[uuid.UUID] = mapped_column(Uuid, ForeignKey("tenants.id", ondelete="CASCADE"))
    # What the message is (the caller's word: "email_confirmation", "password_reset", ...).
    topic: Mapped[str] = mapped_column(String(40))
    recipient: Mapped[str] = mapped_column(String(254))
    subject: Mapped[str] = mapped_column(String(250))
    message: Mapped[str | None] = mapped_column(Text, default=None)
    status: Mapped[MailStatus] = mapped_column(StrEnumColumn(MailStatus, 16))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    enqueued_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    next_attempt_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    error_detail: Mapped[str | None] = mapped_column(String(500), default=None)
    delivery: Mapped[str | None] = mapped_column(String(300), default=None)


MAIL_LEASES = LeasedTable(OutboundMail, MailStatus.QUEUED, MailStatus.SENDING)
