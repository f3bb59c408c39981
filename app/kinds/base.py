"""The one class a challenge kind subclasses: the interfaces of every layer that asks about
kinds, in one place (each layer sees only its own; see `app.challenge.kinds`)."""

from __future__ import annotations

from app.attempt.kinds import AttemptKind
from app.challenge.kinds import ChallengeKind
from app.export.kinds import ExportKind
from app.leaderboard.kinds import LeaderboardKind
from app.web.kinds import WebKind


class Kind(ChallengeKind, LeaderboardKind, AttemptKind, WebKind, ExportKind):
    """Configuration and checks (`ChallengeKind`), leaderboard (`LeaderboardKind`),
    submissions and runs (`AttemptKind`), web fragments (`WebKind`), exports (`ExportKind`)."""
