"""The shape of a leased job's run (app/kit/lease/run.py): what is written, and what the task
answers, for each way a run can end. The job here keeps its rows in memory; attempts' and
self-tests' runs on the database are the integration tests'."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime
from types import SimpleNamespace
from typing import Any

import pytest
from celery.exceptions import SoftTimeLimitExceeded
from sqlalchemy.exc import OperationalError

from app.evaluation.engine.types import InfrastructureError
from app.kit.config import Settings
from app.kit.lease import run as lease_run
from app.kit.lease import service as lease_service
from app.kit.lease.models import LeasedTable
from app.kit.lease.run import Failure, LeasedRun, failure_of, run_leased, run_on_process_loop
from app.kit.lease.service import LeaseLost

SETTINGS = SimpleNamespace(
    max_attempt_runs=3, attempt_lease_seconds=30, attempt_time_limit_seconds=120
)


@pytest.fixture(autouse=True)
def no_database(monkeypatch: pytest.MonkeyPatch) -> None:
    @contextlib.contextmanager
    def session_scope() -> Iterator[None]:
        yield None

    def renewer(*_: Any) -> Callable[[], bool]:
        return lambda: True

    monkeypatch.setattr(lease_run, "session_scope", session_scope)
    monkeypatch.setattr(lease_run, "renewer", renewer)
    monkeypatch.setattr(lease_run, "get_settings", lambda: SETTINGS)
    monkeypatch.setattr(lease_service, "session_scope", session_scope)


@pytest.fixture
def given_back(monkeypatch: pytest.MonkeyPatch) -> list[list[uuid.UUID]]:
    """The rows whose lease a run gave back (`app.kit.lease.repository.give_back`)."""
    rows: list[list[uuid.UUID]] = []

    def give_back(session: Any, table: Any, ids: Any, token: Any, now: Any) -> int:
        rows.append(list(ids))
        return len(ids)

    monkeypatch.setattr(lease_service.repository, "give_back", give_back)
    return rows


class Recorded(LeasedRun[int, str, str]):
    """A job whose claim reports `runs` (None: nothing claimed), whose load gives `job`, and
    whose execution returns `result` or raises `error`, whose completion raises
    `complete_error` if given; it records how it ended."""

    table = LeasedTable(Any, waiting="queued", running="running")  # type: ignore[arg-type]

    def __init__(
        self,
        runs: int | None = 1,
        job: str | None = "job",
        result: str = "done",
        error: Exception | None = None,
        complete_error: Exception | None = None,
    ) -> None:
        self.claimed_runs, self.job, self.result, self.error = runs, job, result, error
        self.complete_error = complete_error
        self.completed: list[tuple[str, str]] = []
        self.failures: list[Failure] = []
        self.loaded = 0

    def claim(
        self, session: Any, row_id: uuid.UUID, token: uuid.UUID, now: datetime, until: datetime
    ) -> int | None:
        return self.claimed_runs

    def runs(self, claimed: int) -> int:
        return claimed

    def load(self, session: Any, claimed: int) -> str | None:
        self.loaded += 1
        return self.job

    async def execute(self, job: str, token: uuid.UUID, settings: Settings) -> str:
        if self.error is not None:
            raise self.error
        return self.result

    def complete(self, job: str, token: uuid.UUID, result: str) -> str:
        if self.complete_error is not None:
            raise self.complete_error
        self.completed.append((job, result))
        return "completed"

    def fail(self, row_id: uuid.UUID, token: uuid.UUID, failure: Failure) -> None:
        self.failures.append(failure)

    def name(self, row_id: uuid.UUID) -> str:
        return "the job"


ROW = uuid.uuid4()


def test_a_run_that_executes_completes_its_row() -> None:
    job = Recorded()
    assert run_leased(job, ROW) == "completed"
    assert (job.completed, job.failures) == ([("job", "done")], [])


def test_a_row_the_claim_did_not_take_is_left_alone() -> None:
    job = Recorded(runs=None)
    assert run_leased(job, ROW) == "skipped: finished or held by another worker"
    assert (job.loaded, job.completed, job.failures) == (0, [], [])


def test_a_row_claimed_too_often_ends_in_error_without_running() -> None:
    job = Recorded(runs=4)
    assert run_leased(job, ROW) == "error: too many runs"
    assert job.failures == [Failure("gave up after 3 runs without finishing")]
    assert (job.loaded, job.completed) == (0, [])


def test_the_last_run_allowed_still_runs() -> None:
    assert run_leased(Recorded(runs=3), ROW) == "completed"


def test_a_row_whose_configuration_does_not_load_ends_in_error() -> None:
    job = Recorded(job=None)
    assert run_leased(job, ROW) == "error: not runnable"
    assert job.failures == [Failure("the challenge has no runnable configuration")]


def test_a_run_whose_lease_was_taken_over_writes_nothing() -> None:
    job = Recorded(error=LeaseLost())
    assert run_leased(job, ROW) == "stopped: lease taken over by another worker"
    assert (job.completed, job.failures) == ([], [])


def _deadlock() -> OperationalError:
    return OperationalError("UPDATE attempts ...", None, Exception("deadlock detected"))


@pytest.mark.parametrize("where", ["execute", "complete"])
def test_a_transient_database_error_gives_the_lease_back_for_the_task_s_retry(
    given_back: list[list[uuid.UUID]], where: str
) -> None:
    """The task is retried on it: the row is neither ended in error nor left held by the run
    that failed, so the retry's claim takes it at once."""
    job = (
        Recorded(error=_deadlock()) if where == "execute" else Recorded(complete_error=_deadlock())
    )
    with pytest.raises(OperationalError):
        run_leased(job, ROW)
    assert (job.completed, job.failures) == ([], [])
    assert given_back == [[ROW]]


