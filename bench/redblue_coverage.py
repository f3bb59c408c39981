"""How often the red-blue "95 %" intervals hold the true strength: simulated tournaments with
known strengths, rated by the service's own functions, in the regimes where the intervals
are hardest (few matches per participant) and easiest (many).

    .venv/bin/python bench/redblue_coverage.py                  # every regime, 200 tournaments
    .venv/bin/python bench/redblue_coverage.py --tournaments 50 --regimes 100x4,1000x10

Each tournament: `players` participants, half red and half blue, true strengths drawn from a
normal distribution (standard deviation `--spread` logits; the default is the fit's prior,
1/√0.5), `matches per player` matches each between random red-blue pairs, outcomes drawn
from Bradley-Terry. The ratings are fitted and bootstrapped as a board's interval refresh does
(100 resamples), each tournament with a seed of its own. Printed per regime: the share of
participants whose interval holds its true strength (centred on the truth's mean, since
Bradley-Terry sees only differences), the mean interval width in rating points, and how many
participants share rank 1 on a side. The intervals are the service's (`bootstrap_bounds` as a
board refresh calls it: exact refits of each resample up to REFIT_PAIRS distinct pairs, every
regime here); with `--one-step`, also the one-step resamples (what boards above REFIT_PAIRS
get); with `--before`, the intervals as they were before resamples drew their prior's centre
too (the plain one-step bootstrap, percentiles).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.kinds.red_blue.rules.ratings import (
    DEFAULT_RESAMPLES,
    POINTS_PER_LOGIT,
    PRIOR_PRECISION,
    MatchOutcome,
    Tally,
    bootstrap_bounds,
    fit_strengths,
    interval_ranks,
)
from bench import common

REGIMES = "10x40,100x4,100x20,100x200,1000x10"


def tournament(
    players: int, per_player: int, spread: float, rng: np.random.Generator
) -> tuple[list[MatchOutcome], dict[str, float]]:
    reds = [f"r{i:04d}" for i in range(players // 2)]
    blues = [f"b{i:04d}" for i in range(players - players // 2)]
    truth = dict(zip(reds + blues, rng.normal(0.0, spread, players), strict=True))
    matches = []
    for _ in range(players * per_player // 2):
        red, blue = reds[rng.integers(len(reds))], blues[rng.integers(len(blues))]
        red_wins = rng.random() < 1.0 / (1.0 + math.exp(truth[blue] - truth[red]))
        matches.append(MatchOutcome(red, blue, bool(red_wins)))
    return matches, truth


class Way(NamedTuple):
    """A way of making the intervals: its label, the prior's precision (None: fitted to the
    matches, as served) and `bootstrap_bounds`'s other arguments."""

    label: str
    prior_precision: float | None
    bootstrap: dict[str, bool]


SERVED = Way("as served", None, {})
FIXED = Way("fixed prior", PRIOR_PRECISION, {})
ONE_STEP = Way("one-step", None, {"refit": False})
PLAIN = Way("plain one-step", PRIOR_PRECISION, {"prior_draws": False})


def rate(
    matches: list[MatchOutcome], truth: dict[str, float], seed: int, way: Way
) -> tuple[int, int, float, int, float]:
    """(participants covered, participants, summed width in points, sharing rank 1, the
    prior's standard deviation in logits)."""
    tally = Tally.of(matches)
    fit = fit_strengths(tally, prior_precision=way.prior_precision)
    strength = fit.strength
    low, high = bootstrap_bounds(
        tally,
        strength,
        prior_precision=fit.prior_precision,
        resamples=DEFAULT_RESAMPLES,
        seed=seed,
        **way.bootstrap,
    )
    names = [*tally.red_names, *tally.blue_names]
    true = np.array([truth[name] for name in names])
    true -= true.mean()
    covered = int(np.sum((low <= true) & (true <= high)))
    width = float(np.sum(high - low)) * POINTS_PER_LOGIT
    red = slice(0, tally.reds)
    first = int(np.sum(interval_ranks(low[red], high[red]) == 1))
    return covered, len(names), width, first, 1.0 / math.sqrt(fit.prior_precision)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--regimes", default=REGIMES, help="players x matches per player, ...")
    parser.add_argument("--tournaments", type=int, default=200)
    parser.add_argument("--spread", type=float, default=1.0 / math.sqrt(PRIOR_PRECISION))
    parser.add_argument(
        "--fixed-prior", action="store_true", help="also the fixed prior (before it was fitted)"
    )
    parser.add_argument("--one-step", action="store_true", help="also the one-step resamples")
    parser.add_argument("--before", action="store_true", help="also the plain bootstrap")
    args = parser.parse_args()
    common.print_machine_info("red-blue interval coverage")
    print(f"   {args.tournaments} tournaments per regime, true strengths sd {args.spread:.3f}")
    ways = [
        SERVED,
        *([FIXED] if args.fixed_prior else []),
        *([ONE_STEP] if args.one_step else []),
        *([PLAIN] if args.before else []),
    ]
    print(
        "   regime (players x matches each) | intervals | coverage | mean width (points) "
        "| red sharing rank 1 (mean) | prior's sd: mean (sd) | seconds"
    )
    for regime in args.regimes.split(","):
        players, per_player = (int(part) for part in regime.split("x"))
        for way in ways:
            started = time.perf_counter()
            rng = np.random.default_rng(20261127)
            covered = total = first = 0
            width = 0.0
            deviations = []
            for number in range(args.tournaments):
                matches, truth = tournament(players, per_player, args.spread, rng)
                found = rate(matches, truth, number, way)
                covered, total = covered + found[0], total + found[1]
                width, first = width + found[2], first + found[3]
                deviations.append(found[4])
            print(
                f"   {players} x {per_player} | {way.label} | {100 * covered / total:.1f} % "
                f"| {width / total:.0f} | {first / args.tournaments:.1f} "
                f"| {np.mean(deviations):.2f} ({np.std(deviations):.2f}) "
                f"| {time.perf_counter() - started:.0f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
