"""The leaderboard layer's view of a challenge kind (see `app.challenge.challenge_kind`): what
`GET /v1/challenges/{id}/leaderboard` (and its public twin) answers for the kind's challenges.

Kinds whose attempts rank one row per participant by the scoring strategy keep the default.
A kind that ranks otherwise (ratings of attacks and defenses, say) reads its own tables here,
and may take query parameters of its own (`params`: those besides `limit` and `offset`).
Whatever it reads, it shows non-admins the board frozen in a freeze (app.leaderboard.freeze).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from pydantic import BaseModel
from sqlalchemy.orm import Session

from app.auth.subjects import Audience
from app.challenge.models import Challenge
from app.challenge.registry import kind_as
from app.challenge.service import get_challenge, public_challenge
from app.leaderboard.service import read_leaderboard


class LeaderboardKind:
    def read_leaderboard(
        self,
        session: Session,
        challenge: Challenge,
        audience: Audience,
        *,
        limit: int,
        offset: int,
        params: Mapping[str, str],
    ) -> BaseModel:
        """A page of the challenge's leaderboard as the audience sees it, best first (the
        generic `Leaderboard`)."""
        return read_leaderboard(session, challenge, audience, limit=limit, offset=offset)


def _read(
    session: Session,
    challenge: Challenge,
    audience: Audience,
    *,
    limit: int,
    offset: int,
    params: Mapping[str, str],
) -> BaseModel:
    kind = kind_as(challenge.kind, LeaderboardKind)
    return kind.read_leaderboard(
        session, challenge, audience, limit=limit, offset=offset, params=params
    )


def read_tenant_leaderboard(
    session: Session,
    tenant_id: uuid.UUID,
    challenge_id: uuid.UUID,
    audience: Audience,
    *,
    limit: int,
    offset: int,
    params: Mapping[str, str],
) -> BaseModel:
    challenge = get_challenge(session, tenant_id, challenge_id)
    return _read(session, challenge, audience, limit=limit, offset=offset, params=params)


def read_public_leaderboard(
    session: Session,
    tenant_slug: str,
    challenge_slug: str,
    *,
    limit: int,
    offset: int,
    params: Mapping[str, str],
) -> BaseModel:
    """The leaderboard of a public challenge, for anyone; other challenges answer 404."""
    challenge = public_challenge(session, tenant_slug, challenge_slug)
    return _read(
        session, challenge, Audience.PARTICIPANT, limit=limit, offset=offset, params=params
    )
