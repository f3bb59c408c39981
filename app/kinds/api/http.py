"""What a kind's API router uses: the route class that renders the core's errors, the
request's session and unit of work, the callers a route admits, the challenge in the path,
idempotent creation and conditional reads."""

from __future__ import annotations

from app.auth.gate import TenantAdminDep, TenantKeyDep
from app.challenge.reference import ChallengeIdDep
from app.kit.conditional import CONDITIONAL_READ
from app.kit.deps import IdempotencyKey, SessionDep, UnitOfWorkDep, accepted_headers
from app.kit.routing import ApiRoute

__all__ = [
    "CONDITIONAL_READ",
    "ApiRoute",
    "ChallengeIdDep",
    "IdempotencyKey",
    "SessionDep",
    "TenantAdminDep",
    "TenantKeyDep",
    "UnitOfWorkDep",
    "accepted_headers",
]
