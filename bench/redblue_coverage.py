"""How often the red-blue "95 %" intervals hold the true strength: simulated tournaments with
known strengths, rated by the service's own functions, in the regimes where the intervals
are hardest (few matches per participant, lopsided play, wide or heavy-tailed strengths) and
easiest (many), overall and where people look: the true top decile.

    .venv/bin/python bench/redblue_coverage.py                  # every regime, 200 tournaments
    .venv/bin/python bench/redblue_coverage.py --tournaments 50 --regimes 100x4,30x3

A regime is `PLAYERSxMATCHES` (participants, half red and half blue, and matches each between
random red-blue pairs, outcomes drawn from Bradley-Terry), with options after colons:
`:spread2` (true strengths' standard deviation 2 logits; else `--spread`, default 1.41, the
old fixed prior's), `:t3` (strengths drawn from Student's t with 3 degrees of freedom, unit
scale: standard deviation 1.73, heavy tails), `:strong5` (the truly strongest fifth of each
side is drawn into matches five times as often as the rest, as a pairing that favours the
best-rated would: the ratings' model takes how often one plays to say nothing of its
strength), and `+NxK` (N newcomers, half red and half blue, who then play K matches each
against the others). The default list keeps the regimes measured before (10x40 to 1000x10)
and adds those where the intervals fell short.

Each tournament is rated as a board's interval refresh rates it (the prior fitted to the
matches, then 100 resamples), with a seed of its own. Printed per regime: the share of
participants whose interval holds its true strength (centred on the truth's mean, since
Bradley-Terry sees only differences); the same for the true top decile (of all
participants, red and blue on their one scale), and its mean error (rating - truth, in
points: negative, rated too low), and the error of the decile rated highest; the same share
for participants who won or lost every match (how many there were per tournament); the mean
width of finite intervals; how many share rank 1 on the red side; and the fitted prior's
standard deviation. An interval may be open at one end (a participant who won every match
has no upper bound from its matches). `--one-step` also rates each tournament with the
one-step resamples that boards over REFIT_PAIRS distinct pairs get.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.kinds.red_blue.rules.ratings import (
    DEFAULT_RESAMPLES,
    POINTS_PER_LOGIT,
    MatchOutcome,
    Tally,
    bootstrap_bounds,
    fit_strengths,
    interval_ranks,
)
from bench import common

REGIMES = (
    "10x40,100x4,100x20,100x200,1000x10,100x20:strong5,100x20:spread2,30x3,500x50+10x2,100x20:t3"
)
DEFAULT_SPREAD = math.sqrt(2.0)
# `:strongN`: this share of each side, the truly strongest, plays N times as often.
STRONG_SHARE = 0.2


@dataclass(frozen=True)
class Regime:
    label: str
    players: int
    per_player: int
    spread: float
    heavy_tailed: bool
    strong_factor: float
    newcomers: int
    newcomer_matches: int

    @classmethod
    def parse(cls, text: str, spread: float) -> Regime:
        head, *options = text.split(":")
        newcomers = newcomer_matches = 0
        if "+" in head:
            head, joining = head.split("+")
            newcomers, newcomer_matches = (int(part) for part in joining.split("x"))
        players, per_player = (int(part) for part in head.split("x"))
        heavy_tailed, strong_factor = False, 1.0
        for option in options:
            if option.startswith("spread"):
                spread = float(option.removeprefix("spread"))
            elif option == "t3":
                heavy_tailed = True
            elif option.startswith("strong"):
                strong_factor = float(option.removeprefix("strong"))
            else:
                raise SystemExit(f"unknown regime option {option!r} in {text!r}")
        return cls(
            text,
            players,
            per_player,
            spread,
            heavy_tailed,
            strong_factor,
            newcomers,
            newcomer_matches,
        )


def _draw_strengths(regime: Regime, count: int, rng: np.random.Generator) -> np.ndarray:
    if regime.heavy_tailed:
        return rng.standard_t(3, count)
    return rng.normal(0.0, regime.spread, count)


def tournament(
    regime: Regime, rng: np.random.Generator
) -> tuple[list[MatchOutcome], dict[str, float]]:
    players = regime.players
    reds = [f"r{i:04d}" for i in range(players // 2)]
    blues = [f"b{i:04d}" for i in range(players - players // 2)]
    truth = dict(zip(reds + blues, _draw_strengths(regime, players, rng), strict=True))
    matches = []
    count = players * regime.per_player // 2
    if regime.strong_factor == 1.0:
        # One draw at a time, as the bench always drew: the regimes measured before keep their
        # tournaments.
        for _ in range(count):
            red, blue = reds[rng.integers(len(reds))], blues[rng.integers(len(blues))]
            red_wins = rng.random() < 1.0 / (1.0 + math.exp(truth[blue] - truth[red]))
            matches.append(MatchOutcome(red, blue, bool(red_wins)))
    else:
        sides = []
        for names in (reds, blues):
            strengths = np.array([truth[name] for name in names])
            weight = np.where(
                strengths >= np.quantile(strengths, 1.0 - STRONG_SHARE), regime.strong_factor, 1.0
            )
            sides.append(weight / weight.sum())
        red_picks = rng.choice(len(reds), count, p=sides[0])
        blue_picks = rng.choice(len(blues), count, p=sides[1])
        chances = rng.random(count)
        for red_pick, blue_pick, chance in zip(red_picks, blue_picks, chances, strict=True):
            red, blue = reds[red_pick], blues[blue_pick]
            red_wins = chance < 1.0 / (1.0 + math.exp(truth[blue] - truth[red]))
            matches.append(MatchOutcome(red, blue, bool(red_wins)))
    if regime.newcomers:
        new_reds = [f"nr{i:03d}" for i in range(regime.newcomers // 2)]
        new_blues = [f"nb{i:03d}" for i in range(regime.newcomers - regime.newcomers // 2)]
        fresh = _draw_strengths(regime, regime.newcomers, rng)
        truth.update(zip(new_reds + new_blues, fresh, strict=True))
        for newcomer in new_reds + new_blues:
            for _ in range(regime.newcomer_matches):
                if newcomer in new_reds:
                    red, blue = newcomer, blues[rng.integers(len(blues))]
                else:
                    red, blue = reds[rng.integers(len(reds))], newcomer
                red_wins = rng.random() < 1.0 / (1.0 + math.exp(truth[blue] - truth[red]))
                matches.append(MatchOutcome(red, blue, bool(red_wins)))
    return matches, truth


@dataclass
class Figures:
    """Sums over a regime's tournaments."""

    covered: int = 0
    total: int = 0
    top_covered: int = 0
    top_total: int = 0
    top_error: float = 0.0
    rated_top_error: float = 0.0
    perfect_covered: int = 0
    perfect_total: int = 0
    width: float = 0.0
    finite: int = 0
    first: int = 0
    prior_deviation: float = 0.0


