"""The attempt layer's view of a challenge kind (see `app.challenge.challenge_kind`): what a
submission to `POST /v1/challenges/{id}/attempts` must hold (`AttemptKind`), and, for a kind
whose attempts run, how a worker runs one and what it measured (`RunsAttempts`).

A kind's submission fields are its own: `submission_model` declares them (beside the
`participant` every submission has), the service validates the body's other fields with it
(a 422 naming the field; a field of another kind names the kinds it is for), and the attempt
stores them in one document, its `kind_fields`, shaped by the kind (`AttemptKind.submission`);
the attempts table has no column of any kind's. The kind reads them back with its own model
(`stored_fields`) and says how they are shown on the attempt's read (`AttemptKind.shown`).
Only kinds that take attempts (`ChallengeKind.accepts`) are asked; the core refuses attempts
to the others.

A kind declares what it accepts (`ChallengeKind.accepts`); one that takes attempts, or runs
unscored ones (`AttemptKind.unscored_model`), also subclasses `RunsAttempts` (`app.kinds.base`
refuses a kind that would take attempts it cannot run), and a kind that runs none has no run
method at all. The runner (`app.attempt.runner`, a leased job of `app.kit.lease`) does what every
kind shares: the claim and the lease, the model client with the outbound policy and the cost
budgets, the time limit, the errors, the score and the leaderboard. A kind runs its trials and
returns what they measured (`RunsAttempts.run`), storing what it produces through the
`RunContext` it is given, every write checked against the lease.
"""

from __future__ import annotations

import asyncio
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated, Any, ClassVar, TypeVar

from pydantic import AfterValidator, BaseModel, StringConstraints, ValidationError
from sqlalchemy.orm import Session

from app.attempt.metrics import KindMetrics
from app.attempt.models import RunPurpose
from app.attempt.repository import LandedTrial, RunTrialRepository, SubmissionTarget
from app.attempt.run_store import DatabaseRunStore
from app.attempt.trial_writer import TrialWriter
from app.challenge.challenge_kind import ChallengeKind, KindConfig
from app.evaluation.engine.llm import LLMClient
from app.evaluation.engine.types import InfrastructureError, TrialRecord
from app.kit.config import Settings, get_settings
from app.kit.db import session_scope
from app.kit.errors import ValidationFailed
from app.kit.schemas import InputSchema
from app.kit.unit_of_work import UnitOfWork
from app.scoring.measures import AttemptMetrics


def _storable_text(value: str) -> str:
    if "\x00" in value:
        raise ValueError("must not contain NUL characters")
    if not value.strip():
        raise ValueError("must not be blank")
    return value


# Text a participant submits: not empty, not blank, storable.
SubmittedText = Annotated[str, StringConstraints(min_length=1), AfterValidator(_storable_text)]


class KindSubmission(InputSchema):
    """A kind's fields of a submission, beside the `participant` every one has; unknown
    fields are refused. A kind subclasses it as its `submission_model`."""


Fields = TypeVar("Fields", bound=KindSubmission)


def fields_as(fields: KindSubmission, model: type[Fields]) -> Fields:
    """A kind's validated fields as its own model (the service validated them with it)."""
    if not isinstance(fields, model):
        raise TypeError(f"a {model.__name__}, not {type(fields).__name__}")
    return fields


# A kind's model of its stored fields: its submission model, or one of its own.
Stored = TypeVar("Stored", bound=BaseModel)


def stored_fields(kind_fields: dict[str, Any] | None, model: type[Stored]) -> Stored:
    """An attempt's stored fields (`kind_fields`) as its kind's model: what its run reads of
    the submission. The kind's model validated them on the way in; a document that no longer
    fits it (a row written by other means) ends the run in error, a failure of the machinery
    and not of the participant (`InfrastructureError`: it counts against no limit)."""
    try:
        return model.model_validate(kind_fields or {})
    except ValidationError as error:
        raise InfrastructureError(
            "the attempt's submitted fields do not load", detail=str(error)
        ) from error


