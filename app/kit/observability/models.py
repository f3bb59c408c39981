from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from app.kit.db import Base, UTCDateTime


class WorkerHeartbeat(Base):
    """A worker process's sign of life, written every `worker_heartbeat_seconds` by the
    worker's main process, so the API's /healthz can say whether any worker is listening.
    Platform-level, like the queue: no tenant owns a worker."""

    __tablename__ = "worker_heartbeats"
    __table_args__ = (Index("ix_worker_heartbeats_queue_seen", "queue", "last_seen_at"),)

    # Celery's node name and the process id: two workers on one host may share a node name.
    worker_id: Mapped[str] = mapped_column(String(300), primary_key=True)
    hostname: Mapped[str] = mapped_column(String(255))
    pid: Mapped[int] = mapped_column(Integer)
    queue: Mapped[str] = mapped_column(String(100))
    concurrency: Mapped[int] = mapped_column(Integer)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime)
    last_seen_at: Mapped[datetime] = mapped_column(UTCDateTime)
