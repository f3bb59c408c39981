"""Every SQL statement of the observability domain: worker heartbeats and the database check
that /healthz and /metrics read. Platform-level, so not tenant-scoped (no tenant sees them:
/metrics needs the metrics or admin token)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, select, text
from sqlalchemy.orm import Session

from app.kit.db import insert_for
from app.kit.observability.models import WorkerHeartbeat


def ping(session: Session) -> None:
    session.execute(text("SELECT 1"))


def record_heartbeat(
    session: Session,
    *,
    worker_id: str,
    hostname: str,
    pid: int,
    queue: str,
    concurrency: int,
    started_at: datetime,
    now: datetime,
) -> None:
    insert = insert_for(session)
    statement = insert(WorkerHeartbeat).values(
        worker_id=worker_id,
        hostname=hostname,
        pid=pid,
        queue=queue,
        concurrency=concurrency,
        started_at=started_at,
        last_seen_at=now,
    )
    session.execute(
        statement.on_conflict_do_update(
            index_elements=[WorkerHeartbeat.worker_id],
            set_={"last_seen_at": now, "concurrency": concurrency},
        )
    )


def forget_worker(session: Session, worker_id: str) -> None:
    session.execute(delete(WorkerHeartbeat).where(WorkerHeartbeat.worker_id == worker_id))


def forget_workers_silent_since(session: Session, before: datetime) -> None:
    session.execute(delete(WorkerHeartbeat).where(WorkerHeartbeat.last_seen_at < before))


def workers_seen_since(session: Session, queue: str, since: datetime) -> list[WorkerHeartbeat]:
    return list(
        session.scalars(
            select(WorkerHeartbeat)
            .where(WorkerHeartbeat.queue == queue, WorkerHeartbeat.last_seen_at >= since)
            .order_by(WorkerHeartbeat.worker_id)
        )
    )
