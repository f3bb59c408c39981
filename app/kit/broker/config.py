"""This deployment's broker, queue and message settings, for any Celery app."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from celery import Celery

from app.kit.config import Settings


def configure(app: Celery, settings: Settings) -> None:
    broker_url = settings.resolved_broker_url
    transport_options: dict[str, object] = {}
    if broker_url.startswith("filesystem"):
        folder = settings.broker_folder
        folder.mkdir(parents=True, exist_ok=True)
        transport_options = {
            "data_folder_in": str(folder),
            "data_folder_out": str(folder),
            # Exchange bindings; kombu would otherwise write them to ./control.
            "control_folder": str(folder / "control"),
            "polling_interval": 0.05,
        }
        app.conf.broker_transport = "app.kit.broker.folder_transport:Transport"
    else:
        # A message not acknowledged this long is handed to another worker. It must outlast the
        # longest attempt, or a healthy long attempt would be delivered twice (the lease would
        # make the second delivery a no-op, but it would still be wasted work).
        transport_options = {"visibility_timeout": settings.attempt_time_limit_seconds + 120}
        if settings.redis_key_prefix:
            transport_options["global_keyprefix"] = settings.redis_key_prefix
    if broker_url.startswith("redis://"):
        app.conf.broker_transport = "app.kit.broker.redis_transport:Transport"
    app.conf.update(
        broker_url=broker_url,
        broker_transport_options=transport_options,
        broker_connection_retry_on_startup=True,
        task_ignore_result=True,
        result_backend=None,
        task_default_queue=settings.queue,
        task_serializer="json",
        accept_content=["json"],
    )


# A periodic task (a sweep) waits at most this many of its periods, and never less than
# `PERIODIC_EXPIRY_FLOOR_SECONDS`, before a worker drops it unstarted: a newer one is on its
# way, so a worker that was down or busy finds a few stale ones rather than a pile, and a busy
# machine's delivery delay (a second or more under load) does not drop every one of them.
PERIODIC_EXPIRY_PERIODS = 5
PERIODIC_EXPIRY_FLOOR_SECONDS = 10.0


def periodic_options(queue: str, every: float) -> dict[str, object]:
    """The sending options of a periodic task run every `every` seconds."""
    expires = max(every * PERIODIC_EXPIRY_PERIODS, PERIODIC_EXPIRY_FLOOR_SECONDS)
    return {"queue": queue, "expires": expires}


# The one task beat sends each period: it names the period's periodic tasks, which a worker
# process then runs in turn (workers/celery_app.py).
PERIODIC_TASK = "gauntlet.periodic"


def beat_schedule(
    queue: str, periodic: Mapping[str, tuple[str, float]]
) -> dict[str, dict[str, Any]]:
    """Celery beat's schedule for the periodic tasks (`name: (task, every seconds)`): one entry
    per period, whose message names that period's tasks in the order given.

    One message a period rather than one per task: each message costs the broker a round trip
    and the worker its delivery, acknowledgement and hand-over to a pool process, and with the
    five sweeps a second of a test deployment that was ~6 % of a core per idle worker."""
    by_period: dict[float, list[str]] = {}
    for task, every in periodic.values():
        by_period.setdefault(every, []).append(task)
    return {
        f"periodic-every-{every:g}s": {
            "task": PERIODIC_TASK,
            "schedule": every,
            "args": (tasks,),
            "options": periodic_options(queue, every),
        }
        for every, tasks in sorted(by_period.items())
    }
