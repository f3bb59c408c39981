"""Running one attempt on a worker: claim it, run its trials through the evaluation engine,
finish it with metrics, score and leaderboard in one transaction.

The run has the shape of every leased job (app/kit/lease/run.py). The claim is a conditional
update that also takes over an attempt whose worker died (lease expired); trials are stored as
they land, unique per index, so a takeover continues where the dead worker stopped; only the
holder of the current run token can finish the attempt, so the leaderboard moves once.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from app.attempt import cross_tenant
from app.attempt.attempt_kind import AttemptJob, AttemptKind, RunContext, runner_of
from app.attempt.models import ATTEMPT_LEASES, Attempt, AttemptStatus
from app.attempt.ranked import metric_columns, ranked_run
from app.attempt.turn_claim import claim_in_turn
from app.challenge.models import strategy_of
from app.challenge.registry import find_kind, kind_as
from app.challenge.service import config_of, find_challenge, scoring_of
from app.evaluation.engine.llm import warm_up_calls, warmed_up
from app.evaluation.engine.types import InfrastructureError
from app.kit.config import Settings
from app.kit.db import session_scope, utcnow
from app.kit.errors import ValidationFailed
from app.kit.lease.budget import CostBudget, RowSpend
from app.kit.lease.model_client import model_client
from app.kit.lease.repository import release
from app.kit.lease.run import Failure, LeasedRun, run_leased, run_on_process_loop
from app.kit.observability import context
from app.kit.observability import metrics as telemetry
from app.kit.unit_of_work import UnitOfWork, unit_of_work
from app.leaderboard import service as leaderboard
from app.scoring.measures import AttemptMetrics
from app.scoring.service import ScoreResult, Scoring, prepare_scoring
from app.tenant.service import DaySpend

log = logging.getLogger(__name__)


def run_attempt(attempt_id: uuid.UUID) -> str:
    """Runs the attempt if it is this worker's to run; returns what happened, for the logs."""
    return run_leased(ATTEMPT_RUN, attempt_id)


def run_in_turn(attempt_id: uuid.UUID) -> str:
    """What a worker does with an attempt's task: runs the attempt whose turn it is, if this
    one is waiting (app/attempt/turns.py); returns what happened, for the logs."""
    return run_leased(IN_TURN_RUN, attempt_id)


def warm_up_process() -> bool:
    """The warm-up call (app.evaluation.engine.llm.warm_up_calls) on this process's event loop, the
    one its attempts then run on: their first timed call is then like any later one. Only
    after the main process's warm-up loaded litellm's modules (inherited by the fork): a pool
    process that took seconds to start would be killed by Celery's start-up timeout."""
    return warmed_up() and run_on_process_loop(warm_up_calls())


class AttemptRun(LeasedRun[cross_tenant.Claimed, AttemptJob, AttemptMetrics]):
    """An attempt's run; `in_turn`: of the attempt whose turn it is (`claim_in_turn`),
    else of the attempt asked for."""

    table = ATTEMPT_LEASES

    def __init__(self, *, in_turn: bool = False) -> None:
        self.in_turn = in_turn

    def claim(
        self,
        session: Session,
        row_id: uuid.UUID,
        token: uuid.UUID,
        now: datetime,
        until: datetime,
    ) -> cross_tenant.Claimed | None:
        if self.in_turn:
            return claim_in_turn(session, row_id, token, now, until)
        return cross_tenant.claim(session, row_id, token, now, until)

    def claimed_id(self, claimed: cross_tenant.Claimed, asked: uuid.UUID) -> uuid.UUID:
        return claimed.attempt.id

    def runs(self, claimed: cross_tenant.Claimed) -> int:
        return claimed.attempt.run_count

    def load(self, session: Session, claimed: cross_tenant.Claimed) -> AttemptJob | None:
        return _load_job(session, claimed)

    def started(self, job: AttemptJob) -> None:
        # The task's log lines name the attempt run, which its turn may have made another.
        context.bind(attempt_id=str(job.attempt_id))
        telemetry.attempt_reached(job.kind, "running")

    def name(self, row_id: uuid.UUID) -> str:
        return f"attempt {row_id}"

    async def execute(
        self, job: AttemptJob, token: uuid.UUID, settings: Settings
    ) -> AttemptMetrics:
        return await _execute(job, token, settings)

    def complete(self, job: AttemptJob, token: uuid.UUID, result: AttemptMetrics) -> str:
        _finish(job, token, result)
        return "completed"

    def fail(self, row_id: uuid.UUID, token: uuid.UUID, failure: Failure) -> None:
        _finish_with_error(row_id, token, failure)


ATTEMPT_RUN = AttemptRun()
IN_TURN_RUN = AttemptRun(in_turn=True)


def _load_job(session: Session, claimed: cross_tenant.Claimed) -> AttemptJob | None:
    attempt = claimed.attempt
    challenge = find_challenge(session, attempt.tenant_id, attempt.challenge_id)
    if challenge is None:
        return None
    try:
        config = config_of(challenge)
    except ValidationFailed:
        log.exception("attempt %s: the challenge's configuration does not load", attempt.id)
        return None
    return AttemptJob(
        attempt_id=attempt.id,
        tenant_id=attempt.tenant_id,
        challenge_id=challenge.id,
        participant_id=attempt.participant_id,
        kind=challenge.kind,
        goal=challenge.goal,
        config=config,
        created_at=attempt.created_at,
        kind_fields=attempt.kind_fields,
        first_start=claimed.first_start,
        purpose=attempt.purpose,
        baseline=attempt.baseline,
    )


