from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, String, Text, UniqueConstraint, Uuid
from sqlalchemy.orm import Mapped, mapped_column

from app.db import Base, JSONType, UTCDateTime, new_id, utcnow


class Challenge(Base):
    """A challenge; its configuration sections are stored as validated JSON documents."""

    __tablename__ = "challenges"
    __table_args__ = (UniqueConstraint("tenant_id", "slug"),)

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=new_id)
    tenant_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("tenants.id", ondelete="CASCADE"), index=True
    )
    slug: Mapped[str] = mapped_column(String(64))
    title: Mapped[str] = mapped_column(String(200))
    goal: Mapped[str] = mapped_column(Text, default="")
    kind: Mapped[str] = mapped_column(String(16))
    target: Mapped[dict[str, Any] | None] = mapped_column(JSONType, default=None)
    verifier: Mapped[dict[str, Any] | None] = mapped_column(JSONType, default=None)
    # Benchmark challenges: which benchmark, its options, and the judge and critic models.
    benchmark: Mapped[dict[str, Any] | None] = mapped_column(JSONType, default=None)
    evaluation: Mapped[dict[str, Any]] = mapped_column(JSONType)
    scoring: Mapped[dict[str, Any]] = mapped_column(JSONType)
    limits: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    visibility: Mapped[str] = mapped_column(String(16), default="private")
    opens_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    closes_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)
