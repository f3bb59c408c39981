"""The rating scale (Elo's: 400 points a factor of 10 in the odds, centred on 1000), and what
every module of the ratings shares: the participants' and the arrays' types, the fit's error
and a sum per player."""

from __future__ import annotations

import math
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

Side = Literal["red", "blue"]


class _SortableId(Hashable, Protocol):
    def __lt__(self, other: Any, /) -> bool: ...


# A participant as the caller names it (the service's UUIDs, names in tests and benchmarks):
# hashed, and sorted for the canonical order, never converted. For the type checker, a bare
# `Tally` is a tally of any participants (a default Python 3.11's TypeVar does not take).
if TYPE_CHECKING:
    from typing_extensions import TypeVar as DefaultedTypeVar

    Participant = DefaultedTypeVar("Participant", bound=_SortableId, default=Any)
else:
    Participant = TypeVar("Participant", bound=_SortableId)
FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

RATING_CENTRE: Final = 1000.0
# Rating points per logit: 400 points are a factor of 10 in the odds.
POINTS_PER_LOGIT: Final = 400.0 / math.log(10.0)


class RatingFitError(RuntimeError):
    """The optimiser or the linear solver did not converge (a defect, never bad input)."""


def to_rating(strength: FloatArray) -> FloatArray:
    """Logit strengths on the rating scale."""
    return RATING_CENTRE + POINTS_PER_LOGIT * strength


def to_strength(rating: FloatArray) -> FloatArray:
    """Ratings back to logit strengths (a fit's start from stored ratings)."""
    return (rating - RATING_CENTRE) / POINTS_PER_LOGIT


def win_probability(red_rating: float, blue_rating: float) -> float:
    """The chance that red's attack beats blue's defense, by their ratings."""
    return float(1.0 / (1.0 + 10.0 ** ((blue_rating - red_rating) / 400.0)))


def _sum_by(index: IntArray, weights: FloatArray, size: int) -> FloatArray:
    """weights summed per index value, 0..size-1."""
    return np.bincount(index, weights, size).astype(np.float64, copy=False)
