"""Every table, imported in one place so Alembic and tests see the whole schema: the core's,
and those of the registered challenge kinds (their `model_modules`, imported by the registry)."""

from app.attempt.models import Attempt, AttemptScoreAtFreeze, AttemptTask, Trial
from app.auth.models import AccountToken, ApiKey, BrowserSession, PlatformSession
from app.challenge.models import Challenge
from app.challenge.registry import registered
from app.competition.models import Announcement, ChallengeNotice, RulesAcceptance
from app.kit.mail.models import OutboundMail
from app.kit.observability.models import WorkerHeartbeat
from app.leaderboard.models import BoardFreeze, FrozenLeaderboardEntry, LeaderboardEntry
from app.rescore.models import RescoreJob
from app.scoring.models import ScorerPlugin
from app.team.models import Team, TeamMember
from app.tenant.models import Participant, Tenant, TenantSpend

registered()

__all__ = [
    "AccountToken",
    "Announcement",
    "ApiKey",
    "Attempt",
    "AttemptScoreAtFreeze",
    "AttemptTask",
    "BoardFreeze",
    "BrowserSession",
    "Challenge",
    "ChallengeNotice",
    "FrozenLeaderboardEntry",
    "LeaderboardEntry",
    "OutboundMail",
    "Participant",
    "PlatformSession",
    "RescoreJob",
    "RulesAcceptance",
    "ScorerPlugin",
    "Team",
    "TeamMember",
    "Tenant",
    "TenantSpend",
    "Trial",
    "WorkerHeartbeat",
]
