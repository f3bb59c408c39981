"""The rows red_blue's queries answer with, and what a reader sees, as SQL."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, Table, case, false, or_, true
from sqlalchemy.orm import Session

from app.kinds.red_blue.models import Attack, Defense, Match, MatchStatus, Rating, Side
from app.kinds.red_blue.readers import Reader

T = TypeVar("T")
# A side's entry table.
EntryModel = TypeVar("EntryModel", Defense, Attack)

_MATCHES: Table = Match.__table__  # type: ignore[assignment]
_RATINGS: Table = Rating.__table__  # type: ignore[assignment]


# What a reader sees (app/kinds/red_blue/readers.py), as SQL for lists and counts: the same
# rule as `Reader.sees` and `Reader.settled` over a loaded row.


def shown_to(
    reader: Reader, model: type[Defense] | type[Attack] | type[Match]
) -> ColumnElement[bool]:
    """The rows of `model` that exist for the reader."""
    if reader.cutoff is None:
        return true()
    return or_(model.created_at < reader.cutoff, _owned_by(reader, model))


def match_status_for(reader: Reader) -> ColumnElement[Any]:
    """A match's status as the reader sees it: a match whose end came after the freeze (not
    their own) is still queued for them."""
    if reader.cutoff is None:
        return Match.status.expression
    ended_before = Match.finished_at.is_not(None) & (Match.finished_at < reader.cutoff)
    return case(
        (or_(_owned_by(reader, Match), ended_before), Match.status),
        else_=MatchStatus.QUEUED.value,
    )


def _owned_by(
    reader: Reader, model: type[Defense] | type[Attack] | type[Match]
) -> ColumnElement[bool]:
    owner = reader.participant_id
    if owner is None:
        return false()
    if model is Match:
        return or_(Match.red_participant_id == owner, Match.blue_participant_id == owner)
    entry: type[Defense] | type[Attack] = model  # type: ignore[assignment]
    return entry.participant_id == owner


@dataclass(frozen=True, slots=True)
class Entry:
    """An entry of one side, as pairing sees it."""

    id: uuid.UUID
    participant_id: uuid.UUID
    created_at: datetime


@dataclass(frozen=True, slots=True)
class RatingRow:
    participant_id: uuid.UUID
    side: Side
    position: int
    rank: int
    rating: float
    # None: the interval is open at that end (a participant who lost, or won, every match).
    rating_low: float | None
    rating_high: float | None
    points: int
    matches: int
    wins: int
    baseline: bool = False


@dataclass(frozen=True, slots=True)
class BoardLine:
    """A row of a leaderboard page."""

    handle: str
    rank: int
    rating: float
    # None: the interval is open at that end (a participant who lost, or won, every match).
    rating_low: float | None
    rating_high: float | None
    points: int
    matches: int
    wins: int
    baseline: bool = False
    participant_id: uuid.UUID | None = None


def _dialect(session: Session) -> str:
    return session.get_bind().dialect.name


@dataclass
class Activity:
    """A challenge's entries and matches, as its admins' dashboard counts them."""

    defenses: int = 0
    attacks: int = 0
    matches: dict[MatchStatus, int] = field(default_factory=dict)
    # Completed matches the ratings do not count yet (the next recompute will).
    unrated: int = 0


@dataclass
class Places:
    """Where a participant stands on a challenge: (side, rank, rating) per side they are
    rated on, best rank first, and the entries they submitted."""

    ratings: list[tuple[Side, int, float]] = field(default_factory=list)
    defenses: int = 0
    attacks: int = 0
