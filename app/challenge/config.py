"""What every challenge has, whatever its kind: visibility, schedule and limits."""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field

from app.schemas import InputSchema


class Visibility(StrEnum):
    """`public`: anyone reads the leaderboard, the web UI lists it; `unlisted`: the tenant's
    signed-in participants see it in the web UI; `private`: through the API only."""

    PUBLIC = "public"
    UNLISTED = "unlisted"
    PRIVATE = "private"


class ChallengeStatus(StrEnum):
    """Where a challenge is in its schedule (computed from `opens_at` and `closes_at`)."""

    UPCOMING = "upcoming"
    OPEN = "open"
    CLOSED = "closed"


# Limits that only some kinds take (a kind lists those it takes in its `limit_fields`); the
# challenge service refuses them on challenges of other kinds, naming the kinds they are for.
KIND_LIMIT_FIELDS = ("max_defense_chars", "max_attack_chars")


class LimitsConfig(InputSchema):
    max_attempts_per_day: int | None = Field(default=None, ge=1, le=1_000_000)
    max_attempts_total: int | None = Field(default=None, ge=1, le=10_000_000)
    max_prompt_chars: int | None = Field(default=None, ge=1, le=1_000_000)
    max_defense_chars: int | None = Field(
        default=None,
        ge=1,
        le=1_000_000,
        description="red_blue challenges: the longest defense (system prompt); null: the "
        "server's cap (GAUNTLET_MAX_PROMPT_CHARS), which also bounds a larger value.",
    )
    max_attack_chars: int | None = Field(
        default=None,
        ge=1,
        le=1_000_000,
        description="red_blue challenges: the longest attack (user message); null: the "
        "server's cap (GAUNTLET_MAX_PROMPT_CHARS), which also bounds a larger value.",
    )

    @property
    def counts_attempts(self) -> bool:
        """Whether a submission must count the participant's attempts (under a lock)."""
        return bool(self.max_attempts_total or self.max_attempts_per_day)

    def prompt_limit(self, server_cap: int) -> int:
        """The longest text a participant may submit: the challenge's limit, never above the
        server's (GAUNTLET_MAX_PROMPT_CHARS)."""
        return min(self.max_prompt_chars or server_cap, server_cap)