async def _execute(job: AttemptJob, token: uuid.UUID, settings: Settings) -> AttemptMetrics:
    """Runs the kind's trials, every call by the service's outbound policy and within the
    attempt's and the tenant's cost budgets; returns what the kind's run returns."""
    # A kind with entries of its own may still run unscored runs (`unscored_model`).
    unscored_model = kind_as(job.kind, AttemptKind).unscored_model
    runs_unscored = not job.purpose.scored and unscored_model is not None
    if not (find_kind(job.kind).accepts.attempts or runs_unscored):
        # Never queued (submission refuses it); a row written by other means ends in error
        # saying why, not as an internal failure.
        raise InfrastructureError(f"a {job.kind} challenge takes no attempts")
    # A kind that takes attempts, or runs unscored ones, runs them (app.kinds.base).
    kind = runner_of(find_kind(job.kind))
    budget = CostBudget(
        own=RowSpend(Attempt, job.attempt_id),
        tenant_day=DaySpend(job.tenant_id),
        attempt_budget_usd=kind.cost_budget_usd(job.config, settings),
        tenant_daily_budget_usd=settings.tenant_daily_cost_budget_usd,
        unpriced_usd_per_million_tokens=settings.unpriced_usd_per_million_tokens,
    )
    llm = model_client(settings, budget)
    try:
        return await kind.run(RunContext(job, token, settings, llm))
    finally:
        await llm.aclose()


def _finish(job: AttemptJob, token: uuid.UUID, measured: AttemptMetrics) -> None:
    """Metrics (what the kind's run measured, and its own measures), the score, the status
    and the leaderboard (entries only: an unscored run is scored for its reader and offered
    to no board), written in one commit by the holder of the lease only, with what the kind
    starts once the attempt has completed (sent after that commit). A scorer plugin runs
    between two transactions, so a slow one holds no lock; other strategies need one."""
    context = {
        "attempt_id": job.attempt_id,
        "tenant_id": job.tenant_id,
        "challenge_id": job.challenge_id,
        "participant_id": job.participant_id,
    }
    with unit_of_work() as work:
        session = work.session
        # Read now, not when the run began: an attempt that ends while a rescore runs is
        # scored by the configuration that rescore applies (app.rescore.runner).
        saved = scoring_of(session, job.tenant_id, job.challenge_id)
        if saved is None:
            return
        metrics = measured.model_copy(update={"created_at": job.created_at})
        own = runner_of(find_kind(job.kind)).measure_own(session, job, metrics)
        kind_metrics = None if own is None else own.model_dump(mode="json", exclude_none=True)
        scoring = prepare_scoring(session, strategy_of(saved), saved)
        plugin = scoring.calls_plugin
        if not plugin:
            scored = scoring.score(metrics.as_plugin_input(), context)
            ended = _complete(work, job, token, metrics, kind_metrics, scored, scoring)
        elif cross_tenant.locked_if_held(session, job.attempt_id, token) is None:
            return  # another worker took the attempt over: not worth a plugin's seconds
    if plugin:
        scored = scoring.score(metrics.as_plugin_input(), context)
        with unit_of_work() as work:
            ended = _complete(work, job, token, metrics, kind_metrics, scored, scoring)
    if ended is not None:
        ended()  # counted once committed


def _complete(
    work: UnitOfWork,
    job: AttemptJob,
    token: uuid.UUID,
    metrics: AttemptMetrics,
    kind_metrics: dict[str, Any] | None,
    scored: ScoreResult,
    scoring: Scoring,
) -> Callable[[], None] | None:
    """Completes the attempt if this token still holds it (one conditional UPDATE, which
    locks the row before the leaderboard's), offers it to the leaderboard and starts what
    its kind starts then; returns what records its end in the metrics after the commit, or
    None when another worker holds it."""
    session = work.session
    finished = utcnow()
    row = release(
        session,
        ATTEMPT_LEASES,
        [job.attempt_id],
        token,
        returning=(Attempt.created_at, Attempt.started_at),
        status=AttemptStatus.COMPLETED,
        finished_at=finished,
        score=scored.score,
        score_details=scored.details,
        kind_metrics=kind_metrics,
        **metric_columns(metrics),
    ).one_or_none()
    if row is None:
        return None
    if job.purpose.scored and job.participant_id is not None:
        ranked = ranked_run(job, job.participant_id, metrics, scored.score)
        leaderboard.offer(session, ranked, scoring.strategy)
    runner_of(find_kind(job.kind)).after_completion(work, job)
    created_at, started_at = row
    return _end_recorder(job.kind, AttemptStatus.COMPLETED, finished, created_at, started_at)


def _end_recorder(
    kind: str,
    status: AttemptStatus,
    finished: datetime,
    created_at: datetime,
    started_at: datetime | None,
) -> Callable[[], None]:
    """The attempt's end for the metrics: its status, kind, time since submission and since
    its first claim (recorded when called)."""
    since_submission = (finished - created_at).total_seconds()
    run = (finished - started_at).total_seconds() if started_at is not None else None
    return lambda: telemetry.attempt_ended(kind, status, since_submission, run)


def _finish_with_error(attempt_id: uuid.UUID, token: uuid.UUID, failure: Failure) -> None:
    """Ends the attempt as an infrastructure error; it does not count against limits.

    Participants read the failure's `reason`; tenant admins its `detail` too."""
    with session_scope() as session:
        attempt = cross_tenant.locked_if_held(session, attempt_id, token)
        if attempt is None:
            return
        attempt.status = AttemptStatus.ERROR
        attempt.error = failure.reason
        attempt.error_detail = failure.detail
        attempt.finished_at = utcnow()
        attempt.end_lease()
        challenge = find_challenge(session, attempt.tenant_id, attempt.challenge_id)
        ended = _end_recorder(
            challenge.kind if challenge is not None else "unknown",
            attempt.status,
            attempt.finished_at,
            attempt.created_at,
            attempt.started_at,
        )
    ended()
