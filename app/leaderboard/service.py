from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy.orm import Session

from app.challenge.models import Challenge
from app.leaderboard import repository
from app.leaderboard.schemas import Leaderboard, LeaderboardItem


def read_leaderboard(
    session: Session, challenge: Challenge, *, limit: int, offset: int
) -> Leaderboard:
    rows, total = repository.page(session, challenge.id, limit=limit, offset=offset)
    items = [
        LeaderboardItem(
            rank=offset + position,
            participant=handle,
            attempt_id=entry.attempt_id,
            score=entry.score,
            succeeded=entry.succeeded,
            tokens_total=entry.tokens_total,
            elapsed_ms=entry.elapsed_ms,
            rating=entry.rating,
            created_at=datetime.fromtimestamp(entry.attempt_created_at_ms / 1000, UTC),
        )
        for position, (entry, handle) in enumerate(rows, start=1)
    ]
    return Leaderboard(
        challenge_id=challenge.id,
        strategy=str(challenge.scoring.get("strategy")),
        items=items,
        total=total,
        limit=limit,
        offset=offset,
    )
