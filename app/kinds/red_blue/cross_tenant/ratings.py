"""The ratings of a board's rows on the worker side, whatever its tenant: read by pairing and
the recompute, and replaced when a recompute writes them."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy import Uuid, any_, bindparam, delete, insert, select
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import Session

from app.kinds.red_blue.cross_tenant.rows import _RATINGS, RatingRow, _dialect
from app.kinds.red_blue.models import Rating, Side


def ratings_of(session: Session, challenge_id: uuid.UUID, side: Side) -> dict[uuid.UUID, float]:
    """The side's current ratings by participant (latest_best pairs by them)."""
    rows = session.execute(
        select(Rating.participant_id, Rating.rating).where(
            Rating.challenge_id == challenge_id, Rating.side == side
        )
    ).tuples()
    return {key: value for key, value in rows}


def stored_ratings(session: Session, challenge_id: uuid.UUID) -> list[RatingRow]:
    """The board's rows as written (a recompute's start, and what a write compares with)."""
    r = _RATINGS.c
    rows = session.execute(
        select(
            r.participant_id,
            r.side,
            r.position,
            r.rank,
            r.rating,
            r.rating_low,
            r.rating_high,
            r.points,
            r.matches,
            r.wins,
            r.baseline,
        ).where(r.challenge_id == challenge_id)
    ).tuples()
    return [RatingRow(pid, Side(side), *rest) for pid, side, *rest in rows]


_RATING_COLUMNS = (
    "challenge_id",
    "tenant_id",
    "participant_id",
    "side",
    "position",
    "rank",
    "rating",
    "rating_low",
    "rating_high",
    "points",
    "matches",
    "wins",
    "baseline",
)


def _delete_ratings(
    session: Session, challenge_id: uuid.UUID, side: Side, participant_ids: list[uuid.UUID]
) -> None:
    """Deletes these participants' rows of one side of the board; on PostgreSQL in one
    statement with the ids as one array parameter (thousands at a time)."""
    if _dialect(session) == "postgresql":
        session.execute(
            delete(Rating).where(
                Rating.challenge_id == challenge_id,
                Rating.side == side,
                Rating.participant_id == any_(bindparam("ids", participant_ids, ARRAY(Uuid))),
            )
        )
        return
    for start in range(0, len(participant_ids), 500):
        session.execute(
            delete(Rating).where(
                Rating.challenge_id == challenge_id,
                Rating.side == side,
                Rating.participant_id.in_(participant_ids[start : start + 500]),
            )
        )


def _insert_ratings(
    session: Session, tenant_id: uuid.UUID, challenge_id: uuid.UUID, rows: Sequence[RatingRow]
) -> None:
    """Inserts board rows; on PostgreSQL by COPY, in this transaction (a recompute may write
    thousands: COPY took 30-40 % less time than a multi-row INSERT, bench/README.md)."""
    values = [
        (
            challenge_id,
            tenant_id,
            row.participant_id,
            row.side.value,
            row.position,
            row.rank,
            row.rating,
            row.rating_low,
            row.rating_high,
            row.points,
            row.matches,
            row.wins,
            row.baseline,
        )
        for row in rows
    ]
    if _dialect(session) != "postgresql":
        session.execute(
            insert(_RATINGS), [dict(zip(_RATING_COLUMNS, v, strict=True)) for v in values]
        )
        return
    driver = session.connection().connection.driver_connection
    assert driver is not None
    with driver.cursor() as cursor:
        statement = f"COPY {_RATINGS.name} ({', '.join(_RATING_COLUMNS)}) FROM STDIN"
        with cursor.copy(statement) as copy:
            for value in values:
                copy.write_row(value)
