"""What is failing: the checks behind the API's and the workers' /healthz.

The API answers 200 whenever it can reach its database (the contract load balancers and
Compose rely on: with its database the API serves reads and accepts attempts, which stay queued
until a worker takes them), and 503 when it cannot. A broker that does not answer or no worker
seen recently does not make it 503: the body says `"status": "degraded"` and which check
failed, for an operator or a monitor that reads the body. `GAUNTLET_HEALTH_REQUIRES_WORKER`
(on in `gauntlet run`, whose worker is part of the one service) makes no worker seen a 503.
Failures are named by exception type only: the endpoint is public, and messages can carry host
names or credentials.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from datetime import timedelta
from functools import lru_cache
from typing import Any

from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

from app.kit.config import Settings
from app.kit.db import get_sessionmaker, utcnow
from app.kit.observability import repository

# A worker that missed this many heartbeats in a row is no longer counted.
HEARTBEATS_MISSED = 3
_CHECK_TIMEOUT_S = 1.0

Check = dict[str, Any]


def _failed(error: BaseException) -> Check:
    return {"ok": False, "error": type(error).__name__}


@lru_cache(maxsize=4)
def _redis_client(url: str) -> Any:
    # The Redis client loads only where the broker is Redis.
    import redis

    return redis.Redis.from_url(
        url, socket_connect_timeout=_CHECK_TIMEOUT_S, socket_timeout=_CHECK_TIMEOUT_S
    )


def check_broker(settings: Settings) -> Check:
    url = settings.resolved_broker_url
    if url.startswith(("redis://", "rediss://")):
        try:
            _redis_client(url).ping()
        except Exception as error:
            return _failed(error)
        return {"ok": True}
    if url.startswith("filesystem"):
        folder = settings.broker_folder
        if folder.is_dir() and os.access(folder, os.W_OK):
            return {"ok": True}
        return {"ok": False, "error": "broker folder missing or not writable"}
    return {"ok": True, "detail": "not checked for this transport"}


def _ping(sessions: sessionmaker[Session]) -> None:
    with sessions() as session:
        repository.ping(session)


def check_database(sessions: sessionmaker[Session] | None = None) -> Check:
    """Whether the database answers now. A connection the pool kept may have died since its
    last use (the database restarted, the network cut it): the pool has no pre-ping
    (app/kit/db.py), so that use fails and SQLAlchemy discards the pool. That says nothing of the
    database, so the check asks once more, on a fresh connection, before it reports the
    database unreachable."""
    sessions = sessions or get_sessionmaker()
    try:
        try:
            _ping(sessions)
        except DBAPIError as error:
            if not error.connection_invalidated:
                raise
            _ping(sessions)
    except Exception as error:
        return _failed(error)
    return {"ok": True}


def worker_window_seconds(settings: Settings) -> float:
    return settings.worker_heartbeat_seconds * HEARTBEATS_MISSED


def check_workers(settings: Settings) -> Check:
    window = worker_window_seconds(settings)
    try:
        with get_sessionmaker()() as session:
            seen = repository.workers_seen_since(
                session, settings.queue, utcnow() - timedelta(seconds=window)
            )
    except Exception as error:
        return _failed(error)
    return {
        "ok": bool(seen),
        "seen": len(seen),
        "processes": sum(worker.concurrency for worker in seen),
        "within_seconds": window,
    }


def api_health(settings: Settings) -> tuple[int, dict[str, Any]]:
    """The API's /healthz: (HTTP status, body)."""
    database = check_database()
    broker = check_broker(settings)
    if not database["ok"]:
        checks: dict[str, Check] = {
            "database": database,
            "broker": broker,
            "workers": {"ok": False, "error": "unknown without the database"},
        }
        message = f"database unreachable: {database['error']}"
        body = {"error": {"code": "unavailable", "message": message, "details": checks}}
        return 503, body
    checks = {"database": database, "broker": broker, "workers": check_workers(settings)}
    healthy = all(check["ok"] for check in checks.values())
    if settings.health_requires_worker and not checks["workers"]["ok"]:
        # As in `gauntlet run`, one service whose worker is its own child: without it,
        # nothing it accepts would ever run.
        message = "no worker seen: attempts wait until the worker is back"
        return 503, {"error": {"code": "unavailable", "message": message, "details": checks}}
    return 200, {"status": "ok" if healthy else "degraded", "checks": checks}


@dataclass
class _Seen:
    at: float = float("-inf")
    missing: bool = False


_workers_seen_cache = _Seen()
_SEEN_CACHE_S = 5.0


def workers_missing(settings: Settings) -> bool:
    """Whether no worker has been seen within the heartbeat window (for pages: read at most
    every few seconds per process, and never an error: a failed read says nothing is
    missing)."""
    now = time.monotonic()
    if now - _workers_seen_cache.at >= _SEEN_CACHE_S:
        check = check_workers(settings)
        _workers_seen_cache.missing = "seen" in check and not check["ok"]
        _workers_seen_cache.at = now
    return _workers_seen_cache.missing
