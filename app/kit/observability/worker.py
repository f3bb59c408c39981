"""A worker's own health and metrics, and its heartbeat, from the worker's main process.

Started by Celery's signals (workers/celery_app.py). The heartbeat thread writes this worker's
row every `worker_heartbeat_seconds` (the API's /healthz counts the rows seen recently); its
outcome is also this worker's database check. With `GAUNTLET_WORKER_HTTP_PORT` set, a small
HTTP server answers `/healthz` (200 when the database and the broker answer and the pool has
processes, 503 otherwise, with the checks in the body) and `/metrics` (this worker's processes'
series, from the multiprocess directory its prefork children share).

The main process forks pool children after (and while) this runs. The heartbeat connects
afresh for each write (no pool to share with a child), and the server's socket, inherited by
the children, is only ever served by this process.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from app.kit.config import Settings, get_settings
from app.kit.db import make_engine, utcnow
from app.kit.observability import metrics, repository
from app.kit.observability.health import check_broker
from app.kit.observability.service import metrics_reader_allowed

log = logging.getLogger(__name__)

# Rows of workers silent for this long are deleted when a worker starts.
_FORGET_AFTER = timedelta(days=1)


class WorkerMonitor:
    def __init__(self, settings: Settings, nodename: str, concurrency: int, pool: Any) -> None:
        self.settings = settings
        self.worker_id = f"{nodename}/{os.getpid()}"[:300]
        self.concurrency = concurrency
        self.pool = pool
        self.started_at = utcnow()
        self.ready = False
        self.last_beat: datetime | None = None
        self.last_error: str | None = None
        self._engine: Engine | None = None
        self._stop = threading.Event()
        self._beats: threading.Thread | None = None
        self._server: ThreadingHTTPServer | None = None

    # -- heartbeat ----------------------------------------------------------------------------

    def _session(self) -> Session:
        if self._engine is None:
            self._engine = make_engine(self.settings.resolved_database_url, pooled=False)
        return Session(self._engine)

    def beat(self) -> None:
        now = utcnow()
        try:
            with self._session() as session, session.begin():
                repository.record_heartbeat(
                    session,
                    worker_id=self.worker_id,
                    hostname=socket.gethostname(),
                    pid=os.getpid(),
                    queue=self.settings.queue,
                    concurrency=self.concurrency,
                    started_at=self.started_at,
                    now=now,
                )
        except Exception as error:
            if self.last_error is None:
                log.warning("worker heartbeat failed: %s", type(error).__name__)
            self.last_error = type(error).__name__
            return
        if self.last_error is not None:
            log.info("worker heartbeat recorded again")
        self.last_beat, self.last_error = now, None

    def _beat_forever(self) -> None:
        try:
            with self._session() as session, session.begin():
                repository.forget_workers_silent_since(session, utcnow() - _FORGET_AFTER)
        except Exception:
            log.debug("could not forget old worker heartbeats", exc_info=True)
        while True:
            self.beat()
            if self._stop.wait(self.settings.worker_heartbeat_seconds):
                return

    def start_heartbeat(self) -> None:
        self.ready = True
        self._beats = threading.Thread(target=self._beat_forever, name="heartbeat", daemon=True)
        self._beats.start()

    # -- health and metrics over HTTP ---------------------------------------------------------

    def health(self) -> tuple[int, dict[str, Any]]:
        database: dict[str, Any]
        if self.last_error is not None:
            database = {"ok": False, "error": self.last_error}
        elif self.last_beat is None:
            database = {"ok": False, "error": "no heartbeat written yet"}
        else:
            age = (utcnow() - self.last_beat).total_seconds()
            limit = self.settings.worker_heartbeat_seconds * 3
            database = {"ok": age <= limit, "last_heartbeat_seconds_ago": round(age, 1)}
            if age > limit:
                database["error"] = "heartbeat overdue"
        processes = self._pool_processes()
        checks: dict[str, dict[str, Any]] = {
            "consumer": {"ok": self.ready} if self.ready else {"ok": False, "error": "starting"},
            "database": database,
            "broker": check_broker(self.settings),
        }
        if processes is not None:
            checks["pool"] = {
                "ok": processes > 0,
                "processes": processes,
                "concurrency": self.concurrency,
            }
        healthy = all(check["ok"] for check in checks.values())
        return (200 if healthy else 503), {
            "status": "ok" if healthy else "failing",
            "worker": self.worker_id,
            "checks": checks,
        }

    def _pool_processes(self) -> int | None:
        try:
            processes = self.pool.info.get("processes")
        except Exception:
            return None
        return len(processes) if isinstance(processes, list) else None

    def start_http(self, host: str, port: int) -> None:
        monitor = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/healthz":
                    status, body = monitor.health()
                    self._send(status, "application/json", json.dumps(body).encode())
                elif path == "/metrics":
                    authorization = self.headers.get("Authorization")
                    if not metrics_reader_allowed(authorization, monitor.settings):
                        self._send(401, "application/json", b'{"error": "unauthorized"}')
                        return
                    self._send(200, metrics.CONTENT_TYPE, metrics.render())
                else:
                    self._send(404, "application/json", b'{"error": "not found"}')

            def _send(self, status: int, content_type: str, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # probes every few seconds are not worth a log line each

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name="worker-http", daemon=True).start()
        log.info("worker health and metrics on http://%s:%d", host, port)

    def stop(self) -> None:
        self._stop.set()
        if self._beats is not None:
            self._beats.join(timeout=5)
        try:
            with self._session() as session, session.begin():
                repository.forget_worker(session, self.worker_id)
        except Exception:
            log.debug("could not remove this worker's heartbeat", exc_info=True)
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._engine is not None:
            self._engine.dispose()


_monitor: WorkerMonitor | None = None


def on_worker_init(worker: Any) -> None:
    """Celery's worker_init, in the main process: the HTTP endpoint answers from now on."""
    global _monitor
    settings = get_settings()
    _monitor = WorkerMonitor(
        settings,
        nodename=str(getattr(worker, "hostname", socket.gethostname())),
        concurrency=int(getattr(worker, "concurrency", 0) or 0),
        pool=None,
    )
    if settings.worker_http_port is not None:
        _monitor.start_http(settings.worker_http_host, settings.worker_http_port)


def on_worker_ready(worker: Any) -> None:
    """Celery's worker_ready: consuming, with its pool started; heartbeats begin."""
    if _monitor is None:
        return
    _monitor.pool = getattr(worker, "pool", None)
    _monitor.start_heartbeat()


def on_worker_shutdown() -> None:
    if _monitor is not None:
        _monitor.stop()
