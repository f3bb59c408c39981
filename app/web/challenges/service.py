"""The challenge pages: the home page's tenants, a tenant's challenges with the participant's
best result on each, and what a challenge page shows of its kind."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from app.attempt import service as attempt_service
from app.auth.subjects import Audience
from app.challenge import service as challenges
from app.challenge.config import ChallengeStatus, Visibility
from app.challenge.models import Challenge
from app.challenge.registry import kind_as
from app.challenge.schemas import ChallengePublic
from app.challenge.service import challenge_status, config_of, to_public_view
from app.leaderboard import service as leaderboards
from app.leaderboard.freeze import frozen_since
from app.leaderboard.service import Standing, item_of
from app.scoring.strategies import scoring_strategy
from app.team.service import players_at
from app.tenant.models import Participant, Tenant
from app.web.forms import FormError
from app.web.leaderboards.service import strategy_text
from app.web.visitors import board_audience
from app.web.web_kind import ListStanding, StrategyText, WebKind, by_kind


def home_rows(
    session: Session, *, limit: int, offset: int
) -> tuple[list[tuple[Tenant, list[tuple[Challenge, ChallengeStatus]], int]], int]:
    """Tenants with public challenges, each with its newest ones and how many it has."""
    listed, total = challenges.tenants_with_public_challenges(
        session, limit=limit, offset=offset, challenges_per_tenant=5
    )
    rows = [
        (tenant, [(c, challenge_status(c)) for c in newest], count)
        for tenant, newest, count in listed
    ]
    return rows, total


@dataclass(frozen=True)
class ChallengeCard:
    challenge: ChallengePublic
    strategy: StrategyText
    # Where the signed-in participant stands (None: not played yet, or no one signed in).
    standing: ListStanding | None


def challenge_cards(
    session: Session,
    tenant_id: uuid.UUID,
    participant: Participant | None,
    visibilities: Collection[Visibility],
    *,
    limit: int = 200,
) -> dict[str, list[ChallengeCard]]:
    """The visible challenges by status (open, upcoming, closed), each with where the
    participant stands on it, as its kind says."""
    found = challenges.newest_challenges(session, tenant_id, visibilities=visibilities, limit=limit)
    standings: dict[uuid.UUID, ListStanding] = {}
    if participant is not None:
        for kind, of_kind in by_kind(found):
            own = kind.list_standings(session, participant, of_kind)
            if own is None:
                own = _attempt_standings(session, participant, of_kind)
            standings.update(own)
    groups: dict[str, list[ChallengeCard]] = {"open": [], "upcoming": [], "closed": []}
    for challenge in found:
        groups[challenge_status(challenge)].append(
            ChallengeCard(
                to_public_view(challenge), strategy_text(challenge), standings.get(challenge.id)
            )
        )
    return groups


def _attempt_standings(
    session: Session, participant: Participant, found: Sequence[Challenge]
) -> dict[uuid.UUID, ListStanding]:
    """The participant's best attempt's rank and ranked value on each leaderboard, or how
    many attempts they made when none is ranked yet."""
    ranked: dict[uuid.UUID, Standing] = {}
    counts: dict[uuid.UUID, int] = {}
    tenant_id = participant.tenant_id
    # Frozen boards are frozen for everyone but accounts with the admin role.
    frozen = board_audience(participant) is not Audience.ADMIN
    # A member's results at a challenge are their team's (one query per team).
    by_player = players_at(session, tenant_id, participant.id, [c.id for c in found])
    for player, ids in by_player.items():
        ranked.update(leaderboards.standings(session, tenant_id, player, ids))
        counts.update(attempt_service.attempt_counts(session, tenant_id, player, ids))
    result: dict[uuid.UUID, ListStanding] = {}
    for challenge in found:
        standing = ranked.get(challenge.id)
        attempts = counts.get(challenge.id, 0)
        if standing is not None:
            item = item_of(standing.entry, participant.handle, rank=0)
            value = scoring_strategy(challenge.strategy).shown_with_unit(item)
            if frozen and frozen_since(challenge) is not None:
                # A rank among results hidden since the freeze would tell about them: the
                # participant's own live result, as the leaderboard page shows it then.
                result[challenge.id] = ListStanding(
                    note=f"Your live result: {value} (ranks are frozen until the close)"
                )
                continue
            result[challenge.id] = ListStanding(
                rank=standing.rank,
                value=value,
                path=f"attempts/{standing.entry.attempt_id}",
            )
        elif attempts:
            plural = "s" if attempts != 1 else ""
            result[challenge.id] = ListStanding(note=f"{attempts} attempt{plural}, not ranked yet")
    return result


@dataclass(frozen=True)
class KindParts:
    """What a challenge page shows of its kind: its fragments, its facts, its attempt form."""

    macros: str
    facts: Any
    form: Any | None  # None: the kind's attempts are submitted through the API only
    form_fields: tuple[str, ...]
    play: Any | None = None  # the kind's own part of the page, in place of attempts


def kind_parts(
    session: Session,
    challenge: Challenge,
    participant: Participant | None,
    fields: Mapping[str, str],
    error_field: str | None = None,
    *,
    params: Mapping[str, str] | None = None,
    play_error: FormError | None = None,
) -> KindParts:
    kind = kind_as(challenge.kind, WebKind)
    config = config_of(challenge)
    play = kind.play(session, challenge, config, participant, params or {}, fields, play_error)
    return KindParts(
        macros=kind.macros,
        facts=kind.facts(challenge, config),
        form=None if play is not None else kind.form(challenge, config, fields, error_field),
        form_fields=kind.form_fields,
        play=play,
    )
