"""The lease statements on any leased table (a table of the test's own, on an in-memory SQLite
database, the embedded mode's engine), and the heartbeat that keeps a lease.

Whether two workers racing for a row both get it is PostgreSQL's concern:
tests/integration/lease/test_lease_statements.py."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from types import SimpleNamespace
from typing import Any, cast

import pytest
from sqlalchemy import String, Uuid, create_engine
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from app.kit.config import Settings
from app.kit.db import StrEnumColumn, UTCDateTime
from app.kit.lease import repository as leases
from app.kit.lease.heartbeat import Heartbeat
from app.kit.lease.models import Leased, LeasedTable
from app.kit.lease.service import LeaseLost, hold

# Fixed, and long past: a lease `hold` renews runs from the real clock, well after these.
NOW = datetime(2020, 1, 1, 12, 0, tzinfo=UTC)
LATER = NOW + timedelta(seconds=30)
EARLIER = NOW - timedelta(seconds=1)


class JobStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"


class _Base(DeclarativeBase):
    pass


class Job(Leased, _Base):
    """A job whose status moves queued → running → done, as an attempt's or a match's."""

    __tablename__ = "jobs"
    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    status: Mapped[JobStatus] = mapped_column(StrEnumColumn(JobStatus, 16))
    result: Mapped[str | None] = mapped_column(String(50), default=None)
    # When it was last sent, when it ended, and the full reason of an error: what a re-run
    # (`queue_again`) clears.
    enqueued_at: Mapped[datetime] = mapped_column(UTCDateTime, default=NOW)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    error_detail: Mapped[str | None] = mapped_column(String(200), default=None)


class Check(Leased, _Base):
    """A job that stays queued while a worker holds it, as a defense's self-test stays
    pending: only its lease says whether someone holds it."""

    __tablename__ = "checks"
    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    status: Mapped[JobStatus] = mapped_column(StrEnumColumn(JobStatus, 16))
    enqueued_at: Mapped[datetime] = mapped_column(UTCDateTime, default=NOW)


JOBS = LeasedTable(Job, waiting=JobStatus.QUEUED, running=JobStatus.RUNNING)
CHECKS = LeasedTable(Check, waiting=JobStatus.QUEUED, running=JobStatus.QUEUED)


@pytest.fixture
def session() -> Iterator[Session]:
    engine = create_engine("sqlite://")
    _Base.metadata.create_all(engine)
    with Session(engine) as session:
        yield session
    engine.dispose()


def _job(session: Session, status: JobStatus = JobStatus.QUEUED, **values: Any) -> uuid.UUID:
    job = Job(id=uuid.uuid4(), status=status, **values)
    session.add(job)
    session.flush()
    return job.id


def _row(session: Session, job_id: uuid.UUID) -> Job:
    session.expire_all()
    job = session.get(Job, job_id)
    assert job is not None
    return job


def _claim(session: Session, ids: list[uuid.UUID], token: uuid.UUID) -> list[uuid.UUID]:
    claimed = leases.claim(session, JOBS, ids, token, NOW, LATER, returning=[Job.id])
    return list(claimed.scalars())


def test_a_claim_takes_a_waiting_row_under_a_new_lease_and_counts_the_run(
    session: Session,
) -> None:
    job_id = _job(session)
    token = uuid.uuid4()
    assert _claim(session, [job_id], token) == [job_id]
    job = _row(session, job_id)
    assert (job.status, job.run_token, job.lease_expires_at) == (JobStatus.RUNNING, token, LATER)
    assert (job.run_count, job.started_at) == (1, NOW)


def test_a_held_row_is_not_claimed_until_its_lease_runs_out(session: Session) -> None:
    holder, other = uuid.uuid4(), uuid.uuid4()
    job_id = _job(session, JobStatus.RUNNING, run_token=holder, lease_expires_at=LATER)
    assert _claim(session, [job_id], other) == []
    assert _row(session, job_id).run_token == holder


def test_a_row_whose_lease_ran_out_is_taken_over_keeping_its_first_start(
    session: Session,
) -> None:
    dead, taker = uuid.uuid4(), uuid.uuid4()
    first_start = NOW - timedelta(hours=1)
    job_id = _job(
        session,
        JobStatus.RUNNING,
        run_token=dead,
        lease_expires_at=EARLIER,
        run_count=1,
        started_at=first_start,
    )
    assert _claim(session, [job_id], taker) == [job_id]
    job = _row(session, job_id)
    assert (job.run_token, job.run_count, job.started_at) == (taker, 2, first_start)
    # The dead worker, come back, can no longer renew or finish it.
    assert leases.renew(session, JOBS, [job_id], dead, LATER) == 0
    assert leases.release(session, JOBS, [job_id], dead, status=JobStatus.DONE).all() == []
    assert _row(session, job_id).status is JobStatus.RUNNING


def test_a_finished_row_is_never_claimed(session: Session) -> None:
    job_id = _job(session, JobStatus.DONE)
    assert _claim(session, [job_id], uuid.uuid4()) == []
    assert _row(session, job_id).run_count == 0


def test_a_claim_of_many_rows_takes_only_the_free_ones(session: Session) -> None:
    waiting = _job(session)
    held = _job(session, JobStatus.RUNNING, run_token=uuid.uuid4(), lease_expires_at=LATER)
    expired = _job(session, JobStatus.RUNNING, run_token=uuid.uuid4(), lease_expires_at=EARLIER)
    done = _job(session, JobStatus.DONE)
    token = uuid.uuid4()
    taken = _claim(session, [waiting, held, expired, done, uuid.uuid4()], token)
    assert set(taken) == {waiting, expired}


def test_a_claim_sets_the_values_it_is_given_with_the_lease(session: Session) -> None:
    job_id = _job(session)
    leases.claim(session, JOBS, [job_id], uuid.uuid4(), NOW, LATER, returning=[Job.id], result="x")
    assert _row(session, job_id).result == "x"


def test_a_lease_is_renewed_only_with_its_holders_token(session: Session) -> None:
    holder = uuid.uuid4()
    job_id = _job(session)
    _claim(session, [job_id], holder)
    further = LATER + timedelta(minutes=5)
    assert leases.renew(session, JOBS, [job_id], uuid.uuid4(), further) == 0
    assert _row(session, job_id).lease_expires_at == LATER
    assert leases.renew(session, JOBS, [job_id], holder, further) == 1
    assert _row(session, job_id).lease_expires_at == further


def test_renewing_many_rows_counts_those_still_held(session: Session) -> None:
    holder = uuid.uuid4()
    kept, lost = _job(session), _job(session)
    _claim(session, [kept, lost], holder)
    _row(session, lost).run_token = uuid.uuid4()
    session.flush()
    assert leases.renew(session, JOBS, [kept, lost], holder, LATER) == 1


def test_release_ends_the_lease_and_writes_the_outcome_for_the_holder_only(
    session: Session,
) -> None:
    holder = uuid.uuid4()
    job_id = _job(session)
    _claim(session, [job_id], holder)
    released = leases.release(
        session, JOBS, [job_id], holder, returning=[Job.run_count], status=JobStatus.DONE
    )
    assert released.all() == [(1,)]
    job = _row(session, job_id)
    assert (job.status, job.lease_expires_at) == (JobStatus.DONE, None)
    # Once finished, nothing holds it: neither a renewal nor a second release writes.
    assert leases.renew(session, JOBS, [job_id], holder, LATER) == 0
    assert leases.release(session, JOBS, [job_id], holder, result="late").all() == []
    assert _row(session, job_id).result is None


def test_writes_of_a_holder_need_its_token(session: Session) -> None:
    holder = uuid.uuid4()
    job_id = _job(session)
    _claim(session, [job_id], holder)
    assert leases.write_held(session, JOBS, [job_id], uuid.uuid4(), result="x").all() == []
    assert leases.write_held(session, JOBS, [job_id], holder, result="y").all() == [(job_id,)]
    job = _row(session, job_id)
    assert (job.result, job.lease_expires_at) == ("y", LATER)


def test_only_the_holder_gets_the_row_to_finish_it(session: Session) -> None:
    holder = uuid.uuid4()
    job_id = _job(session)
    _claim(session, [job_id], holder)
    assert leases.lock_held(session, JOBS, job_id, uuid.uuid4()) is None
    job = leases.lock_held(session, JOBS, job_id, holder)
    assert job is not None and job.id == job_id
    job.end_lease()
    session.flush()
    assert _row(session, job_id).lease_expires_at is None


def test_hold_renews_or_says_the_lease_is_lost(session: Session) -> None:
    holder = uuid.uuid4()
    job_id = _job(session)
    _claim(session, [job_id], holder)
    settings = _settings(30)
    hold(session, JOBS, job_id, holder, settings)
    renewed = _row(session, job_id).lease_expires_at
    assert renewed is not None and renewed > LATER
    with pytest.raises(LeaseLost):
        hold(session, JOBS, job_id, uuid.uuid4(), settings)


def test_queuing_again_frees_a_row_for_a_fresh_start(session: Session) -> None:
    job_id = _job(session)
    _claim(session, [job_id], uuid.uuid4())
    job = _row(session, job_id)
    job.status = JobStatus.DONE
    job.finished_at = NOW
    job.error_detail = "the provider answered 500"
    JOBS.queue_again(job, LATER)
    session.flush()
    job = _row(session, job_id)
    assert (job.status, job.finished_at, job.error_detail) == (JobStatus.QUEUED, None, None)
    assert (job.run_token, job.lease_expires_at, job.run_count) == (None, None, 0)
    assert job.enqueued_at == LATER
    assert _claim(session, [job_id], uuid.uuid4()) == [job_id]


def test_the_sweep_finds_only_rows_whose_lease_ran_out(session: Session) -> None:
    waiting = _job(session)
    held = _job(session, JobStatus.RUNNING, run_token=uuid.uuid4(), lease_expires_at=LATER)
    expired = _job(session, JobStatus.RUNNING, run_token=uuid.uuid4(), lease_expires_at=EARLIER)
    _job(session, JobStatus.DONE)
    assert leases.lapsed(session, JOBS, NOW, LATER, limit=10) == [expired]
    # With the waiting ones, and any others the caller names; never a held one.
    found = leases.lapsed(session, JOBS, NOW, LATER, limit=10, waiting=True)
    assert set(found) == {waiting, expired}
    also = leases.lapsed(session, JOBS, NOW, LATER, limit=10, also=Job.id == waiting)
    assert set(also) == {waiting, expired}
    assert held not in found


def test_a_row_whose_lease_ran_out_after_its_last_send_is_sent_again_at_once(
    session: Session,
) -> None:
    """However recently a row was sent, once the lease taken after that send has run out
    (its worker died), the sweep sends it again; and then not again until the re-send window
    has passed, so a sweep every few seconds sends no flood of copies. A row waiting for a
    worker, sent as recently, is left to its message until the window has passed."""
    window_start = EARLIER - timedelta(seconds=60)  # sent before this: its message was lost
    sent = EARLIER - timedelta(seconds=5)
    died = _job(
        session,
        JobStatus.RUNNING,
        run_token=uuid.uuid4(),
        enqueued_at=sent,
        lease_expires_at=EARLIER,
    )
    _job(session, JobStatus.QUEUED, enqueued_at=sent)
    _job(
        session, JobStatus.RUNNING, run_token=uuid.uuid4(), enqueued_at=sent, lease_expires_at=LATER
    )
    assert leases.lapsed(session, JOBS, NOW, window_start, limit=10, waiting=True) == [died]
    # The sweep sent it now: its copy is not sent again while the window runs.
    _row(session, died).enqueued_at = NOW
    session.flush()
    assert leases.lapsed(session, JOBS, NOW, window_start, limit=10, waiting=True) == []
    assert leases.lapsed(session, JOBS, NOW, LATER, limit=10) == [died]
    # A lease given back (a retry sent at that moment) is left to that retry, as sent then.
    given_back = _job(
        session,
        JobStatus.RUNNING,
        run_token=uuid.uuid4(),
        enqueued_at=EARLIER,
        lease_expires_at=EARLIER,
    )
    assert given_back not in leases.lapsed(session, JOBS, NOW, window_start, limit=10)


def test_the_sweep_takes_its_conditions_order_and_limit(session: Session) -> None:
    late = _job(session, JobStatus.RUNNING, lease_expires_at=EARLIER - timedelta(seconds=1))
    later = _job(session, JobStatus.RUNNING, lease_expires_at=EARLIER)
    assert leases.lapsed(session, JOBS, NOW, LATER, limit=1, oldest_first=Job.lease_expires_at) == [
        late
    ]
    assert leases.lapsed(session, JOBS, NOW, LATER, Job.id != late, limit=10) == [later]


def test_a_row_that_stays_waiting_while_held_is_free_only_without_a_live_lease(
    session: Session,
) -> None:
    fresh = Check(id=uuid.uuid4(), status=JobStatus.QUEUED)
    held = Check(id=uuid.uuid4(), status=JobStatus.QUEUED, lease_expires_at=LATER)
    lapsed = Check(id=uuid.uuid4(), status=JobStatus.QUEUED, lease_expires_at=EARLIER)
    finished = Check(id=uuid.uuid4(), status=JobStatus.DONE)
    session.add_all([fresh, held, lapsed, finished])
    session.flush()
    ids = [fresh.id, held.id, lapsed.id, finished.id]
    assert set(leases.lapsed(session, CHECKS, NOW, LATER, limit=10, waiting=True)) == {
        fresh.id,
        lapsed.id,
    }
    assert leases.lapsed(session, CHECKS, NOW, LATER, limit=10) == [lapsed.id]
    token = uuid.uuid4()
    claimed = leases.claim(session, CHECKS, ids, token, NOW, LATER, returning=[Check.id])
    assert set(claimed.scalars()) == {fresh.id, lapsed.id}
    session.expire_all()
    taken = session.get(Check, fresh.id)
    assert taken is not None and (taken.status, taken.run_token) == (JobStatus.QUEUED, token)
    assert leases.renew(session, CHECKS, [fresh.id, held.id], token, LATER) == 1


def _settings(lease_seconds: float) -> Settings:
    return cast(Settings, SimpleNamespace(attempt_lease_seconds=lease_seconds))


def test_the_heartbeat_renews_while_the_run_works() -> None:
    beats = threading.Semaphore(0)

    def renew() -> bool:
        beats.release()
        return True

    with Heartbeat(renew, _settings(0.03), "a job"):
        for _ in range(3):
            assert beats.acquire(timeout=10)


@pytest.mark.parametrize("lost", ["answers False", "raises LeaseLost"])
def test_the_heartbeat_stops_once_the_lease_is_lost(lost: str) -> None:
    calls = 0

    def renew() -> bool:
        nonlocal calls
        calls += 1
        if lost == "raises LeaseLost":
            raise LeaseLost()
        return False

    heartbeat = Heartbeat(renew, _settings(0.03), "a job")
    with heartbeat:
        heartbeat._thread.join(timeout=10)
        assert not heartbeat._thread.is_alive()
    assert calls == 1


def test_the_heartbeat_keeps_trying_after_a_database_hiccup() -> None:
    answers: list[BaseException | bool] = [ConnectionError("hiccup"), False]
    calls = 0

    def renew() -> bool:
        nonlocal calls
        calls += 1
        answer = answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    heartbeat = Heartbeat(renew, _settings(0.03), "a job")
    with heartbeat:
        heartbeat._thread.join(timeout=10)
        assert not heartbeat._thread.is_alive()
    assert calls == 2
