"""Running one attempt on a worker: claim it, run its trials through the evaluation engine,
finish it with metrics, score and leaderboard in one transaction.

Every step can be repeated safely. The claim is a conditional update that also takes over an
attempt whose worker died (lease expired); trials are stored as they land, unique per index, so
a takeover continues where the dead worker stopped; only the holder of the current run token
can finish the attempt, so the leaderboard moves once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from celery.exceptions import SoftTimeLimitExceeded
from sqlalchemy.orm import Session

from app.attempt import repository
from app.attempt.budget import AttemptBudget
from app.attempt.kinds import AttemptJob, AttemptKind, RunContext
from app.attempt.metrics import AttemptMetrics
from app.attempt.models import ATTEMPT_LEASES, Attempt, AttemptStatus
from app.attempt.ranked import as_ranked, record_metrics
from app.challenge.registry import kind_as
from app.challenge.service import config_of, find_challenge
from app.config import Settings, get_settings
from app.db import session_scope, utcnow
from app.errors import ValidationFailed
from app.evaluation.llm import LLMClient, warm_up_calls, warmed_up
from app.evaluation.types import (
    InfrastructureError,
    RetryPolicy,
)
from app.leaderboard import service as leaderboard
from app.lease.heartbeat import Heartbeat
from app.lease.service import LeaseLost, lease_until, renewer
from app.observability import metrics as telemetry
from app.scoring.service import ScoreResult, Scoring, prepare_scoring

log = logging.getLogger(__name__)

T = TypeVar("T")


def run_attempt(attempt_id: uuid.UUID) -> str:
    """Runs the attempt if it is this worker's to run; returns what happened, for the logs."""
    settings = get_settings()
    token = uuid.uuid4()
    with session_scope() as session:
        claimed = repository.claim(session, attempt_id, token, utcnow(), lease_until(settings))
        if claimed is None:
            return "skipped: finished or held by another worker"
        run_number = claimed.attempt.run_count
        job = _load_job(session, claimed) if run_number <= settings.max_attempt_runs else None
    if run_number > settings.max_attempt_runs:
        _finish_with_error(
            attempt_id, token, f"gave up after {settings.max_attempt_runs} runs without finishing"
        )
        return "error: too many runs"
    if job is None:
        _finish_with_error(attempt_id, token, "the challenge has no runnable configuration")
        return "error: not runnable"
    telemetry.attempt_reached(job.kind, "running")
    try:
        renew = renewer(ATTEMPT_LEASES, [attempt_id], token, settings)
        with Heartbeat(renew, settings, f"attempt {attempt_id}"):
            outcome = run_on_process_loop(_execute(job, token, settings))
    except LeaseLost:
        return "stopped: lease taken over by another worker"
    except InfrastructureError as exc:
        if exc.detail != str(exc):
            log.warning("attempt %s ended in error: %s", attempt_id, exc.detail)
        _finish_with_error(attempt_id, token, str(exc), detail=exc.detail)
        return "error"
    except SoftTimeLimitExceeded:
        limit = settings.attempt_time_limit_seconds
        _finish_with_error(attempt_id, token, f"time limit of {limit} s exceeded")
        return "error: time limit"
    except Exception as exc:
        # A bug must not leave the attempt running forever; record it and keep the trace.
        log.exception("attempt %s failed unexpectedly", attempt_id)
        _finish_with_error(attempt_id, token, f"internal error: {type(exc).__name__}")
        return "error: internal"
    _finish(job, token, outcome)
    return "completed"


_process_loop: asyncio.AbstractEventLoop | None = None


def run_on_process_loop(coroutine: Coroutine[Any, Any, T]) -> T:
    """Runs on one event loop per worker process, kept between attempts: a new loop (and its
    thread pool) for every attempt is measurable overhead for short offline attempts. A loop
    that an exception interrupted may hold half-done tasks, so it is discarded."""
    global _process_loop
    if _process_loop is None or _process_loop.is_closed():
        _process_loop = asyncio.new_event_loop()
    loop = _process_loop
    try:
        return loop.run_until_complete(coroutine)
    except BaseException:
        _process_loop = None
        for task in asyncio.all_tasks(loop):
            task.cancel()
        with contextlib.suppress(BaseException):
            loop.run_until_complete(loop.shutdown_default_executor())
        loop.close()
        raise


def warm_up_process() -> bool:
    """The warm-up call (app.evaluation.llm.warm_up_calls) on this process's event loop, the
    one its attempts then run on: their first timed call is then like any later one. Only
    after the main process's warm-up loaded litellm's modules (inherited by the fork): a pool
    process that took seconds to start would be killed by Celery's start-up timeout."""
    return warmed_up() and run_on_process_loop(warm_up_calls())


