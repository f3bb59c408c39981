"""What a recompute reads of a board, whatever its tenant: the matches landed on it, as
columns, its baseline players and their handles."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import Integer, case, cast, func, select
from sqlalchemy.orm import Session

from app.kinds.api.storage import Participant
from app.kinds.red_blue.cross_tenant.rows import _MATCHES, _dialect
from app.kinds.red_blue.models import Attack, Defense, MatchStatus, Side

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Landed:
    """Completed matches of some landings, as columns: the red and the blue participants they
    name (each once), and per row (one match, or the matches of one pair summed) the index of
    its red and its blue participant in those lists, how many matches, how many red won, and
    both sides' points."""

    reds: list[uuid.UUID]
    blues: list[uuid.UUID]
    red: IntArray
    blue: IntArray
    matches: IntArray
    red_wins: IntArray
    red_points: IntArray
    blue_points: IntArray


def landed_matches(
    session: Session, challenge_id: uuid.UUID, after_seq: int | None, up_to_seq: int
) -> Landed:
    """The completed matches that landed after `after_seq` (None: from the first) up to
    `up_to_seq` (ix_redblue_matches_challenge_board_seq), into arrays, never one ORM object
    per match. On PostgreSQL from the driver's cursor, participant ids kept as bytes (a
    million matches in 1.5 s where rows with a UUID object per id took 7 s, and summing per
    pair in the database first took longer, bench/README.md); elsewhere (the embedded mode's
    SQLite), summed per pair by the database."""
    m = _MATCHES.c
    conditions = [
        m.challenge_id == challenge_id,
        m.status == MatchStatus.COMPLETED,
        m.board_seq <= up_to_seq,
    ]
    if after_seq is not None:
        conditions.append(m.board_seq > after_seq)
    if _dialect(session) == "postgresql":
        return _fetched_matches(session, conditions)
    rows = session.execute(
        select(
            m.red_participant_id,
            m.blue_participant_id,
            func.count(),
            func.sum(case((m.attack_won.is_(True), 1), else_=0)),
            func.sum(func.coalesce(m.red_points, 0)),
            func.sum(func.coalesce(m.blue_points, 0)),
        )
        .where(*conditions)
        .group_by(m.red_participant_id, m.blue_participant_id)
    ).all()
    return _landed_of_rows(rows)


def _landed_of_rows(rows: Sequence[Any]) -> Landed:
    # numpy (~0.15 s) loads with the first ratings read, not with the API.
    import numpy as np

    reds: dict[uuid.UUID, int] = {}
    blues: dict[uuid.UUID, int] = {}
    red = [reds.setdefault(row[0], len(reds)) for row in rows]
    blue = [blues.setdefault(row[1], len(blues)) for row in rows]

    def column(index: int) -> IntArray:
        return np.fromiter((int(row[index] or 0) for row in rows), np.int64, len(rows))

    return Landed(
        list(reds),
        list(blues),
        np.asarray(red, np.int64),
        np.asarray(blue, np.int64),
        column(2),
        column(3),
        column(4),
        column(5),
    )


def _fetched_matches(session: Session, conditions: list[Any]) -> Landed:
    """The matches one row each, from the driver's cursor in binary with participant ids left
    as their 16 bytes: no Python object per match beyond the driver's row tuple."""
    # numpy (~0.15 s) loads with the first ratings read, not with the API.
    import numpy as np
    from psycopg.types.string import ByteaBinaryLoader

    m = _MATCHES.c
    query = select(
        m.red_participant_id,
        m.blue_participant_id,
        cast(m.attack_won, Integer),
        func.coalesce(m.red_points, 0),
        func.coalesce(m.blue_points, 0),
    ).where(*conditions)
    # The values (a UUID, integers, a status) rendered by their column types: the statement
    # goes to the driver as it is.
    statement = str(
        query.compile(dialect=session.get_bind().dialect, compile_kwargs={"literal_binds": True})
    )
    driver = session.connection().connection.driver_connection
    assert driver is not None
    with driver.cursor(binary=True) as cursor:
        cursor.adapters.register_loader("uuid", ByteaBinaryLoader)
        rows = cursor.execute(statement).fetchall()
    count = len(rows)

    def column(index: int) -> IntArray:
        return np.fromiter((row[index] for row in rows), np.int64, count)

    def numbered(index: int) -> tuple[list[uuid.UUID], IntArray]:
        numbers: dict[bytes, int] = {}
        column = np.fromiter(
            (numbers.setdefault(row[index], len(numbers)) for row in rows), np.int64, count
        )
        return [uuid.UUID(bytes=key) for key in numbers], column

    reds, red = numbered(0)
    blues, blue = numbered(1)
    return Landed(reds, blues, red, blue, np.ones(count, np.int64), column(2), column(3), column(4))


def handles_of(session: Session, participant_ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, str]:
    if not participant_ids:
        return {}
    rows = session.execute(
        select(Participant.id, Participant.handle).where(Participant.id.in_(participant_ids))
    ).tuples()
    return {key: value for key, value in rows}


def baseline_players(session: Session, challenge_id: uuid.UUID) -> dict[Side, set[uuid.UUID]]:
    """The participants whose entries of each side are baselines (an admin's reference
    entries): red by their attacks, blue by their defenses."""
    found: dict[Side, set[uuid.UUID]] = {Side.RED: set(), Side.BLUE: set()}
    for side, model in ((Side.RED, Attack), (Side.BLUE, Defense)):
        rows = session.scalars(
            select(model.participant_id)
            .where(model.challenge_id == challenge_id, model.baseline)
            .distinct()
        )
        found[side].update(rows)
    return found
