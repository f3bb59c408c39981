"""The rows the worker side's statements answer with, and the tables they write in bulk."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Table
from sqlalchemy.orm import Session

from app.kinds.red_blue.models import Match, Rating, Side

_MATCHES: Table = Match.__table__  # type: ignore[assignment]
_RATINGS: Table = Rating.__table__  # type: ignore[assignment]


def _dialect(session: Session) -> str:
    return session.get_bind().dialect.name


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
