"""The board on the worker side, whatever its tenant: matches landing, the recompute's claim
and write, its pace, and the standings."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Table, delete, select, update
from sqlalchemy.orm import Session

from app.kinds.api.services import before_board_write
from app.kinds.api.storage import challenge_not_deleted, insert_for, take_write_lock
from app.kinds.red_blue.cross_tenant.ratings import (
    _RATING_COLUMNS,
    _delete_ratings,
    _insert_ratings,
    stored_ratings,
)
from app.kinds.red_blue.cross_tenant.rows import _MATCHES, _RATINGS, RatingRow, _dialect
from app.kinds.red_blue.models import Board, FrozenRating, Side
from app.kinds.red_blue.repository.final_round import FinalRoundRepository


@dataclass(frozen=True, slots=True)
class Landing:
    """What a transaction that completed matches learnt of their board."""

    seq: int
    turned_dirty: bool
    recompute_due_at: datetime | None


def land_matches(
    session: Session,
    tenant_id: uuid.UUID,
    challenge_id: uuid.UUID,
    match_ids: Sequence[uuid.UUID],
    now: datetime,
) -> Landing:
    """Numbers the matches this transaction completed with their board's next landing number
    and marks the board dirty. The board's row stays locked until the transaction ends, so
    landing numbers are committed in order. `turned_dirty`: the board was clean (the caller
    then sends one recompute, not before `recompute_due_at`)."""
    build = insert_for(session)
    upsert = (
        build(Board)
        .values(
            challenge_id=challenge_id,
            tenant_id=tenant_id,
            dirty=False,
            generation=0,
            written_generation=0,
            red_points=0,
            blue_points=0,
            matches=0,
            landed_seq=1,
            rated_seq=0,
            intervals_seq=0,
        )
        .on_conflict_do_update(
            index_elements=["challenge_id"], set_={"landed_seq": Board.landed_seq + 1}
        )
        .returning(Board.landed_seq, Board.dirty, Board.recompute_due_at)
    )
    seq, dirty, due = session.execute(upsert).one()
    session.execute(update(_MATCHES).where(_MATCHES.c.id.in_(match_ids)).values(board_seq=seq))
    if not dirty:
        session.execute(
            update(Board)
            .where(Board.challenge_id == challenge_id)
            .values(dirty=True, dirty_since=now)
        )
    return Landing(seq, not dirty, due)


@dataclass(frozen=True, slots=True)
class BoardClaim:
    """A recompute's claim: its generation, the landing number it rates up to, whether it
    also bootstraps the intervals, and the landing the board's intervals were from then."""

    generation: int
    landed_seq: int
    refresh_intervals: bool
    intervals_seq: int
    claimed_at: datetime
    # Whether it took the dirty flag (a recompute of the landings, paced), or only the
    # interval refresh (leaving the flag to the recompute the landings sent).
    took_landings: bool


@dataclass(frozen=True, slots=True)
class Pacing:
    """How claims space a board's recomputes: from the seconds the last one took, how long
    after this claim the next may start (landings meanwhile send theirs for then), and how
    long a claimed interval refresh keeps other recomputes from starting one."""

    next_recompute: Callable[[float | None], timedelta]
    refresh_hold: Callable[[float | None], timedelta]


