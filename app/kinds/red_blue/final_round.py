"""A red-blue challenge's final round (its `final_round` setting): at the close, every
participant's newest active defense meets every other participant's newest attack it has not
met, under the same rules and budgets as every match, before the final ratings; so the final
boards do not depend on who submitted when (docs/redblue.md, "Final round").

How it runs, safe with several workers and with one killed at any point:

- **Made once per close.** The sweep (and an admin's close, at once) sends
  `gauntlet.redblue.final_round` for each closed challenge whose round for that close is not
  made. The task waits while self-tests are still running (the sweep sends it again), then
  takes the round with one conditional upsert of its `redblue_final_rounds` row, in the
  transaction that inserts its matches: of two workers one makes it and the other waits for
  its commit and finds it made; a worker killed before the commit leaves nothing, and the
  next send makes it. The matches are inserted ignoring a pair that has one (UNIQUE(attack_id,
  defense_id)), so a pair never meets twice, whoever made it.
- **Played as every match.** The round's matches (`final_round` true) go to the workers in
  chunks (`RUN_MATCHES`), under leases; the sweep re-sends those lost, as for any match.
- **Then the final ratings.** The sweep marks the round played once none of its matches is
  queued or running, and has the board's intervals bootstrapped at once (not at their
  pace): the board is final when its ratings and intervals count every match.
- **The reveal waits.** From the close until then, a freeze that had begun is kept for
  everyone but the challenge's admins (`holds`), so the boards are revealed once, final.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime

from sqlalchemy.orm import Session

from app.kinds.api import UnitOfWork, ValidationFailed, unit_of_work
from app.kinds.api.services import config_of
from app.kinds.api.storage import Challenge, utcnow
from app.kinds.red_blue import repository
from app.kinds.red_blue.config import sections_of
from app.kinds.red_blue.dispatch import FINAL_ROUND, INTERVALS_ONLY, RECOMPUTE, RUN_MATCHES, chunks
from app.kinds.red_blue.models import Match, MatchStatus
from app.kinds.red_blue.repository import Entry
from app.kinds.red_blue.rules.final_round import (
    HOLDS_FREEZE,
    RoundEntry,
    final_pairs,
    newest_of_each,
    phase_of,
)
from app.kinds.red_blue.schemas import FinalRoundRead

log = logging.getLogger(__name__)

KIND_NAME = "red_blue"
SWEEP_BATCH = 100
_FINISHED = (MatchStatus.COMPLETED, MatchStatus.ERROR)


def _has_final_round(challenge: Challenge) -> bool:
    if challenge.kind != KIND_NAME:
        return False
    try:
        return sections_of(config_of(challenge)).final_round
    except (ValidationFailed, TypeError):
        log.exception("red_blue challenge %s: its configuration does not load", challenge.id)
        return False


def _closed(challenge: Challenge, now: datetime) -> bool:
    return challenge.closes_at is not None and now >= challenge.closes_at


# Making the round ------------------------------------------------------------------------------


def _round_entries(entries: list[Entry]) -> list[RoundEntry[uuid.UUID, uuid.UUID]]:
    return [RoundEntry(e.id, e.participant_id, e.created_at) for e in entries]


def make(challenge_id: uuid.UUID) -> str:
    """Makes the challenge's final round for its close, once (the task's body)."""
    now = utcnow()
    with unit_of_work() as work:
        session = work.session
        challenge = repository.get_challenge(session, challenge_id)
        if challenge is None or not _has_final_round(challenge):
            return "skipped: no final round"
        if challenge.closes_at is None or now < challenge.closes_at:
            return "skipped: not closed"
        if repository.pending_defense_count(session, challenge_id):
            # A defense still in its self-test may become its participant's newest active one.
            return "waiting: self-tests still running"
        if not repository.claim_final_round(
            session, challenge.tenant_id, challenge_id, challenge.closes_at, now
        ):
            return "skipped: made already"
        made = _insert_round(work, challenge, now)
        repository.set_final_round_matches(session, challenge_id, made)
    log.info("red_blue challenge %s: final round of %d matches", challenge_id, made)
    return f"made: {made} matches"


def _insert_round(work: UnitOfWork, challenge: Challenge, now: datetime) -> int:
    """Inserts the round's missing pairs as queued matches and sends them after the commit,
    in chunks; how many were new."""
    session = work.session
    defenses = _round_entries(repository.active_defenses(session, challenge.id))
    attacks = _round_entries(repository.attacks_of(session, challenge.id))
    met: set[tuple[uuid.UUID, uuid.UUID]] = set()
    for newest in newest_of_each(defenses).values():
        met |= repository.pairs_of(session, Match.defense_id, newest.id)
    matches = [
        repository.NewMatch(
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
    inserted = repository.insert_matches_in_batches(session, matches)
    for chunk in chunks([str(match_id) for match_id in inserted]):
        work.send_after_commit(RUN_MATCHES, *chunk)
    return len(inserted)


def request(work: UnitOfWork, challenge: Challenge) -> None:
    """Sends the round's making after the commit, if the challenge has a final round (an
    admin closing it now: no need to wait for the sweep)."""
    if _has_final_round(challenge):
        work.send_after_commit(FINAL_ROUND, str(challenge.id))


# The sweep ------------------------------------------------------------------------------------


def sweep(work: UnitOfWork, now: datetime) -> dict[str, int]:
    """Sends the making of the rounds due (closed, not made for this close: new, or lost, or
    waiting for self-tests), and marks played the rounds none of whose matches is queued or
    running, with the board's final ratings asked for at once."""
    session = work.session
    due = repository.final_rounds_due(session, now, SWEEP_BATCH)
    for challenge_id in due:
        work.send_after_commit(FINAL_ROUND, str(challenge_id))
    played = 0
    for challenge_id in repository.unplayed_final_rounds(session, SWEEP_BATCH):
        counts = repository.final_round_match_counts(session, challenge_id)
        if any(counts.get(status, 0) for status in MatchStatus if status not in _FINISHED):
            continue
        repository.mark_final_round_played(session, challenge_id, sum(counts.values()), now)
        work.send_after_commit(RECOMPUTE, str(challenge_id), INTERVALS_ONLY)
        played += 1
    return {"final_rounds": len(due), "final_rounds_played": played}


# Reading its state ---------------------------------------------------------------------------


def state_of(session: Session, challenge: Challenge) -> FinalRoundRead | None:
    """Where the challenge's final round stands (None: it has none): its phase and how many
    of its matches are played."""
    if not _has_final_round(challenge):
        return None
    now = utcnow()
    closed = _closed(challenge, now)
    row = repository.final_round_of(session, challenge.id) if closed else None
    made = row is not None and row.closes_at == challenge.closes_at
    played_count = total = 0
    if row is not None and made:
        if row.played_at is not None:
            played_count = total = row.matches
        else:
            counts = repository.final_round_match_counts(session, challenge.id)
            total = sum(counts.values())
            played_count = sum(counts.get(status, 0) for status in _FINISHED)
    played = made and row is not None and row.played_at is not None
    phase = phase_of(
        closed=closed,
        made=made,
        played=played,
        rated_all=played and repository.board_rated_all(session, challenge.id),
    )
    return FinalRoundRead(
        phase=phase,
        matches_played=played_count,
        matches_total=total,
        made_at=row.scheduled_at if row is not None and made else None,
        played_at=row.played_at if row is not None and made else None,
    )


def holds(state: FinalRoundRead | None) -> bool:
    """Whether the round keeps a freeze that had begun, past the close (until final)."""
    return state is not None and state.phase in HOLDS_FREEZE
