"""The competition layer's view of a challenge kind (see `app.challenge.challenge_kind`): who
plays a challenge (whom its announcements and notices reach), and whether its private board
has been revealed. Each kind keeps its entries in its own tables, so each answers."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy.orm import Session

from app.challenge.models import Challenge


class CompetitionKind:
    def players(
        self, session: Session, tenant_id: uuid.UUID, challenge_id: uuid.UUID
    ) -> set[uuid.UUID]:
        """The participants with an entry here (the participant it is recorded under and, for
        a team's entry, the member who submitted it). Every kind has it: `app.kinds.base.Kind`
        answers from attempts, and a kind with entries of its own answers from them; this
        layer only declares it."""
        raise NotImplementedError

    def private_board_revealed(self, session: Session, challenge: Challenge, now: datetime) -> bool:
        """Whether the challenge has a private board that is revealed at `now` (a split
        benchmark challenge's at the close; a red-blue final round's boards once final).
        A kind without one answers False."""
        return False
