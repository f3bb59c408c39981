"""Celery entry points of the competition domain; safe to run twice (app/competition/notices.py)."""

from __future__ import annotations

from celery import shared_task

from app.competition import notices


@shared_task(name=notices.SWEEP_NOTICES_TASK, acks_late=True, time_limit=300)
def sweep_notices() -> dict[str, int]:
    return notices.sweep()
