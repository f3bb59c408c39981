"""Matches: their summaries and views, pages of them as each reader sees them, re-runs of those
that ended in error, and the admin's figures of a challenge's activity."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from app.kinds.api import (
    Audience,
    Conflict,
    NotFound,
    SignedInParticipant,
    TenantKey,
    UnitOfWork,
)
from app.kinds.api.error_codes import NOT_IN_ERROR
from app.kinds.api.services import (
    get_challenge,
    handles,
    participant_by_handle,
    players_at,
    read_as_seen,
)
from app.kinds.api.storage import BoardFreeze, Challenge, utcnow
from app.kinds.red_blue import final_round
from app.kinds.red_blue.dispatch import RUN_MATCH
from app.kinds.red_blue.models import Attack, Defense, Match, MatchStatus
from app.kinds.red_blue.readers import Reader
from app.kinds.red_blue.repository import Activity, Places, RedBlueRepository
from app.kinds.red_blue.schemas import (
    MatchList,
    MatchRead,
    MatchSummary,
    verdict_views,
)
from app.kinds.red_blue.service.access import (
    _red_blue_challenge,
    freeze_cutoff,
    player_at,
    reader_for,
    reader_of,
)


def _summary_fields(
    match: Match, named: Mapping[uuid.UUID, str], *, played: bool
) -> dict[str, Any]:
    """A match's fields; not `played` (its end came after the freeze the reader sees): as it
    stood before it, queued, with nothing of how it went."""
    fields: dict[str, Any] = {
        "id": match.id,
        "challenge_id": match.challenge_id,
        "attack_id": match.attack_id,
        "defense_id": match.defense_id,
        "red_participant": named.get(match.red_participant_id, ""),
        "blue_participant": named.get(match.blue_participant_id, ""),
        "status": MatchStatus.QUEUED,
        "breached": None,
        "red_points": None,
        "blue_points": None,
        "attack_won": None,
        "tokens_total": None,
        "elapsed_ms": None,
        "cost_usd": None,
        "error": None,
        "created_at": match.created_at,
        "finished_at": None,
        "final_round": match.final_round,
    }
    if played:
        fields.update(
            status=match.status,
            breached=match.breached,
            red_points=match.red_points,
            blue_points=match.blue_points,
            attack_won=match.attack_won,
            tokens_total=match.tokens_total,
            elapsed_ms=match.elapsed_ms,
            cost_usd=match.cost_usd,
            error=match.error,
            finished_at=match.finished_at,
        )
    return fields


def match_summary(match: Match, named: Mapping[uuid.UUID, str], reader: Reader) -> MatchSummary:
    """A match of a list, as the reader sees it (`match_view` without the call)."""
    return MatchSummary(
        **_summary_fields(match, named, played=reader.settled(match, match.finished_at))
    )


def match_view(match: Match, named: Mapping[uuid.UUID, str], reader: Reader) -> MatchRead:
    """A match as the reader sees it: texts by `Reader`; in a freeze, a match of others that
    ended since is as it stood then (queued: no call, no verdict)."""
    red, blue = match.red_participant_id, match.blue_participant_id
    if not reader.settled(match, match.finished_at):
        return MatchRead(
            **_summary_fields(match, named, played=False),
            system_prompt=None,
            user_message=None,
            output=None,
            verdicts=None,
            run_count=0,
        )
    return MatchRead(
        **_summary_fields(match, named, played=True),
        system_prompt=match.system_prompt if reader.sees_texts_of(blue) else None,
        user_message=match.user_message if reader.sees_texts_of(red) else None,
        output=match.output if reader.sees_texts_of(red, blue) else None,
        verdicts=verdict_views(match.verdicts, full=reader.sees_texts_of(red, blue)),
        error_detail=match.error_detail if reader.admin else None,
        run_count=match.run_count,
    )


def _named(session: Session, tenant_id: uuid.UUID, matches: list[Match]) -> dict[uuid.UUID, str]:
    ids = {m.red_participant_id for m in matches} | {m.blue_participant_id for m in matches}
    return handles(session, tenant_id, list(ids))


def _entrant(entry: Defense | Attack) -> tuple[uuid.UUID, uuid.UUID | None]:
    """Whose entry it is and which member submitted it (`entry_names`)."""
    return entry.participant_id, entry.submitted_by_id


def _matches_page(
    session: Session,
    challenge: Challenge,
    reader: Reader,
    *,
    attack_id: uuid.UUID | None,
    defense_id: uuid.UUID | None,
    participant: str | None,
    limit: int,
    offset: int,
    calls: bool = False,
) -> MatchList:
    """A page of the matches the reader sees, each as they see it: summaries, or with
    `calls` as `match_view` shows it (its texts only to whom they belong)."""
    tenant_id = challenge.tenant_id
    participant_id = None
    if participant is not None:
        found = participant_by_handle(session, tenant_id, participant)
        if found is None:
            return MatchList(items=[], total=0, limit=limit, offset=offset)
        participant_id = found.id
    rows, total = RedBlueRepository(session, tenant_id).matches_page(
        challenge.id,
        attack_id=attack_id,
        defense_id=defense_id,
        participant_id=participant_id,
        limit=limit,
        offset=offset,
        reader=reader,
    )
    named = _named(session, tenant_id, rows)
    items = [
        match_view(m, named, reader) if calls else match_summary(m, named, reader) for m in rows
    ]
    return MatchList(items=items, total=total, limit=limit, offset=offset)


def list_matches(
    session: Session,
    subject: TenantKey | SignedInParticipant,
    challenge_id: uuid.UUID,
    *,
    attack_id: uuid.UUID | None = None,
    defense_id: uuid.UUID | None = None,
    participant: str | None = None,
    limit: int = 50,
    offset: int = 0,
) -> MatchList:
    """The challenge's matches the subject sees, newest first, filtered by attack, defense
    and participant handle (either side); 404 for another tenant's challenge. A member key
    naming a participant reads for them (`reader_for`): in a freeze, their matches are
    live."""
    challenge = _red_blue_challenge(get_challenge(session, subject.tenant_id, challenge_id))
    return _matches_page(
        session,
        challenge,
        reader_for(session, challenge, subject, acting_for=participant),
        attack_id=attack_id,
        defense_id=defense_id,
        participant=participant,
        limit=limit,
        offset=offset,
    )


def list_match_views(
    session: Session, subject: SignedInParticipant, challenge_id: uuid.UUID, *, limit: int
) -> tuple[list[MatchRead], int]:
    """The signed-in participant's newest matches at a challenge (and how many they have), each
    as `read_match` shows it to them: the texts of their own side and the output."""
    challenge = _red_blue_challenge(get_challenge(session, subject.tenant_id, challenge_id))
    _, name = player_at(session, subject, challenge_id)
    page = _matches_page(
        session,
        challenge,
        reader_for(session, challenge, subject),
        attack_id=None,
        defense_id=None,
        participant=name,
        limit=limit,
        offset=0,
        calls=True,
    )
    return [item for item in page.items if isinstance(item, MatchRead)], page.total


def _seen_match(
    session: Session, challenge: Challenge, match: Match | None, reader: Reader
) -> MatchRead:
    """The match as the reader sees it; 404 for one of another challenge, or that does not
    exist for the reader (another's, made after the freeze they see)."""
    if match is None or match.challenge_id != challenge.id or not reader.sees(match):
        raise NotFound("match not found")
    return match_view(match, _named(session, challenge.tenant_id, [match]), reader)


def read_match(
    session: Session,
    subject: TenantKey | SignedInParticipant,
    match_id: uuid.UUID,
    *,
    acting_for: str | None = None,
) -> MatchRead:
    """A match as the subject sees it (`acting_for`: the participant a member key reads for,
    `reader_for`)."""
    match = RedBlueRepository(session, subject.tenant_id).match(match_id)
    if match is None:
        raise NotFound("match not found")
    challenge = get_challenge(session, subject.tenant_id, match.challenge_id)
    reader = reader_for(session, challenge, subject, acting_for=acting_for)
    return _seen_match(session, challenge, match, reader)


def read_challenge_match(
    session: Session,
    challenge: Challenge,
    match_id: uuid.UUID,
    viewer: SignedInParticipant | None,
    audience: Audience,
) -> MatchRead:
    """One match of a challenge its caller may already see (the web's match page, which
    checks the visitor's access to the challenge first), as the viewer may see it: a
    signed-in participant the texts of their own side, anyone else the public view; in a
    freeze as `audience` sees it (an account with the admin role: live). 404 for a match of
    another challenge."""
    challenge = _red_blue_challenge(challenge)
    match = RedBlueRepository(session, challenge.tenant_id).match(match_id)
    reader = reader_for(session, challenge, viewer, audience=audience)
    return _seen_match(session, challenge, match, reader)


# Re-runs (tenant admins) --------------------------------------------------------------------


def rerun_match(work: UnitOfWork, admin: TenantKey, match_id: uuid.UUID) -> MatchRead:
    """Queues a match that ended in error again; it is sent once the caller commits."""
    repo = RedBlueRepository(work.session, admin.tenant_id)
    match = repo.match(match_id, for_update=True)
    if match is None:
        raise NotFound("match not found")
    if match.status is not MatchStatus.ERROR:
        raise Conflict(
            f"only matches that ended in error can be re-run; this one is {match.status}",
            code=NOT_IN_ERROR,
        )
    repo.requeue_match(match, utcnow())
    work.send_after_commit(RUN_MATCH, str(match.id))
    return match_view(match, _named(work.session, admin.tenant_id, [match]), reader_of(admin))


@dataclass(frozen=True)
class FailedMatch:
    """A match that ended in error, as a tenant admin sees it (the full reason included)."""

    match: MatchRead
    challenge_title: str


def recent_match_errors(
    session: Session, admin: TenantKey, *, limit: int = 20
) -> list[FailedMatch]:
    """The tenant's newest matches that ended in error (the admin page re-runs them)."""
    rows = RedBlueRepository(session, admin.tenant_id).error_matches(limit=limit)
    named = _named(session, admin.tenant_id, [match for match, _ in rows])
    reader = reader_of(admin)
    return [FailedMatch(match_view(match, named, reader), title) for match, title in rows]


def activity(
    session: Session, tenant_id: uuid.UUID, challenge_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, Activity]:
    """Each challenge's defenses, attacks, matches and matches awaiting the ratings (the
    tenant admin page)."""
    return RedBlueRepository(session, tenant_id).activity_of(challenge_ids)


def entry_activity(
    session: Session, tenant_id: uuid.UUID, challenge_id: uuid.UUID, *, limit: int
) -> tuple[list[tuple[uuid.UUID, int, datetime]], int]:
    """The challenge's participants with entries on either side (its console)."""
    return RedBlueRepository(session, tenant_id).entrants_of(challenge_id, limit=limit)


def match_spend(
    session: Session, tenant_id: uuid.UUID, challenge_id: uuid.UUID
) -> tuple[int, float]:
    """The challenge's matches played, and their model spend (its console's overview)."""
    return RedBlueRepository(session, tenant_id).match_spend(challenge_id)


def places(
    session: Session,
    viewer: SignedInParticipant,
    challenges: Sequence[Challenge],
    audience: Audience,
) -> dict[uuid.UUID, Places]:
    """Where the signed-in participant stands on each challenge (the tenant's challenge
    list), on the boards as the audience sees them: in a freeze, where they stood at
    `freeze_at` (a live rank would tell about results hidden from them)."""
    repo = RedBlueRepository(session, viewer.tenant_id)
    by_id = {challenge.id: challenge for challenge in challenges}
    found: dict[uuid.UUID, Places] = {}
    # A member's places are their team's (one query per team).
    ids = list(by_id)
    for player, played in players_at(session, viewer.tenant_id, viewer.participant_id, ids).items():
        frozen = [c for c in played if freeze_cutoff(session, by_id[c], audience) is not None]
        found.update(repo.places_of(player, [c for c in played if c not in frozen], frozen=False))
        for challenge_id in frozen:

            def read(
                snapshot: BoardFreeze | None, who: uuid.UUID = player, at: uuid.UUID = challenge_id
            ) -> dict[uuid.UUID, Places]:
                return repo.places_of(who, [at], frozen=snapshot is not None)

            challenge = by_id[challenge_id]
            held = final_round.holds(final_round.state_of(session, challenge))
            found.update(read_as_seen(session, challenge, audience, read, held=held).board)
    return found