def claim_board(
    session: Session,
    challenge_id: uuid.UUID,
    now: datetime,
    pacing: Pacing,
    *,
    intervals_only: bool = False,
) -> BoardClaim | None:
    """Takes the board's recompute when it is dirty, or when its intervals are older than its
    matches and due: clears the flag, returns the claim (None: nothing to do). The claim sets
    when the next recompute may start, from the last one's cost (the write corrects it with
    this one's), and a claim that takes the interval refresh holds it, so a second recompute
    meanwhile does not bootstrap too.

    `intervals_only` (a follow-up sent for the refresh): only a due refresh is taken, and the
    dirty flag and the pacing are left as they are, so the recompute that the landings sent
    still comes, when it was due."""
    if _dialect(session) == "sqlite":
        take_write_lock(session)
    board = session.execute(
        select(
            Board.dirty,
            Board.generation,
            Board.landed_seq,
            Board.rated_seq,
            Board.intervals_seq,
            Board.intervals_due_at,
            Board.intervals_seconds,
            Board.recompute_seconds,
        )
        .where(Board.challenge_id == challenge_id, challenge_not_deleted(Board.challenge_id))
        .with_for_update()
    ).first()
    if board is None:
        # No board, or its challenge is deleted: its flags stay for after a restore.
        return None
    dirty, generation, landed, rated, intervals, due, refresh_seconds, recompute_seconds = board
    refresh = intervals < landed and (due is None or due <= now)
    if not refresh and (intervals_only or not dirty):
        return None
    if not refresh and rated == landed:
        # Dirty, but an interval refresh has rated every landing since: nothing to do.
        session.execute(
            update(Board)
            .where(Board.challenge_id == challenge_id)
            .values(dirty=False, dirty_since=None)
        )
        return None
    values: dict[str, Any] = {"generation": generation + 1}
    if not intervals_only:
        values["dirty"] = False
        values["dirty_since"] = None
        values["recompute_due_at"] = now + pacing.next_recompute(recompute_seconds)
    if refresh:
        values["intervals_due_at"] = now + pacing.refresh_hold(refresh_seconds)
    session.execute(update(Board).where(Board.challenge_id == challenge_id).values(values))
    return BoardClaim(generation + 1, landed, refresh, intervals, now, not intervals_only)


@dataclass(frozen=True, slots=True)
class BoardWrite:
    """What one recompute writes: both sides' rows and the standings, the landing numbers they
    come from, and when the intervals were computed (a refresh) or None (kept from before)."""

    rows: Sequence[RatingRow]
    red_points: int
    blue_points: int
    matches: int
    rated_seq: int
    intervals_seq: int
    intervals_computed_at: datetime | None


@dataclass(frozen=True, slots=True)
class Written:
    """A write that took: how many rows it changed, and the board's marker of what it wrote."""

    changed: int
    marker: tuple[int, int]


def write_board(
    session: Session,
    tenant_id: uuid.UUID,
    challenge_id: uuid.UUID,
    generation: int,
    board: BoardWrite,
    now: datetime,
    known: tuple[tuple[int, int], Sequence[RatingRow]] | None = None,
) -> Written | None:
    """Writes the challenge's ratings and standings if they are newer than the board's: rated
    from later landings, or from the same ones with intervals from later ones (None
    otherwise: a board never goes back, whatever order recomputes finish in). The board's row
    is locked first, so two recomputes write one after the other. Only the rows that differ
    from those stored are rewritten; `known` is what the caller knows to be stored under a
    board marker ((rated_seq, intervals_seq)), which saves reading them when it is still so.
    Each side's rows come with positions 1..n, no gap, as the leaderboard page reads them
    (`RedBlueRepository.ratings_page`)."""
    rows = board.rows
    for side in Side:
        positions = sorted(row.position for row in rows if row.side is side)
        if positions != list(range(1, len(positions) + 1)):
            raise ValueError(f"the {side.value} board's positions are not 1..{len(positions)}")
    if _dialect(session) == "sqlite":
        take_write_lock(session)
    current = session.execute(
        select(Board.rated_seq, Board.intervals_seq)
        .where(Board.challenge_id == challenge_id)
        .with_for_update()
    ).first()
    marker = (board.rated_seq, board.intervals_seq)
    if current is None or tuple(current) >= marker:
        return None
    held = FinalRoundRepository(session, tenant_id).holds_freeze(challenge_id, now)
    before_board_write(session, tenant_id, challenge_id, copy_to_frozen, held=held)
    stored = known[1] if known is not None and known[0] == tuple(current) else None
    if stored is None:
        stored = stored_ratings(session, challenge_id)
    before = {(row.side, row.participant_id): row for row in stored}
    after = {(row.side, row.participant_id): row for row in rows}
    gone = [key for key in before if key not in after]
    changed = [row for key, row in after.items() if before.get(key) != row]
    replaced = gone + [
        key for key in ((row.side, row.participant_id) for row in changed) if key in before
    ]
    for side in Side:
        ids = [participant for row_side, participant in replaced if row_side is side]
        if ids:
            _delete_ratings(session, challenge_id, side, ids)
    if changed:
        _insert_ratings(session, tenant_id, challenge_id, changed)
    values: dict[str, Any] = {
        "written_generation": generation,
        "rated_seq": board.rated_seq,
        "intervals_seq": board.intervals_seq,
        "red_points": board.red_points,
        "blue_points": board.blue_points,
        "matches": board.matches,
        "computed_at": now,
    }
    if board.intervals_computed_at is not None:
        values["intervals_computed_at"] = board.intervals_computed_at
    session.execute(update(Board).where(Board.challenge_id == challenge_id).values(values))
    return Written(len(changed) + len(gone), marker)


