from __future__ import annotations

import uuid
from datetime import datetime

from app.kit.schemas import OutputSchema
from app.rescore.models import RescoreStatus


class RescoreJobRead(OutputSchema):
    id: uuid.UUID
    challenge_id: uuid.UUID
    status: RescoreStatus
    reason: str
    total: int | None
    processed: int
    error: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


class RescoreJobList(OutputSchema):
    items: list[RescoreJobRead]
    total: int
    # The page asked for: `limit` items at most, after `offset`.
    limit: int
    offset: int
