"""The columns of a leased row, and how a table's rows are leased.

A worker owns a row through a lease: a claim sets a new `run_token` and `lease_expires_at`
(and counts the run); the worker renews the lease while it works, and only the holder of the
current token may write the row's outcome, so a redelivered task or a worker that came back
late never finishes it twice. A row whose lease ran out (its worker died) may be claimed again.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Generic, TypeVar

from sqlalchemy import BindParameter, ColumnElement, Float, Integer, Uuid, or_
from sqlalchemy.orm import Mapped, mapped_column

from app.kit.db import UTCDateTime


class Leased:
    """The lease columns (a mixin of the mapped class): when a run first started, when the
    current lease runs out (None: nobody holds it), the holder's token, and how many runs
    claimed the row."""

    if TYPE_CHECKING:
        # Each leased table has them, of its own types.
        id: Mapped[uuid.UUID]
        status: Mapped[StrEnum]
        enqueued_at: Mapped[datetime]
        finished_at: Mapped[datetime | None]
        error_detail: Mapped[str | None]

    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    run_token: Mapped[uuid.UUID | None] = mapped_column(Uuid, default=None)
    run_count: Mapped[int] = mapped_column(Integer, default=0)

    def end_lease(self) -> None:
        """The holder's final write (it holds the row locked, see `repository.lock_held`):
        the row is finished, nobody holds it any more."""
        self.lease_expires_at = None


class Metered:
    """A job's model spend so far (every run's, every role's; a mixin of the mapped class),
    added to atomically after each call: its cost budget is checked against it before each
    call (`app.kit.lease.budget`)."""

    if TYPE_CHECKING:
        id: Mapped[uuid.UUID]

    spent_usd: Mapped[float] = mapped_column(Float, default=0.0, server_default="0")


L = TypeVar("L", bound=Leased)


@dataclass(frozen=True)
class LeasedTable(Generic[L]):
    """How one table's rows are leased: the mapped class, the status of a row waiting for a
    worker, and the status of a row a worker holds. The two are the same when holding a row
    does not change its status (a defense stays pending during its self-test): then the
    lease alone tells a waiting row from a held one."""

    model: type[L]
    waiting: StrEnum
    running: StrEnum
    # Rows a worker may run at all (None: every row): a claim takes, and the sweep re-sends,
    # only these; the others wait (work of a deleted challenge, until it is restored).
    runnable: ColumnElement[bool] | None = field(default=None, compare=False)

    def expired(self, now: datetime | BindParameter[datetime]) -> ColumnElement[bool]:
        """Held by a worker whose lease ran out (it died, or stopped renewing)."""
        model = self.model
        return (model.status == self.running) & (model.lease_expires_at < now)

    def claimable(self, now: datetime | BindParameter[datetime]) -> ColumnElement[bool]:
        """Free for a worker to take: waiting and held by nobody, or its lease expired."""
        model = self.model
        if self.waiting == self.running:
            unheld = or_(model.lease_expires_at.is_(None), model.lease_expires_at < now)
            free: ColumnElement[bool] = (model.status == self.waiting) & unheld
        else:
            free = or_(model.status == self.waiting, self.expired(now))
        return free if self.runnable is None else free & self.runnable

    def queue_again(self, row: L, now: datetime) -> None:
        """An admin's re-run of a row that ended in error: waiting again, sent now, with no
        end and no holder, its runs counted from zero (against the limit of runs). What
        participants read of the error is in a column of each table's own name: the caller
        clears it."""
        row.status = self.waiting
        row.finished_at = None
        row.error_detail = None
        row.enqueued_at = now
        row.run_token = None
        row.lease_expires_at = None
        row.run_count = 0

    def held_by(self, token: uuid.UUID | BindParameter[uuid.UUID]) -> ColumnElement[bool]:
        """Held under this run token (whether or not its lease ran out: until another worker
        claims the row, a slow holder may still finish it)."""
        model = self.model
        return (model.run_token == token) & (model.status == self.running)
