"""Celery entry points for mail. Tasks take ids and are safe to run twice."""

from __future__ import annotations

import uuid

from celery import shared_task
from sqlalchemy.exc import OperationalError

from app.kit.mail import delivery, service


@shared_task(
    name=service.SEND_MAIL_TASK,
    acks_late=True,
    reject_on_worker_lost=True,
    soft_time_limit=delivery.SEND_TIME_LIMIT_SECONDS,
    time_limit=delivery.SEND_TIME_LIMIT_SECONDS + 10,
    autoretry_for=(OperationalError,),
    retry_backoff=True,
    retry_jitter=True,
    max_retries=5,
)
def send_mail(mail_id: str) -> str:
    return delivery.deliver(uuid.UUID(mail_id))


@shared_task(name="gauntlet.sweep_mail", acks_late=True, time_limit=300)
def sweep_mail() -> dict[str, int]:
    return delivery.sweep()
