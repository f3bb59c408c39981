"""Bodies and views of the red_blue kind's endpoints."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import Field, field_validator

from app.kinds.api import (
    FROZEN_AT_DESCRIPTION,
    FROZEN_DESCRIPTION,
    Handle,
    InputSchema,
    KindMetrics,
    KindSubmission,
    OutputSchema,
    SubmittedText,
)
from app.kinds.red_blue.models import DefenseStatus, MatchStatus, Side
from app.kinds.red_blue.rules.final_round import Phase as FinalRoundPhase


def _storable(value: str) -> str:
    if "\x00" in value:
        raise ValueError("must not contain NUL characters")
    if not value.strip():
        raise ValueError("must not be blank")
    return value


class DefenseCreate(InputSchema):
    """A blue participant's defense: the system prompt the target answers attacks behind."""

    participant: Handle | None = Field(
        default=None,
        description="The participant's handle, created on first use. Required with a tenant key.",
    )
    system_prompt: str = Field(min_length=1)
    baseline: bool = Field(
        default=False,
        description="Tenant admin keys only: an admin's reference entry (a baseline). It plays "
        "matches as any entry does; its board row is marked and ranked where it would place, "
        "taking no participant's rank, and its points count for no team. Give baselines "
        "handles of their own.",
    )

    @field_validator("system_prompt")
    @classmethod
    def _checked(cls, value: str) -> str:
        return _storable(value)


class AttackCreate(InputSchema):
    """A red participant's attack: the user message sent to the target behind defenses."""

    participant: Handle | None = Field(
        default=None,
        description="The participant's handle, created on first use. Required with a tenant key.",
    )
    prompt: str = Field(min_length=1)
    baseline: bool = Field(
        default=False,
        description="Tenant admin keys only: an admin's reference entry (a baseline). It plays "
        "matches as any entry does; its board row is marked and ranked where it would place, "
        "taking no participant's rank, and its points count for no team. Give baselines "
        "handles of their own.",
    )

    @field_validator("prompt")
    @classmethod
    def _checked(cls, value: str) -> str:
        return _storable(value)


class MatchCounts(OutputSchema):
    queued: int = 0
    running: int = 0
    completed: int = 0
    error: int = 0


class DefenseRead(OutputSchema):
    id: uuid.UUID
    challenge_id: uuid.UUID
    participant: str = Field(description="The participant's handle, or the team's name.")
    submitted_by: str | None = Field(
        description="A team's entry: the handle of the member who submitted it "
        "(`participant` is the team's name); null for a participant playing alone.",
    )
    status: DefenseStatus
    system_prompt: str | None = Field(
        description="Tenant keys and the defense's own participant only; null otherwise."
    )
    reason: str | None = Field(description="Why it was rejected, or why its self-test failed.")
    error_detail: str | None = Field(default=None, description="Tenant admins only.")
    self_test_output: str | None = Field(
        default=None, description="The target's answer to the self-test prompt (as above)."
    )
    created_at: datetime
    finished_at: datetime | None
    baseline: bool = Field(default=False, description="An admin's reference entry.")
    paired: bool
    matches: MatchCounts | None = None


class AttackRead(OutputSchema):
    id: uuid.UUID
    challenge_id: uuid.UUID
    participant: str = Field(description="The participant's handle, or the team's name.")
    submitted_by: str | None = Field(
        description="A team's entry: the handle of the member who submitted it "
        "(`participant` is the team's name); null for a participant playing alone.",
    )
    prompt: str | None = Field(
        description="Tenant keys and the attack's own participant only; null otherwise."
    )
    status: str = Field(description="'pending' until paired, then 'paired'.")
    created_at: datetime
    paired: bool
    baseline: bool = Field(default=False, description="An admin's reference entry.")
    matches: MatchCounts | None = None


class VerdictRead(OutputSchema):
    category: str
    breached: bool
    rating: float | None
    red_points: int
    blue_points: int
    raw_eval_output: str | None = None


class MatchSummary(OutputSchema):
    id: uuid.UUID
    challenge_id: uuid.UUID
    attack_id: uuid.UUID
    defense_id: uuid.UUID
    red_participant: str
    blue_participant: str
    status: MatchStatus
    breached: list[str] | None
    red_points: int | None
    blue_points: int | None
    attack_won: bool | None
    tokens_total: int | None
    elapsed_ms: int | None
    cost_usd: float | None
    error: str | None
    created_at: datetime
    finished_at: datetime | None
    final_round: bool = Field(
        default=False,
        description="Made by the challenge's final round at its close, not by pairing.",
    )


class MatchRead(MatchSummary):
    """A match with the exact call: what each reader may see of it (see docs/redblue.md)."""

    system_prompt: str | None
    user_message: str | None
    output: str | None
    verdicts: list[VerdictRead] | None
    error_detail: str | None = Field(default=None, description="Tenant admins only.")
    run_count: int


