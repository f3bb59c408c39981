"""Bradley-Terry ratings of red and blue participants, with bootstrap 95 % intervals and ranks.

Every judged match is one comparison: the attack's participant (red) against the defense's
participant (blue); red wins when the attack breached at least one category. Red and blue are
rated on one scale, so a red participant's rating against a blue one's gives the chance that
their attack gets through:

    P(red beats blue) = 1 / (1 + 10 ** ((blue_rating - red_rating) / 400))

that is, rating = 1000 + 400 · log10(e) · θ with θ the Bradley-Terry strength in logits
(Elo's scale: 400 points apart, 10 to 1 odds). A participant who plays both sides has a red
rating and a blue rating, fitted as two players.

The fit. The strengths maximise the Bradley-Terry log-likelihood minus a ridge penalty
PRIOR_PRECISION / 2 · Σ θ² (a Gaussian prior, standard deviation 1/√PRIOR_PRECISION ≈ 1.41
logits ≈ 246 points, around the average participant): without it a participant who always
wins, or always loses, would have an infinite rating, and participants never compared with
each other would have no common scale. With it every rating is finite, a participant with
one match is rated close to 1000, and the ratings of every connected group of participants
(connected through matches) average 1000; ratings of participants in two groups that never
met are compared only through that prior. The optimiser is scipy's Newton-CG on the exact
objective, gradient and Hessian products, vectorised over the distinct (red, blue) pairs.

The intervals. Matches are resampled with replacement (`resamples` times, from a seeded
generator); each resample's ratings are the full fit moved by one Newton step on the
resample's objective, using the full fit's Hessian (the one-step bootstrap of Moulton and
Zeger, 1991): the step's linear systems, all resamples at once, are solved by scipy's
conjugate gradient. Refitting every resample exactly costs a full optimisation each, 20 to
40 times as long at 100,000 matches; the one-step interval ends differ from the exact ones'
by 4 rating points on average at 200 matches per participant, by 22 points (intervals about
10 % narrower) at 20 (bench/README.md). The interval is the 2.5th to 97.5th percentile of a
participant's resampled ratings, widened if need be to hold the rating itself. Matches are
put in a canonical order first, so the same matches and seed give the same figures in
whatever order they come. A bootstrap sees no uncertainty that no resample shows: a
participant with very few matches gets an interval narrower than its real uncertainty (with
one match in the whole competition, none at all).

Ranks, per side: 1 + the number of participants of that side whose interval lies entirely
above this participant's (their low end above its high end), so participants that cannot be
told apart share a rank.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, Literal, NamedTuple

import numpy as np
import numpy.typing as npt
from scipy import sparse
from scipy.optimize import minimize
from scipy.sparse.linalg import LinearOperator, cg
from scipy.special import expit

Side = Literal["red", "blue"]
FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

RATING_CENTRE: Final = 1000.0
# Rating points per logit: 400 points are a factor of 10 in the odds.
POINTS_PER_LOGIT: Final = 400.0 / math.log(10.0)
PRIOR_PRECISION: Final = 0.5
DEFAULT_RESAMPLES: Final = 100
INTERVAL_PERCENTILES: Final = (2.5, 97.5)
# Convergence: every participant's strength within about this many logits (0.002 rating
# points) of the optimum, judged by its gradient over its curvature.
_STRENGTH_TOLERANCE: Final = 1e-5
_CG_RELATIVE_TOLERANCE: Final = 1e-8


class MatchOutcome(NamedTuple):
    """One judged match: who attacked, who defended, and whether the attack won."""

    red: str
    blue: str
    red_won: bool


@dataclass(frozen=True)
class ParticipantRating:
    participant: str
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


class RatingFitError(RuntimeError):
    """The optimiser or the linear solver did not converge (a defect, never bad input)."""


def to_rating(strength: FloatArray) -> FloatArray:
    """Logit strengths on the rating scale."""
    return RATING_CENTRE + POINTS_PER_LOGIT * strength


def win_probability(red_rating: float, blue_rating: float) -> float:
    """The chance that red's attack beats blue's defense, by their ratings."""
    return float(1.0 / (1.0 + 10.0 ** ((blue_rating - red_rating) / 400.0)))


@dataclass(frozen=True)
class _Comparisons:
    """The matches as arrays: red players are 0..n_red-1, blue ones n_red..n_red+n_blue-1."""

    red_names: list[str]
    blue_names: list[str]
    red: IntArray  # per match, in canonical order
    blue: IntArray
    won: FloatArray
    pair_red: IntArray  # per distinct (red, blue) pair
    pair_blue: IntArray
    pair_matches: FloatArray
    pair_wins: FloatArray

    @property
    def players(self) -> int:
        return len(self.red_names) + len(self.blue_names)


def _comparisons(matches: Iterable[MatchOutcome]) -> _Comparisons:
    red_names_seen: dict[str, None] = {}
    blue_names_seen: dict[str, None] = {}
    reds: list[str] = []
    blues: list[str] = []
    wins: list[bool] = []
    for red_name, blue_name, red_won in matches:
        red_names_seen.setdefault(red_name, None)
        blue_names_seen.setdefault(blue_name, None)
        reds.append(red_name)
        blues.append(blue_name)
        wins.append(bool(red_won))
    red_names = sorted(red_names_seen)
    blue_names = sorted(blue_names_seen)
    red_index = {name: index for index, name in enumerate(red_names)}
    blue_index = {name: len(red_names) + index for index, name in enumerate(blue_names)}
    red = np.fromiter((red_index[name] for name in reds), dtype=np.int64, count=len(reds))
    blue = np.fromiter((blue_index[name] for name in blues), dtype=np.int64, count=len(blues))
    won = np.asarray(wins, dtype=np.float64)
    # A canonical order (matches that compare equal are interchangeable), so resampling gives
    # the same draws whatever order the matches were read in.
    order = np.lexsort((won, blue, red))
    red, blue, won = red[order], blue[order], won[order]
    pair_key = red * (len(red_names) + len(blue_names)) + blue
    pairs, pair_of_match = np.unique(pair_key, return_inverse=True)
    players = len(red_names) + len(blue_names)
    return _Comparisons(
        red_names=red_names,
        blue_names=blue_names,
        red=red,
        blue=blue,
        won=won,
        pair_red=pairs // players,
        pair_blue=pairs % players,
        pair_matches=np.bincount(pair_of_match, minlength=len(pairs)).astype(np.float64),
        pair_wins=np.bincount(pair_of_match, weights=won, minlength=len(pairs)).astype(np.float64),
    )


def _softplus(values: FloatArray) -> FloatArray:
    """log(1 + e^x), without overflow."""
    result: FloatArray = np.maximum(values, 0.0) + np.log1p(np.exp(-np.abs(values)))
    return result


def _fit(data: _Comparisons) -> FloatArray:
    """The penalised maximum-likelihood strengths, in logits."""
    players = data.players
    red, blue = data.pair_red, data.pair_blue
    matches, wins = data.pair_matches, data.pair_wins
    played = np.bincount(red, matches, players) + np.bincount(blue, matches, players)
    # Optimise over strengths divided by a guess of their standard error, so that a
    # participant with 5,000 matches and one with 1 are equally easy for the optimiser.
    scale = 1.0 / np.sqrt(0.25 * played + PRIOR_PRECISION)

    def objective(scaled: FloatArray) -> tuple[float, FloatArray]:
        strength = scaled * scale
        difference = strength[red] - strength[blue]
        value = float(
            matches @ _softplus(difference)
            - wins @ difference
            + 0.5 * PRIOR_PRECISION * (strength @ strength)
        )
        residual = matches * expit(difference) - wins
        gradient = (
            np.bincount(red, residual, players)
            - np.bincount(blue, residual, players)
            + PRIOR_PRECISION * strength
        )
        return value, gradient * scale

    def hessian_times(scaled: FloatArray, direction: FloatArray) -> FloatArray:
        strength = scaled * scale
        probability = expit(strength[red] - strength[blue])
        step = direction * scale
        change = matches * probability * (1.0 - probability) * (step[red] - step[blue])
        product = (
            np.bincount(red, change, players)
            - np.bincount(blue, change, players)
            + PRIOR_PRECISION * step
        )
        result: FloatArray = product * scale
        return result

    def distance_to_optimum(scaled: FloatArray) -> float:
        # Per participant, gradient / curvature (scale² is 1 / curvature at the start).
        _, scaled_gradient = objective(scaled)
        return float(np.abs(scaled_gradient * scale).max(initial=0.0))

    # Newton's method converges in a few steps on this smooth, strictly convex objective; its
    # own stopping test may report precision loss once it is there, so ours decides, and a
    # quasi-Newton polish takes over in the unlikely case Newton stopped short.
    result = minimize(
        objective,
        np.zeros(players),
        jac=True,
        hessp=hessian_times,
        method="Newton-CG",
        options={"xtol": 1e-5, "maxiter": 1000},
    )
    if distance_to_optimum(result.x) > _STRENGTH_TOLERANCE:
        result = minimize(
            objective,
            result.x,
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": 10_000, "ftol": 0.0, "gtol": 1e-10},
        )
    strength: FloatArray = result.x * scale
    if not np.all(np.isfinite(strength)) or distance_to_optimum(result.x) > _STRENGTH_TOLERANCE:
        raise RatingFitError(f"Bradley-Terry fit did not converge: {result.message}")
    return strength


def _hessian(data: _Comparisons, strength: FloatArray) -> sparse.csr_array:
    """The penalised objective's Hessian at `strength`: a weighted graph Laplacian + prior."""
    players = data.players
    red, blue = data.pair_red, data.pair_blue
    probability = expit(strength[red] - strength[blue])
    weight = data.pair_matches * probability * (1.0 - probability)
    diagonal = (
        np.bincount(red, weight, players) + np.bincount(blue, weight, players) + PRIOR_PRECISION
    )
    everyone = np.arange(players)
    return sparse.csr_array(
        (
            np.concatenate([-weight, -weight, diagonal]),
            (np.concatenate([red, blue, everyone]), np.concatenate([blue, red, everyone])),
        ),
        shape=(players, players),
    )


