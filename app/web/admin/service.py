"""The tenant admin page: every challenge with the figures its kind counts."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy.orm import Session

from app.challenge import service as challenges
from app.challenge.config import ChallengeStatus
from app.challenge.models import Challenge
from app.challenge.service import challenge_status
from app.web.leaderboards.service import strategy_text
from app.web.web_kind import Count, StrategyText, by_kind


@dataclass(frozen=True)
class DashboardRow:
    challenge: Challenge
    status: ChallengeStatus
    strategy: StrategyText
    counts: Sequence[Count]


def dashboard_rows(session: Session, tenant_id: uuid.UUID, *, limit: int) -> list[DashboardRow]:
    """The tenant's newest challenges, each with its kind's figures (one read per kind)."""
    newest = challenges.newest_challenges(session, tenant_id, limit=limit)
    counts: dict[uuid.UUID, Sequence[Count]] = {}
    for kind, of_kind in by_kind(newest):
        ids = [challenge.id for challenge in of_kind]
        counts.update(kind.dashboard_counts(session, tenant_id, ids))
    return [
        DashboardRow(c, challenge_status(c), strategy_text(c), counts.get(c.id, ())) for c in newest
    ]
