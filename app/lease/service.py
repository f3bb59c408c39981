"""What a run under a lease follows: every write it makes holds the lease first (`hold`), and
a run that finds it lost (`LeaseLost`) stops without writing anything more."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

from sqlalchemy.orm import Session

from app.config import Settings
from app.db import session_scope, utcnow
from app.lease import repository
from app.lease.models import L, LeasedTable


class LeaseLost(Exception):
    """Another worker took the row over; this one must stop without finishing it."""


def lease_until(settings: Settings) -> datetime:
    return utcnow() + timedelta(seconds=settings.attempt_lease_seconds)


def hold(
    session: Session,
    table: LeasedTable[L],
    row_id: uuid.UUID,
    token: uuid.UUID,
    settings: Settings,
) -> None:
    """Renews the lease in this transaction, or raises LeaseLost: every write a run makes
    goes through here first, so a worker that lost its row writes nothing more."""
    if not repository.renew(session, table, [row_id], token, lease_until(settings)):
        raise LeaseLost()


def renewer(
    table: LeasedTable[L], ids: Sequence[uuid.UUID], token: uuid.UUID, settings: Settings
) -> Callable[[], bool]:
    """Renews the rows' leases, each time in a transaction of its own (a `Heartbeat`'s
    `renew`); False once this token holds none of them any more."""
    held = list(ids)

    def renew() -> bool:
        with session_scope() as session:
            return repository.renew(session, table, held, token, lease_until(settings)) > 0

    return renew