def _bootstrap(data: _Comparisons, strength: FloatArray, resamples: int, seed: int) -> FloatArray:
    """Resampled strengths, one column per resample (one-step bootstrap)."""
    players = data.players
    count = len(data.red)
    # Each match's gradient of the (unpenalised) objective: +residual for red, -residual for
    # blue. The full data's sum, plus the prior's pull, is zero at the fit.
    residual = expit(strength[data.red] - strength[data.blue]) - data.won
    per_match = sparse.csr_array(
        (
            np.concatenate([residual, -residual]),
            (np.tile(np.arange(count), 2), np.concatenate([data.red, data.blue])),
        ),
        shape=(count, players),
    ).T.tocsr()
    generator = np.random.default_rng(seed)
    gradients = np.empty((players, resamples))
    for column in range(resamples):
        drawn = np.bincount(generator.integers(0, count, size=count), minlength=count)
        gradients[:, column] = per_match @ drawn.astype(np.float64)
    gradients += PRIOR_PRECISION * strength[:, None]

    hessian = _hessian(data, strength)
    inverse_diagonal = 1.0 / hessian.diagonal()
    shape = (players, resamples)
    size = players * resamples
    stacked = LinearOperator(
        (size, size),
        matvec=lambda vector: (hessian @ vector.reshape(shape)).ravel(),
        dtype=np.float64,
    )
    jacobi = LinearOperator(
        (size, size),
        matvec=lambda vector: (inverse_diagonal[:, None] * vector.reshape(shape)).ravel(),
        dtype=np.float64,
    )
    steps, status = cg(
        stacked, gradients.ravel(), M=jacobi, rtol=_CG_RELATIVE_TOLERANCE, atol=0.0, maxiter=10_000
    )
    if status != 0:
        raise RatingFitError(f"bootstrap linear solve did not converge (status {status})")
    resampled: FloatArray = strength[:, None] - steps.reshape(shape)
    return resampled


