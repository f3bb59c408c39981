"""Worker-side statements on matches, by id whatever their tenant: claimed and finished under
their lease, paired and queued."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.kinds.api import leases
from app.kinds.api.storage import Challenge, insert_for
from app.kinds.red_blue.cross_tenant.rows import _MATCHES
from app.kinds.red_blue.match_result import JudgedMatch, MatchResult
from app.kinds.red_blue.models import MATCH_LEASES, Attack, Defense, Match, MatchStatus


@dataclass(frozen=True, slots=True)
class ClaimedMatch:
    """A match this worker now holds, as the claim statement returns it: its run number and
    the exact texts of its call (None when its attack or defense is gone). The worker's
    `MatchJob` is what it plays (these texts with the challenge's rules); how it ended is a
    `MatchResult`."""

    id: uuid.UUID
    tenant_id: uuid.UUID
    challenge_id: uuid.UUID
    run_count: int
    system_prompt: str | None
    user_message: str | None


def claim_matches(
    session: Session,
    match_ids: Sequence[uuid.UUID],
    token: uuid.UUID,
    now: datetime,
    lease_until: datetime,
) -> list[ClaimedMatch]:
    """Takes those of the matches that are queued, or running under an expired lease, in one
    statement; the others (finished, or held by another worker) are left alone. The claim
    stores the exact texts of the call (the defense as system prompt, the attack as user
    message): a re-run calls with the same. Returns the matches taken, with their run number."""
    if not match_ids:
        return []
    defense_text = select(Defense.system_prompt).where(Defense.id == Match.defense_id)
    attack_text = select(Attack.prompt).where(Attack.id == Match.attack_id)
    rows = leases.claim(
        session,
        MATCH_LEASES,
        match_ids,
        token,
        now,
        lease_until,
        returning=[
            Match.id,
            Match.tenant_id,
            Match.challenge_id,
            Match.run_count,
            Match.system_prompt,
            Match.user_message,
        ],
        system_prompt=defense_text.scalar_subquery(),
        user_message=attack_text.scalar_subquery(),
    ).tuples()
    return [ClaimedMatch(*row) for row in rows]


def _ended_columns(result: MatchResult) -> dict[str, Any]:
    """The match row's columns of how it ended."""
    if isinstance(result, JudgedMatch):
        return {
            "status": MatchStatus.COMPLETED,
            "output": result.output,
            "verdicts": result.stored_verdicts(),
            "breached": result.breached,
            "red_points": result.red_points,
            "blue_points": result.blue_points,
            "attack_won": result.attack_won,
            "tokens_total": result.tokens_total,
            "elapsed_ms": result.elapsed_ms,
            "cost_usd": result.cost_usd,
        }
    return {
        "status": MatchStatus.ERROR,
        "error": result.reason,
        "error_detail": result.detail,
        # An error counts for no one.
        "red_points": None,
        "blue_points": None,
        "attack_won": None,
        "breached": None,
        "verdicts": None,
    }


def finish_match(
    session: Session,
    match_id: uuid.UUID,
    token: uuid.UUID,
    result: MatchResult,
    finished_at: datetime,
) -> tuple[uuid.UUID, uuid.UUID] | None:
    """Ends a running match held by this token with its result (one UPDATE); the
    (tenant id, challenge id) of the match, or None when the lease was lost."""
    written = leases.release(
        session,
        MATCH_LEASES,
        [match_id],
        token,
        returning=[Match.tenant_id, Match.challenge_id],
        finished_at=finished_at,
        **_ended_columns(result),
    ).first()
    return None if written is None else (written[0], written[1])


def challenge_version(session: Session, challenge_id: uuid.UUID) -> datetime | None:
    """When the challenge was last changed (None: it is gone): its parsed configuration can
    be reused while this stays the same."""
    return session.scalar(
        select(Challenge.updated_at).where(
            Challenge.id == challenge_id, Challenge.deleted_at.is_(None)
        )
    )


def pairs_of(
    session: Session, column: Any, entry_id: uuid.UUID
) -> set[tuple[uuid.UUID, uuid.UUID]]:
    rows = session.execute(
        select(Match.attack_id, Match.defense_id).where(column == entry_id)
    ).tuples()
    return set(rows)


@dataclass(frozen=True, slots=True, kw_only=True)
class NewMatch:
    """A queued match to insert: the attack and defense it plays, their participants, and
    when it was made (also its first send). Pairing and the final round build these; the
    row's id is chosen here unless the caller needs it in advance."""

    tenant_id: uuid.UUID
    challenge_id: uuid.UUID
    attack_id: uuid.UUID
    defense_id: uuid.UUID
    red_participant_id: uuid.UUID
    blue_participant_id: uuid.UUID
    created_at: datetime
    final_round: bool = False
    id: uuid.UUID = field(default_factory=uuid.uuid4)


def _queued_row(match: NewMatch) -> dict[str, Any]:
    """The match's row as the INSERT writes it: queued, sent when made, never run."""
    return {
        "id": match.id,
        "tenant_id": match.tenant_id,
        "challenge_id": match.challenge_id,
        "attack_id": match.attack_id,
        "defense_id": match.defense_id,
        "red_participant_id": match.red_participant_id,
        "blue_participant_id": match.blue_participant_id,
        "status": MatchStatus.QUEUED.value,
        "created_at": match.created_at,
        "enqueued_at": match.created_at,
        "run_count": 0,
        "spent_usd": 0.0,
        "final_round": match.final_round,
    }


def insert_matches(session: Session, matches: Sequence[NewMatch]) -> list[uuid.UUID]:
    """Inserts these matches, skipping a pair that already has one (UNIQUE(attack_id,
    defense_id)); the ids of those inserted now."""
    inserted: list[uuid.UUID] = []
    build = insert_for(session)
    for match in matches:
        found = session.execute(
            build(_MATCHES)
            .values(_queued_row(match))
            .on_conflict_do_nothing(index_elements=["attack_id", "defense_id"])
            .returning(_MATCHES.c.id)
        ).first()
        if found is not None:
            inserted.append(found[0])
    return inserted
