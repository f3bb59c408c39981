from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy.orm import Session

from app.attempt.models import Attempt
from app.challenge.models import Challenge
from app.leaderboard import repository
from app.leaderboard.models import LeaderboardEntry
from app.leaderboard.ranking import RankInput, rank_key
from app.leaderboard.schemas import Leaderboard, LeaderboardItem


def entry_for(attempt: Attempt, strategy: str) -> repository.EntryValues | None:
    """The leaderboard row a completed attempt would have, or None if it does not rank."""
    key = rank_key(
        strategy,
        RankInput(
            succeeded=attempt.succeeded,
            created_at_ms=attempt.created_at_ms,
            elapsed_ms=attempt.elapsed_ms,
            tokens_total=attempt.tokens_total,
            rating=attempt.rating,
            score=attempt.score,
            metric_at_k=(attempt.metrics or {}).get("metric_at_k"),
            cost_usd=attempt.cost_usd,
        ),
    )
    if key is None:
        return None
    return repository.EntryValues(
        tenant_id=attempt.tenant_id,
        challenge_id=attempt.challenge_id,
        participant_id=attempt.participant_id,
        attempt_id=attempt.id,
        key=key,
        attempt_created_at_ms=attempt.created_at_ms,
        score=attempt.score,
        succeeded=attempt.succeeded,
        tokens_total=attempt.tokens_total,
        elapsed_ms=attempt.elapsed_ms,
        rating=attempt.rating,
    )


def item_of(entry: LeaderboardEntry, handle: str, *, rank: int) -> LeaderboardItem:
    return LeaderboardItem(
        rank=rank,
        participant=handle,
        attempt_id=entry.attempt_id,
        score=entry.score,
        succeeded=entry.succeeded,
        tokens_total=entry.tokens_total,
        elapsed_ms=entry.elapsed_ms,
        rating=entry.rating,
        created_at=datetime.fromtimestamp(entry.attempt_created_at_ms / 1000, UTC),
    )


def read_leaderboard(
    session: Session, challenge: Challenge, *, limit: int, offset: int
) -> Leaderboard:
    rows, total = repository.page(session, challenge.id, limit=limit, offset=offset)
    items = [
        item_of(entry, handle, rank=offset + position)
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
