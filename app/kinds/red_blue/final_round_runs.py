"""A final round made and played, on a worker (the round's rules and its state as the API
reads it are `final_round.py`'s): the task that makes a challenge's round once per close, and
the sweep's part, which sends the rounds due and marks played those whose matches are all
finished. Both read and write across tenants (`cross_tenant`), so the API never imports this
module."""

from __future__ import annotations

import logging
import uuid
from datetime import datetime

from app.kinds.api import UnitOfWork, unit_of_work
from app.kinds.api.storage import Challenge, utcnow
from app.kinds.red_blue import cross_tenant
from app.kinds.red_blue.cross_tenant import Entry
from app.kinds.red_blue.dispatch import FINAL_ROUND, INTERVALS_ONLY, RECOMPUTE, RUN_MATCHES, chunks
from app.kinds.red_blue.final_round import FINISHED, has_final_round
from app.kinds.red_blue.models import Match, MatchStatus
from app.kinds.red_blue.repository.final_round import FinalRoundRepository
from app.kinds.red_blue.rules.final_round import RoundEntry, final_pairs, newest_of_each

log = logging.getLogger(__name__)

SWEEP_BATCH = 100


# Making the round ------------------------------------------------------------------------------


def _round_entries(entries: list[Entry]) -> list[RoundEntry[uuid.UUID, uuid.UUID]]:
    return [RoundEntry(e.id, e.participant_id, e.created_at) for e in entries]


def make(challenge_id: uuid.UUID) -> str:
    """Makes the challenge's final round for its close, once (the task's body)."""
    now = utcnow()
    with unit_of_work() as work:
        session = work.session
        challenge = cross_tenant.get_challenge(session, challenge_id)
        if challenge is None or not has_final_round(challenge):
            return "skipped: no final round"
        if challenge.closes_at is None or now < challenge.closes_at:
            return "skipped: not closed"
        if cross_tenant.pending_defense_count(session, challenge_id):
            # A defense still in its self-test may become its participant's newest active one.
            return "waiting: self-tests still running"
        if not cross_tenant.claim_final_round(
            session, challenge.tenant_id, challenge_id, challenge.closes_at, now
        ):
            return "skipped: made already"
        made = _insert_round(work, challenge, now)
        cross_tenant.set_final_round_matches(session, challenge_id, made)
    log.info("red_blue challenge %s: final round of %d matches", challenge_id, made)
    return f"made: {made} matches"


def _insert_round(work: UnitOfWork, challenge: Challenge, now: datetime) -> int:
    """Inserts the round's missing pairs as queued matches and sends them after the commit,
    in chunks; how many were new."""
    session = work.session
    defenses = _round_entries(cross_tenant.active_defenses(session, challenge.id))
    attacks = _round_entries(cross_tenant.attacks_of(session, challenge.id))
    met: set[tuple[uuid.UUID, uuid.UUID]] = set()
    for newest in newest_of_each(defenses).values():
        met |= cross_tenant.pairs_of(session, Match.defense_id, newest.id)
    matches = [
        cross_tenant.NewMatch(
            tenant_id=challenge.tenant_id,
            challenge_id=challenge.id,
            attack_id=attack.id,
            defense_id=defense.id,
            red_participant_id=attack.participant,
            blue_participant_id=defense.participant,
            created_at=now,
            final_round=True,
        )
        for attack, defense in final_pairs(defenses, attacks, met)
    ]
    inserted = cross_tenant.insert_matches_in_batches(session, matches)
    for chunk in chunks([str(match_id) for match_id in inserted]):
        work.send_after_commit(RUN_MATCHES, *chunk)
    return len(inserted)


# The sweep ------------------------------------------------------------------------------------


def sweep(work: UnitOfWork, now: datetime) -> dict[str, int]:
    """Sends the making of the rounds due (closed, not made for this close: new, or lost, or
    waiting for self-tests), and marks played the rounds none of whose matches is queued or
    running, with the board's final ratings asked for at once."""
    session = work.session
    due = cross_tenant.final_rounds_due(session, now, SWEEP_BATCH)
    for challenge_id in due:
        work.send_after_commit(FINAL_ROUND, str(challenge_id))
    played = 0
    for challenge_id, tenant_id in cross_tenant.unplayed_final_rounds(session, SWEEP_BATCH):
        counts = FinalRoundRepository(session, tenant_id).match_counts(challenge_id)
        if any(counts.get(status, 0) for status in MatchStatus if status not in FINISHED):
            continue
        cross_tenant.mark_final_round_played(session, challenge_id, sum(counts.values()), now)
        work.send_after_commit(RECOMPUTE, str(challenge_id), INTERVALS_ONLY)
        played += 1
    return {"final_rounds": len(due), "final_rounds_played": played}