@dataclass(frozen=True)
class Submitted:
    """What an accepted submission stores on its attempt: its fields, in the shape its kind
    keeps them, in the attempt's `kind_fields` document (None: no field to keep)."""

    kind_fields: dict[str, Any] | None = None


@dataclass(frozen=True)
class ShownFields:
    """How an attempt's stored fields read (`AttemptRead`, `UnscoredRunRead`, the attempts
    export): the API's `prompt` and `model_spec` answers, which clients read as documented
    (docs/api.md: a prompt kind's prompt; a benchmark's model, temperature and system
    prompt), and `kind_fields`, the rest of the kind's fields. A kind decides which of its
    fields answer which (`AttemptKind.shown`)."""

    prompt: str | None = None
    model_spec: dict[str, Any] | None = None
    kind_fields: dict[str, Any] | None = None

    @classmethod
    def prompt_apart(cls, stored: dict[str, Any] | None, field: str = "prompt") -> ShownFields:
        """The stored `field` as the read's `prompt`, the kind's other fields as its
        `kind_fields` (a kind whose submission is a prompt and fields of its own)."""
        rest = dict(stored or {})
        prompt = rest.pop(field, None)
        return cls(prompt=prompt, kind_fields=rest or None)


@dataclass(frozen=True)
class AttemptJob:
    """A snapshot of what a run needs, read once so no session stays open during model calls."""

    attempt_id: uuid.UUID
    tenant_id: uuid.UUID
    challenge_id: uuid.UUID
    # None for a test run (no participant makes it).
    participant_id: uuid.UUID | None
    kind: str
    goal: str
    config: KindConfig
    created_at: datetime
    # The submission's fields, as its kind stored them (`Submitted.kind_fields`); the kind
    # reads them with its own model (`stored_fields`).
    kind_fields: dict[str, Any] | None = None
    # Never started before this run: no earlier run stored anything of it.
    first_start: bool = False
    # An entry, or an unscored run (practice, test) that reaches no board.
    purpose: RunPurpose = RunPurpose.ENTRY
    # An admin's reference entry (its leaderboard row is marked, taking no rank).
    baseline: bool = False


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
            run_trials = RunTrialRepository(session, self.job.tenant_id)
            return run_trials.trial_records(self.job.attempt_id, task_index)

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


@dataclass(frozen=True)
class UnscoredRequest:
    """An unscored run asked for (a participant's practice, a tenant admin's test run): what
    `AttemptKind.unscored` checks and turns into what the run stores."""

    session: Session
    tenant_id: uuid.UUID
    target: SubmissionTarget
    fields: KindSubmission
    # Loads the challenge's configuration (a query: only kinds whose check needs it call it).
    config: Callable[[], KindConfig]
    purpose: RunPurpose
    # The participant practising; None for a test run.
    participant_id: uuid.UUID | None


class AttemptKind:
    """The attempt layer's interface of a kind: what its submissions and unscored runs hold.
    A kind that takes attempts sets its `submission_model` (and implements `submission` for
    checks its model cannot make); it runs them as a `RunsAttempts`."""

    # The fields of a submission beside `participant` (none by default).
    submission_model: ClassVar[type[KindSubmission]] = KindSubmission
    # Whether `GET /v1/attempts/{id}` lists the attempt's trials (a kind whose attempts have
    # many, tasks times k, pages them at `GET /v1/attempts/{id}/trials` only).
    reads_show_trials: ClassVar[bool] = True
    # The fields of an unscored run (practice, test run) beside `participant`; None: those of
    # a submission (`submission_model`). A kind that takes no attempts runs unscored ones only
    # when it names its fields here.
    unscored_model: ClassVar[type[KindSubmission] | None] = None

    def submission(
        self,
        target: SubmissionTarget,
        fields: KindSubmission,
        config: Callable[[], KindConfig],
    ) -> Submitted:
        """Checks of the fields that their model cannot make (the challenge's limits: a 422
        naming the field); returns what the attempt stores: by default, the fields given, in
        its `kind_fields` document. `config` loads the challenge's configuration, for kinds
        whose check needs it (it costs a query, so only they call it)."""
        given = fields.model_dump(mode="json", exclude_none=True)
        return Submitted(kind_fields=given or None)

    def shown(self, kind_fields: dict[str, Any] | None) -> ShownFields:
        """How the attempt's stored fields read (`ShownFields`): by default, all of them as
        its `kind_fields`. It runs on every read of an attempt, so it rearranges what is
        stored and never refuses it."""
        return ShownFields(kind_fields=kind_fields or None)

    def unscored(self, request: UnscoredRequest) -> Submitted:
        """What an unscored run stores, after the checks its fields' model cannot make; by
        default a submission's (`submission`)."""
        return self.submission(request.target, request.fields, request.config)


