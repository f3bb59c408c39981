"""Every table, imported in one place so Alembic and tests see the whole schema."""

from app.attempt.models import Attempt, AttemptTask, Trial
from app.auth.models import ApiKey, BrowserSession
from app.challenge.models import Challenge
from app.leaderboard.models import LeaderboardEntry
from app.observability.models import WorkerHeartbeat
from app.rescore.models import RescoreJob
from app.scoring.models import ScorerPlugin
from app.tenant.models import Participant, Tenant, TenantSpend

__all__ = [
    "ApiKey",
    "Attempt",
    "AttemptTask",
    "BrowserSession",
    "Challenge",
    "LeaderboardEntry",
    "Participant",
    "RescoreJob",
    "ScorerPlugin",
    "Tenant",
    "TenantSpend",
    "Trial",
    "WorkerHeartbeat",
]
