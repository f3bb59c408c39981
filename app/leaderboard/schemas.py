from __future__ import annotations

import uuid
from datetime import datetime

from app.schemas import OutputSchema
from app.scoring.strategies import Strategy


class LeaderboardItem(OutputSchema):
    rank: int
    participant: str
    attempt_id: uuid.UUID
    score: float | None
    succeeded: bool | None
    tokens_total: int | None
    elapsed_ms: int | None
    rating: float | None
    created_at: datetime


class Leaderboard(OutputSchema):
    challenge_id: uuid.UUID
    strategy: Strategy
    items: list[LeaderboardItem]
    total: int
    limit: int
    offset: int
