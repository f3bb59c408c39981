"""The strengths: the penalised maximum-likelihood Bradley-Terry fit, under a prior fitted
to the matches.

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
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final, NamedTuple

import numpy as np
from scipy import sparse
from scipy.sparse.linalg import LinearOperator, cg
from scipy.special import expit

from app.kinds.red_blue.rules.ratings.scale import FloatArray, RatingFitError, _sum_by
from app.kinds.red_blue.rules.ratings.tally import Tally

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
# Convergence: every participant's strength within about this many logits (0.002 rating
# points) of the optimum, judged by Newton's step.
STRENGTH_TOLERANCE: Final = 1e-5
_NEWTON_STEPS: Final = 100
# A Newton step's linear system is solved only as far as the step needs (an inexact Newton
# method): to this fraction of the gradient's size, or tighter as the optimum nears.
_NEWTON_FORCING: Final = 0.1


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
