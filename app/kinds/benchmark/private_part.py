"""A split challenge's private parts on the request side: starting one when its attempt
completes, and a tenant admin's re-run of one that ended in error. Each runs on a worker as
a run of its own (app/kinds/benchmark/sealed.py)."""

from __future__ import annotations

import uuid

from app.kinds.api import SEALED_MEASURES, Conflict, NotFound, TenantAdmin, UnitOfWork
from app.kinds.api.error_codes import NOT_IN_ERROR
from app.kinds.api.storage import utcnow
from app.kinds.benchmark.dispatch import RUN_SEALED
from app.kinds.benchmark.models import SEALED_RUN_LEASES, SealedRunStatus
from app.kinds.benchmark.repository import BenchmarkRepository
from app.kinds.benchmark.schemas import SealedMeasures


def start(
    work: UnitOfWork, attempt_id: uuid.UUID, tenant_id: uuid.UUID, challenge_id: uuid.UUID
) -> None:
    """Queues the attempt's private part, unless it has one; sent once the caller commits."""
    if BenchmarkRepository(work.session, tenant_id).queue_sealed_run(attempt_id, challenge_id):
        work.send_after_commit(RUN_SEALED, str(attempt_id))


def rerun(work: UnitOfWork, admin: TenantAdmin, attempt_id: uuid.UUID) -> SealedMeasures:
    """Queues again the attempt's private part that ended in error (its finished tasks and
    trials kept); sent once the caller commits. 404 for an attempt without one."""
    runs = BenchmarkRepository(work.session, admin.tenant_id)
    run = runs.sealed_run_of(attempt_id)
    if run is None:
        raise NotFound("no private part: the attempt is not one of a split challenge's")
    if run.status is not SealedRunStatus.ERROR:
        raise Conflict(
            f"only a private part that ended in error can be re-run; this one is {run.status}",
            code=NOT_IN_ERROR,
        )
    SEALED_RUN_LEASES.queue_again(run, utcnow())
    run.error = None
    queued = SealedMeasures(status=SealedRunStatus.QUEUED)
    runs.set_own_measures(
        attempt_id, SEALED_MEASURES, queued.model_dump(mode="json", exclude_none=True)
    )
    work.send_after_commit(RUN_SEALED, str(attempt_id))
    return queued
