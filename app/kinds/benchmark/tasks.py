"""Celery entry points of the benchmark kind (included by every worker because the kind is
registered). Tasks take ids and are safe to run twice; a database hiccup is retried as an
attempt's run is."""

from __future__ import annotations

import uuid

from celery import shared_task
from sqlalchemy.exc import OperationalError

from app.kinds.api import get_settings
from app.kinds.benchmark import sealed
from app.kinds.benchmark.dispatch import RUN_SEALED_TASK, SWEEP_TASK

_settings = get_settings()


@shared_task(
    name=RUN_SEALED_TASK,
    acks_late=True,
    reject_on_worker_lost=True,
    soft_time_limit=_settings.attempt_time_limit_seconds,
    time_limit=_settings.attempt_time_limit_seconds + 30,
    autoretry_for=(OperationalError,),
    retry_backoff=True,
    retry_jitter=True,
    max_retries=5,
)
def run_sealed(attempt_id: str) -> str:
    return sealed.run_sealed(uuid.UUID(attempt_id))


@shared_task(name=SWEEP_TASK, acks_late=True, time_limit=300)
def sweep() -> dict[str, int]:
    return sealed.sweep()
