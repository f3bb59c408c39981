"""The tenant admin pages: every challenge with the figures its kind counts; a challenge's own
console (its overview: state, figures, spend, dates, the launch checklist; its teams); the
participants, each with their activity, and one participant's attempts."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from app.attempt import service as attempts
from app.attempt.models import Attempt, RunPurpose
from app.auth.subjects import PlatformAdmin, TenantAdmin, TenantKey
from app.challenge import service as challenges
from app.challenge.config import ChallengeStatus, Visibility
from app.challenge.models import Challenge
from app.challenge.registry import kind_as
from app.challenge.service import challenge_status
from app.hosting import launch
from app.team import service as teams
from app.team.schemas import TeamRead
from app.tenant import service as tenants
from app.tenant.models import Participant, Tenant
from app.web.challenges.service import ChallengeCard, challenge_cards
from app.web.leaderboards.service import strategy_text
from app.web.web_kind import Count, Spend, StrategyText, WebKind, by_kind


@dataclass(frozen=True)
class DashboardRow:
    challenge: Challenge
    status: ChallengeStatus
    strategy: StrategyText
    counts: Sequence[Count]
    # The kind's name in people's words ("Prompt", "Red team vs blue team").
    kind_title: str = ""


def dashboard_rows(session: Session, tenant_id: uuid.UUID, *, limit: int) -> list[DashboardRow]:
    """The tenant's newest challenges, each with its kind's figures (one read per kind)."""
    newest = challenges.newest_challenges(session, tenant_id, limit=limit)
    counts: dict[uuid.UUID, Sequence[Count]] = {}
    titles: dict[str, str] = {}
    for kind, of_kind in by_kind(newest):
        ids = [challenge.id for challenge in of_kind]
        counts.update(kind.dashboard_counts(session, tenant_id, ids))
        titles[of_kind[0].kind] = challenges.kind_of(of_kind[0]).people_name
    return [
        DashboardRow(c, challenge_status(c), strategy_text(c), counts.get(c.id, ()), titles[c.kind])
        for c in newest
    ]


# One challenge's console ----------------------------------------------------------------------

# What each purpose of a challenge's runs is called on its overview.
_SPEND_LABELS = {
    RunPurpose.ENTRY: "Attempts",
    RunPurpose.PRACTICE: "Practice runs",
    RunPurpose.TEST: "Test runs",
}


@dataclass(frozen=True)
class ChallengeOverview:
    """What a challenge's console opens with: its row's figures, its model spend by purpose,
    and the launch checklist (with whether *Open* and *Publish* wait for it now)."""

    row: DashboardRow
    kind_title: str
    spend: Sequence[Spend]
    checklist: launch.Checklist
    launch_waits: bool

    @property
    def spend_total(self) -> float:
        return sum(item.usd for item in self.spend)


def challenge_overview(
    session: Session, admin: TenantAdmin, challenge: Challenge
) -> ChallengeOverview:
    tenant_id = admin.tenant_id
    kind = kind_as(challenge.kind, WebKind)
    counts = kind.dashboard_counts(session, tenant_id, [challenge.id]).get(challenge.id, ())
    kind_title = challenges.kind_of(challenge).people_name
    row = DashboardRow(
        challenge, challenge_status(challenge), strategy_text(challenge), counts, kind_title
    )
    spent = attempts.challenge_spend(session, tenant_id, challenge.id)
    spend = [
        Spend(label, *spent.get(purpose, (0, 0.0))) for purpose, label in _SPEND_LABELS.items()
    ]
    spend += kind.kind_spend(session, tenant_id, challenge.id)
    return ChallengeOverview(
        row,
        kind_title,
        spend,
        launch.launch_checklist(session, admin, challenge),
        launch.launch_waits_for_checklist(challenge),
    )


TEAMS_SHOWN = 100
ENTRANTS_SHOWN = 100


@dataclass(frozen=True)
class EntrantRow:
    handle: str
    entries: int
    last_entry_at: datetime


def challenge_entrants(
    session: Session, tenant_id: uuid.UUID, challenge: Challenge
) -> tuple[list[EntrantRow], int]:
    """The challenge's participants with entries, the most recently active first (the first
    `ENTRANTS_SHOWN`), with their handles; and how many there are."""
    kind = kind_as(challenge.kind, WebKind)
    found, total = kind.entry_activity(session, tenant_id, challenge.id, limit=ENTRANTS_SHOWN)
    names = tenants.handles(session, tenant_id, [entrant.participant_id for entrant in found])
    rows = [
        EntrantRow(names.get(entrant.participant_id, ""), entrant.entries, entrant.last_entry_at)
        for entrant in found
    ]
    return rows, total


def challenge_teams(
    session: Session, tenant_id: uuid.UUID, challenge: Challenge
) -> tuple[list[TeamRead], int] | None:
    """The challenge's first teams by name and how many it has; None when it allows no
    teams (individual play)."""
    if challenge.limits.max_team_size is None:
        return None
    found = teams.list_teams(session, tenant_id, challenge.id, limit=TEAMS_SHOWN, offset=0)
    return found.items, found.total


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
