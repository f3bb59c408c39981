"""The rows red_blue's request-side queries answer with."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import TypeVar

from app.kinds.red_blue.models import Attack, Defense, MatchStatus, Side

T = TypeVar("T")
# A side's entry table.
EntryModel = TypeVar("EntryModel", Defense, Attack)


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
