"""Public reads: a public challenge's standings and matches, with no credential."""

from __future__ import annotations

import uuid

from sqlalchemy.orm import Session

from app.kinds.api import (
    AppError,
    Audience,
    NotFound,
)
from app.kinds.api.services import (
    public_challenge,
)
from app.kinds.api.storage import Challenge
from app.kinds.red_blue.repository import RedBlueRepository
from app.kinds.red_blue.schemas import (
    MatchList,
    MatchRead,
    Standings,
)
from app.kinds.red_blue.service.access import _red_blue_challenge, reader_for
from app.kinds.red_blue.service.boards import _standings
from app.kinds.red_blue.service.matches import _matches_page, _seen_match

# Public reads (a public challenge, no credential) -------------------------------------------


def _public(session: Session, tenant_slug: str, challenge_slug: str) -> Challenge:
    challenge = public_challenge(session, tenant_slug, challenge_slug)
    try:
        return _red_blue_challenge(challenge)
    except AppError:
        raise NotFound("no public red_blue challenge at this address") from None


def read_public_standings(session: Session, tenant_slug: str, challenge_slug: str) -> Standings:
    return _standings(session, _public(session, tenant_slug, challenge_slug), Audience.PARTICIPANT)


def list_public_matches(
    session: Session,
    tenant_slug: str,
    challenge_slug: str,
    *,
    attack_id: uuid.UUID | None = None,
    defense_id: uuid.UUID | None = None,
    participant: str | None = None,
    limit: int = 50,
    offset: int = 0,
) -> MatchList:
    """Matches of a public challenge as the public sees them: statuses, verdicts and points,
    never the texts; in a freeze, those of then (`participant` only filters: the public reads
    for no one)."""
    challenge = _public(session, tenant_slug, challenge_slug)
    return _matches_page(
        session,
        challenge,
        reader_for(session, challenge, None),
        attack_id=attack_id,
        defense_id=defense_id,
        participant=participant,
        limit=limit,
        offset=offset,
    )


def read_public_match(
    session: Session, tenant_slug: str, challenge_slug: str, match_id: uuid.UUID
) -> MatchRead:
    """One match of a public challenge as the public sees it: no system prompt, no attack,
    no output (verdict per category and points only); in a freeze, as it stood then."""
    challenge = _public(session, tenant_slug, challenge_slug)
    match = RedBlueRepository(session, challenge.tenant_id).match(match_id)
    return _seen_match(session, challenge, match, reader_for(session, challenge, None))
