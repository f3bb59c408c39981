"""The lease a worker holds on a running attempt."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from sqlalchemy.orm import Session

from app.attempt import repository
from app.config import Settings
from app.db import utcnow


class LeaseLost(Exception):
    """Another worker took the attempt over; this one must stop without finishing it."""


def lease_until(settings: Settings) -> datetime:
    return utcnow() + timedelta(seconds=settings.attempt_lease_seconds)


def hold(session: Session, attempt_id: uuid.UUID, token: uuid.UUID, settings: Settings) -> None:
    """Renews the lease in this transaction, or raises LeaseLost: every write a run makes
    goes through here first, so a worker that lost its attempt writes nothing more."""
    if not repository.renew_lease(session, attempt_id, token, lease_until(settings)):
        raise LeaseLost()
