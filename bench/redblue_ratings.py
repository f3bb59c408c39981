"""Red-blue ratings: a full recompute (Bradley-Terry fit + bootstrap intervals + ranks) over
100,000 matches, the issue 12 target being under 2 s.

Synthetic competitions: participants' strengths drawn from N(0, 1) logits, each match a random
(red, blue) pair won by red with the Bradley-Terry probability. Three shapes of 100,000
matches: 5,000 x 5,000 participants (nearly every match its own pair: the worst case for the
fit, which works per distinct pair), 500 x 500, and 50 x 50 (every pair met ~40 times). Times
`compute_ratings` from the list of outcomes (as a recompute reads them) to the ranked rows, the
best and the median of `--repeat` runs, and its phases. With `--exact` it also refits every
resample exactly (what the one-step bootstrap stands in for) on the first shape, and prints the
time it takes and how far its intervals are from the one-step ones. With `--warm` it fits again
after 100 more matches from the previous solution, from zero, and with scipy's Newton-CG from
the previous solution (what a recompute does, and the library alternative).

    .venv/bin/python bench/redblue_ratings.py [--repeat 5] [--resamples 100] [--exact] [--warm]
"""

from __future__ import annotations

import argparse
import copy
import math
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

from app.kinds.red_blue.rules import ratings as rating_module
from app.kinds.red_blue.rules.ratings import (
    MatchOutcome,
    PairResults,
    Tally,
    bootstrap_bounds,
    compute_ratings,
    fit_strengths,
)

MATCHES = 100_000
SHAPES = ((5_000, 5_000), (500, 500), (50, 50))


def _competition(reds: int, blues: int, matches: int, seed: int) -> list[MatchOutcome]:
    draw = random.Random(seed)
    red_strength = [draw.gauss(0.0, 1.0) for _ in range(reds)]
    blue_strength = [draw.gauss(0.0, 1.0) for _ in range(blues)]
    outcomes = []
    for _ in range(matches):
        red, blue = draw.randrange(reds), draw.randrange(blues)
        chance = 1.0 / (1.0 + math.exp(blue_strength[blue] - red_strength[red]))
        outcomes.append(MatchOutcome(f"red-{red}", f"blue-{blue}", draw.random() < chance))
    return outcomes


