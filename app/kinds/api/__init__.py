"""The published surface for challenge kinds: all of the core a kind may import.

A kind's package (`app/kinds/prompt`, `benchmark`, `red_blue`, or one installed from another
package through an entry point) imports from the service this package and its modules alone,
and an import-linter contract holds it so; the core behind it may move without breaking a
kind. Each module is one concern, and importing one loads only what that concern needs (a
kind's registration must not load the evaluation engine or litellm):

- `app.kinds.api` (here): the kind's base class and the types its hooks take and return;
  errors, schemas, settings, the unit of work and its event hooks; challenge, attempt,
  scoring and subject types.
- `app.kinds.api.services`: what a kind may ask of the core's domains, in a session
  (challenges, limits, attempts, participants, teams, the board freeze).
- `app.kinds.api.storage`: for a kind's own tables and queries: the declarative base, column
  types, SQL helpers, and the core's tables a kind's queries join.
- `app.kinds.api.leases`: the leased-run mechanism: a kind's leased tables, their claims, and
  the run that holds a lease on a worker with its budgets.
- `app.kinds.api.evaluation`: evaluation types, verifiers, benchmarks and model checks.
- `app.kinds.api.runs`: the evaluation engine, for a kind's run module only (it is heavy).
- `app.kinds.api.http`: what a kind's API router uses (route class, dependencies).
- `app.kinds.api.web` and `app.kinds.api.pages`: web fragments, and a kind's own pages.
- `app.kinds.api.exports`: datasets a kind exports.
- `app.kinds.api.error_codes`: the error codes a kind's errors carry, and `raises`.

Stability: `KINDS_API_VERSION` is "major.minor". A name listed in a module's `__all__` keeps
its meaning within a major version; a minor version adds names; removing or changing one takes
a new major version, announced in docs/architecture.md. Anything else of `app` is the core's
own and may change in any release.
"""

from __future__ import annotations

from app.attempt.attempt_kind import (
    AttemptJob,
    KindSubmission,
    RunContext,
    RunsAttempts,
    ShownFields,
    Submitted,
    SubmittedText,
    UnscoredRequest,
    checked_prompt,
    fields_as,
    stored_fields,
    stored_trials,
)
from app.attempt.metrics import SEALED_MEASURES, KindMetrics, trial_metrics
from app.attempt.models import AttemptStatus, RunPurpose
from app.attempt.repository import SubmissionTarget
from app.attempt.schemas import AttemptCreate, AttemptRead, RunRow, UnscoredRunRead
from app.auth.subjects import (
    Audience,
    SignedInParticipant,
    TenantAdmin,
    TenantKey,
    TenantSubject,
)
from app.challenge.challenge_kind import Accepts, ChallengeTemplate, KindConfig, NamedModel
from app.challenge.config import ChallengeStatus, KindLimits, LimitsConfig, Visibility
from app.challenge.events import ChallengeClosed
from app.challenge.reachability import checked_api_base, refuse_unreachable
from app.challenge.sections import NAME_PATTERN, EvaluationConfig
from app.kinds.base import Kind
from app.kit.config import Settings, get_settings
from app.kit.error_words import pattern_words
from app.kit.errors import AppError, Conflict, Forbidden, NotFound, ValidationFailed, telling_first
from app.kit.schemas import Handle, InputSchema, Limit, ModelId, Offset, OutputSchema
from app.kit.unit_of_work import UnitOfWork, WorkerTask, handles, unit_of_work
from app.leaderboard.schemas import FROZEN_AT_DESCRIPTION, FROZEN_DESCRIPTION
from app.scoring.measures import AttemptMetrics
from app.scoring.schemas import ScoringConfig
from app.scoring.strategies import Measure, ScoringStrategy, Strategy, scoring_strategy
from app.tenant.quotas import QuotaReached

KINDS_API_VERSION = "2.1"

__all__ = [
    "FROZEN_AT_DESCRIPTION",
    "FROZEN_DESCRIPTION",
    "KINDS_API_VERSION",
    "NAME_PATTERN",
    "SEALED_MEASURES",
    "Accepts",
    "AppError",
    "AttemptCreate",
    "AttemptJob",
    "AttemptMetrics",
    "AttemptRead",
    "AttemptStatus",
    "Audience",
    "ChallengeClosed",
    "ChallengeStatus",
    "ChallengeTemplate",
    "Conflict",
    "EvaluationConfig",
    "Forbidden",
    "Handle",
    "InputSchema",
    "Kind",
    "KindConfig",
    "KindLimits",
    "KindMetrics",
    "KindSubmission",
    "Limit",
    "LimitsConfig",
    "Measure",
    "ModelId",
    "NamedModel",
    "NotFound",
    "Offset",
    "OutputSchema",
    "QuotaReached",
    "RunContext",
    "RunPurpose",
    "RunRow",
    "RunsAttempts",
    "ScoringConfig",
    "ScoringStrategy",
    "Settings",
    "ShownFields",
    "SignedInParticipant",
    "Strategy",
    "SubmissionTarget",
    "Submitted",
    "SubmittedText",
    "TenantAdmin",
    "TenantKey",
    "TenantSubject",
    "UnitOfWork",
    "UnscoredRequest",
    "UnscoredRunRead",
    "ValidationFailed",
    "Visibility",
    "WorkerTask",
    "checked_api_base",
    "checked_prompt",
    "fields_as",
    "get_settings",
    "handles",
    "pattern_words",
    "refuse_unreachable",
    "scoring_strategy",
    "stored_fields",
    "stored_trials",
    "telling_first",
    "trial_metrics",
    "unit_of_work",
]
