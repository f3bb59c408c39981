"""What every challenge has, whatever its kind: visibility, schedule and limits."""

from __future__ import annotations

import hashlib
from enum import StrEnum
from typing import Any, Self

from pydantic import ConfigDict, Field

from app.kit.schemas import InputSchema


class Visibility(StrEnum):
    """`public`: anyone reads the leaderboard, the web UI lists it; `unlisted`: the tenant's
    signed-in participants see it in the web UI; `private`: through the API only."""

    PUBLIC = "public"
    UNLISTED = "unlisted"
    PRIVATE = "private"


class ChallengeState(StrEnum):
    """Where a challenge is in its organizer's hands, besides its schedule."""

    # Its tenant's admins only (read, edit, test): never listed, never playable.
    DRAFT = "draft"
    # Played by its schedule (`ChallengeStatus`: upcoming, open, closed).
    LIVE = "live"
    # Hidden from lists and read-only; its pages, boards and exports are kept.
    ARCHIVED = "archived"


class ChallengeStatus(StrEnum):
    """What a challenge is now: a draft, archived, or, when live, where it is in its schedule
    (computed from `opens_at` and `closes_at`)."""

    DRAFT = "draft"
    UPCOMING = "upcoming"
    OPEN = "open"
    CLOSED = "closed"
    ARCHIVED = "archived"


# Practice runs a participant may make a day when the challenge says nothing: enough to try a
# few ideas, few enough that practice is no free way around the attempt limits.
DEFAULT_PRACTICE_PER_DAY = 20


class LimitsConfig(InputSchema):
    """A challenge's limits, one document: the core's (attempts per participant, prompt
    length) and the kind's own, which ride along as extra fields and are validated by the
    kind's `limits_model` (`app.challenge.challenge_kind`; red_blue's defense and attack
    lengths)."""

    model_config = ConfigDict(extra="allow", allow_inf_nan=False)

    max_attempts_per_day: int | None = Field(default=None, ge=1, le=1_000_000)
    max_attempts_total: int | None = Field(default=None, ge=1, le=10_000_000)
    max_prompt_chars: int | None = Field(default=None, ge=1, le=1_000_000)
    max_practice_per_day: int = Field(
        default=DEFAULT_PRACTICE_PER_DAY,
        ge=0,
        le=10_000,
        description="Practice (unscored) runs per participant per UTC day, counted apart from "
        "the attempt limits; 0 turns practice off.",
    )
    max_team_size: int | None = Field(
        default=None,
        ge=2,
        le=100,
        description="Members a team may have (docs/teams.md); null: no teams, individual play "
        "only. A team's members share the limits above, as one participant.",
    )
    team_joins_after_first_entry: bool = Field(
        default=False,
        description="Whether a participant may still join a team once it has submitted an "
        "entry here (by default joining closes at the team's first entry).",
    )

    @property
    def kind_limits(self) -> dict[str, Any]:
        """The kind's limits as given (a null counts as not given)."""
        return {
            name: value for name, value in (self.model_extra or {}).items() if value is not None
        }

    @property
    def counts_attempts(self) -> bool:
        """Whether a submission must count the participant's attempts (under a lock)."""
        return bool(self.max_attempts_total or self.max_attempts_per_day)

    def prompt_limit(self, server_cap: int) -> int:
        """The longest text a participant may submit: the challenge's limit, never above the
        server's (GAUNTLET_MAX_PROMPT_CHARS)."""
        return min(self.max_prompt_chars or server_cap, server_cap)


class KindLimits(InputSchema):
    """A kind's own limits (its `limits_model`): fields of the challenge's `limits` document
    beside the core's; unknown ones refused."""

    @classmethod
    def of(cls, limits: LimitsConfig) -> Self:
        """The kind's limits of a challenge (validated when it was saved)."""
        return cls.model_validate(limits.kind_limits)


# A page's Markdown: long enough for a competition's full rules, short enough to render in a
# request.
MAX_PAGE_CHARS = 100_000
_PAGE = "Markdown (CommonMark with tables), shown sanitized: raw HTML is shown as text."


class ChallengePages(InputSchema):
    """A challenge's pages, shown as tabs on its page, each Markdown ('' : no such tab).
    Rules, when written, are what a participant accepts before a first submission."""

    overview: str = Field(default="", max_length=MAX_PAGE_CHARS, description=_PAGE)
    rules: str = Field(
        default="",
        max_length=MAX_PAGE_CHARS,
        description=_PAGE + " When not empty, each participant accepts them before their "
        "first submission (POST /v1/challenges/{id}/rules/acceptance).",
    )
    data: str = Field(
        default="", max_length=MAX_PAGE_CHARS, description=_PAGE + " The data or tasks."
    )
    evaluation: str = Field(
        default="",
        max_length=MAX_PAGE_CHARS,
        description=_PAGE + " How entries are judged and ranked, in words.",
    )

    @property
    def rules_sha256(self) -> str | None:
        """The version of the rules a participant accepts: the SHA-256 of their text (with
        line ends and surrounding blanks made uniform); None when there are none."""
        text = "\n".join(line.rstrip() for line in self.rules.strip().splitlines())
        if not text:
            return None
        return hashlib.sha256(text.encode()).hexdigest()


class ChallengePagesUpdate(InputSchema):
    """The pages to change; those not named stay as they are."""

    overview: str | None = Field(default=None, max_length=MAX_PAGE_CHARS)
    rules: str | None = Field(default=None, max_length=MAX_PAGE_CHARS)
    data: str | None = Field(default=None, max_length=MAX_PAGE_CHARS)
    evaluation: str | None = Field(default=None, max_length=MAX_PAGE_CHARS)