class RunsAttempts(ABC):
    """The run of a kind whose attempts run on the core's runner: its scored attempts when it
    takes attempts (`Accepts.ATTEMPTS`, `BOTH`), and its unscored runs (practice, test runs)
    when it names their fields (`AttemptKind.unscored_model`). The runner asks no other kind."""

    def cost_budget_usd(self, config: KindConfig, settings: Settings) -> float:
        """What one attempt may spend on model calls (never above the server's budget)."""
        return settings.attempt_cost_budget_usd

    @abstractmethod
    async def run(self, context: RunContext) -> AttemptMetrics:
        """Runs (or, after a takeover, continues) the attempt's trials; raises
        `InfrastructureError` when it cannot finish. Returns its metrics, counting every trial
        it has, those an earlier run stored included (`RunContext.stored_trials`)."""

    def measure_own(
        self, session: Session, job: AttemptJob, metrics: AttemptMetrics
    ) -> KindMetrics | None:
        """Measures of the kind's own, beside `metrics` (what `run` returned), in the
        transaction that completes the attempt; stored in the attempt's `kind_metrics`
        document (none by default)."""
        return None

    def after_completion(self, work: UnitOfWork, job: AttemptJob) -> None:
        """What the kind starts once the attempt has completed, in the transaction that
        completes it (the tasks it sends leave after that commit): nothing by default. The
        benchmark kind starts a split challenge's private part here, a run of its own that
        nothing participants see of the attempt waits for."""
        return None


def runner_of(kind: ChallengeKind) -> RunsAttempts:
    """The kind's runs; one that runs none here is a programming error (`app.kinds.base`
    refuses a kind that takes attempts, or runs unscored ones, without them)."""
    if not isinstance(kind, RunsAttempts):
        raise TypeError(f"challenge kind {kind.name!r} does not implement RunsAttempts")
    return kind


def unscored_fields(kind: ChallengeKind) -> type[KindSubmission] | None:
    """The fields of the kind's unscored runs (practice, test runs): its `unscored_model`, or
    else a submission's when it takes attempts; None when it runs none."""
    if not isinstance(kind, AttemptKind) or not isinstance(kind, RunsAttempts):
        return None
    if kind.unscored_model is not None:
        return kind.unscored_model
    return kind.submission_model if kind.accepts.attempts else None


def stored_trials(session: Session, job: AttemptJob) -> list[TrialRecord]:
    """The job's attempt's stored trials (its first task's), for a kind's `measure_own`."""
    return RunTrialRepository(session, job.tenant_id).trial_records(job.attempt_id)


def checked_prompt(target: SubmissionTarget, prompt: str, field: str = "prompt") -> str:
    """A submitted prompt within the challenge's length limit (a 422 naming `field`)."""
    limit = target.limits.prompt_limit(get_settings().max_prompt_chars)
    if len(prompt) > limit:
        raise ValidationFailed.at(
            [field], f"is {len(prompt)} characters; this challenge allows at most {limit}"
        )
    return prompt