def _timed(call: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = call()
    return time.perf_counter() - started, result


def _phases(outcomes: list[MatchOutcome], resamples: int) -> str:
    reading, tally = _timed(lambda: Tally.of(outcomes))
    fitting, fit = _timed(lambda: fit_strengths(tally))
    bootstrapping, _ = _timed(
        lambda: bootstrap_bounds(
            tally, fit.strength, prior_precision=fit.prior_precision, resamples=resamples, seed=0
        )
    )
    return (
        f"read {reading * 1000:.0f} ms, fit {fitting * 1000:.0f} ms ({fit.passes} passes), "
        f"bootstrap {bootstrapping * 1000:.0f} ms, {tally.pairs:,} distinct pairs"
    )


def _exact_intervals(
    outcomes: list[MatchOutcome], resamples: int, seed: int
) -> tuple[float, Tally, np.ndarray, np.ndarray]:
    """Every resample refitted by the full optimisation, with the draws compute_ratings makes
    (its tally's matches in order: each pair's losses, then its wins)."""
    started = time.perf_counter()
    tally = Tally.of(outcomes)
    strength = fit_strengths(tally).strength
    cells = np.stack([tally.pair_matches - tally.pair_wins, tally.pair_wins], axis=1).ravel()
    cell_of_position = np.repeat(np.arange(len(cells)), np.rint(cells).astype(np.int64))
    count = tally.matches
    generator = np.random.default_rng(seed)
    refitted = np.empty((tally.players, resamples))
    for column in range(resamples):
        drawn = np.bincount(
            cell_of_position[generator.integers(0, count, size=count)], minlength=len(cells)
        ).reshape(-1, 2)
        resample = copy.copy(tally)
        resample.pair_matches = drawn.sum(axis=1).astype(np.float64)
        resample.pair_wins = drawn[:, 1].astype(np.float64)
        refitted[:, column] = fit_strengths(resample, strength).strength
    low, high = np.percentile(refitted, (2.5, 97.5), axis=1)
    low, high = np.minimum(low, strength), np.maximum(high, strength)
    return (
        time.perf_counter() - started,
        tally,
        rating_module.to_rating(low),
        rating_module.to_rating(high),
    )


def _compare_with_exact_refits(reds: int, blues: int, resamples: int) -> None:
    outcomes = _competition(reds, blues, MATCHES, seed=reds)
    one_step_time, ratings = _timed(lambda: compute_ratings(outcomes, resamples=resamples))
    exact_time, tally, low, high = _exact_intervals(outcomes, resamples, seed=0)
    # The tally numbers red participants by name, then blue ones after them.
    position = {("red", name): index for index, name in enumerate(tally.red_names)}
    position.update(
        {("blue", name): tally.reds + index for index, name in enumerate(tally.blue_names)}
    )
    rows = [*ratings.red, *ratings.blue]
    at = [position[(row.side, row.participant)] for row in rows]
    # Participants who won or lost every match have an open end now: compared where both
    # ends are finite.
    bounded = [
        (row, index)
        for row, index in zip(rows, at, strict=True)
        if math.isfinite(row.rating_low) and math.isfinite(row.rating_high)
    ]
    gaps = [
        gap
        for row, index in bounded
        for gap in (abs(row.rating_low - low[index]), abs(row.rating_high - high[index]))
    ]
    widths = [row.rating_high - row.rating_low for row, _ in bounded]
    exact_widths = [high[index] - low[index] for _, index in bounded]
    print(
        f"  exact refits of every resample, {reds:,} x {blues:,}: {exact_time:.1f} s against "
        f"{one_step_time:.2f} s one-step; interval ends differ by {statistics.mean(gaps):.1f} "
        f"points on average (95th percentile {np.percentile(gaps, 95):.1f}); mean width "
        f"{statistics.mean(widths):.0f} points one-step, {statistics.mean(exact_widths):.0f} exact"
    )


def _scipy_newton_cg(tally: Tally, start: np.ndarray) -> tuple[np.ndarray, int]:
    """scipy's minimize(method="Newton-CG") from `start` on the same objective (what the fit
    used before issue 20, from zero), with the passes over every pair it makes."""
    from scipy.optimize import minimize
    from scipy.special import expit

    red, blue = tally.player_pairs()
    matches, wins, players = tally.pair_matches, tally.pair_wins, tally.players
    prior = rating_module.PRIOR_PRECISION
    passes = 0

    def objective(strength: np.ndarray) -> tuple[float, np.ndarray]:
        nonlocal passes
        passes += 1
        difference = strength[red] - strength[blue]
        value = float(
            matches @ np.logaddexp(0.0, difference)
            - wins @ difference
            + 0.5 * prior * (strength @ strength)
        )
        residual = matches * expit(difference) - wins
        gradient = np.bincount(red, residual, players) - np.bincount(blue, residual, players)
        return value, gradient + prior * strength

    def hessian_times(strength: np.ndarray, direction: np.ndarray) -> np.ndarray:
        nonlocal passes
        passes += 1
        probability = expit(strength[red] - strength[blue])
        change = matches * probability * (1 - probability) * (direction[red] - direction[blue])
        spread = np.bincount(red, change, players) - np.bincount(blue, change, players)
        return np.asarray(spread + prior * direction)

    result = minimize(
        objective,
        start,
        jac=True,
        hessp=hessian_times,
        method="Newton-CG",
        options={"xtol": rating_module.STRENGTH_TOLERANCE},
    )
    return result.x, passes


def _warm_starts(landing: int) -> None:
    """A fit from the previous solution once `landing` more matches landed, against one from
    zero and against scipy's Newton-CG from the same start."""
    for reds, blues, count in ((500, 500, 10_000), *((r, b, MATCHES) for r, b in SHAPES[:2])):
        outcomes = _competition(reds, blues, count + landing, seed=reds + count)
        tally = Tally()
        tally.add(_pairs(outcomes[:count]))
        previous = fit_strengths(tally).strength
        old_reds = tally.reds
        tally.add(_pairs(outcomes[count:]))
        start = np.zeros(tally.players)
        start[:old_reds] = previous[:old_reds]
        start[tally.reds : tally.reds + previous.size - old_reds] = previous[old_reds:]
        warm_time, warm = _timed(partial(fit_strengths, tally, start))
        cold_time, cold = _timed(partial(fit_strengths, tally))
        scipy_time, (scipy_strength, scipy_passes) = _timed(partial(_scipy_newton_cg, tally, start))
        gap = float(np.abs(warm.strength - cold.strength).max())
        print(
            f"  {count:,} matches ({reds:,} x {blues:,}), {landing} more: from the previous "
            f"solution {warm_time * 1000:.0f} ms ({warm.newton_steps} steps, {warm.passes} "
            f"passes), from zero {cold_time * 1000:.0f} ms ({cold.passes} passes), scipy "
            f"Newton-CG from the previous {scipy_time * 1000:.0f} ms ({scipy_passes} passes); "
            f"warm and cold apart by {gap:.1e} logits at most, scipy "
            f"{float(np.abs(scipy_strength - cold.strength).max()):.1e}"
        )


def _pairs(outcomes: list[MatchOutcome]) -> list[PairResults]:
    return [PairResults(m.red, m.blue, 1, int(m.red_won)) for m in outcomes]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--resamples", type=int, default=rating_module.DEFAULT_RESAMPLES)
    parser.add_argument("--exact", action="store_true", help="compare with exact refits")
    parser.add_argument(
        "--warm", action="store_true", help="fits from the previous solution after 100 matches"
    )
    arguments = parser.parse_args()

    print(f"{platform.node()}: {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    print(f"{MATCHES:,} matches, {arguments.resamples} resamples, seed 0")
    for reds, blues in SHAPES:
        outcomes = _competition(reds, blues, MATCHES, seed=reds)
        compute_ratings(outcomes[:1000], resamples=arguments.resamples)  # imports, caches
        times = []
        for _ in range(arguments.repeat):
            started = time.perf_counter()
            compute_ratings(outcomes, resamples=arguments.resamples)
            times.append(time.perf_counter() - started)
        print(
            f"  {reds:>5,} red x {blues:>5,} blue: best {min(times):.3f} s, "
            f"median {statistics.median(times):.3f} s  ({_phases(outcomes, arguments.resamples)})"
        )
    if arguments.exact:
        for reds, blues in SHAPES[:2]:
            _compare_with_exact_refits(reds, blues, arguments.resamples)
    if arguments.warm:
        _warm_starts(100)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
