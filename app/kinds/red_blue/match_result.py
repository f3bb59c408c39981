"""How a match ended: one type from the worker's verdict to the match's row.

The shapes a match takes, from its pairing to the ratings:

- pairing inserts it: a row of the matches table (`worker._make_matches`, the ids of the
  attack, the defense and both participants);
- a worker claims it: `cross_tenant.ClaimedMatch`, the claim statement's row (its run number
  and the exact texts of the call, kept by the claim);
- the worker plays it: `worker.MatchJob`, the inputs of one playable match (the claimed texts
  with the challenge's rules);
- it ends: a `MatchResult` (here), judged or failed, which `cross_tenant.finish_match` writes
  to the row's columns in the transaction that lands it on its board;
- the recompute reads what landed: `cross_tenant.Landed`, columns of participant ids and
  counts (never an object per match: a board may have millions), summed per pair into the
  rules' `Tally`; `rules.ratings.MatchOutcome` is one such comparison (red, blue, whether red
  won), for rating a list of matches from scratch (`compute_ratings`);
- what the recompute writes is no longer a match: a participant's row on a board
  (`cross_tenant.RatingRow`).

A one-off match (practice, a test run: `one_off.py`) is judged the same way and kept as an
attempt's trial instead of a match row.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    # Types only: the API reads and writes match rows without loading the worker's modules.
    from app.kinds.api.evaluation import CallRecord, VerifierResult
    from app.kinds.api.leases import Failure
    from app.kinds.red_blue.rules.judging import CategoryVerdict, MatchJudgement


@dataclass(frozen=True, slots=True)
class JudgedCategory:
    """One category's verdict with what its verifier said."""

    verdict: CategoryVerdict
    raw_eval_output: str

    def stored(self) -> dict[str, Any]:
        """As the match's `verdicts` document keeps it (and a one-off's trial)."""
        verdict = self.verdict
        return {
            "category": verdict.category,
            "breached": verdict.breached,
            "rating": verdict.rating,
            "red_points": verdict.red_points,
            "blue_points": verdict.blue_points,
            "raw_eval_output": self.raw_eval_output,
        }


@dataclass(frozen=True, slots=True)
class JudgedMatch:
    """A match whose target call and every verifier succeeded: the target's answer, each
    category's verdict (in the suite's order), both sides' points, and the call's usage."""

    output: str
    categories: tuple[JudgedCategory, ...]
    red_points: int
    blue_points: int
    tokens_total: int
    elapsed_ms: int
    # The target call's price (None: unpriced); the judges' calls are in the match's spend.
    cost_usd: float | None

    @property
    def breached(self) -> list[str]:
        return [c.verdict.category for c in self.categories if c.verdict.breached]

    @property
    def attack_won(self) -> bool:
        """The attack wins when it breached at least one category (the ratings count it)."""
        return any(c.verdict.breached for c in self.categories)

    def stored_verdicts(self) -> list[dict[str, Any]]:
        return [category.stored() for category in self.categories]


# A match ends judged, or in error (a `Failure`: the reason participants read, the detail
# tenant admins read), which counts for no one.
MatchResult: TypeAlias = "JudgedMatch | Failure"


def judged(
    judgement: MatchJudgement, results: Mapping[str, VerifierResult], target: CallRecord
) -> JudgedMatch:
    """The match's result from its judgement, each category's verifier result (by name) and
    the target call."""
    return JudgedMatch(
        output=target.output,
        categories=tuple(
            JudgedCategory(verdict, results[verdict.category].raw_eval_output)
            for verdict in judgement.verdicts
        ),
        red_points=judgement.red_points,
        blue_points=judgement.blue_points,
        tokens_total=target.input_tokens + target.output_tokens,
        elapsed_ms=target.elapsed_ms,
        cost_usd=target.cost_usd,
    )
