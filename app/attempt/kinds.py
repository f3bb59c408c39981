"""The attempt layer's view of a challenge kind (see `app.challenge.kinds`): what a submission
to `POST /v1/challenges/{id}/attempts` must hold, how a worker runs the attempt, and what it
measured.

The runner (`app.attempt.runner`, a leased job of `app.lease`) does what every kind shares:
the claim and the lease, the model client with the outbound policy and the cost budgets, the
time limit, the errors, the score and the leaderboard. A kind runs its trials (`run`) and
says what they measured (`measure`), storing what it produces through the `RunContext` it is
given, every write checked against the lease.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from sqlalchemy.orm import Session

from app.attempt import repository
from app.attempt.metrics import AttemptMetrics
from app.attempt.repository import LandedTrial, SubmissionTarget
from app.attempt.run_store import DatabaseRunStore
from app.attempt.schemas import AttemptCreate
from app.attempt.trial_writer import TrialWriter
from app.challenge.kinds import KindConfig
from app.config import Settings, get_settings
from app.db import session_scope
from app.errors import ValidationFailed
from app.evaluation.llm import LLMClient
from app.evaluation.types import TrialRecord


@dataclass(frozen=True)
class Submitted:
    """What an accepted submission stores on its attempt."""

    prompt: str | None = None
    model_spec: dict[str, Any] | None = None


@dataclass(frozen=True)
class AttemptJob:
    """A snapshot of what a run needs, read once so no session stays open during model calls."""

    attempt_id: uuid.UUID
    tenant_id: uuid.UUID
    challenge_id: uuid.UUID
    participant_id: uuid.UUID
    kind: str
    goal: str
    config: KindConfig
    prompt: str | None
    model_spec: dict[str, Any] | None
    created_at_ms: int
    # Never started before this run: no earlier run stored anything of it.
    first_start: bool = False


@dataclass(frozen=True)
class RunContext:
    """What a kind's run uses: its job, the model client, and storage checked against the
    lease (a run that lost its attempt to another worker writes nothing more)."""

    job: AttemptJob
    token: uuid.UUID
    settings: Settings
    llm: LLMClient
    trials: TrialWriter = field(init=False)

    def __post_init__(self) -> None:
        writer = TrialWriter(self.job.attempt_id, self.job.tenant_id, self.token, self.settings)
        object.__setattr__(self, "trials", writer)

    def _stored_trials(self, task_index: int) -> list[TrialRecord]:
        with session_scope() as session:
            rows = repository.task_trials(session, self.job.attempt_id, task_index)
            return [repository.trial_record(row) for row in rows]

    async def stored_trials(self, task_index: int = 0) -> list[TrialRecord]:
        """The trials earlier runs of this attempt stored (a takeover continues from them);
        none, without asking, on an attempt's first start."""
        if self.job.first_start:
            return []
        return await asyncio.to_thread(self._stored_trials, task_index)

    async def save_trial(
        self, trial: TrialRecord, *, task_index: int = 0, task_id: str | None = None
    ) -> None:
        """Stores a trial as it lands (unique per task and index: a repeat changes nothing);
        trials landing together are written together (app.attempt.trial_writer)."""
        await self.trials.save(LandedTrial(trial, task_index, task_id))

    def run_store(self) -> DatabaseRunStore:
        """The evaluation engine's store of a whole run (tasks, trials, summaries) for this
        attempt, for kinds that run the engine's benchmark runner."""
        return DatabaseRunStore(
            self.job.attempt_id, self.job.tenant_id, self.token, self.settings, self.trials
        )


class AttemptKind:
    """The attempt layer's interface of a kind; subclasses implement `submission` and `run`."""

    # Whether `GET /v1/attempts/{id}` lists the attempt's trials (a kind whose attempts have
    # many, tasks times k, pages them at `GET /v1/attempts/{id}/trials` only).
    reads_show_trials: ClassVar[bool] = True

    def submission(
        self,
        target: SubmissionTarget,
        body: AttemptCreate,
        config: Callable[[], KindConfig],
    ) -> Submitted:
        """Checks that the body fits the kind (a 422 naming the field when it does not);
        returns what the attempt stores. `config` loads the challenge's configuration, for
        kinds whose check needs it (it costs a query, so only they call it)."""
        raise NotImplementedError

    def cost_budget_usd(self, config: KindConfig, settings: Settings) -> float:
        """What one attempt may spend on model calls (never above the server's budget)."""
        return settings.attempt_cost_budget_usd

    async def run(self, context: RunContext) -> AttemptMetrics | None:
        """Runs (or, after a takeover, continues) the attempt's trials; raises
        `InfrastructureError` when it cannot finish. Returns its metrics, or None when they
        are measured from what it stored (`measure`)."""
        raise NotImplementedError

    def measure(
        self, session: Session, job: AttemptJob, outcome: AttemptMetrics | None
    ) -> AttemptMetrics:
        """The attempt's metrics, in the transaction that completes it."""
        if outcome is None:
            raise NotImplementedError(f"kind {job.kind!r} returns no metrics and measures none")
        return outcome


def stored_trials(session: Session, attempt_id: uuid.UUID) -> list[TrialRecord]:
    """An attempt's stored trials (its first task's), for a kind's `measure`."""
    return [repository.trial_record(row) for row in repository.trials_of(session, attempt_id)]


def refuse_fields(body: AttemptCreate, fields: Sequence[str], reason: str) -> None:
    """A 422 naming the first of these fields the body gives."""
    for name in fields:
        if getattr(body, name) is not None:
            raise ValidationFailed.at([name], reason)


def require_field(body: AttemptCreate, field: str, reason: str) -> Any:
    value = getattr(body, field)
    if value is None:
        raise ValidationFailed.at([field], reason)
    return value


def checked_prompt(target: SubmissionTarget, body: AttemptCreate) -> str:
    """The body's prompt: required, and within the challenge's length limit."""
    prompt: str = require_field(body, "prompt", f"is required: this is a {target.kind} challenge")
    limit = target.limits.prompt_limit(get_settings().max_prompt_chars)
    if len(prompt) > limit:
        raise ValidationFailed.at(
            ["prompt"], f"is {len(prompt)} characters; this challenge allows at most {limit}"
        )
    return prompt
