from __future__ import annotations

import uuid
from datetime import datetime

from pydantic import Field

from app.kit.schemas import OutputSchema
from app.scoring.strategies import Strategy


class LeaderboardItem(OutputSchema):
    rank: int = Field(
        description="1 for the best participant. A baseline's is where it would place (the "
        "rank of the participant after it): it takes no participant's rank."
    )
    participant: str = Field(description="The participant's handle, or the team's name.")
    members: list[str] | None = Field(
        default=None,
        description="A team's members, by handle, oldest member first (docs/teams.md); null "
        "for a participant playing alone.",
    )
    baseline: bool = Field(
        default=False, description="An admin's reference entry (a baseline), not a participant's."
    )
    attempt_id: uuid.UUID
    score: float | None
    succeeded: bool | None
    tokens_total: int | None
    elapsed_ms: int | None
    rating: float | None
    created_at: datetime


FROZEN_DESCRIPTION = (
    "True when this is the board as it stood at `frozen_at` (the challenge's freeze, until "
    "its close): results since are hidden from everyone but the challenge's admins."
)
FROZEN_AT_DESCRIPTION = (
    "While the challenge's public boards are frozen (from its `freeze_at` until its close): "
    "when they froze, for every reader (an admin's `frozen` is false: the live board); null "
    "otherwise."
)


class Leaderboard(OutputSchema):
    challenge_id: uuid.UUID
    strategy: Strategy
    items: list[LeaderboardItem]
    total: int
    limit: int
    offset: int
    frozen: bool = Field(default=False, description=FROZEN_DESCRIPTION)
    frozen_at: datetime | None = Field(default=None, description=FROZEN_AT_DESCRIPTION)
