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
import threading
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

from celery.exceptions import SoftTimeLimitExceeded
from pydantic import TypeAdapter
from sqlalchemy.orm import Session

from app.attempt import repository
from app.attempt.benchmark_run import BenchmarkJob, attempt_cost_budget, run_benchmark_attempt
from app.attempt.budget import AttemptBudget
from app.attempt.lease import LeaseLost, hold, lease_until
from app.attempt.metrics import AttemptMetrics
from app.attempt.models import Attempt, AttemptStatus
from app.attempt.ranked import as_ranked, record_metrics
from app.challenge.service import find_challenge
from app.config import Settings, get_settings
from app.db import session_scope, utcnow
from app.evaluation.engine import attempt_totals, run_trials
from app.evaluation.llm import LLMClient, warm_up_calls, warmed_up
from app.evaluation.types import (
    InfrastructureError,
    ModelSpec,
    RetryPolicy,
    TrialRecord,
)
from app.evaluation.verifiers import VerifierConfig, build_verifier
from app.leaderboard import service as leaderboard
from app.observability import metrics as telemetry
from app.scoring.service import ScoreResult, Scoring, prepare_scoring

log = logging.getLogger(__name__)

T = TypeVar("T")

_VERIFIER_CONFIG: TypeAdapter[VerifierConfig] = TypeAdapter(VerifierConfig)


@dataclass(frozen=True)
class Job:
    """A snapshot of what a run needs, read once so no session stays open during model calls."""

    attempt_id: uuid.UUID
    tenant_id: uuid.UUID
    challenge_id: uuid.UUID
    participant_id: uuid.UUID
    kind: str
    prompt: str
    goal: str
    target: dict[str, Any] | None
    verifier: dict[str, Any] | None
    evaluation: dict[str, Any]
    existing: list[TrialRecord]
    benchmark: dict[str, Any] | None = None
    model_spec: dict[str, Any] | None = None

    def benchmark_job(self) -> BenchmarkJob:
        assert self.benchmark is not None and self.model_spec is not None
        return BenchmarkJob(
            attempt_id=self.attempt_id,
            tenant_id=self.tenant_id,
            benchmark=self.benchmark,
            evaluation=self.evaluation,
            model_spec=self.model_spec,
        )


def run_attempt(attempt_id: uuid.UUID) -> str:
    """Runs the attempt if it is this worker's to run; returns what happened, for the logs."""
    settings = get_settings()
    token = uuid.uuid4()
    with session_scope() as session:
        run_number = repository.claim(session, attempt_id, token, utcnow(), lease_until(settings))
        if run_number is None:
            return "skipped: finished or held by another worker"
        job = _load_job(session, attempt_id) if run_number <= settings.max_attempt_runs else None
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
        with Heartbeat(job, token, settings):
            benchmark_metrics = _run_on_process_loop(_execute(job, token, settings))
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
    _finish(job, token, benchmark_metrics)
    return "completed"


_process_loop: asyncio.AbstractEventLoop | None = None


def _run_on_process_loop(coroutine: Coroutine[Any, Any, T]) -> T:
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
    return warmed_up() and _run_on_process_loop(warm_up_calls())


def _stored_trials(session: Session, attempt_id: uuid.UUID) -> list[TrialRecord]:
    return [repository.trial_record(row) for row in repository.trials_of(session, attempt_id)]


def _load_job(session: Session, attempt_id: uuid.UUID) -> Job | None:
    attempt = repository.get(session, attempt_id)
    if attempt is None:
        return None
    challenge = find_challenge(session, attempt.tenant_id, attempt.challenge_id)
    if challenge is None:
        return None
    if challenge.kind == "benchmark":
        if challenge.benchmark is None or attempt.model_spec is None:
            return None
    elif challenge.target is None or challenge.verifier is None:
        return None
    return Job(
        attempt_id=attempt.id,
        tenant_id=attempt.tenant_id,
        challenge_id=challenge.id,
        participant_id=attempt.participant_id,
        kind=challenge.kind,
        prompt=attempt.prompt or "",
        goal=challenge.goal,
        target=challenge.target,
        verifier=challenge.verifier,
        evaluation=dict(challenge.evaluation),
        # Benchmark runs load their trials task by task through their store.
        existing=_stored_trials(session, attempt_id) if challenge.kind == "prompt" else [],
        benchmark=challenge.benchmark,
        model_spec=attempt.model_spec,
    )


def _renew(attempt_id: uuid.UUID, token: uuid.UUID, settings: Settings) -> None:
    with session_scope() as session:
        hold(session, attempt_id, token, settings)


def _save_trial(job: Job, token: uuid.UUID, trial: TrialRecord, settings: Settings) -> None:
    with session_scope() as session:
        hold(session, job.attempt_id, token, settings)
        repository.insert_trial(
            session, tenant_id=job.tenant_id, attempt_id=job.attempt_id, trial=trial
        )


class Heartbeat:
    """Renews the lease from its own thread, a third of the lease apart.

    A thread, not a task on the run's event loop: anything that blocks the loop (a slow
    import, a heavy verifier) must not let the lease lapse while the worker is alive, or the
    sweep would hand a healthy attempt to a second worker.
    """

    def __init__(self, job: Job, token: uuid.UUID, settings: Settings) -> None:
        self.job, self.token, self.settings = job, token, settings
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lease-heartbeat", daemon=True)

    def _run(self) -> None:
        interval = self.settings.attempt_lease_seconds / 3
        while not self._stop.wait(interval):
            try:
                _renew(self.job.attempt_id, self.token, self.settings)
            except LeaseLost:
                return  # another worker holds it now; the next trial save stops this run
            except Exception:
                # A database hiccup: keep trying; the lease has two more intervals to spare.
                log.warning(
                    "could not renew the lease of attempt %s", self.job.attempt_id, exc_info=True
                )

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