def rate(
    matches: list[MatchOutcome],
    truth: dict[str, float],
    seed: int,
    refit: bool | None,
    figures: Figures,
) -> None:
    """Rates one tournament as a board's interval refresh does (`refit` None; False: the
    one-step resamples of the largest boards) and adds its figures."""
    tally = Tally.of(matches)
    fit = fit_strengths(tally)
    strength = fit.strength
    low, high = bootstrap_bounds(
        tally,
        strength,
        prior_precision=fit.prior_precision,
        resamples=DEFAULT_RESAMPLES,
        seed=seed,
        refit=refit,
    )
    names = [*tally.red_names, *tally.blue_names]
    true = np.array([truth[name] for name in names])
    true -= true.mean()
    held = (low <= true) & (true <= high)
    decile = max(1, math.ceil(len(names) / 10))
    top = np.argsort(-true, kind="stable")[:decile]
    rated_top = np.argsort(-strength, kind="stable")[:decile]
    played, wins = tally.played(), tally.wins()
    perfect = (wins == played) | (wins == 0)
    finite = np.isfinite(low) & np.isfinite(high)
    red = slice(0, tally.reds)
    figures.covered += int(held.sum())
    figures.total += len(names)
    figures.top_covered += int(held[top].sum())
    figures.top_total += len(top)
    figures.top_error += float((strength[top] - true[top]).sum()) * POINTS_PER_LOGIT
    figures.rated_top_error += (
        float((strength[rated_top] - true[rated_top]).sum()) * POINTS_PER_LOGIT
    )
    figures.perfect_covered += int(held[perfect].sum())
    figures.perfect_total += int(perfect.sum())
    figures.width += float((high - low)[finite].sum()) * POINTS_PER_LOGIT
    figures.finite += int(finite.sum())
    figures.first += int(np.sum(interval_ranks(low[red], high[red]) == 1))
    figures.prior_deviation += 1.0 / math.sqrt(fit.prior_precision)


def _share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f} %" if whole else "-"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--regimes", default=REGIMES, help="comma-separated, see above")
    parser.add_argument("--tournaments", type=int, default=200)
    parser.add_argument(
        "--spread", type=float, default=DEFAULT_SPREAD, help="true strengths' sd (logits)"
    )
    parser.add_argument(
        "--one-step",
        action="store_true",
        help="also the one-step resamples (boards over REFIT_PAIRS distinct pairs)",
    )
    args = parser.parse_args()
    common.print_machine_info("red-blue interval coverage")
    print(f"   {args.tournaments} tournaments per regime, true strengths sd {args.spread:.3f}")
    print(
        "   regime | resamples | coverage | true top decile: coverage | its error (points) "
        "| rated top decile: error | won or lost all: coverage (per tournament) "
        "| mean finite width (points) | red sharing rank 1 | prior's sd | seconds"
    )
    ways: list[tuple[str, bool | None]] = [("as served", None)]
    if args.one_step:
        ways.append(("one-step", False))
    for text in args.regimes.split(","):
        regime = Regime.parse(text, args.spread)
        for label, refit in ways:
            started = time.perf_counter()
            rng = np.random.default_rng(20261127)
            figures = Figures()
            for number in range(args.tournaments):
                matches, truth = tournament(regime, rng)
                rate(matches, truth, number, refit, figures)
            _report(regime, label, figures, args.tournaments, time.perf_counter() - started)


def _report(regime: Regime, label: str, figures: Figures, runs: int, seconds: float) -> None:
    print(
        f"   {regime.label} | {label} | {_share(figures.covered, figures.total)} "
        f"| {_share(figures.top_covered, figures.top_total)} "
        f"| {figures.top_error / figures.top_total:+.0f} "
        f"| {figures.rated_top_error / figures.top_total:+.0f} "
        f"| {_share(figures.perfect_covered, figures.perfect_total)} "
        f"({figures.perfect_total / runs:.1f}) "
        f"| {figures.width / max(figures.finite, 1):.0f} "
        f"| {figures.first / runs:.1f} "
        f"| {figures.prior_deviation / runs:.2f} "
        f"| {seconds:.0f}",
        flush=True,
    )


if __name__ == "__main__":
    main()
