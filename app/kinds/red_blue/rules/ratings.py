"""Bradley-Terry ratings of red and blue participants, with bootstrap 95 % intervals and ranks.

Every judged match is one comparison: the attack's participant (red) against the defense's
participant (blue); red wins when the attack breached at least one category. Red and blue are
rated on one scale, so a red participant's rating against a blue one's gives the chance that
their attack gets through:

    P(red beats blue) = 1 / (1 + 10 ** ((blue_rating - red_rating) / 400))

that is, rating = 1000 + 400 · log10(e) · θ with θ the Bradley-Terry strength in logits
(Elo's scale: 400 points apart, 10 to 1 odds). A participant who plays both sides has a red
rating and a blue rating, fitted as two players.

The data. Matches between the same red and blue participant are interchangeable, so the fit
and the bootstrap work on a `Tally`: per distinct (red, blue) pair, how many matches and how
many red won. A tally grows by batches (`Tally.add`), so a competition that keeps going is
never read again match by match.

The fit. The strengths maximise the Bradley-Terry log-likelihood minus a ridge penalty
λ / 2 · Σ θ² (a Gaussian prior, standard deviation 1/√λ, around the average participant):
without it a participant who always wins, or always loses, would have an infinite rating,
and participants never compared with each other would have no common scale. With it every
rating is finite, a participant with one match is rated close to 1000, and the ratings of
every connected group of participants (connected through matches) average 1000; ratings of
participants in two groups that never met are compared only through that prior.

The prior is fitted to the matches (empirical Bayes, `fit_strengths`): λ maximises the
matches' marginal likelihood under the Laplace approximation, times a gamma hyperprior of
PRIOR_WEIGHT (8) pseudo-participants whose mode is PRIOR_PRECISION (0.5: 1.41 logits, 246
points), so a board of few participants keeps nearly that prior and a large one gets the
spread its matches show. A fixed prior is the posterior only where the true strengths spread
as it does: where they spread less, its intervals were wider than they need be (98.5 % held
the truth at 4 matches a participant), and where more, narrower. λ is searched on log λ (Newton
then secant steps inside a bracket, each step a fit from the last one's strengths) with the
likelihood's exact slope up to DENSE_PRIOR_PLAYERS players and a series approximation of its
traces above (`prior_slope`). The EM (or MacKay) fixed point, which leaves out how the fit's
own move changes the Hessian, came out far too narrow where matches are few (a prior of sd
0.66 for a true 1 at 4 matches a participant), as did the second moments of the refitted
resamples (bench/README.md, "Red-blue interval coverage").

For a fixed λ the objective is strictly convex, so it has one optimum whatever the start:
`_fit_at` runs Newton's method from any start (zero, or the previous solution after new
matches landed: a warm start takes 3-6 steps and a quarter fewer passes over the pairs), each
step solved by scipy's preconditioned conjugate gradient on exact Hessian products, with a
backtracking line search, until Newton's step is under 1e-5 logits for every participant
(then within about that of the optimum). A hand-written loop rather than scipy's
`minimize(method="Newton-CG")`, which also takes a start: that one stops on the mean step
(`xtol`), which left participants up to 3e-4 logits from the optimum, and at this loop's
accuracy it took 1.2 to 2 times the passes (bench/README.md, "Red-blue ratings").

The intervals. Matches are resampled with replacement (`resamples` times, from a seeded
generator), and each resample's prior (the fitted one, the same λ) is centred on a draw from
the prior itself (per participant, less the draws' mean: the scale's level is fixed), as
randomize-then-optimize does: the resamples' optima then spread as the posterior under the
prior does. Each resample is refitted exactly: Newton's method on its own objective, all
resamples at once (their linear systems stacked and solved by scipy's conjugate gradient, each
preconditioned by its own diagonal, with a backtracking line search per resample), started from
the one-step resample (the full fit moved by one Newton step with the full fit's Hessian: the
one-step bootstrap of Moulton and Zeger, 1991), until each one's step is under 1e-3 logits, 2
to 5 steps. Above REFIT_PAIRS distinct pairs the one-step resample is the resample: about an
eighth of the cost, but it spreads as the posterior's Laplace approximation does (H⁻¹ (C + λP)
H⁻¹ ≈ H⁻¹, a unit test pins it), which cuts the long tail of a participant who wins or loses
nearly everything: with the intervals below, they held the truth 92.2 to 94.2 % of the time
(87.0 to 95.2 % for the true top decile), the exact refits' 95.3 to 96.6 % (bench/README.md,
"Red-blue intervals where people look").
Matches resampled alone, without the prior draws, spread only as far as the matches say: a
participant whose rating the prior mostly makes (few matches) got an interval far narrower than
its uncertainty, and 95 % intervals held the true strength 69 % of the time at 4 matches a
participant. Matches are put in a canonical order first (participants by name, then the
outcome), so the same matches and seed give the same figures in whatever order they come, and
a tally draws exactly the resamples the list of matches would.

From the resamples, each participant's interval (`interval_bounds`): the standard deviation s
of its resampled strengths (steadier from 100 resamples than their tail percentiles, which lie
inside the truth on average) around its rating θ̂, as a Gaussian posterior N(θ̂, s²), but not
the equal-tailed ± 1.96 s: that one held the truth 91 to 95 % of the time over all
participants but 71 to 94 % for the true top decile, where people read a board (the prior
pulls every rating toward the centre, most where the matches say least, so one truly far out
is rated short of its truth and its interval misses on the far side), and 41 to 93 % for
participants who won or lost every match (bench/README.md, "Red-blue intervals where people
look"). So:

- Its level, 1 - q (q the probability left outside), goes from 95 % where the matches make
  the rating to 99 % where the prior does, in proportion to the precision each gives: q =
  0.05 b + 0.01 (1 - b), b = 1 - λ s² (clipped to [0, 1]). An interval of the prior alone
  at 95 % leaves out its top 2.5 %, a quarter of the top decile; at 99 %, a tenth: a
  participant the matches say little of is held 90 % of the time even when it is truly at
  the top.
- Its tails: q is split by where the rating lies, the far side's share OUTER_SHARE + (1 - 2
  OUTER_SHARE) Φ(-|θ̂| √λ / SPLIT_SCALE) (half of q at the centre, 2 % from half a prior
  standard deviation out). The interval still holds 1 - q of the posterior's probability; only
  where the rest lies moves, to the side the prior's pull makes the errors.
- A participant who won every match has no upper bound from its matches (their likelihood
  rises for ever; only the prior stops it): its interval is open above (+inf; null in the
  API), its low end one-sided (θ̂ - 1.645 s: 95 % above it). Likewise open below for one who
  lost every match.

Over simulated tournaments these intervals hold the truth 95.3 to 96.6 % of the time overall
and 92.7 to 97.8 % for the true top decile in every regime bench/redblue_coverage.py measures
(bench/README.md). The ratings themselves are the fit's, unchanged: shrunk toward the centre,
so the true top decile is rated 13 to 270 points low on average (the price of their accuracy
over everyone), the decile rated highest 5 to 68 (118 with heavy-tailed strengths).

Between two bootstraps (they cost more than a fit; the service runs them at a bounded rate),
`provisional_bounds` keeps each participant's last interval around its moved rating, and gives
a participant the last bootstrap did not know (or whose open end a match since has closed) the
interval `interval_bounds` makes of its own curvature (s = 1 / √curvature, its opponents taken
as known: a Wald interval).

Ranks, per side: 1 + the number of participants of that side whose interval lies entirely
above this participant's (their low end above its high end), so participants that cannot be
told apart share a rank.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Generic, Literal, NamedTuple, Protocol, TypeVar

import numpy as np
import numpy.typing as npt
from scipy import sparse
from scipy.sparse.linalg import LinearOperator, cg
from scipy.special import expit, ndtr, ndtri

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
PRIOR_PRECISION: Final = 0.5
# The prior fitted to the matches (`fit_strengths`): a gamma hyperprior on its precision λ,
# of PRIOR_WEIGHT pseudo-participants, whose mode is PRIOR_PRECISION; its log in log λ is
# (PRIOR_WEIGHT / 2) · (log λ - λ / PRIOR_PRECISION).
PRIOR_WEIGHT: Final = 8.0
# The search stops once its next step in log λ is under PRIOR_STEP_TOLERANCE and would move
# no strength by more than PRIOR_STRENGTH_TOLERANCE logits (0.02 rating points; dθ̂/d log λ =
# -λ H⁻¹ θ̂), or is under PRIOR_TOLERANCE. The step's own bound is for the intervals: their
# ends move with λ itself (the resamples' prior), up to half their width per unit of log λ, so
# 1e-3 let a warm-started search and a cold one (a recount) differ by a tenth of a point at a
# 450-point interval, more than the stored rounding; 1e-5 keeps that under 0.003 points.
PRIOR_STEP_TOLERANCE: Final = 1e-5
PRIOR_STRENGTH_TOLERANCE: Final = 1e-4
PRIOR_TOLERANCE: Final = 1e-6
# λ is searched within e^±_PRIOR_RANGE of PRIOR_PRECISION, by steps of at most _PRIOR_MAX_STEP
# in log λ.
_PRIOR_RANGE: Final = 12.0
_PRIOR_MAX_STEP: Final = 2.0
# Up to this many players the slope's H⁻¹ is formed exactly (a dense inverse: about 2 ms at 250).
DENSE_PRIOR_PLAYERS: Final = 250
_PRIOR_CG_TOLERANCE: Final = 1e-6
DEFAULT_RESAMPLES: Final = 100
# An interval's probability left outside it (`interval_bounds`): MATCHES_TAIL where the
# matches make the rating, PRIOR_TAIL where the prior does, in proportion to the precision each
# gives; a 95 % interval of the prior leaves out a quarter of its top decile, a 99 % one a tenth.
MATCHES_TAIL: Final = 0.05
PRIOR_TAIL: Final = 0.01
# The far side's share of that (away from the centre): at least OUTER_SHARE, turning from half
# to that over SPLIT_SCALE prior standard deviations of the rating's distance from the centre
# (a normal distribution function of it). Chosen on bench/redblue_coverage.py: with the share
# at least 10 %, or 5 % over half a prior standard deviation, the true top decile was held
# 90.7-93.2 % at 1,000 x 10, at spread 2 and with t-distributed strengths, against 95.5-96.1 %.
OUTER_SHARE: Final = 0.02
SPLIT_SCALE: Final = 0.25
# The finite end of a participant who won (or lost) every match: this much of the posterior's
# probability beyond it, the other end being open.
OPEN_TAIL: Final = 0.05
# Convergence: every participant's strength within about this many logits (0.002 rating
# points) of the optimum, judged by Newton's step.
STRENGTH_TOLERANCE: Final = 1e-5
_CG_RELATIVE_TOLERANCE: Final = 1e-8
_NEWTON_STEPS: Final = 100
# A Newton step's linear system is solved only as far as the step needs (an inexact Newton
# method): to this fraction of the gradient's size, or tighter as the optimum nears.
_NEWTON_FORCING: Final = 0.1
# Up to this many distinct (red, blue) pairs each resample is refitted exactly; above, moved by
# one Newton step: at 100,000 pairs (10,000 participants, 20 matches each) the exact refits of
# 100 resamples took 3.3 s of CPU against 0.4 s, less than the one-step takes at a million
# matches, so no interval refresh costs more than the largest boards' did (bench/README.md,
# "Red-blue interval coverage").
REFIT_PAIRS: Final = 100_000
# The refits: each resample's Newton steps until its largest is under this many logits (0.2
# rating points; that step taken, every strength was within 2e-4 logits, 0.03 points, of a
# 1e-7 refit's), their linear systems solved to this relative residual.
_REFIT_TOLERANCE: Final = 1e-3
_REFIT_FORCING: Final = 0.1
# Resamples are refitted in blocks of at most this many (pair, resample) entries, so that the
# refits' arrays stay near 16 MB each on the largest boards.
_REFIT_BLOCK_ENTRIES: Final = 2_000_000
# Names of participants become indices; a pair's key is red index * _KEY_BASE + blue index.
_KEY_BASE: Final = 1 << 32


class MatchOutcome(NamedTuple, Generic[Participant]):
    """One judged match as the ratings count it: who attacked, who defended, and whether the
    attack won."""

    red: Participant
    blue: Participant
    red_won: bool


class PairResults(NamedTuple, Generic[Participant]):
    """Judged matches between one red and one blue participant: how many, and how many red won."""

    red: Participant
    blue: Participant
    matches: int
    red_wins: int


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


class Tally(Generic[Participant]):
    """Every judged match of a competition, summed per distinct (red, blue) pair.

    Participants are numbered in the order they first appear: red ones 0..reds-1, and as
    players of the fit (`players`), red ones first, then blue ones (reds..players-1). A batch
    of results adds to the pairs it names and appends the pairs and participants it brings;
    numbers already given never change, so arrays kept alongside (strengths, intervals) only
    grow at the end of each side."""

    def __init__(self) -> None:
        self.red_names: list[Participant] = []
        self.blue_names: list[Participant] = []
        self._red_index: dict[Participant, int] = {}
        self._blue_index: dict[Participant, int] = {}
        self.pair_red: IntArray = np.zeros(0, np.int64)
        self.pair_blue: IntArray = np.zeros(0, np.int64)  # a blue participant's number
        self.pair_matches: FloatArray = np.zeros(0)
        self.pair_wins: FloatArray = np.zeros(0)
        # The pairs' keys in increasing order, and each one's pair: a batch finds its pairs by
        # binary search.
        self._sorted_keys: IntArray = np.zeros(0, np.int64)
        self._sorted_pairs: IntArray = np.zeros(0, np.int64)

    @classmethod
    def of(cls, matches: Iterable[MatchOutcome[Participant]]) -> Tally[Participant]:
        """The tally of a list of matches, participants numbered in name order."""
        reds: dict[Participant, int] = {}
        blues: dict[Participant, int] = {}
        red: list[int] = []
        blue: list[int] = []
        won: list[bool] = []
        for red_name, blue_name, red_won in matches:
            red.append(reds.setdefault(red_name, len(reds)))
            blue.append(blues.setdefault(blue_name, len(blues)))
            won.append(bool(red_won))
        tally: Tally[Participant] = cls()
        tally.add_columns(
            list(reds),
            list(blues),
            np.asarray(red, np.int64),
            np.asarray(blue, np.int64),
            np.ones(len(red)),
            np.asarray(won, np.float64),
        )
        return tally.canonical()[0]

    @property
    def reds(self) -> int:
        return len(self.red_names)

    @property
    def blues(self) -> int:
        return len(self.blue_names)

    @property
    def players(self) -> int:
        return self.reds + self.blues

    @property
    def pairs(self) -> int:
        return len(self.pair_red)

    @property
    def matches(self) -> int:
        return round(float(self.pair_matches.sum()))

    def red_number(self, name: Participant) -> int | None:
        return self._red_index.get(name)

    def blue_number(self, name: Participant) -> int | None:
        return self._blue_index.get(name)

    def add(self, results: Iterable[PairResults[Participant]]) -> None:
        """Adds judged matches; a pair named twice (here or before) is summed."""
        reds: dict[Participant, int] = {}
        blues: dict[Participant, int] = {}
        red: list[int] = []
        blue: list[int] = []
        played: list[int] = []
        won: list[int] = []
        for result in results:
            red.append(reds.setdefault(result.red, len(reds)))
            blue.append(blues.setdefault(result.blue, len(blues)))
            played.append(result.matches)
            won.append(result.red_wins)
        self.add_columns(
            list(reds),
            list(blues),
            np.asarray(red, np.int64),
            np.asarray(blue, np.int64),
            np.asarray(played, np.float64),
            np.asarray(won, np.float64),
        )

    def add_columns(
        self,
        red_names: list[Participant],
        blue_names: list[Participant],
        red: IntArray,
        blue: IntArray,
        matches: npt.ArrayLike,
        red_wins: npt.ArrayLike,
    ) -> None:
        """Adds judged matches given as columns: per row (a match, or a pair's matches), the
        index of its red participant in `red_names` and of its blue one in `blue_names`, how
        many matches and how many red won. A pair named twice (here or before) is summed."""
        played = np.asarray(matches, np.float64)
        won = np.asarray(red_wins, np.float64)
        if not len(played):
            return
        if (played < 0).any() or (won < 0).any() or (won > played).any():
            bad = int(np.flatnonzero((played < 0) | (won < 0) | (won > played))[0])
            raise ValueError(
                f"impossible results for ({red_names[red[bad]]!r}, {blue_names[blue[bad]]!r}): "
                f"{won[bad]:g}/{played[bad]:g}"
            )
        red_numbers = np.fromiter(
            (self._number(self._red_index, self.red_names, n) for n in red_names),
            np.int64,
            len(red_names),
        )
        blue_numbers = np.fromiter(
            (self._number(self._blue_index, self.blue_names, n) for n in blue_names),
            np.int64,
            len(blue_names),
        )
        keys: IntArray = red_numbers[red] * _KEY_BASE + blue_numbers[blue]
        batch_keys, inverse = np.unique(keys, return_inverse=True)
        batch_matches = np.bincount(inverse, played, len(batch_keys)).astype(np.float64)
        batch_wins = np.bincount(inverse, won, len(batch_keys)).astype(np.float64)
        at: IntArray = np.searchsorted(self._sorted_keys, batch_keys)
        known: npt.NDArray[np.bool_] = at < len(self._sorted_keys)
        known[known] = self._sorted_keys[at[known]] == batch_keys[known]
        existing = self._sorted_pairs[at[known]]
        self.pair_matches[existing] += batch_matches[known]
        self.pair_wins[existing] += batch_wins[known]
        new_keys = batch_keys[~known]
        if len(new_keys):
            first = self.pairs
            self.pair_red = np.concatenate([self.pair_red, new_keys // _KEY_BASE])
            self.pair_blue = np.concatenate([self.pair_blue, new_keys % _KEY_BASE])
            self.pair_matches = np.concatenate([self.pair_matches, batch_matches[~known]])
            self.pair_wins = np.concatenate([self.pair_wins, batch_wins[~known]])
            slots = at[~known]
            self._sorted_keys = np.insert(self._sorted_keys, slots, new_keys)
            self._sorted_pairs = np.insert(
                self._sorted_pairs, slots, np.arange(first, first + len(new_keys))
            )

    @staticmethod
    def _number(index: dict[Participant, int], names: list[Participant], name: Participant) -> int:
        number = index.get(name)
        if number is None:
            number = index[name] = len(names)
            names.append(name)
        return number

    def player_pairs(self) -> tuple[IntArray, IntArray]:
        """Each pair's red and blue participant as players of the fit."""
        return self.pair_red, self.pair_blue + self.reds

    def played(self) -> FloatArray:
        """Matches per player (red ones, then blue ones)."""
        red, blue = self.player_pairs()
        players = self.players
        return _sum_by(red, self.pair_matches, players) + _sum_by(blue, self.pair_matches, players)

    def wins(self) -> FloatArray:
        """Wins per player: a red participant's breaches, a blue one's holds."""
        red, blue = self.player_pairs()
        players = self.players
        return _sum_by(red, self.pair_wins, players) + _sum_by(
            blue, self.pair_matches - self.pair_wins, players
        )

    def unbeaten(self) -> tuple[BoolArray, BoolArray]:
        """Per player, whether it won every match it played, and whether it lost every one:
        its matches bound its strength on one side only."""
        played, wins = self.played(), self.wins()
        return wins == played, wins == 0

    def canonical(self) -> tuple[Tally[Participant], IntArray]:
        """The same tally with participants numbered in name order and pairs in key order, and
        for each of its players the number of that player here (values[order] re-orders an
        array of this tally's players)."""
        red_order = np.asarray(sorted(range(self.reds), key=self.red_names.__getitem__), np.int64)
        blue_order = np.asarray(
            sorted(range(self.blues), key=self.blue_names.__getitem__), np.int64
        )
        red_rank = np.empty(self.reds, np.int64)
        red_rank[red_order] = np.arange(self.reds)
        blue_rank = np.empty(self.blues, np.int64)
        blue_rank[blue_order] = np.arange(self.blues)
        pair_red, pair_blue = red_rank[self.pair_red], blue_rank[self.pair_blue]
        keys = pair_red * _KEY_BASE + pair_blue
        pair_order = np.argsort(keys, kind="stable")
        result: Tally[Participant] = Tally()
        result.red_names = [self.red_names[i] for i in red_order]
        result.blue_names = [self.blue_names[i] for i in blue_order]
        result._red_index = {name: i for i, name in enumerate(result.red_names)}
        result._blue_index = {name: i for i, name in enumerate(result.blue_names)}
        result.pair_red = pair_red[pair_order]
        result.pair_blue = pair_blue[pair_order]
        result.pair_matches = self.pair_matches[pair_order]
        result.pair_wins = self.pair_wins[pair_order]
        result._sorted_keys = keys[pair_order]
        result._sorted_pairs = np.arange(self.pairs, dtype=np.int64)
        order = np.concatenate([red_order, self.reds + blue_order])
        return result, order


def _softplus(values: FloatArray) -> FloatArray:
    """log(1 + e^x), without overflow."""
    result: FloatArray = np.logaddexp(0.0, values)
    return result


@dataclass(frozen=True)
class Fit:
    """The penalised maximum-likelihood strengths (logits, per player) and the objective's
    curvature per player there (its Hessian's diagonal: the information each one's matches
    and the prior give), under the prior of precision `prior_precision` (fitted to the matches,
    or given); how many Newton steps and passes over every pair it took (over every fit of the
    prior's search)."""

    strength: FloatArray
    curvature: FloatArray
    newton_steps: int
    passes: int
    prior_precision: float


class _Objective:
    """The penalised negative log-likelihood over the pairs, its gradient and its Hessian."""

    def __init__(self, tally: Tally, prior_precision: float) -> None:
        self.players = tally.players
        self.red, self.blue = tally.player_pairs()
        self.matches, self.wins = tally.pair_matches, tally.pair_wins
        self.prior = prior_precision
        self.passes = 0

    def at(self, strength: FloatArray) -> tuple[float, FloatArray, FloatArray]:
        """The value, the gradient and each pair's Hessian weight at `strength`."""
        self.passes += 1
        difference = strength[self.red] - strength[self.blue]
        probability = expit(difference)
        value = float(
            self.matches @ _softplus(difference)
            - self.wins @ difference
            + 0.5 * self.prior * (strength @ strength)
        )
        residual = self.matches * probability - self.wins
        gradient = self._spread(residual) + self.prior * strength
        weight = self.matches * probability * (1.0 - probability)
        return value, gradient, weight

    def _spread(self, per_pair: FloatArray) -> FloatArray:
        """+value at each pair's red player, -value at its blue one, summed per player."""
        return _sum_by(self.red, per_pair, self.players) - _sum_by(
            self.blue, per_pair, self.players
        )

    def curvature(self, weight: FloatArray) -> FloatArray:
        return (
            _sum_by(self.red, weight, self.players)
            + _sum_by(self.blue, weight, self.players)
            + self.prior
        )

    def hessian_times(self, weight: FloatArray, direction: FloatArray) -> FloatArray:
        self.passes += 1
        change = weight * (direction[self.red] - direction[self.blue])
        product: FloatArray = self._spread(change) + self.prior * direction
        return product


def _fit_at(tally: Tally, start: FloatArray | None, prior_precision: float) -> Fit:
    """The penalised maximum-likelihood strengths of the tally's players under the prior of
    precision `prior_precision`, by Newton's method from `start` (zero for everyone when
    None): the same optimum from any start, within STRENGTH_TOLERANCE; a start near it (the
    previous solution) takes fewer steps."""
    players = tally.players
    objective = _Objective(tally, prior_precision)
    if start is None:
        strength = np.zeros(players)
    else:
        if start.shape != (players,):
            raise ValueError(f"a start has one strength per player ({players})")
        strength = np.where(np.isfinite(start), start, 0.0)
    value, gradient, weight = objective.at(strength)
    for step_number in range(_NEWTON_STEPS):
        curvature = objective.curvature(weight)
        # Each participant's gradient over its curvature: how far the step will go, roughly.
        distance = float(np.abs(gradient / curvature).max(initial=0.0))
        if distance == 0.0:
            return Fit(strength, curvature, step_number, objective.passes, prior_precision)
        hessian = LinearOperator(
            (players, players),
            matvec=lambda direction, w=weight: objective.hessian_times(w, direction),
            dtype=np.float64,
        )
        jacobi = LinearOperator(
            (players, players), matvec=lambda vector, c=curvature: vector / c, dtype=np.float64
        )
        forcing = min(_NEWTON_FORCING, math.sqrt(distance))
        step, status = cg(hessian, -gradient, M=jacobi, rtol=forcing, atol=0.0, maxiter=10_000)
        if status != 0:
            raise RatingFitError(f"a Newton step's linear solve did not converge ({status})")
        if float(np.abs(step).max()) <= STRENGTH_TOLERANCE:
            # Newton's step is the distance to the optimum once this near: taken, it lands
            # within the tolerance (the gradient alone would not say so: along the direction
            # that moves everyone alike only the weak prior pulls, so a tiny gradient there
            # can hide a distance hundreds of times larger).
            return Fit(
                strength + step, curvature, step_number + 1, objective.passes, prior_precision
            )
        slope = float(gradient @ step)
        # Backtracking (Armijo): a full step near the optimum, shorter ones far from it. The
        # slack allows for rounding in a sum over every pair once the decrease is that small.
        length = 1.0
        while True:
            trial = strength + length * step
            trial_value, trial_gradient, trial_weight = objective.at(trial)
            if trial_value <= value + 1e-4 * length * slope + 1e-12 * abs(value):
                break
            length /= 2
            if length < 1e-12:
                raise RatingFitError("Bradley-Terry fit: the line search found no decrease")
        strength, value, gradient, weight = trial, trial_value, trial_gradient, trial_weight
    raise RatingFitError(f"Bradley-Terry fit did not converge in {_NEWTON_STEPS} Newton steps")


def fit_strengths(
    tally: Tally,
    start: FloatArray | None = None,
    *,
    prior_precision: float | None = None,
    prior_start: float | None = None,
) -> Fit:
    """The strengths of the tally's players: the penalised maximum-likelihood fit under the
    prior of precision `prior_precision`, or, when None, under the prior fitted to the matches
    (empirical Bayes): the precision λ that maximises the Laplace approximation of the
    matches' marginal likelihood times a gamma hyperprior (PRIOR_WEIGHT pseudo-participants
    around PRIOR_PRECISION), searched on log λ from `prior_start` (PRIOR_PRECISION when None;
    the last fitted precision makes a warm start) until its next step would move no strength by
    more than PRIOR_STRENGTH_TOLERANCE, each
    fit starting from the last one's strengths. A tally without matches gets PRIOR_PRECISION."""
    if prior_precision is not None:
        if not prior_precision > 0.0:
            raise ValueError("a prior precision is positive")
        return _fit_at(tally, start, prior_precision)
    if not tally.pairs:
        return _fit_at(tally, start, PRIOR_PRECISION)
    return _PriorSearch(tally, start).run(PRIOR_PRECISION if prior_start is None else prior_start)


class _PriorSearch:
    """The empirical-Bayes search of `fit_strengths`: the root of the Laplace marginal
    likelihood's slope in log λ (`prior_slope`, decreasing through its maximum) by Newton's
    method on it, the first step from the slope's own estimate of its derivative, the next
    ones from the secant through the last two slopes, each kept inside the bracket the slopes
    seen so far make (bisecting it where a step would leave it), until a step would move no
    strength by more than PRIOR_STRENGTH_TOLERANCE. From the last fitted λ, after a few more
    matches, that is one fit and one linear solve, or two."""

    def __init__(self, tally: Tally, start: FloatArray | None) -> None:
        self.tally = tally
        self.start = start
        self.passes = 0
        self.newton_steps = 0

    def at(self, log_precision: float) -> tuple[Fit, PriorSlope]:
        """The fit at λ = e^log_precision and the slope there."""
        fit = _fit_at(self.tally, self.start, math.exp(log_precision))
        self.start = fit.strength
        self.newton_steps += fit.newton_steps
        self.passes += fit.passes
        found = prior_slope(self.tally, fit)
        self.passes += found.passes
        return fit, found

    def run(self, prior_start: float) -> Fit:
        lowest = math.log(PRIOR_PRECISION) - _PRIOR_RANGE
        highest = math.log(PRIOR_PRECISION) + _PRIOR_RANGE
        position = min(max(math.log(prior_start), lowest), highest)
        last: tuple[float, float] | None = None
        for _ in range(_NEWTON_STEPS):
            fit, found = self.at(position)
            slope, derivative = found.slope, found.derivative
            if last is not None and last[1] != slope:
                # The secant through the last two slopes: the estimate leaves out how the
                # traces move, which matters where matches are few.
                derivative = (slope - last[1]) / (position - last[0])
            last = (position, slope)
            # The slope is positive below the root, negative above it.
            if slope > 0.0:
                lowest = position
            else:
                highest = position
            if derivative < 0.0:
                step = -slope / derivative
            else:  # the estimate failed (it leaves out how the traces move): go by the sign
                step = math.copysign(_PRIOR_MAX_STEP, slope)
            step = math.copysign(min(abs(step), _PRIOR_MAX_STEP), step)
            if (
                (
                    abs(step) < PRIOR_STEP_TOLERANCE
                    and abs(step) * found.reach < PRIOR_STRENGTH_TOLERANCE
                )
                or abs(step) < PRIOR_TOLERANCE
                or highest - lowest < PRIOR_TOLERANCE
            ):
                return Fit(
                    fit.strength, fit.curvature, self.newton_steps, self.passes, fit.prior_precision
                )
            following = position + step
            if not lowest < following < highest:
                following = 0.5 * (lowest + highest)
            position = following
        raise RatingFitError(f"the prior's search did not converge in {_NEWTON_STEPS} steps")


class PriorSlope(NamedTuple):
    """`prior_slope`'s findings at a fit."""

    slope: float  # of the log marginal likelihood (and hyperprior), in log λ
    derivative: float  # an estimate of the slope's own, in log λ
    reach: float  # the most any strength moves per unit of log λ: max |λ H⁻¹ θ̂|
    passes: int  # over every pair, taken


def prior_slope(tally: Tally, fit: Fit) -> PriorSlope:
    """The slope in log λ of the matches' log marginal likelihood under the Laplace
    approximation, plus the log of the gamma hyperprior, at the fit (λ its prior precision);
    an estimate of the slope's derivative in log λ; and the passes over every pair it took.

    With n players, the fit θ̂ and H the penalised Hessian there,
        log p(matches | λ) ≈ log L(θ̂) - λ/2 ‖θ̂‖² + n/2 log λ - ½ log det H,
    and with the hyperprior's (k/2) log λ - k λ / (2 λ₀) (k = PRIOR_WEIGHT, λ₀ =
    PRIOR_PRECISION), its slope in log λ is
        ½ (n + k - λ ‖θ̂‖² - λ tr(H⁻¹ dH/dλ) - k λ / λ₀)
    (the fit's own change with λ drops out of log L(θ̂) - λ/2 ‖θ̂‖², which it maximises). H moves
    with λ directly and through the fit: dθ̂/dλ = -H⁻¹ θ̂ moves each pair's difference d by
    δ, hence its weight m p (1 - p) by m p (1 - p)(1 - 2p) δ, so
        tr(H⁻¹ dH/dλ) = tr(H⁻¹) + Σ_pairs m p (1 - p)(1 - 2p) δ r,
    r the pair's effective resistance (e_red - e_blue)ᵀ H⁻¹ (e_red - e_blue). Without that
    second term (EM's, or MacKay's, fixed point) the prior came out far too narrow where each
    participant has few matches (sd 0.66 for a true 1 at 4 matches a participant;
    bench/README.md). Up to DENSE_PRIOR_PLAYERS players H⁻¹ is formed exactly; above, tr(H⁻¹)
    and r come from the series H⁻¹ = D⁻¹ + D⁻¹ W D⁻¹ + D⁻¹ W D⁻¹ W D⁻¹ + ... (D the diagonal,
    W the pair weights; odd powers have no diagonal in a bipartite graph), to its second
    term, and dθ̂/dλ from conjugate gradients: within a few per cent where matches are few
    (where the prior matters), and the prior matters little where they are many."""
    precision = fit.prior_precision
    strength = fit.strength
    red, blue = tally.player_pairs()
    players = tally.players
    chance = expit(strength[red] - strength[blue])
    weight = tally.pair_matches * chance * (1.0 - chance)
    curvature = _sum_by(red, weight, players) + _sum_by(blue, weight, players) + precision
    passes = 1
    if players <= DENSE_PRIOR_PLAYERS:
        inverse = np.linalg.inv(_hessian(tally, strength, precision).toarray())
        trace = float(np.trace(inverse))
        resistance = inverse[red, red] + inverse[blue, blue] - 2.0 * inverse[red, blue]
        moved = -(inverse @ strength)
    else:
        red_curvature, blue_curvature = curvature[red], curvature[blue]
        # H⁻¹'s diagonal to the series' second term, and its (red, blue) entry to its first.
        across = weight**2 / (red_curvature * blue_curvature)
        diagonal = (
            1.0 + _sum_by(red, across, players) + _sum_by(blue, across, players)
        ) / curvature
        trace = float(diagonal.sum())
        resistance = (
            diagonal[red] + diagonal[blue] - 2.0 * weight / (red_curvature * blue_curvature)
        )
        objective = _Objective(tally, precision)
        hessian = LinearOperator(
            (players, players),
            matvec=lambda direction: objective.hessian_times(weight, direction),
            dtype=np.float64,
        )
        jacobi = LinearOperator(
            (players, players), matvec=lambda vector: vector / curvature, dtype=np.float64
        )
        moved, status = cg(
            hessian, -strength, M=jacobi, rtol=_PRIOR_CG_TOLERANCE, atol=0.0, maxiter=10_000
        )
        if status != 0:
            raise RatingFitError(f"the prior's slope: the linear solve did not converge ({status})")
        passes += objective.passes
    change = moved[red] - moved[blue]
    turning = weight * (1.0 - 2.0 * chance) * change * resistance
    moving = trace + float(turning.sum())
    total = players + PRIOR_WEIGHT
    size = float(strength @ strength)
    slope = 0.5 * (total - precision * (size + moving) - PRIOR_WEIGHT * precision / PRIOR_PRECISION)
    # d‖θ̂‖²/d log λ = 2 λ θ̂ · dθ̂/dλ; the traces' own change is left out of the estimate.
    derivative = -0.5 * (
        precision * (size + moving)
        + 2.0 * precision**2 * float(strength @ moved)
        + PRIOR_WEIGHT * precision / PRIOR_PRECISION
    )
    reach = precision * float(np.abs(moved).max(initial=0.0))
    return PriorSlope(slope, derivative, reach, passes)


def _hessian(tally: Tally, strength: FloatArray, prior_precision: float) -> sparse.csr_array:
    """The penalised objective's Hessian at `strength`: a weighted graph Laplacian + prior."""
    players = tally.players
    red, blue = tally.player_pairs()
    probability = expit(strength[red] - strength[blue])
    weight = tally.pair_matches * probability * (1.0 - probability)
    diagonal = (
        np.bincount(red, weight, players) + np.bincount(blue, weight, players) + prior_precision
    )
    everyone = np.arange(players)
    return sparse.csr_array(
        (
            np.concatenate([-weight, -weight, diagonal]),
            (np.concatenate([red, blue, everyone]), np.concatenate([blue, red, everyone])),
        ),
        shape=(players, players),
    )


def bootstrap_bounds(
    tally: Tally,
    strength: FloatArray,
    *,
    prior_precision: float,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    refit: bool | None = None,
) -> tuple[FloatArray, FloatArray]:
    """Each player's interval in logits (`interval_bounds`, open on the side a participant who
    won or lost every match has no bound): around its strength, from the standard deviation of
    its resampled strengths, each resample with its prior's centre drawn from the prior too, the
    prior of precision `prior_precision` (the fit's: `Fit.prior_precision`). The same matches
    and seed give the same figures however the tally grew.

    Each resample is refitted exactly (`refit` True) or moved by one Newton step from the full
    fit (False); None, the service's choice: exact refits up to REFIT_PAIRS distinct pairs, the
    one-step above. The one-step resamples spread as the posterior's Laplace approximation
    does, which cuts the long tail of a participant who wins or loses nearly everything
    (bench/README.md, "Red-blue interval coverage"), at about an eighth of the cost, which is
    why the largest boards keep it."""
    if resamples < 2:
        raise ValueError("resamples must be at least 2")
    canonical, order = tally.canonical()
    if refit is None:
        refit = tally.pairs <= REFIT_PAIRS
    if refit:
        resampled = _refit_bootstrap(canonical, strength[order], resamples, seed, prior_precision)
    else:
        resampled = _bootstrap(canonical, strength[order], resamples, seed, True, prior_precision)
    deviation = np.empty(tally.players)
    deviation[order] = resampled.std(axis=1, ddof=1)
    won_all, lost_all = tally.unbeaten()
    return interval_bounds(strength, deviation, prior_precision, won_all, lost_all)


def interval_bounds(
    strength: FloatArray,
    deviation: FloatArray,
    prior_precision: float,
    won_all: BoolArray,
    lost_all: BoolArray,
) -> tuple[FloatArray, FloatArray]:
    """Each player's interval in logits around its strength θ̂, its posterior taken as
    N(θ̂, s²) (s its `deviation`) under the prior of precision λ: 1 - q of that probability
    inside, q = MATCHES_TAIL b + PRIOR_TAIL (1 - b) with b = 1 - λ s² the share of its
    precision its matches give (in [0, 1]); of q, the side away from the centre (θ = 0) holds
    OUTER_SHARE + (1 - 2 OUTER_SHARE) Φ(-|θ̂| √λ / SPLIT_SCALE), the near side the rest. A
    player who won every match has an interval open above (+inf), its low end with OPEN_TAIL
    below it; one who lost every match, open below (-inf)."""
    information = np.clip(1.0 - prior_precision * deviation**2, 0.0, 1.0)
    outside = MATCHES_TAIL * information + PRIOR_TAIL * (1.0 - information)
    above_share = OUTER_SHARE + (1.0 - 2.0 * OUTER_SHARE) * ndtr(
        -strength * math.sqrt(prior_precision) / SPLIT_SCALE
    )
    low = strength + ndtri(outside * (1.0 - above_share)) * deviation
    high = strength - ndtri(outside * above_share) * deviation
    one_sided = -ndtri(OPEN_TAIL) * deviation
    low = np.where(won_all, strength - one_sided, low)
    high = np.where(won_all, math.inf, high)
    high = np.where(lost_all, strength + one_sided, high)
    low = np.where(lost_all, -math.inf, low)
    return low, high


class _Cells(NamedTuple):
    """A canonical tally's matches as cells, a pair's losses or its wins: a cell's matches are
    alike, so resampling draws match positions and counts them per cell."""

    red: IntArray  # each cell's red player
    blue: IntArray  # and blue one
    won: FloatArray  # 1.0 where red won the cell's matches
    pair: IntArray  # each cell's pair
    of_position: IntArray  # the cell of each match position, in the canonical order of matches


def _cells(tally: Tally) -> _Cells:
    red, blue = tally.player_pairs()
    counts = np.stack([tally.pair_matches - tally.pair_wins, tally.pair_wins], axis=1)
    counts = np.rint(counts.ravel()).astype(np.int64)
    occupied = counts > 0
    counts = counts[occupied]
    return _Cells(
        red=np.repeat(red, 2)[occupied],
        blue=np.repeat(blue, 2)[occupied],
        won=np.tile(np.array([0.0, 1.0]), tally.pairs)[occupied],
        pair=np.repeat(np.arange(tally.pairs), 2)[occupied],
        of_position=np.repeat(np.arange(len(counts)), counts),
    )


def _drawn_cells(cells: _Cells, resamples: int, seed: int) -> Iterator[IntArray]:
    """Per resample, how many of its matches fall in each cell (matches drawn with
    replacement, as many as there are)."""
    count, size = len(cells.of_position), len(cells.red)
    generator = np.random.default_rng(seed)
    for _ in range(resamples):
        yield np.bincount(
            cells.of_position[generator.integers(0, count, size=count)], minlength=size
        )


def _prior_draws(players: int, resamples: int, seed: int) -> FloatArray:
    """Per resample, each player's standard normal draw for its prior's centre, less the
    draws' mean. From a generator of its own, so the matches drawn stay the same."""
    prior = np.random.default_rng([seed, 1]).standard_normal((players, resamples))
    centred: FloatArray = prior - prior.mean(axis=0)
    return centred


def _bootstrap(
    tally: Tally,
    strength: FloatArray,
    resamples: int,
    seed: int,
    prior_draws: bool,
    prior_precision: float,
) -> FloatArray:
    """Resampled strengths, one column per resample (one-step bootstrap), of a canonical tally:
    its matches in order are each pair's (in key order) losses, then its wins, exactly the
    order of the list of matches sorted by red name, blue name and outcome."""
    players = tally.players
    cells = _cells(tally)
    # Each match's gradient of the (unpenalised) objective: +residual for red, -residual for
    # blue. The full data's sum, plus the prior's pull, is zero at the fit.
    residual = expit(strength[cells.red] - strength[cells.blue]) - cells.won
    gradients = np.empty((players, resamples))
    for column, drawn in enumerate(_drawn_cells(cells, resamples, seed)):
        weighted = drawn * residual
        gradients[:, column] = np.bincount(cells.red, weighted, players) - np.bincount(
            cells.blue, weighted, players
        )
    gradients += prior_precision * strength[:, None]
    if prior_draws:
        # The prior is data too: each resample's prior is centred on a draw from the prior
        # (N(0, 1/λ) per player, λ the fit's prior precision), which adds √λ · N(0, 1) to its
        # gradient (randomize-then-optimize). Resampling matches alone varies only what the
        # matches say, so a participant with few matches, whose rating the prior mostly
        # makes, got an interval far narrower than its uncertainty; with the prior drawn too,
        # the resamples spread as the posterior does (bench/README.md, "Red-blue interval
        # coverage"). Less their mean: the scale's level is fixed (ratings average 1000), so a
        # shift of everyone alike is no uncertainty of anyone's rating.
        gradients += math.sqrt(prior_precision) * _prior_draws(players, resamples, seed)

    steps = _solve_each(
        _hessian(tally, strength, prior_precision), gradients, _CG_RELATIVE_TOLERANCE
    )
    resampled: FloatArray = strength[:, None] - steps
    return resampled


def _solve_each(hessian: sparse.csr_array, right: FloatArray, rtol: float) -> FloatArray:
    """hessian⁻¹ · each column of `right`, all columns at once by conjugate gradients."""
    inverse_diagonal = 1.0 / hessian.diagonal()
    shape = right.shape
    size = right.size
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
    solved, status = cg(stacked, right.ravel(), M=jacobi, rtol=rtol, atol=0.0, maxiter=10_000)
    if status != 0:
        raise RatingFitError(f"bootstrap linear solve did not converge (status {status})")
    result: FloatArray = solved.reshape(shape)
    return result


def _refit_bootstrap(
    tally: Tally, strength: FloatArray, resamples: int, seed: int, prior_precision: float
) -> FloatArray:
    """Resampled strengths, one column per resample, each the optimum of its resample's
    objective (the matches and prior draws of `_bootstrap` with prior draws, exactly), by
    Newton's method from the one-step resamples, resamples in blocks of a bounded size: until
    each one's Newton step is under _REFIT_TOLERANCE logits, a resample stopping when its own
    is."""
    players, pairs = tally.players, tally.pairs
    red, blue = tally.player_pairs()
    cells = _cells(tally)
    to_pairs = sparse.csr_array(
        (np.ones(len(cells.pair)), (cells.pair, np.arange(len(cells.pair)))),
        shape=(pairs, len(cells.pair)),
    )
    incidence = sparse.csr_array(
        (
            np.concatenate([np.ones(pairs), -np.ones(pairs)]),
            (np.tile(np.arange(pairs), 2), np.concatenate([red, blue])),
        ),
        shape=(pairs, players),
    )
    refit = _Refit(incidence, _hessian(tally, strength, prior_precision), strength, prior_precision)
    # Each resample's prior is centred on a draw from the prior (randomize-then-optimize):
    # the one-step's √λ · z in the gradient is the centre -z / √λ.
    centres = -_prior_draws(players, resamples, seed) / math.sqrt(prior_precision)
    block = max(1, min(resamples, _REFIT_BLOCK_ENTRIES // max(pairs, 1)))
    drawn = np.empty((len(cells.red), block))
    result = np.empty((players, resamples))
    first = 0
    for column, counts in enumerate(_drawn_cells(cells, resamples, seed)):
        drawn[:, column - first] = counts
        if column - first + 1 == block or column == resamples - 1:
            taken = drawn[:, : column - first + 1]
            result[:, first : column + 1] = refit.optima(
                to_pairs @ taken,
                to_pairs @ (taken * cells.won[:, None]),
                centres[:, first : column + 1],
            )
            first = column + 1
    return result


class _Refit:
    """Newton's method on many resamples' objectives at once: each resample a column of pair
    match counts and red wins, and its prior's centre."""

    def __init__(
        self,
        incidence: sparse.csr_array,
        full_hessian: sparse.csr_array,
        strength: FloatArray,
        prior_precision: float,
    ) -> None:
        self.incidence = incidence  # pairs x players: +1 at the pair's red, -1 at its blue
        self.across = incidence.T.tocsr()
        self.touching = abs(self.across)  # per player, the pairs it plays in
        self.full_hessian = full_hessian
        self.strength = strength
        self.prior = prior_precision

    def optima(self, matches: FloatArray, wins: FloatArray, centres: FloatArray) -> FloatArray:
        def objective(
            theta: FloatArray, columns: IntArray | slice
        ) -> tuple[FloatArray, FloatArray, FloatArray]:
            """Per column of theta (the resamples `columns`): the penalised negative
            log-likelihood, its gradient, and each pair's Hessian weight."""
            held, won = matches[:, columns], wins[:, columns]
            from_centre = theta - centres[:, columns]
            difference = self.incidence @ theta
            probability = expit(difference)
            # -log P(the pair's outcome) = held · softplus(d) - won · d, softplus(d) being
            # d - log expit(d): one logarithm of what is already there (accurate, since expit
            # is), where softplus itself costs three passes. log expit(d) is d itself once
            # expit underflows (d below -745).
            with np.errstate(divide="ignore"):
                log_chance = np.log(probability)
            log_chance = np.where(probability > 0.0, log_chance, difference)
            values = ((held - won) * difference - held * log_chance).sum(axis=0)
            values += 0.5 * self.prior * (from_centre**2).sum(axis=0)
            gradient = self.across @ (held * probability - won) + self.prior * from_centre
            return values, gradient, held * probability * (1.0 - probability)

        columns = matches.shape[1]
        # The one-step resamples (a Newton step with the full fit's Hessian) start each
        # resample nearer its optimum than the full fit does, cheaply: the full fit's chances
        # are every resample's there, and its Hessian's products cost a pass over the pairs,
        # not over pairs x resamples.
        chance = expit(self.incidence @ self.strength)[:, None]
        gradient = self.across @ (matches * chance - wins) + self.prior * (
            self.strength[:, None] - centres
        )
        theta = self.strength[:, None] - _solve_each(self.full_hessian, gradient, _REFIT_FORCING)
        result = theta.copy()
        active = np.arange(columns)
        values, gradient, weight = objective(theta, slice(None))
        for _step in range(_NEWTON_STEPS):
            step = self._newton_steps(weight, gradient)
            done = np.abs(step).max(axis=0) <= _REFIT_TOLERANCE
            # Newton's step is the distance to the optimum once this near: taken, it lands
            # within the tolerance.
            result[:, active[done]] = theta[:, done] + step[:, done]
            going = ~done
            active, theta, step = active[going], theta[:, going], step[:, going]
            values, gradient, weight = values[going], gradient[:, going], weight[:, going]
            if not len(active):
                return result
            # Backtracking (Armijo), per resample, as in `fit_strengths`.
            slope = (gradient * step).sum(axis=0)
            length = np.ones(len(active))
            pending = np.ones(len(active), dtype=bool)
            while pending.any():
                trial = theta[:, pending] + length[pending] * step[:, pending]
                trial_values, trial_gradient, trial_weight = objective(trial, active[pending])
                accepted = trial_values <= (
                    values[pending]
                    + 1e-4 * length[pending] * slope[pending]
                    + 1e-12 * np.abs(values[pending])
                )
                update = np.flatnonzero(pending)[accepted]
                theta[:, update] = trial[:, accepted]
                values[update] = trial_values[accepted]
                gradient[:, update] = trial_gradient[:, accepted]
                weight[:, update] = trial_weight[:, accepted]
                pending[update] = False
                length[pending] /= 2
                if (length[pending] < 1e-12).any():
                    raise RatingFitError("a resample's refit: the line search found no decrease")
        raise RatingFitError(f"the resamples' refits did not converge in {_NEWTON_STEPS} steps")

    def _newton_steps(self, weight: FloatArray, gradient: FloatArray) -> FloatArray:
        """Each column's Newton step: its own Hessian (pair weights `weight`, the prior)
        solved against minus its gradient, to the relative residual _REFIT_FORCING (an inexact
        Newton step), all columns at once, preconditioned by each one's own diagonal."""
        shape, size = gradient.shape, gradient.size
        inverse_diagonal = 1.0 / (self.touching @ weight + self.prior)
        hessian = LinearOperator(
            (size, size),
            matvec=lambda vector: (
                self.across @ (weight * (self.incidence @ vector.reshape(shape)))
                + self.prior * vector.reshape(shape)
            ).ravel(),
            dtype=np.float64,
        )
        jacobi = LinearOperator(
            (size, size),
            matvec=lambda vector: (inverse_diagonal * vector.reshape(shape)).ravel(),
            dtype=np.float64,
        )
        step, status = cg(
            hessian, -gradient.ravel(), M=jacobi, rtol=_REFIT_FORCING, atol=0.0, maxiter=10_000
        )
        if status != 0:
            raise RatingFitError(f"a resample's Newton step did not converge (status {status})")
        result: FloatArray = step.reshape(shape)
        return result


def provisional_bounds(
    strength: FloatArray,
    curvature: FloatArray,
    low_offset: FloatArray,
    high_offset: FloatArray,
    *,
    prior_precision: float,
    won_all: BoolArray,
    lost_all: BoolArray,
) -> tuple[FloatArray, FloatArray]:
    """Intervals between two bootstraps, in logits: a player's last interval (its ends' offsets
    from its strength then, -inf / +inf where it was open) around its strength now. A player
    with no last interval (NaN offsets: it came after the last bootstrap), or whose last one is
    open where its record no longer is (it won every match then, lost one since), gets the
    interval `interval_bounds` makes of its own curvature (standard deviation 1 / √curvature:
    the Wald interval of its own matches, its opponents' strengths taken as known)."""
    wald_low, wald_high = interval_bounds(
        strength, 1.0 / np.sqrt(curvature), prior_precision, won_all, lost_all
    )
    with np.errstate(invalid="ignore"):
        kept = (
            ~np.isnan(low_offset)
            & ~np.isnan(high_offset)
            & ((low_offset == -math.inf) == lost_all)
            & ((high_offset == math.inf) == won_all)
        )
    low = np.where(kept, strength + np.minimum(low_offset, 0.0), wald_low)
    high = np.where(kept, strength + np.maximum(high_offset, 0.0), wald_high)
    return low, high


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
