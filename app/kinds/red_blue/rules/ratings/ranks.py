"""Each side's rows, ranked by their intervals, and the whole way from judged matches to
them (`compute_ratings`).

Ranks, per side: 1 + the number of participants of that side whose interval lies entirely
above this participant's (their low end above its high end), so participants that cannot be
told apart share a rank.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Generic

import numpy as np
import numpy.typing as npt

from app.kinds.red_blue.rules.ratings.fit import fit_strengths
from app.kinds.red_blue.rules.ratings.intervals import DEFAULT_RESAMPLES, bootstrap_bounds
from app.kinds.red_blue.rules.ratings.scale import (
    FloatArray,
    IntArray,
    Participant,
    Side,
    to_rating,
)
from app.kinds.red_blue.rules.ratings.tally import MatchOutcome, Tally


@dataclass(frozen=True)
class ParticipantRating(Generic[Participant]):
    """A participant's rating on one side, with its interval's ends: `rating_high` is +inf
    where the interval is open above (the participant won every match), `rating_low` -inf
    where it is open below (it lost every one)."""

    participant: Participant
    side: Side
    rating: float
    rating_low: float
    rating_high: float
    rank: int
    matches: int
    wins: int


@dataclass(frozen=True)
class Ratings:
    """Both sides' ratings, each in rank order (then by rating, then by name)."""

    red: tuple[ParticipantRating, ...]
    blue: tuple[ParticipantRating, ...]
    matches: int
    resamples: int
    seed: int

    def side(self, side: Side) -> tuple[ParticipantRating, ...]:
        return self.red if side == "red" else self.blue


def interval_ranks(
    low: FloatArray, high: FloatArray, counted: npt.NDArray[np.bool_] | None = None
) -> IntArray:
    """Each one's rank among these intervals: 1 + how many of the counted ones (all, unless
    given) lie entirely above it. One not counted (a baseline) is ranked where it would place
    and takes no one's rank."""
    lows = np.sort(low if counted is None else low[counted])
    above = len(lows) - np.searchsorted(lows, high, side="right")
    ranks: IntArray = 1 + above
    return ranks


def ratings_of(
    tally: Tally,
    strength: FloatArray,
    low: FloatArray,
    high: FloatArray,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> Ratings:
    """Both sides' rows, ranked, from per-player strengths and interval ends (logits)."""
    rating, rating_low, rating_high = to_rating(strength), to_rating(low), to_rating(high)
    played, wins = tally.played(), tally.wins()

    def side(names: list[str], offset: int, label: Side) -> tuple[ParticipantRating, ...]:
        members = slice(offset, offset + len(names))
        ranks = interval_ranks(rating_low[members], rating_high[members])
        rows = [
            ParticipantRating(
                participant=name,
                side=label,
                rating=float(rating[offset + index]),
                rating_low=float(rating_low[offset + index]),
                rating_high=float(rating_high[offset + index]),
                rank=int(ranks[index]),
                matches=round(float(played[offset + index])),
                wins=round(float(wins[offset + index])),
            )
            for index, name in enumerate(names)
        ]
        rows.sort(key=lambda row: (row.rank, -row.rating, row.participant))
        return tuple(rows)

    return Ratings(
        red=side(tally.red_names, 0, "red"),
        blue=side(tally.blue_names, tally.reds, "blue"),
        matches=tally.matches,
        resamples=resamples,
        seed=seed,
    )


def compute_ratings(
    matches: Iterable[MatchOutcome], *, seed: int = 0, resamples: int = DEFAULT_RESAMPLES
) -> Ratings:
    """Both sides' ratings from every judged match (matches that ended in error excluded)."""
    if resamples < 2:
        raise ValueError("resamples must be at least 2")
    tally = Tally.of(matches)
    if tally.matches == 0:
        return Ratings(red=(), blue=(), matches=0, resamples=resamples, seed=seed)
    fit = fit_strengths(tally)
    low, high = bootstrap_bounds(
        tally, fit.strength, prior_precision=fit.prior_precision, resamples=resamples, seed=seed
    )
    return ratings_of(tally, fit.strength, low, high, resamples=resamples, seed=seed)
