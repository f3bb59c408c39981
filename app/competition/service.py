"""Rules acceptance, announcements and who they reach.

- **Rules.** A challenge whose `pages.rules` is written asks each participant to accept
  them before their first submission (attempts, defenses, attacks; not practice, test runs
  or an admin's baselines). The acceptance records the version (the SHA-256 of the rules'
  text, `ChallengePages.rules_sha256`); an acceptance of any version lets the participant
  play, so an organizer fixing a typo stops nobody, and the export shows which version each
  participant accepted and whether it is the current one. A submission without it is
  refused with 409 `rules_not_accepted`: the submission was well formed, the participant's
  state is what is missing (like `challenge_closed`'s 409), and it names how to accept.
- **Announcements** are posted by the challenge's admins, shown on its page newest first,
  and mailed (`app.tenant.account_mail.notify`) to its players who get notification emails.
- **Players** of a challenge: those with an entry (their kind says), those who accepted its
  rules, and the members of its teams.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy.orm import Session

from app.auth.subjects import Audience, SignedInParticipant, TenantKey
from app.challenge.models import Challenge
from app.challenge.registry import kind_as
from app.challenge.service import get_challenge, readable_challenge
from app.competition.competition_kind import CompetitionKind
from app.competition.models import Announcement, RulesAcceptance
from app.competition.repository import CompetitionRepository
from app.competition.schemas import (
    AnnouncementCreate,
    AnnouncementPosted,
    AnnouncementRead,
    RulesAcceptanceRead,
)
from app.kit.config import get_settings
from app.kit.db import utcnow
from app.kit.error_codes import NO_RULES, RULES_NOT_ACCEPTED
from app.kit.errors import Conflict, NotFound, ValidationFailed
from app.kit.unit_of_work import UnitOfWork
from app.tenant import account_mail
from app.tenant.service import get_tenant, participant_for_handle

AcceptancesCursor = tuple[datetime, uuid.UUID]


def rules_refusal(challenge_id: uuid.UUID) -> Conflict:
    """A participant submits to a challenge whose rules they have not accepted."""
    return Conflict(
        "accept this challenge's rules before your first submission: read them on the "
        "challenge's page (its Rules tab, with the button that accepts them), or accept them "
        f"with POST /v1/challenges/{challenge_id}/rules/acceptance",
        code=RULES_NOT_ACCEPTED,
    )


def refuse_unless_accepted(
    challenge_id: uuid.UUID, rules_sha256: str | None, accepted: bool, *, baseline: bool
) -> None:
    """The gate every submission passes (an admin's baseline excepted): 409
    `rules_not_accepted` when the challenge has rules its participant never accepted."""
    if rules_sha256 is not None and not accepted and not baseline:
        raise rules_refusal(challenge_id)


# Rules -----------------------------------------------------------------------------------------


def _acceptance_view(
    challenge: Challenge, acceptance: RulesAcceptance, handle: str
) -> RulesAcceptanceRead:
    return RulesAcceptanceRead(
        participant=handle,
        participant_id=acceptance.participant_id,
        rules_sha256=acceptance.rules_sha256,
        current=acceptance.rules_sha256 == challenge.rules_sha256,
        accepted_at=acceptance.accepted_at,
    )


def accept_rules(
    session: Session,
    caller: TenantKey | SignedInParticipant,
    challenge_id: uuid.UUID,
    handle: str | None,
) -> tuple[RulesAcceptanceRead, bool]:
    """Records that the participant accepts the challenge's rules as they are now (a
    signed-in participant: themselves; a tenant key: the handle's participant, created on
    first use); the acceptance and whether it is new (accepting a version twice records it
    once). 409 `no_rules` for a challenge without rules."""
    tenant_id = caller.tenant_id
    challenge = readable_challenge(session, tenant_id, challenge_id, caller.audience)
    if challenge.rules_sha256 is None:
        raise Conflict("this challenge has no rules to accept", code=NO_RULES)
    if isinstance(caller, SignedInParticipant):
        participant_id, handle_shown = caller.participant_id, caller.handle
    else:
        if handle is None:
            raise ValidationFailed.at(["participant"], "is required with a tenant key")
        participant_id, handle_shown = participant_for_handle(session, tenant_id, handle)
    repo = CompetitionRepository(session, tenant_id)
    created = repo.accept(challenge.id, participant_id, challenge.rules_sha256)
    newest = repo.newest_acceptance(challenge.id, participant_id)
    assert newest is not None
    return _acceptance_view(challenge, newest, handle_shown), created


def accepted_rules(
    session: Session, challenge: Challenge, participant_id: uuid.UUID
) -> RulesAcceptanceRead | None:
    """The participant's newest acceptance of the challenge's rules, if any (for its page)."""
    found = CompetitionRepository(session, challenge.tenant_id).newest_acceptance(
        challenge.id, participant_id
    )
    return None if found is None else _acceptance_view(challenge, found, "")


def acceptances_in_order(
    session: Session,
    reader: TenantKey,
    challenge_id: uuid.UUID,
    *,
    after: AcceptancesCursor | None,
    limit: int,
) -> tuple[list[RulesAcceptanceRead], AcceptancesCursor | None]:
    """Up to `limit` of the challenge's rules acceptances after the cursor, oldest first (the
    export's batches), and the cursor of the last."""
    challenge = get_challenge(session, reader.tenant_id, challenge_id)
    rows = CompetitionRepository(session, reader.tenant_id).acceptances_in_order(
        challenge_id, after, limit
    )
    last = (rows[-1][0].accepted_at, rows[-1][0].id) if rows else None
    return [_acceptance_view(challenge, row, handle) for row, handle in rows], last


