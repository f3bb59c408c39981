"""The private part of a split challenge's scored attempt, on a worker: a run of its own, made
when the attempt (its public part) completes and run under a lease of its own
(`SEALED_RUN_LEASES`), as every leased job is (app/kit/lease/run.py).

Why a run of its own: seq@k stops a task at its first success, so how long the private tasks
take, and how many calls, tokens and dollars they cost, tells how they went. Run with the
public part, they would decide when the attempt completes and what it counts. Run after it,
nothing a participant sees of the attempt (its status, its times, its counts, its board row)
waits for them or counts them: those are its public part's alone. The private part's trials
and tasks are the attempt's, stored sealed; its results and spend end in the attempt's
`kind_metrics.sealed`, which only the tenant's admins see until the close. Both runs charge
the attempt's spend, against its one cost budget.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.orm import Session

from app.kinds.api import (
    AttemptMetrics,
    Settings,
    ValidationFailed,
    get_settings,
    stored_fields,
    unit_of_work,
)
from app.kinds.api.leases import (
    CostBudget,
    DatabaseRunStore,
    DaySpend,
    Failure,
    LeasedRun,
    RowSpend,
    TrialWriter,
    model_client,
    run_leased,
)
from app.kinds.api.services import config_of
from app.kinds.api.storage import Attempt, session_scope, utcnow
from app.kinds.benchmark import cross_tenant
from app.kinds.benchmark.config import BenchmarkConfig, StoredFields
from app.kinds.benchmark.dispatch import RUN_SEALED
from app.kinds.benchmark.models import SEALED_RUN_LEASES, SealedRun, SealedRunStatus
from app.kinds.benchmark.repository import BenchmarkRepository
from app.kinds.benchmark.run import attempt_metrics, part_config, run_tasks
from app.kinds.benchmark.schemas import SealedMeasures
from app.kinds.benchmark.split import parts_of

SEALED = "sealed"
SWEEP_BATCH = 500


def run_sealed(run_id: uuid.UUID) -> str:
    """Runs the attempt's private part if it is this worker's to run; what happened."""
    return run_leased(SEALED_RUN, run_id)


@dataclass(frozen=True)
class SealedJob:
    """What the private part's run needs, read once with its claim."""

    attempt_id: uuid.UUID
    tenant_id: uuid.UUID
    config: BenchmarkConfig
    kind_fields: dict[str, Any] | None


class SealedPartRun(LeasedRun[SealedRun, SealedJob, AttemptMetrics]):
    table = SEALED_RUN_LEASES

    def claim(
        self,
        session: Session,
        row_id: uuid.UUID,
        token: uuid.UUID,
        now: datetime,
        until: datetime,
    ) -> SealedRun | None:
        return cross_tenant.claim_sealed_run(session, row_id, token, now, until)

    def runs(self, claimed: SealedRun) -> int:
        return claimed.run_count

    def load(self, session: Session, claimed: SealedRun) -> SealedJob | None:
        found = cross_tenant.sealed_run_source(session, claimed.id)
        if found is None:
            return None
        attempt, challenge = found
        try:
            config = config_of(challenge)
        except ValidationFailed:
            return None
        if not isinstance(config, BenchmarkConfig) or config.split is None:
            return None
        return SealedJob(attempt.id, attempt.tenant_id, config, attempt.kind_fields)

    def name(self, row_id: uuid.UUID) -> str:
        return f"private part of attempt {row_id}"

    async def execute(self, job: SealedJob, token: uuid.UUID, settings: Settings) -> AttemptMetrics:
        config = job.config
        assert config.split is not None  # `load` runs only split challenges' private parts
        data_dir = settings.benchmark_data_dir
        parts = parts_of(config.benchmark, config.split, data_dir)
        submission = stored_fields(job.kind_fields, StoredFields)
        run_config = part_config(
            config.run_config(submission, settings), sorted(parts.private_indices)
        )
        budget = CostBudget(
            own=RowSpend(Attempt, job.attempt_id),
            tenant_day=DaySpend(job.tenant_id),
            attempt_budget_usd=config.benchmark.cost_budget(settings),
            tenant_daily_budget_usd=settings.tenant_daily_cost_budget_usd,
            unpriced_usd_per_million_tokens=settings.unpriced_usd_per_million_tokens,
        )
        llm = model_client(settings, budget)
        trials = TrialWriter(
            job.attempt_id, job.tenant_id, token, settings, holder=SEALED_RUN_LEASES
        )
        store = DatabaseRunStore(
            job.attempt_id, job.tenant_id, token, settings, trials, parts.private_ids
        )
        try:
            result, tasks_total = await run_tasks(run_config, store, llm, data_dir)
        finally:
            await llm.aclose()
        return attempt_metrics(result, tasks_total, run_config.k)

    def complete(self, job: SealedJob, token: uuid.UUID, result: AttemptMetrics) -> str:
        measures = SealedMeasures(
            status=SealedRunStatus.COMPLETED,
            metric_at=result.metric_at,
            metric_at_k=result.metric_at_k,
            tasks_total=result.tasks_total,
            tasks_solved=result.tasks_solved,
            trials=result.trials,
            tokens_total=result.tokens_total,
            elapsed_ms=result.elapsed_ms,
            cost_usd=result.cost_usd,
            run_status=result.run_status,
        )
        with session_scope() as session:
            run = cross_tenant.held_sealed_run(session, job.attempt_id, token)
            if run is None:
                return "skipped: taken over by another worker"
            BenchmarkRepository(session, job.tenant_id).set_own_measures(
                job.attempt_id, SEALED, measures.model_dump(mode="json")
            )
            run.status = SealedRunStatus.COMPLETED
            run.finished_at = utcnow()
            run.end_lease()
        return "completed"

    def fail(self, row_id: uuid.UUID, token: uuid.UUID, failure: Failure) -> None:
        with session_scope() as session:
            run = cross_tenant.held_sealed_run(session, row_id, token)
            if run is None:
                return
            run.status = SealedRunStatus.ERROR
            run.error, run.error_detail = failure.reason, failure.detail
            run.finished_at = utcnow()
            run.end_lease()
            measures = SealedMeasures(status=SealedRunStatus.ERROR, error=failure.reason)
            BenchmarkRepository(session, run.tenant_id).set_own_measures(
                row_id, SEALED, measures.model_dump(mode="json", exclude_none=True)
            )


SEALED_RUN = SealedPartRun()


def sweep() -> dict[str, int]:
    """Sends again the private runs still queued long after they were sent (a lost message)
    and those whose worker died (their lease ran out)."""
    settings = get_settings()
    now = utcnow()
    with unit_of_work() as work:
        stuck = cross_tenant.stuck_sealed_runs(
            work.session,
            now,
            now - timedelta(seconds=settings.queued_requeue_seconds),
            SWEEP_BATCH,
        )
        cross_tenant.mark_sealed_runs_sent(work.session, stuck, now)
        for run_id in stuck:
            work.send_after_commit(RUN_SEALED, str(run_id))
    return {"resent": len(stuck)}
