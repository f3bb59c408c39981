"""The one class a challenge kind subclasses: the interfaces of every layer that asks about
kinds, in one place (each layer sees only its own; see `app.challenge.challenge_kind`). A kind
whose attempts run on the core's runner also subclasses `RunsAttempts`."""

from __future__ import annotations

import uuid
from collections.abc import Collection
from typing import Any

from sqlalchemy.orm import Session

from app.attempt.attempt_kind import AttemptKind, RunsAttempts
from app.attempt.service import entrants, players
from app.challenge.challenge_kind import ChallengeKind
from app.competition.competition_kind import CompetitionKind
from app.export.export_kind import ExportKind
from app.leaderboard.leaderboard_kind import LeaderboardKind
from app.team.team_kind import TeamKind
from app.web.web_kind import WebKind


class Kind(
    ChallengeKind,
    LeaderboardKind,
    TeamKind,
    AttemptKind,
    WebKind,
    ExportKind,
    CompetitionKind,
):
    """Configuration and checks (`ChallengeKind`), leaderboard (`LeaderboardKind`), who has
    entries (`TeamKind`), submissions (`AttemptKind`), web fragments (`WebKind`), exports
    (`ExportKind`), who plays and what is revealed (`CompetitionKind`); and runs, for a
    kind that takes attempts or runs unscored ones (`RunsAttempts`)."""

    def entrants(
        self,
        session: Session,
        tenant_id: uuid.UUID,
        challenge_id: uuid.UUID,
        participant_ids: Collection[uuid.UUID],
    ) -> set[uuid.UUID]:
        """A kind's entries are attempts unless it keeps entries of its own (and says so)."""
        return entrants(session, tenant_id, challenge_id, participant_ids)

    def players(
        self, session: Session, tenant_id: uuid.UUID, challenge_id: uuid.UUID
    ) -> set[uuid.UUID]:
        """A kind's entries are attempts unless it keeps entries of its own (and says so)."""
        return players(session, tenant_id, challenge_id)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # What a kind accepts and what it implements say the same, when it is defined: a
        # kind never takes attempts it cannot run.
        runs_some = cls.accepts.attempts or cls.unscored_model is not None
        if runs_some and not issubclass(cls, RunsAttempts):
            raise TypeError(
                f"challenge kind {cls.__name__} takes attempts (accepts {cls.accepts.value!r}) "
                "or runs unscored ones (unscored_model), but does not run them: subclass "
                "app.attempt.attempt_kind.RunsAttempts and implement `run`"
            )