# Players -----------------------------------------------------------------------------------


def players(session: Session, challenge: Challenge) -> set[uuid.UUID]:
    """Whom the challenge's announcements and notices are for: those with an entry, those
    who accepted its rules, its teams' members."""
    kind = kind_as(challenge.kind, CompetitionKind)
    found = kind.players(session, challenge.tenant_id, challenge.id)
    return found | CompetitionRepository(session, challenge.tenant_id).acceptors_and_members(
        challenge.id
    )


def challenge_link(tenant_slug: str, challenge: Challenge) -> str:
    """The challenge's page, as mail links it."""
    base = get_settings().resolved_public_url
    return f"{base}/t/{tenant_slug}/challenges/{challenge.slug}"


# Announcements -----------------------------------------------------------------------------


def _announcement_view(announcement: Announcement) -> AnnouncementRead:
    return AnnouncementRead.model_validate(announcement)


def post_announcement(
    work: UnitOfWork, tenant_id: uuid.UUID, challenge_id: uuid.UUID, body: AnnouncementCreate
) -> AnnouncementPosted:
    """Posts the announcement and mails it (after the commit) to the challenge's players who
    get notification emails."""
    session = work.session
    challenge = get_challenge(session, tenant_id, challenge_id)
    tenant = get_tenant(session, tenant_id)
    announcement = Announcement(
        id=uuid.uuid4(),
        tenant_id=tenant_id,
        challenge_id=challenge.id,
        title=body.title,
        body=body.body,
        created_at=utcnow(),
    )
    text = "\n".join(
        [
            f"{challenge.title} ({tenant.name}): {body.title}",
            "",
            body.body.strip(),
            "",
            f"The challenge: {challenge_link(tenant.slug, challenge)}",
        ]
    )
    announcement.mailed = account_mail.notify(
        work, tenant, players(session, challenge), f"{challenge.title}: {body.title}", text
    )
    CompetitionRepository(session, tenant_id).add_announcement(announcement)
    return AnnouncementPosted.model_validate(announcement)


def list_announcements(
    session: Session,
    tenant_id: uuid.UUID,
    challenge_id: uuid.UUID,
    audience: Audience,
    *,
    limit: int,
    offset: int,
) -> tuple[list[AnnouncementRead], int]:
    """A page of the challenge's announcements, newest first (a draft's: its admins only)."""
    challenge = readable_challenge(session, tenant_id, challenge_id, audience)
    rows, total = CompetitionRepository(session, tenant_id).announcements(
        challenge.id, limit=limit, offset=offset
    )
    return [_announcement_view(row) for row in rows], total


def delete_announcement(
    session: Session, tenant_id: uuid.UUID, challenge_id: uuid.UUID, announcement_id: uuid.UUID
) -> None:
    """Takes the announcement off the challenge's page (mail already sent stays sent)."""
    repo = CompetitionRepository(session, tenant_id)
    found = repo.announcement(challenge_id, announcement_id)
    if found is None:
        raise NotFound("announcement not found")
    repo.delete_announcement(found)


def announcements_of(
    session: Session, challenge: Challenge, limit: int
) -> Sequence[AnnouncementRead]:
    """The newest announcements of a challenge the caller may already read (its page)."""
    rows, _ = CompetitionRepository(session, challenge.tenant_id).announcements(
        challenge.id, limit=limit, offset=0
    )
    return [_announcement_view(row) for row in rows]
