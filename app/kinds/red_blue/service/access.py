"""Who reads red_blue's views, and what each reader may see (decided in one place, `Reader`)."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy.orm import Session

from app.kinds.api import (
    Audience,
    NotFound,
    SignedInParticipant,
    TenantKey,
)
from app.kinds.api.services import (
    frozen_since,
    participant_by_handle,
    player_id,
    team_of,
)
from app.kinds.api.storage import Challenge, utcnow
from app.kinds.red_blue import final_round
from app.kinds.red_blue.models import Side
from app.kinds.red_blue.readers import Reader

KIND_NAME = "red_blue"
BOARD_SIDES = ", ".join(f"'{side.value}'" for side in Side)


# Who reads ----------------------------------------------------------------------------------


def reader_of(subject: TenantKey | SignedInParticipant) -> Reader:
    """What the subject sees of texts, outside any challenge's freeze (what they submitted,
    the admins' re-runs); `reader_for` at a challenge."""
    if isinstance(subject, SignedInParticipant):
        return Reader(admin=False, all_texts=False, participant_id=subject.participant_id)
    return Reader(admin=subject.audience is Audience.ADMIN, all_texts=True)


def player_at(
    session: Session, subject: SignedInParticipant, challenge_id: uuid.UUID
) -> tuple[uuid.UUID, str]:
    """Whose entries are the signed-in participant's at a challenge, and that player's name:
    their team's (docs/teams.md), or their own."""
    team = team_of(session, subject.tenant_id, challenge_id, subject.participant_id)
    return (subject.participant_id, subject.handle) if team is None else (team.id, team.name)


def freeze_cutoff(session: Session, challenge: Challenge, audience: Audience) -> datetime | None:
    """The moment the audience sees the challenge's entries and matches as of: its
    `freeze_at` while its boards are frozen for them (a final round keeps it past the close
    until the boards are final, as the boards' own read does), else None (live)."""
    if audience is Audience.ADMIN or challenge.freeze_at is None:
        return None
    now = utcnow()
    if now < challenge.freeze_at:
        return None
    closed = challenge.closes_at is not None and now >= challenge.closes_at
    held = closed and final_round.holds(final_round.state_of(session, challenge))
    return frozen_since(challenge, now, held=held)


def reader_for(
    session: Session,
    challenge: Challenge,
    subject: TenantKey | SignedInParticipant | None,
    *,
    audience: Audience | None = None,
    acting_for: str | None = None,
) -> Reader:
    """What `subject` (None: the public) sees of the challenge's entries and matches: texts
    by who they are; in a freeze, others' as they stood at `freeze_at` and their own live.
    A signed-in participant's own are their team's at the challenge, or theirs; a member
    key's are those of the participant it names (`acting_for`, a handle: the key reads for
    them, as it submits for them). `audience` (default the subject's): a web visitor's view
    of the boards (an account with the admin role sees them live)."""
    seen_by = audience or (Audience.PARTICIPANT if subject is None else subject.audience)
    cutoff = freeze_cutoff(session, challenge, seen_by)
    if subject is None:
        return Reader(admin=False, all_texts=False, cutoff=cutoff)
    if isinstance(subject, SignedInParticipant):
        player, _ = player_at(session, subject, challenge.id)
        return Reader(admin=False, all_texts=False, participant_id=player, cutoff=cutoff)
    own = None
    if cutoff is not None and acting_for is not None:
        found = participant_by_handle(session, subject.tenant_id, acting_for)
        if found is not None:
            own = player_id(session, subject.tenant_id, challenge.id, found.id)
    return Reader(
        admin=subject.audience is Audience.ADMIN, all_texts=True, participant_id=own, cutoff=cutoff
    )


def _red_blue_challenge(challenge: Challenge) -> Challenge:
    if challenge.kind != KIND_NAME:
        raise NotFound(f"not a red_blue challenge (this is a {challenge.kind} challenge)")
    return challenge