def _load_job(session: Session, claimed: repository.Claimed) -> AttemptJob | None:
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
        prompt=attempt.prompt,
        model_spec=attempt.model_spec,
        first_start=claimed.first_start,
    )


async def _execute(job: AttemptJob, token: uuid.UUID, settings: Settings) -> AttemptMetrics | None:
    """Runs the kind's trials, every call by the service's outbound policy and within the
    attempt's and the tenant's cost budgets; returns what the kind's run returns."""
    kind = kind_as(job.kind, AttemptKind)
    llm = LLMClient(
        on_call=telemetry.observe_model_call,
        global_concurrency=settings.model_global_concurrency,
        per_model_concurrency=settings.model_per_model_concurrency,
        retry=RetryPolicy(
            max_attempts=settings.model_max_tries,
            base_delay_s=settings.model_retry_base_delay_seconds,
        ),
        outbound=settings.outbound_policy(),
        max_output_chars=settings.max_output_chars,
        budget=AttemptBudget(
            attempt_id=job.attempt_id,
            tenant_id=job.tenant_id,
            attempt_budget_usd=kind.cost_budget_usd(job.config, settings),
            tenant_daily_budget_usd=settings.tenant_daily_cost_budget_usd,
            unpriced_usd_per_million_tokens=settings.unpriced_usd_per_million_tokens,
        ),
    )
    try:
        return await kind.run(RunContext(job, token, settings, llm))
    finally:
        await llm.aclose()


def _finish(job: AttemptJob, token: uuid.UUID, outcome: AttemptMetrics | None) -> None:
    """Metrics (the kind's measure), the score, the status and the leaderboard, written in
    one commit by the holder of the lease only. A scorer plugin runs between two transactions,
    so a slow one holds no lock; other strategies need one."""
    context = {
        "attempt_id": job.attempt_id,
        "tenant_id": job.tenant_id,
        "challenge_id": job.challenge_id,
        "participant_id": job.participant_id,
    }
    with session_scope() as session:
        attempt = repository.locked_if_held(session, job.attempt_id, token)
        challenge = find_challenge(session, job.tenant_id, job.challenge_id)
        if attempt is None or challenge is None:
            return
        measured = kind_as(job.kind, AttemptKind).measure(session, job, outcome)
        metrics = measured.model_copy(update={"created_at": attempt.created_at_ms})
        scoring = prepare_scoring(session, challenge.strategy, challenge.scoring)
        ended = None
        if not scoring.calls_plugin:
            scored = scoring.score(metrics.as_plugin_input(), context)
            ended = _complete(session, attempt, metrics, scored, scoring, job.kind)
    if ended is None:
        scored = scoring.score(metrics.as_plugin_input(), context)
        with session_scope() as session:
            attempt = repository.locked_if_held(session, job.attempt_id, token)
            if attempt is not None:
                ended = _complete(session, attempt, metrics, scored, scoring, job.kind)
    if ended is not None:
        ended()  # counted once committed


def _complete(
    session: Session,
    attempt: Attempt,
    metrics: AttemptMetrics,
    scored: ScoreResult,
    scoring: Scoring,
    kind: str,
) -> Callable[[], None]:
    """Completes the attempt; returns what records its end in the metrics after the commit."""
    attempt.status = AttemptStatus.COMPLETED
    attempt.finished_at = utcnow()
    attempt.end_lease()
    record_metrics(attempt, metrics)
    attempt.score = scored.score
    attempt.score_details = scored.details
    leaderboard.offer(session, as_ranked(attempt), scoring.strategy)
    return _end_recorder(attempt, kind)


def _end_recorder(attempt: Attempt, kind: str) -> Callable[[], None]:
    """The attempt's end for the metrics: its status, kind, time since submission and since
    its first claim (read now, recorded when called)."""
    status = attempt.status
    finished = attempt.finished_at or utcnow()
    since_submission = (finished - attempt.created_at).total_seconds()
    started = attempt.started_at
    run = (finished - started).total_seconds() if started is not None else None
    return lambda: telemetry.attempt_ended(kind, status, since_submission, run)


def _finish_with_error(
    attempt_id: uuid.UUID, token: uuid.UUID, reason: str, *, detail: str | None = None
) -> None:
    """Ends the attempt as an infrastructure error; it does not count against limits.

    `reason` is shown to participants; `detail` (addresses, provider answers) only to tenant
    admins."""
    with session_scope() as session:
        attempt = repository.locked_if_held(session, attempt_id, token)
        if attempt is None:
            return
        attempt.status = AttemptStatus.ERROR
        attempt.error = reason[:2000]
        attempt.error_detail = detail[:4000] if detail and detail != reason else None
        attempt.finished_at = utcnow()
        attempt.end_lease()
        challenge = find_challenge(session, attempt.tenant_id, attempt.challenge_id)
        ended = _end_recorder(attempt, challenge.kind if challenge is not None else "unknown")
    ended()
