"""The team layer's view of a challenge kind (see `app.challenge.challenge_kind`): which
participants already have entries in a challenge, the fact the team rules turn on (joining
closes at a team's first entry, leaving too, and a participant who played alone joins no
team). Each kind keeps its entries in its own tables, so each answers for them."""

from __future__ import annotations

import uuid
from collections.abc import Collection

from sqlalchemy.orm import Session


class TeamKind:
    def entrants(
        self,
        session: Session,
        tenant_id: uuid.UUID,
        challenge_id: uuid.UUID,
        participant_ids: Collection[uuid.UUID],
    ) -> set[uuid.UUID]:
        """Those of the participants with an entry (scored play, not practice) here."""
        raise NotImplementedError