def copy_to_frozen(session: Session, challenge_id: uuid.UUID) -> dict[str, Any]:
    """Both sides' rows as they stand, into the board's frozen copy (replacing any), and the
    standings of now (the snapshot keeps them)."""
    frozen: Table = FrozenRating.__table__  # type: ignore[assignment]
    session.execute(delete(frozen).where(frozen.c.challenge_id == challenge_id))
    session.execute(
        frozen.insert().from_select(
            _RATING_COLUMNS,
            select(*(_RATINGS.c[name] for name in _RATING_COLUMNS)).where(
                _RATINGS.c.challenge_id == challenge_id
            ),
        )
    )
    standings = session.execute(
        select(
            Board.red_points,
            Board.blue_points,
            Board.matches,
            Board.computed_at,
            Board.intervals_computed_at,
        ).where(Board.challenge_id == challenge_id)
    ).first()
    if standings is None:
        return {"red_points": 0, "blue_points": 0, "matches": 0}
    red_points, blue_points, matches, computed_at, intervals_computed_at = standings
    return {
        "red_points": red_points,
        "blue_points": blue_points,
        "matches": matches,
        "computed_at": None if computed_at is None else computed_at.isoformat(),
        "intervals_computed_at": (
            None if intervals_computed_at is None else intervals_computed_at.isoformat()
        ),
    }


@dataclass(frozen=True, slots=True)
class Pace:
    """What a recompute (or its interval refresh) took, and when the next may start."""

    seconds: float
    next_at: datetime


def pace_board(
    session: Session,
    challenge_id: uuid.UUID,
    generation: int,
    *,
    ratings: Pace | None,
    intervals: Pace | None,
) -> None:
    """Records what the recompute that wrote generation `generation` took, its write
    included, and when the next recompute and interval refresh may start (unless a later
    recompute wrote since)."""
    values: dict[str, Any] = {}
    if ratings is not None:
        values["recompute_seconds"] = ratings.seconds
        values["recompute_due_at"] = ratings.next_at
    if intervals is not None:
        values["intervals_seconds"] = intervals.seconds
        values["intervals_due_at"] = intervals.next_at
    if values:
        session.execute(
            update(Board)
            .where(Board.challenge_id == challenge_id, Board.written_generation == generation)
            .values(values)
        )


def board_after_write(
    session: Session, challenge_id: uuid.UUID
) -> tuple[bool, bool, datetime | None]:
    """(dirty, intervals older than the ratings, when they are due) of the board now."""
    row = session.execute(
        select(Board.dirty, Board.intervals_seq < Board.rated_seq, Board.intervals_due_at).where(
            Board.challenge_id == challenge_id
        )
    ).first()
    if row is None:
        return False, False, None
    return bool(row[0]), bool(row[1]), row[2]


def release_interval_refresh(
    session: Session, challenge_id: uuid.UUID, intervals_seq: int, now: datetime
) -> None:
    """An interval refresh that was not written (a later recompute wrote first) lets the next
    recompute bootstrap at once, if the board's intervals are older than the refresh's."""
    session.execute(
        update(Board)
        .where(Board.challenge_id == challenge_id, Board.intervals_seq < intervals_seq)
        .values(intervals_due_at=now)
    )


def mark_board_dirty_again(session: Session, challenge_id: uuid.UUID, now: datetime) -> None:
    """A recompute that failed leaves the board dirty (and its interval refresh due), for the
    sweep to try again."""
    session.execute(
        update(Board)
        .where(Board.challenge_id == challenge_id)
        .values(dirty=True, dirty_since=now, intervals_due_at=now)
    )
