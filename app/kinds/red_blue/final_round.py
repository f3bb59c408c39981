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

This module is what the API reads of a round (`state_of`, `holds`) and asks of it (`request`,
after an admin's close); the making and the sweep's part run on a worker
(`final_round_runs.py`).
"""

from __future__ import annotations

import logging
from datetime import datetime

from sqlalchemy.orm import Session

from app.kinds.api import UnitOfWork, ValidationFailed
from app.kinds.api.services import config_of
from app.kinds.api.storage import Challenge, utcnow
from app.kinds.red_blue.config import sections_of
from app.kinds.red_blue.dispatch import FINAL_ROUND
from app.kinds.red_blue.models import MatchStatus
from app.kinds.red_blue.repository import FinalRoundRepository
from app.kinds.red_blue.rules.final_round import HOLDS_FREEZE, phase_of
from app.kinds.red_blue.schemas import FinalRoundRead

log = logging.getLogger(__name__)

KIND_NAME = "red_blue"
FINISHED = (MatchStatus.COMPLETED, MatchStatus.ERROR)


def has_final_round(challenge: Challenge) -> bool:
    if challenge.kind != KIND_NAME:
        return False
    try:
        return sections_of(config_of(challenge)).final_round
    except (ValidationFailed, TypeError):
        log.exception("red_blue challenge %s: its configuration does not load", challenge.id)
        return False


def _closed(challenge: Challenge, now: datetime) -> bool:
    return challenge.closes_at is not None and now >= challenge.closes_at


def request(work: UnitOfWork, challenge: Challenge) -> None:
    """Sends the round's making after the commit, if the challenge has a final round (an
    admin closing it now: no need to wait for the sweep)."""
    if has_final_round(challenge):
        work.send_after_commit(FINAL_ROUND, str(challenge.id))


# Reading its state ---------------------------------------------------------------------------


def state_of(session: Session, challenge: Challenge) -> FinalRoundRead | None:
    """Where the challenge's final round stands (None: it has none): its phase and how many
    of its matches are played."""
    if not has_final_round(challenge):
        return None
    now = utcnow()
    closed = _closed(challenge, now)
    rounds = FinalRoundRepository(session, challenge.tenant_id)
    row = rounds.round_of(challenge.id) if closed else None
    made = row is not None and row.closes_at == challenge.closes_at
    played_count = total = 0
    if row is not None and made:
        if row.played_at is not None:
            played_count = total = row.matches
        else:
            counts = rounds.match_counts(challenge.id)
            total = sum(counts.values())
            played_count = sum(counts.get(status, 0) for status in FINISHED)
    played = made and row is not None and row.played_at is not None
    phase = phase_of(
        closed=closed,
        made=made,
        played=played,
        rated_all=played and rounds.board_rated_all(challenge.id),
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
