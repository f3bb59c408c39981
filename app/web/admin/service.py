"""The tenant admin pages: every challenge with the figures its kind counts; the participants,
each with their activity, and one participant's attempts."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from app.attempt import service as attempts
from app.attempt.models import Attempt
from app.auth.subjects import PlatformAdmin, TenantAdmin, TenantKey
from app.challenge import service as challenges
from app.challenge.config import ChallengeStatus, Visibility
from app.challenge.models import Challenge
from app.challenge.service import challenge_status
from app.tenant import service as tenants
from app.tenant.models import Participant, Tenant
from app.web.challenges.service import ChallengeCard, challenge_cards
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


def wrong_console_credential(caller: PlatformAdmin | TenantKey | None, tenant: Tenant) -> str:
    """What the console's sign-in says of a credential that does not open it, and which one
    does (the platform admin token is often tried first: `make run` prints it first)."""
    opens = (
        f"The console of {tenant.name} opens with one of its admin API keys (gk_…: the one it "
        "was made with, or one made on this console; `make run` prints the demo tenant's as "
        "its “admin key”), or with your account if it has the admin role: sign in to "
        f"/t/{tenant.slug}/sign-in."
    )
    if isinstance(caller, PlatformAdmin):
        return (
            "This is the platform admin's token: it opens the platform admin page, /admin "
            "(tenants, approvals, quotas), not a tenant's console. " + opens
        )
    if caller is not None and caller.tenant_id == tenant.id and not isinstance(caller, TenantAdmin):
        return (
            f"This is a member key of {tenant.name}: it submits and reads through the API, "
            "but does not open the console. " + opens
        )
    return f"This is not a valid admin API key of {tenant.name}. " + opens


# Participants ---------------------------------------------------------------------------------

PARTICIPANTS_PAGE_SIZE = 50
ATTEMPTS_PAGE_SIZE = 50


@dataclass(frozen=True)
class ParticipantRow:
    participant: Participant
    attempts: int
    last_attempt_at: datetime | None

    @property
    def has_account(self) -> bool:
        """Signs in on the web (signed up with a password), not only named by API keys."""
        return self.participant.password_hash is not None


def participant_rows(
    session: Session, tenant_id: uuid.UUID, *, page: int, handle_prefix: str | None
) -> tuple[list[ParticipantRow], int]:
    """A page of the tenant's participants by handle, each with how many attempts they
    submitted and when the newest was; and how many participants match in all."""
    found, total = tenants.list_participants(
        session,
        tenant_id,
        limit=PARTICIPANTS_PAGE_SIZE,
        offset=(page - 1) * PARTICIPANTS_PAGE_SIZE,
        handle_prefix=handle_prefix,
    )
    activity = attempts.participant_activity(session, tenant_id, [p.id for p in found])
    rows = []
    for participant in found:
        count, newest = activity.get(participant.id, (0, None))
        rows.append(ParticipantRow(participant, count, newest))
    return rows, total


@dataclass(frozen=True)
class ParticipantAttempt:
    attempt: Attempt
    challenge_title: str
    challenge_slug: str


def participant_attempts(
    session: Session, tenant_id: uuid.UUID, participant: Participant, *, page: int
) -> tuple[list[ParticipantAttempt], int]:
    """A page of the participant's attempts in every challenge, newest first, with their
    challenges' titles; and how many there are in all."""
    found, total = attempts.participant_attempts_everywhere(
        session,
        tenant_id,
        participant.id,
        limit=ATTEMPTS_PAGE_SIZE,
        offset=(page - 1) * ATTEMPTS_PAGE_SIZE,
    )
    titles: dict[uuid.UUID, tuple[str, str]] = {}
    for challenge_id in {attempt.challenge_id for attempt in found}:
        challenge = challenges.find_challenge(session, tenant_id, challenge_id)
        if challenge is not None:
            titles[challenge_id] = (challenge.title, challenge.slug)
    rows = [
        ParticipantAttempt(attempt, *titles.get(attempt.challenge_id, ("(deleted)", "")))
        for attempt in found
    ]
    return rows, total


def participant_standings(
    session: Session, tenant_id: uuid.UUID, participant: Participant
) -> list[ChallengeCard]:
    """The challenges of every visibility where the participant stands somewhere (ranked,
    or played without a rank yet), newest first, as their kinds say it."""
    groups = challenge_cards(session, tenant_id, participant, list(Visibility))
    cards = [card for group in groups.values() for card in group if card.standing is not None]
    return sorted(cards, key=lambda card: card.challenge.created_at, reverse=True)