class MatchList(OutputSchema):
    items: list[MatchSummary]
    total: int
    # The page asked for: `limit` items at most, after `offset`.
    limit: int
    offset: int


class BoardItem(OutputSchema):
    rank: int = Field(
        description="1 + the participants of the side whose interval lies wholly above this "
        "one's (baselines count for no one: a baseline's rank is where it would place)."
    )
    tied: bool = Field(
        description="Another participant shares this rank: their 95 % intervals overlap, so "
        "neither is told apart from the other (a rank counts the participants entirely above)."
    )
    participant: str = Field(description="The participant's handle, or the team's name.")
    members: list[str] | None = Field(
        default=None,
        description="A team's members, by handle, oldest member first (docs/teams.md); null "
        "for a participant playing alone.",
    )
    baseline: bool = Field(
        default=False, description="An admin's reference entries (a baseline), not a participant."
    )
    rating: float = Field(description="Bradley-Terry rating (1000: the average participant).")
    rating_low: float | None = Field(
        description="Low end of the rating's 95 % interval; null where the interval is open "
        "below: the participant lost every match, which bounds its rating from above only."
    )
    rating_high: float | None = Field(
        description="High end of that interval; null where it is open above: the participant "
        "won every match, which bounds its rating from below only."
    )
    points: int
    matches: int
    wins: int


class SideBoardItem(BoardItem):
    """A row of either side's board, saying which (the leaderboard export)."""

    side: Side


class FinalRoundRead(OutputSchema):
    """Where a challenge with a final round stands (docs/redblue.md, "Final round")."""

    phase: FinalRoundPhase = Field(
        description="upcoming (not closed), starting (closed; waits for the self-tests still "
        "running), playing (its matches are being played), rating (all played; the final "
        "ratings are being computed), final (the boards are final)."
    )
    matches_played: int | None = Field(
        description="The round's matches finished (judged or error); null for those who see "
        "the boards frozen (which pairs the round plays depends on entries made since)."
    )
    matches_total: int | None = Field(description="The round's matches (null as above).")
    made_at: datetime | None = Field(default=None, description="When the round was made.")
    played_at: datetime | None = Field(
        default=None, description="When every one of its matches was found finished."
    )


class RedBlueLeaderboard(OutputSchema):
    challenge_id: uuid.UUID
    side: Side
    items: list[BoardItem]
    total: int
    limit: int
    offset: int
    computed_at: datetime | None = Field(description="When the ratings were last recomputed.")
    intervals_computed_at: datetime | None = Field(
        default=None,
        description="When the intervals were last bootstrapped (at a bounded rate; in "
        "between, each interval keeps its width around the moved rating).",
    )
    frozen: bool = Field(default=False, description=FROZEN_DESCRIPTION)
    frozen_at: datetime | None = Field(default=None, description=FROZEN_AT_DESCRIPTION)
    final_round: FinalRoundRead | None = Field(
        default=None, description="The challenge's final round; null when it has none."
    )


class Standings(OutputSchema):
    challenge_id: uuid.UUID
    red_points: int
    blue_points: int
    red_share: float | None = Field(description="red / (red + blue); null before any point.")
    matches: int = Field(description="Judged matches the standings count.")
    computed_at: datetime | None
    pending: bool = Field(description="Matches landed since; a recompute is due.")
    frozen: bool = Field(default=False, description=FROZEN_DESCRIPTION)
    frozen_at: datetime | None = Field(default=None, description=FROZEN_AT_DESCRIPTION)
    final_round: FinalRoundRead | None = Field(
        default=None, description="The challenge's final round; null when it has none."
    )


def verdict_views(verdicts: list[dict[str, Any]] | None, *, full: bool) -> list[VerdictRead] | None:
    if verdicts is None:
        return None
    return [
        VerdictRead(
            category=v["category"],
            breached=v["breached"],
            rating=v.get("rating"),
            red_points=v["red_points"],
            blue_points=v["blue_points"],
            raw_eval_output=v.get("raw_eval_output") if full else None,
        )
        for v in verdicts
    ]


class OneOffMatch(KindSubmission):
    """The fields of a red_blue practice or test run."""

    prompt: SubmittedText = Field(description="The attack: the user message sent to the target.")
    system_prompt: SubmittedText | None = Field(
        default=None,
        description="The defense: the target's system prompt. A practice run without one "
        "plays against the participant's newest active defense; a test run needs one.",
    )


class OneOffVerdicts(KindMetrics):
    """What a real match between this defense and this attack would have given."""

    breached: list[str]
    red_points: int
    blue_points: int
    verdicts: list[dict[str, Any]]


def verdicts_of(details: dict[str, Any] | None) -> OneOffVerdicts | None:
    """The verdicts a one-off match's trial keeps (None for a trial that has none)."""
    try:
        return OneOffVerdicts.model_validate(details or {})
    except ValueError:
        return None
