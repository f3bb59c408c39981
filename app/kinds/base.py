"""The one class a challenge kind subclasses: the interfaces of every layer that asks about
kinds, in one place (each layer sees only its own; see `app.challenge.challenge_kind`)."""

from __future__ import annotations

from app.attempt.attempt_kind import AttemptKind
from app.challenge.challenge_kind import ChallengeKind
from app.export.export_kind import ExportKind
from app.leaderboard.leaderboard_kind import LeaderboardKind
from app.web.web_kind import WebKind


class Kind(ChallengeKind, LeaderboardKind, AttemptKind, WebKind, ExportKind):
    """Configuration and checks (`ChallengeKind`), leaderboard (`LeaderboardKind`),
    submissions and runs (`AttemptKind`), web fragments (`WebKind`), exports (`ExportKind`)."""
