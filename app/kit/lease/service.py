"""What a run under a lease follows: every write it makes holds the lease first (`hold`), and
a run that finds it lost (`LeaseLost`) stops without writing anything more."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta

from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from app.kit.config import Settings
from app.kit.db import session_scope, utcnow
from app.kit.lease import repository
from app.kit.lease.models import L, LeasedTable

log = logging.getLogger(__name__)

# What a run's task is retried on (its `autoretry_for`): the database failed it (a deadlock, a
# serialization failure, a dropped connection), not the run.
TRANSIENT_ERRORS: tuple[type[Exception], ...] = (OperationalError,)


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


@contextmanager
def given_back_on_transient_error(
    table: LeasedTable[L], ids: Sequence[uuid.UUID], token: uuid.UUID
) -> Iterator[None]:
    """A transient database error (`TRANSIENT_ERRORS`) raised within gives the leases this
    token still holds back before it propagates, so the task's retry claims the rows at once
    instead of finding them held by the run that failed (until its lease ran out and the sweep
    came). If the database refuses that too, the leases run out by themselves."""
    try:
        yield
    except TRANSIENT_ERRORS:
        try:
            with session_scope() as session:
                repository.give_back(session, table, ids, token, utcnow())
        except TRANSIENT_ERRORS:
            log.warning("could not give back the lease of %s", ids, exc_info=True)
        raise
