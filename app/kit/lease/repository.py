"""Every statement on a lease, for any leased table (`LeasedTable`): claim, renew, write as
the holder, release, and the rows whose lease ran out; and a job's own spend (`Metered`).

Every state change after the claim is guarded by the run token, so a worker that lost its
lease changes nothing. The statements take many ids as readily as one: a chunk of matches
runs under one token.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any, cast

from sqlalchemy import (
    ColumnElement,
    Result,
    Table,
    Uuid,
    bindparam,
    func,
    inspect,
    or_,
    select,
    update,
)
from sqlalchemy.orm import InstrumentedAttribute, Session

from app.kit.db import UTCDateTime, lock_some_ids
from app.kit.lease.models import L, LeasedTable, Metered

# The session's objects are not updated in place by these statements: a caller that needs
# the new values reads them back (RETURNING) or loads the row again.
_UNSYNCHRONIZED = {"synchronize_session": False}


def claim(
    session: Session,
    table: LeasedTable[L],
    ids: Sequence[uuid.UUID],
    token: uuid.UUID,
    now: datetime,
    until: datetime,
    *,
    returning: Sequence[Any],
    **values: Any,
) -> Result[*tuple[Any, ...]]:
    """Takes those of the rows that are free (waiting, or held under an expired lease) under
    a new lease of this token, counts the run and sets `values` too, in one statement; reads
    back `returning` of each row taken. Rows finished or held by another worker are left
    alone; `started_at` keeps the first run's start."""
    statement = _claim(table, tuple(returning))
    if values:
        statement = statement.values(**values)
    parameters = {"ids": list(ids), "token": token, "now": now, "until": until}
    return session.execute(statement, parameters, execution_options=_UNSYNCHRONIZED)


@functools.cache
def _claim(table: LeasedTable[L], returning: tuple[Any, ...]) -> Any:
    """The claim, built once per table and what it returns (every attempt starts with it),
    with parameters for the ids, the token, the time and the lease's end."""
    model = table.model
    now = bindparam("now", type_=UTCDateTime())
    return (
        update(model)
        .where(model.id.in_(bindparam("ids", expanding=True)), table.claimable(now))
        .values(
            status=table.running,
            run_token=bindparam("token", type_=Uuid()),
            lease_expires_at=bindparam("until", type_=UTCDateTime()),
            started_at=func.coalesce(model.started_at, now),
            run_count=model.run_count + 1,
        )
        .returning(*returning)
    )


def write_held(
    session: Session,
    table: LeasedTable[L],
    ids: Sequence[uuid.UUID],
    token: uuid.UUID,
    *,
    returning: Sequence[InstrumentedAttribute[Any]] = (),
    **values: Any,
) -> Result[*tuple[Any, ...]]:
    """Sets `values` on those of the rows this token still holds; reads back `returning` of
    each (by default its id)."""
    names = tuple(column.key for column in returning) or ("id",)
    statement = _held_update(table, tuple(values), names)
    parameters = {f"new_{name}": value for name, value in values.items()}
    return session.execute(statement, {"ids": list(ids), "token": token, **parameters})


@functools.cache
def _held_update(table: LeasedTable[L], names: tuple[str, ...], returning: tuple[str, ...]) -> Any:
    """The UPDATE of held rows setting these columns, built once with a parameter for each
    (runs renew every lease and complete every row through it: building it anew each time
    cost more CPU than running it). On the table: a Core statement, no ORM bulk update."""
    leased = cast(Table, inspect(table.model).local_table)
    columns = leased.c
    return (
        update(leased)
        .where(
            columns.id.in_(bindparam("ids", expanding=True)),
            table.held_by(bindparam("token", type_=Uuid())),
        )
        .values({name: bindparam(f"new_{name}", type_=columns[name].type) for name in names})
        .returning(*(columns[name] for name in returning))
    )


def renew(
    session: Session,
    table: LeasedTable[L],
    ids: Sequence[uuid.UUID],
    token: uuid.UUID,
    until: datetime,
) -> int:
    """Extends the lease of those of the rows this token still holds; how many."""
    return len(write_held(session, table, ids, token, lease_expires_at=until).all())


def release(
    session: Session,
    table: LeasedTable[L],
    ids: Sequence[uuid.UUID],
    token: uuid.UUID,
    *,
    returning: Sequence[InstrumentedAttribute[Any]] = (),
    **values: Any,
) -> Result[*tuple[Any, ...]]:
    """Ends the lease of those of the rows this token still holds, setting `values` (the
    outcome: a finished status) in the same statement."""
    return write_held(
        session, table, ids, token, returning=returning, lease_expires_at=None, **values
    )


def give_back(
    session: Session,
    table: LeasedTable[L],
    ids: Sequence[uuid.UUID],
    token: uuid.UUID,
    now: datetime,
) -> int:
    """Ends the lease of those of the rows this token still holds, leaving them unfinished
    for the next claim (a retry of the run's task, sent `now`); how many. Their lease runs
    out now, so a claim takes them at once; the sweep counts them as sent now, so it sends
    them again only if that retry never comes."""
    return len(write_held(session, table, ids, token, lease_expires_at=now, enqueued_at=now).all())


def lock_held(
    session: Session, table: LeasedTable[L], row_id: uuid.UUID, token: uuid.UUID
) -> L | None:
    """The row, locked for this transaction, if this token still holds it: the holder's
    final write, made on the object (`Leased.end_lease`), cannot race a takeover."""
    model = table.model
    return session.scalar(
        select(model).where(model.id == row_id, table.held_by(token)).with_for_update()
    )


def lapsed(
    session: Session,
    table: LeasedTable[L],
    now: datetime,
    resent_before: datetime,
    *conditions: Any,
    limit: int,
    oldest_first: Any = None,
    waiting: bool = False,
    also: ColumnElement[bool] | None = None,
) -> list[uuid.UUID]:
    """For the sweep: ids of the rows to send again, among those matching `conditions`; up to
    `limit`, locked, skipping rows another sweep holds.

    - A row whose lease ran out after it was last sent: its worker died holding it (or
      stopped renewing); sent again at once, so a dead worker's work waits only for its
      lease. Sent, it counts as sent after its lease ended, so the next sweeps leave it to
      the message just sent.
    - A row whose lease ran out, last sent before `resent_before`: that message was lost too.
    - With `waiting`, a row no worker holds, last sent before `resent_before` (its message
      was lost, or never left the process that stored the row); with `also`, the caller's
      others, last sent before `resent_before` too.
    """
    model = table.model
    sent_long_ago = model.enqueued_at < resent_before
    died_holding = table.expired(now) & (model.enqueued_at < model.lease_expires_at)
    free = table.claimable(now) if waiting else table.expired(now)
    found = or_(died_holding, free & sent_long_ago)
    if also is not None:
        found = or_(found, also & sent_long_ago)
    if table.runnable is not None:
        found = found & table.runnable
    return lock_some_ids(
        session, model.id, *conditions, found, oldest_first=oldest_first, limit=limit
    )


def spent(session: Session, model: type[Metered], row_id: uuid.UUID) -> float:
    """What the job's calls have spent so far."""
    return float(session.scalar(select(model.spent_usd).where(model.id == row_id)) or 0.0)


def add_spend(session: Session, model: type[Metered], row_id: uuid.UUID, amount_usd: float) -> None:
    """Adds one call's charge to the job's total (atomic: one UPDATE)."""
    session.execute(
        update(model).where(model.id == row_id).values(spent_usd=model.spent_usd + amount_usd),
        execution_options=_UNSYNCHRONIZED,
    )
