"""Celery entry points for attempts. Tasks take ids and are safe to run twice."""

from __future__ import annotations

import logging
import uuid

from celery import shared_task
from celery.signals import worker_init, worker_process_init
from sqlalchemy.exc import OperationalError

from app.attempt import runner, sweep
from app.attempt.dispatch import RUN_ATTEMPT_TASK
from app.evaluation.engine.llm import warm_up
from app.kit.config import get_settings

_settings = get_settings()
log = logging.getLogger(__name__)


@worker_init.connect
def _load_litellm_before_forking(**_: object) -> None:
    """Import litellm (seconds) and make its first call (seconds more: it loads its provider
    modules then) once in the worker's main process, before the pool forks, so no attempt pays
    for either and no lease runs out while a child imports it. Not when the operator turned it
    off (`GAUNTLET_WORKER_WARM_UP=false`): pool processes then skip theirs too."""
    if not _settings.worker_warm_up:
        log.info("warm-up off: a pool process's first call through litellm imports it")
        return
    warm_up()


@worker_process_init.connect
def _warm_up_pool_process(**_: object) -> None:
    """A pool process makes one untimed call on its own event loop before it takes work, so
    its first attempt is timed like its later ones."""
    if runner.warm_up_process():
        log.info("pool process warmed up: its first attempt is timed like the later ones")


@shared_task(
    name=RUN_ATTEMPT_TASK,
    acks_late=True,
    reject_on_worker_lost=True,
    soft_time_limit=_settings.attempt_time_limit_seconds,
    time_limit=_settings.attempt_time_limit_seconds + 30,
    autoretry_for=(OperationalError,),
    retry_backoff=True,
    retry_jitter=True,
    max_retries=5,
)
def run_attempt(attempt_id: str) -> str:
    return runner.run_in_turn(uuid.UUID(attempt_id))


@shared_task(name="gauntlet.sweep_attempts", acks_late=True, time_limit=300)
def sweep_attempts() -> dict[str, int]:
    return sweep.sweep()
