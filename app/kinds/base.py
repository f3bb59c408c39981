"""The one class a challenge kind subclasses: the interfaces of every layer that asks about
kinds, in one place (each layer sees only its own; see `app.challenge.challenge_kind`). A kind
whose attempts run on the core's runner also subclasses `RunsAttempts`."""

from __future__ import annotations

from typing import Any

from app.attempt.attempt_kind import AttemptKind, RunsAttempts
from app.challenge.challenge_kind import ChallengeKind
from app.export.export_kind import ExportKind
from app.leaderboard.leaderboard_kind import LeaderboardKind
from app.web.web_kind import WebKind


class Kind(ChallengeKind, LeaderboardKind, AttemptKind, WebKind, ExportKind):
    """Configuration and checks (`ChallengeKind`), leaderboard (`LeaderboardKind`),
    submissions (`AttemptKind`), web fragments (`WebKind`), exports (`ExportKind`); and
    runs, for a kind that takes attempts or runs unscored ones (`RunsAttempts`)."""

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
