"""How the red_blue kind reacts to what the challenge domain announces (domain events)."""

from __future__ import annotations

from app.kinds.api import ChallengeClosed, UnitOfWork, handles
from app.kinds.red_blue import final_round
from app.kinds.red_blue.repository import RedBlueRepository


@handles(ChallengeClosed)
def make_the_final_round(work: UnitOfWork, event: ChallengeClosed) -> None:
    """An admin closed a challenge at once: its final round, if it has one, is made after the
    commit (not at the sweep's next pass)."""
    challenge = RedBlueRepository(work.session, event.tenant_id).challenge(event.challenge_id)
    if challenge is not None:
        final_round.request(work, challenge)