def _ranks(low: FloatArray, high: FloatArray) -> IntArray:
    """1 + how many intervals lie entirely above each one."""
    lows = np.sort(low)
    above = len(lows) - np.searchsorted(lows, high, side="right")
    ranks: IntArray = 1 + above
    return ranks


def compute_ratings(
    matches: Iterable[MatchOutcome], *, seed: int = 0, resamples: int = DEFAULT_RESAMPLES
) -> Ratings:
    """Both sides' ratings from every judged match (matches that ended in error excluded)."""
    if resamples < 2:
        raise ValueError("resamples must be at least 2")
    data = _comparisons(matches)
    count = len(data.red)
    if count == 0:
        return Ratings(red=(), blue=(), matches=0, resamples=resamples, seed=seed)
    strength = _fit(data)
    resampled = _bootstrap(data, strength, resamples, seed)
    low, high = np.percentile(resampled, INTERVAL_PERCENTILES, axis=1)
    # Where every resample is alike (a single match) the interval is the rating itself, give or
    # take rounding; it is always kept around the rating.
    low, high = np.minimum(low, strength), np.maximum(high, strength)
    rating, rating_low, rating_high = to_rating(strength), to_rating(low), to_rating(high)
    players = data.players
    played = np.bincount(data.red, minlength=players) + np.bincount(data.blue, minlength=players)
    attack_won = data.won == 1.0
    red_wins = np.bincount(data.red[attack_won], minlength=players)
    blue_wins = np.bincount(data.blue[~attack_won], minlength=players)
    n_red = len(data.red_names)

    def side(
        names: list[str], offset: int, wins: npt.NDArray[np.intp], label: Side
    ) -> tuple[ParticipantRating, ...]:
        members = slice(offset, offset + len(names))
        ranks = _ranks(rating_low[members], rating_high[members])
        rows = [
            ParticipantRating(
                participant=name,
                side=label,
                rating=float(rating[offset + index]),
                rating_low=float(rating_low[offset + index]),
                rating_high=float(rating_high[offset + index]),
                rank=int(ranks[index]),
                matches=int(played[offset + index]),
                wins=int(wins[offset + index]),
            )
            for index, name in enumerate(names)
        ]
        rows.sort(key=lambda row: (row.rank, -row.rating, row.participant))
        return tuple(rows)

    return Ratings(
        red=side(data.red_names, 0, red_wins, "red"),
        blue=side(data.blue_names, n_red, blue_wins, "blue"),
        matches=count,
        resamples=resamples,
        seed=seed,
    )