async def _execute(job: Job, token: uuid.UUID, settings: Settings) -> AttemptMetrics | None:
    """Runs the trials, every call by the service's outbound policy and within the attempt's
    and the tenant's cost budgets; returns a benchmark attempt's metrics (a prompt attempt's
    come from its stored trials when it finishes)."""
    llm = LLMClient(
        on_call=telemetry.observe_model_call,
        global_concurrency=settings.model_global_concurrency,
        per_model_concurrency=settings.model_per_model_concurrency,
        retry=RetryPolicy(
            max_attempts=settings.model_max_tries,
            base_delay_s=settings.model_retry_base_delay_seconds,
        ),
        outbound=settings.outbound_policy(),
        budget=AttemptBudget(
            attempt_id=job.attempt_id,
            tenant_id=job.tenant_id,
            attempt_budget_usd=attempt_cost_budget(job.benchmark, settings),
            tenant_daily_budget_usd=settings.tenant_daily_cost_budget_usd,
            unpriced_usd_per_million_tokens=settings.unpriced_usd_per_million_tokens,
        ),
    )
    try:
        return await _run_trials_of(job, token, settings, llm)
    finally:
        await llm.aclose()


async def _run_trials_of(
    job: Job, token: uuid.UUID, settings: Settings, llm: LLMClient
) -> AttemptMetrics | None:
    if job.kind == "benchmark":
        return await run_benchmark_attempt(job.benchmark_job(), token, settings, llm)
    assert job.target is not None and job.verifier is not None
    target = job.target
    actor = ModelSpec(
        model=target["model"],
        temperature=target.get("temperature"),
        max_tokens=target.get("max_tokens"),
        system_prompt=target.get("system_prompt") or None,
        api_base=target.get("api_base"),
        timeout_s=settings.model_timeout_seconds,
    )
    verifier_config = _VERIFIER_CONFIG.validate_python(job.verifier)
    verifier = build_verifier(verifier_config, goal=job.goal, llm=llm)
    template: str = target.get("user_template") or "{prompt}"
    # str.replace, not str.format: braces in a participant's prompt must stay literal.
    task_prompt = template.replace("{prompt}", job.prompt)

    async def on_trial(trial: TrialRecord) -> None:
        await asyncio.to_thread(_save_trial, job, token, trial, settings)

    await run_trials(
        task_prompt=task_prompt,
        actor=actor,
        verifier=verifier,
        metric=job.evaluation.get("metric", "pass@k"),
        k=int(job.evaluation.get("k", 1)),
        feedback_mode=job.evaluation.get("feedback_mode", "binary"),
        llm=llm,
        existing=job.existing,
        on_trial=on_trial,
    )
    return None


def _prompt_metrics(session: Session, attempt: Attempt) -> AttemptMetrics:
    totals = attempt_totals(_stored_trials(session, attempt.id))
    return AttemptMetrics(
        succeeded=totals.succeeded,
        tokens_total=totals.tokens_total,
        elapsed_ms=totals.elapsed_ms,
        rating=totals.rating,
        cost_usd=totals.cost_usd,
        trials=totals.trials,
    )


def _finish(job: Job, token: uuid.UUID, benchmark_metrics: AttemptMetrics | None) -> None:
    """Metrics (a prompt attempt's from its stored trials), the score, the status and the
    leaderboard, written in one commit by the holder of the lease only. A scorer plugin runs
    between two transactions, so a slow one holds no lock; other strategies need one."""
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
        measured = benchmark_metrics or _prompt_metrics(session, attempt)
        metrics = measured.model_copy(update={"created_at": attempt.created_at_ms})
        scoring = prepare_scoring(session, challenge.strategy, challenge.scoring)
        ended = None
        if not scoring.calls_plugin:
            scored = scoring.score(metrics.as_plugin_input(), context)
            ended = _complete(session, attempt, metrics, scored, scoring)
    if ended is None:
        scored = scoring.score(metrics.as_plugin_input(), context)
        with session_scope() as session:
            attempt = repository.locked_if_held(session, job.attempt_id, token)
            if attempt is not None:
                ended = _complete(session, attempt, metrics, scored, scoring)
    if ended is not None:
        ended()  # counted once committed


def _complete(
    session: Session,
    attempt: Attempt,
    metrics: AttemptMetrics,
    scored: ScoreResult,
    scoring: Scoring,
) -> Callable[[], None]:
    """Completes the attempt; returns what records its end in the metrics after the commit."""
    attempt.status = AttemptStatus.COMPLETED
    attempt.finished_at = utcnow()
    attempt.lease_expires_at = None
    record_metrics(attempt, metrics)
    attempt.score = scored.score
    attempt.score_details = scored.details
    leaderboard.offer(session, as_ranked(attempt), scoring.strategy)
    return _end_recorder(attempt)


def _end_recorder(attempt: Attempt) -> Callable[[], None]:
    """The attempt's end for the metrics: its status, kind, time since submission and since
    its first claim (read now, recorded when called)."""
    kind = "benchmark" if attempt.model_spec is not None else "prompt"
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
        attempt.lease_expires_at = None
        ended = _end_recorder(attempt)
    ended()
