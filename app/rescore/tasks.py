"""Celery entry points for rescore jobs."""

from __future__ import annotations

import uuid

from celery import shared_task
from sqlalchemy.exc import OperationalError

from app.rescore.runner import run_rescore
from app.rescore.service import RESCORE_TASK


@shared_task(
    name=RESCORE_TASK,
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=(OperationalError,),
    retry_backoff=True,
    max_retries=5,
)
def rescore_challenge(job_id: str) -> str:
    return run_rescore(uuid.UUID(job_id))
