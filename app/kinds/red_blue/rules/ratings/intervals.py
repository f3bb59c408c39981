"""Each participant's interval: a bootstrap of the matches and of the prior, the interval
made of its resamples' spread, and the intervals kept between two bootstraps.

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
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Final, NamedTuple

import numpy as np
from scipy import sparse
from scipy.sparse.linalg import LinearOperator, cg
from scipy.special import expit, ndtr, ndtri

from app.kinds.red_blue.rules.ratings.fit import _NEWTON_STEPS, _hessian
from app.kinds.red_blue.rules.ratings.scale import BoolArray, FloatArray, IntArray, RatingFitError
from app.kinds.red_blue.rules.ratings.tally import Tally

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
_CG_RELATIVE_TOLERANCE: Final = 1e-8
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