def test_a_row_that_cannot_even_be_given_back_keeps_the_first_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The database that failed the run refuses the give-back too: the run's error is the one
    the task is retried on, and the lease runs out by itself."""

    def refused(*_: Any) -> int:
        raise OperationalError("UPDATE attempts ...", None, Exception("connection refused"))

    monkeypatch.setattr(lease_service.repository, "give_back", refused)
    with pytest.raises(OperationalError, match="deadlock detected"):
        run_leased(Recorded(error=_deadlock()), ROW)


def test_an_ending_in_error_that_meets_a_transient_error_gives_the_lease_back(
    given_back: list[list[uuid.UUID]],
) -> None:
    class FailingToFail(Recorded):
        def fail(self, row_id: uuid.UUID, token: uuid.UUID, failure: Failure) -> None:
            raise _deadlock()

    with pytest.raises(OperationalError):
        run_leased(FailingToFail(runs=4), ROW)
    assert given_back == [[ROW]]


def test_other_errors_give_nothing_back(given_back: list[list[uuid.UUID]]) -> None:
    assert run_leased(Recorded(error=KeyError("bug")), ROW) == "error: internal"
    assert run_leased(Recorded(error=LeaseLost()), ROW).startswith("stopped")
    assert given_back == []


def test_an_infrastructure_error_is_recorded_with_its_detail_for_admins() -> None:
    error = InfrastructureError("model unreachable", detail="10.0.0.1:443 refused")
    job = Recorded(error=error)
    assert run_leased(job, ROW) == "error"
    assert job.failures == [Failure("model unreachable", "10.0.0.1:443 refused")]


def test_the_time_limit_is_recorded_as_such() -> None:
    job = Recorded(error=SoftTimeLimitExceeded())
    assert run_leased(job, ROW) == "error: time limit"
    assert job.failures == [Failure("time limit of 120 s exceeded", None, "error: time limit")]


def test_a_bug_ends_the_run_in_error_naming_only_its_type(
    caplog: pytest.LogCaptureFixture,
) -> None:
    job = Recorded(error=KeyError("secret"))
    assert run_leased(job, ROW) == "error: internal"
    assert job.failures == [Failure("internal error: KeyError", None, "error: internal")]
    assert "the job failed unexpectedly" in caplog.text and "secret" in caplog.text


def test_a_failure_keeps_what_its_columns_hold_and_a_detail_only_when_it_says_more() -> None:
    failure = Failure.of("r" * 3000, "d" * 5000)
    assert (len(failure.reason), len(failure.detail or "")) == (2000, 4000)
    assert Failure.of("same", "same").detail is None
    assert Failure.of("reason", "").detail is None
    assert Failure.of("naïve ☃", None) == Failure("naïve ☃")


def test_an_infrastructure_error_without_more_to_say_has_no_detail() -> None:
    settings: Any = SETTINGS
    failure = failure_of(InfrastructureError("quota spent"), settings, "the job")
    assert failure == Failure("quota spent")


def test_the_process_loop_is_kept_between_runs_and_replaced_after_an_error() -> None:
    async def loop_id() -> int:
        return id(asyncio.get_running_loop())

    async def broken() -> None:
        raise RuntimeError("boom")

    first = run_on_process_loop(loop_id())
    assert run_on_process_loop(loop_id()) == first
    with pytest.raises(RuntimeError):
        run_on_process_loop(broken())
    assert lease_run._process_loop is None
