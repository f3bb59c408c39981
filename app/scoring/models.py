from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from app.kit.db import Base, JSONType, UTCDateTime, utcnow


class ScorerPlugin(Base):
    """A registered scorer entrypoint. Platform-wide: registered by the platform admin."""

    __tablename__ = "scorer_plugins"

    plugin_id: Mapped[str] = mapped_column(String(100), primary_key=True)
    entrypoint: Mapped[str] = mapped_column(String(300))
    description: Mapped[str] = mapped_column(Text, default="")
    default_config: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    config_schema: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)
