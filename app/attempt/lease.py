"""The lease a worker holds on a running attempt."""

from __future__ import annotations

from datetime import datetime, timedelta

from app.config import Settings
from app.db import utcnow


class LeaseLost(Exception):
    """Another worker took the attempt over; this one must stop without finishing it."""


def lease_until(settings: Settings) -> datetime:
    return utcnow() + timedelta(seconds=settings.attempt_lease_seconds)
