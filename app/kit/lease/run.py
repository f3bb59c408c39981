"""A leased job's run on a worker, in one shape: claim → load → execute → complete | fail.

One short transaction claims the row (a conditional update taking a lease) and loads what the
run needs; the run executes on the process's event loop while a heartbeat renews the lease;
then the holder of the lease completes the row, or records why the run failed. Every step is
safe to repeat: a redelivered task finds the row held or finished and runs nothing; a worker
that died leaves a lease that runs out, and the next claim takes the row over; a run that a
transient database error stopped gives its lease back, and its task's retry takes the row at
once; a row claimed more than `max_attempt_runs` times ends in error instead of running again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from abc import ABC, abstractmethod
from collections.abc import Coroutine
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

from celery.exceptions import SoftTimeLimitExceeded
from sqlalchemy.orm import Session

from app.evaluation.engine.types import InfrastructureError
from app.kit.config import Settings, get_settings
from app.kit.db import session_scope, utcnow
from app.kit.lease.heartbeat import Heartbeat
from app.kit.lease.models import LeasedTable
from app.kit.lease.service import (
    TRANSIENT_ERRORS,
    LeaseLost,
    given_back_on_transient_error,
    lease_until,
    renewer,
)

log = logging.getLogger(__name__)

T = TypeVar("T")
Claimed = TypeVar("Claimed")
Job = TypeVar("Job")
Result = TypeVar("Result")

_process_loop: asyncio.AbstractEventLoop | None = None


def run_on_process_loop(coroutine: Coroutine[Any, Any, T]) -> T:
    """Runs on one event loop per worker process, kept between runs: a new loop (and its
    thread pool) for every run is measurable overhead for short offline attempts. A loop that
    an exception interrupted may hold half-done tasks, so it is discarded."""
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


@dataclass(frozen=True)
class Failure:
    """Why a run ended in error, as its row keeps it: `reason` is what participants read,
    `detail` (addresses, provider answers) what tenant admins read, when it says more;
    `outcome` what the task answers, for the logs."""

    reason: str
    detail: str | None = None
    outcome: str = "error"

    @classmethod
    def of(cls, reason: str, detail: str | None = None, outcome: str = "error") -> Failure:
        """Bounded to what the row's columns keep."""
        kept = detail[:4000] if detail and detail != reason else None
        return cls(reason[:2000], kept, outcome)


def failure_of(error: Exception, settings: Settings, what: str) -> Failure:
    """How an error that ended a run is recorded: an infrastructure error says what failed;
    the soft time limit says which; anything else is a bug, logged with its trace, and the
    row says only its type."""
    if isinstance(error, InfrastructureError):
        if error.detail != str(error):
            log.warning("%s ended in error: %s", what, error.detail)
        return Failure.of(str(error), error.detail)
    if isinstance(error, SoftTimeLimitExceeded):
        limit = settings.attempt_time_limit_seconds
        return Failure.of(f"time limit of {limit} s exceeded", outcome="error: time limit")
    log.error("%s failed unexpectedly", what, exc_info=error)
    return Failure.of(f"internal error: {type(error).__name__}", outcome="error: internal")


class LeasedRun(ABC, Generic[Claimed, Job, Result]):
    """One kind of leased job (an attempt's run, a defense's self-test): how its row is
    claimed and loaded, how it executes, how it ends. `run_leased` runs it."""

    table: LeasedTable[Any]

    @abstractmethod
    def claim(
        self,
        session: Session,
        row_id: uuid.UUID,
        token: uuid.UUID,
        now: datetime,
        until: datetime,
    ) -> Claimed | None:
        """Takes the row under this token's lease (`app.kit.lease.repository.claim`); None when
        it is finished or another worker holds it."""

    @abstractmethod
    def runs(self, claimed: Claimed) -> int:
        """How many runs have claimed the row, this one included."""

    @abstractmethod
    def load(self, session: Session, claimed: Claimed) -> Job | None:
        """What the run needs, in the claim's transaction; None when it cannot run (its
        configuration is gone or does not load)."""

    @abstractmethod
    async def execute(self, job: Job, token: uuid.UUID, settings: Settings) -> Result:
        """The run's work, on the process's event loop; every write it makes holds the lease
        first (`app.kit.lease.service.hold`)."""

    @abstractmethod
    def complete(self, job: Job, token: uuid.UUID, result: Result) -> str:
        """Writes the outcome if this token still holds the row; what happened, for the
        logs."""

    @abstractmethod
    def fail(self, row_id: uuid.UUID, token: uuid.UUID, failure: Failure) -> None:
        """Ends the row in error if this token still holds it."""

    def claimed_id(self, claimed: Claimed, asked: uuid.UUID) -> uuid.UUID:
        """The row the claim took: the one the task asked for, unless the kind's claim takes
        whichever row's turn it is (attempts: app/attempt/turns.py)."""
        return asked

    def name(self, row_id: uuid.UUID) -> str:
        """The row, as the logs name it."""
        return f"{self.table.model.__tablename__} {row_id}"

    def unclaimed(self, row_id: uuid.UUID) -> str:
        """What a task whose claim took nothing does (by default, nothing)."""
        return "skipped: finished or held by another worker"

    def started(self, job: Job) -> None:
        """Called once the run is about to execute."""


def run_leased(run: LeasedRun[Claimed, Job, Result], row_id: uuid.UUID) -> str:
    """Runs the row if it is this worker's to run; returns what happened, for the logs."""
    settings = get_settings()
    token = uuid.uuid4()
    job: Job | None = None
    with session_scope() as session:
        claimed = run.claim(session, row_id, token, utcnow(), lease_until(settings))
        if claimed is not None:
            row_id = run.claimed_id(claimed, row_id)
            runs = run.runs(claimed)
            if runs <= settings.max_attempt_runs:
                job = run.load(session, claimed)
    if claimed is None:
        return run.unclaimed(row_id)
    if runs > settings.max_attempt_runs:
        gave_up = f"gave up after {settings.max_attempt_runs} runs without finishing"
        with given_back_on_transient_error(run.table, [row_id], token):
            run.fail(row_id, token, Failure.of(gave_up))
        return "error: too many runs"
    if job is None:
        with given_back_on_transient_error(run.table, [row_id], token):
            run.fail(row_id, token, Failure.of("the challenge has no runnable configuration"))
        return "error: not runnable"
    with given_back_on_transient_error(run.table, [row_id], token):
        return _execute_held(run, row_id, token, job, settings)


def _execute_held(
    run: LeasedRun[Claimed, Job, Result],
    row_id: uuid.UUID,
    token: uuid.UUID,
    job: Job,
    settings: Settings,
) -> str:
    run.started(job)
    what = run.name(row_id)
    try:
        with Heartbeat(renewer(run.table, [row_id], token, settings), settings, what):
            result = run_on_process_loop(run.execute(job, token, settings))
    except LeaseLost:
        return "stopped: lease taken over by another worker"
    except TRANSIENT_ERRORS:
        # The task is retried (its lease given back): the run continues from its stored work.
        raise
    except Exception as error:
        # A run must not stay running forever, whatever stopped it: a bug included.
        failure = failure_of(error, settings, what)
        run.fail(row_id, token, failure)
        return failure.outcome
    return run.complete(job, token, result)
