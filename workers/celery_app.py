"""The Celery application: broker, queues, task defaults and the periodic sweep.

The broker's settings are app/broker's (Redis in production; in the embedded mode, `make run`,
a folder in the data dir, so attempts still run off the request path in a separate worker
process with no Redis to install). This app knows every task; it is built only by the
processes that run them (workers, beat); the API sends through app/kit/broker/sender.py.
"""

from __future__ import annotations

import logging
import os
import signal
from typing import Any

from celery import Celery
from celery.signals import (
    beat_embedded_init,
    setup_logging,
    task_postrun,
    task_prerun,
    worker_init,
    worker_process_init,
    worker_ready,
    worker_shutdown,
)

from app.challenge.registry import periodic_tasks, worker_task_modules
from app.kit.broker.config import PERIODIC_TASK, beat_schedule, configure
from app.kit.broker.sender import REQUEST_ID_HEADER
from app.kit.config import get_settings
from app.kit.observability import context
from app.kit.observability.logging import configure_logging
from app.kit.observability.worker import on_worker_init, on_worker_ready, on_worker_shutdown
from app.scoring.sandbox.service import describe_scorer_sandbox, log_scorer_sandbox
from workers.supervisor import end_with_parent

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
log = logging.getLogger(__name__)


def make_celery() -> Celery:
    settings = get_settings()
    # The core's tasks, and those of the challenge kinds (app/challenge/challenge_kind.py).

    kind_tasks = worker_task_modules()
    app = Celery(
        "gauntlet",
        include=[
            "app.attempt.tasks",
            "app.rescore.tasks",
            "app.kit.mail.tasks",
            "app.competition.tasks",
            *kind_tasks,
        ],
    )
    configure(app, settings)
    if settings.resolved_broker_url.startswith(("redis://", "rediss://")):
        # A worker takes a message only when a process is free to run it, so a worker that
        # dies holds no message it had not started (those would wait for the visibility
        # timeout), and a backlog goes to whichever worker is free.
        app.conf.worker_disable_prefetch = True
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        worker_hijack_root_logger=False,
        beat_schedule=beat_schedule(
            settings.queue,
            {
                "sweep-attempts": ("gauntlet.sweep_attempts", settings.sweep_interval_seconds),
                "sweep-mail": ("gauntlet.sweep_mail", settings.sweep_interval_seconds),
                "sweep-notices": ("gauntlet.sweep_notices", settings.sweep_interval_seconds),
                **periodic_tasks(),
            },
        ),
        beat_schedule_filename=str((settings.data_dir / "celerybeat-schedule").resolve()),
    )
    return app


celery_app = make_celery()


@celery_app.task(name=PERIODIC_TASK, acks_late=True, time_limit=300)
def run_periodic(tasks: list[str]) -> dict[str, Any]:
    """One period's periodic tasks (app.kit.broker.config.beat_schedule), run in turn in this
    pool process; one that fails is logged and the others still run."""
    results: dict[str, Any] = {}
    for name in tasks:
        try:
            results[name] = celery_app.tasks[name]()
        except Exception:
            log.exception("periodic task %s failed", name)
            results[name] = "error"
    return results


@worker_process_init.connect
def _end_with_the_worker(**_: object) -> None:
    # A pool process whose worker was killed (SIGKILL: no goodbye) would live on, orphaned,
    # holding its memory; the worker's replacement starts a pool of its own.
    end_with_parent(signal.SIGKILL)


@beat_embedded_init.connect
def _end_beat_with_the_worker(**_: object) -> None:
    # The same for the beat a worker embeds (`worker --beat`, the embedded mode): the
    # replacement's beat would otherwise run beside it, sending every periodic task twice.
    end_with_parent(signal.SIGTERM)


@worker_init.connect
def _probe_scorer_sandbox(**_: object) -> None:
    # Once per worker, before the pool forks, so every pool process inherits the result.

    describe_scorer_sandbox()


@worker_ready.connect
def _log_scorer_sandbox(**_: object) -> None:
    # Logging is set up only after worker_init.

    log_scorer_sandbox()


# -- observability: logging, ids across API and workers, the worker's health ------------------

_ATTEMPT_TASK = "gauntlet.run_attempt"


@setup_logging.connect
def _configure_logging(loglevel: int | str | None = None, **_: Any) -> None:
    """Celery leaves logging alone when this signal has a receiver: the worker and beat log
    in the service's format (JSON in production) instead of Celery's."""

    level = logging.getLevelName(loglevel) if isinstance(loglevel, int) else loglevel
    configure_logging(get_settings().resolved_log_format, str(level or "INFO"))


_task_contexts: dict[str, Any] = {}


@task_prerun.connect
def _bind_task_ids(
    task_id: str | None = None, task: Any = None, args: Any = None, **_: Any
) -> None:
    ids: dict[str, str] = {}
    request_id = task.request.get(REQUEST_ID_HEADER) if task is not None else None
    if isinstance(request_id, str):
        ids["request_id"] = request_id
    if task is not None and task.name == _ATTEMPT_TASK and args:
        ids["attempt_id"] = str(args[0])
    if task_id is not None:
        _task_contexts[task_id] = context.begin(**ids)


@task_postrun.connect
def _unbind_task_ids(task_id: str | None = None, **_: Any) -> None:
    token = _task_contexts.pop(task_id or "", None)
    if token is not None:
        context.end(token)


@worker_init.connect
def _start_worker_monitor(sender: Any = None, **_: Any) -> None:
    on_worker_init(sender)


@worker_ready.connect
def _worker_consuming(sender: Any = None, **_: Any) -> None:
    on_worker_ready(sender)


@worker_shutdown.connect
def _stop_worker_monitor(**_: Any) -> None:
    on_worker_shutdown()
