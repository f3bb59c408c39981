"""The submission's own statements, on PostgreSQL and on SQLite (the embedded mode)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, text
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from app.attempt.cross_tenant import completed_after, completed_since, count_completed
from app.attempt.models import Attempt, RunPurpose
from app.attempt.repository import AttemptRepository, LandedTrial, RunTrialRepository
from app.challenge.config import LimitsConfig
from app.challenge.models import Challenge
from app.evaluation.engine.types import TrialRecord
from app.kit.db import make_engine, utcnow
from app.tenant.models import Participant, Tenant
from app.tenant.repository import ParticipantRepository
from app.tenant.service import lock_participant
from tests.conftest import ROOT

pytestmark = pytest.mark.integration


@pytest.fixture(params=["postgresql", "sqlite"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    if request.param == "postgresql":
        url = request.getfixturevalue("stack").database_url
    else:
        url = f"sqlite:///{tmp_path / 'embedded.db'}"
        config = Config(str(ROOT / "alembic.ini"))
        config.set_main_option("script_location", str(ROOT / "migrations"))
        config.set_main_option("sqlalchemy.url", url)
        command.upgrade(config, "head")
    engine = make_engine(url)
    yield engine
    engine.dispose()


def _tenant_with_challenge(session: Session, **challenge: object) -> tuple[Tenant, Challenge]:
    tenant = Tenant(id=uuid.uuid4(), slug=f"t-{uuid.uuid4().hex[:10]}", name="t")
    session.add(tenant)
    session.flush()  # the mapping has no relationships to order the inserts
    row = Challenge(
        id=uuid.uuid4(),
        tenant_id=tenant.id,
        slug="c",
        title="c",
        kind="prompt",
        kind_sections={
            "target": {"model": "offline/echo"},
            "verifier": {"type": "contains", "pattern": "x"},
            "evaluation": {"metric": "pass@k", "k": 1},
        },
        # Scoring and limits are typed columns: what is stored must be valid.
        scoring={"strategy": "first"},
        **challenge,
    )
    session.add(row)
    session.flush()
    return tenant, row


def _attempt(
    tenant: Tenant, challenge: Challenge, participant: Participant, key: str | None
) -> Attempt:
    now = utcnow()
    return Attempt(
        id=uuid.uuid4(),
        tenant_id=tenant.id,
        challenge_id=challenge.id,
        participant_id=participant.id,
        status="queued",
        kind_fields={"prompt": "hello"},
        idempotency_key=key,
        created_at=now,
        created_at_ms=int(now.timestamp() * 1000),
        enqueued_at=now,
        run_count=0,
    )


def test_submission_target_is_the_tenants_challenge_with_the_handles_participant(
    engine: Engine,
) -> None:
    opens = datetime(2026, 1, 1, tzinfo=UTC)
    with Session(engine) as session:
        tenant, challenge = _tenant_with_challenge(
            session, limits={"max_attempts_total": 3}, opens_at=opens, closes_at=None
        )
        other, _ = _tenant_with_challenge(session)
        alice = Participant(id=uuid.uuid4(), tenant_id=tenant.id, handle="alice")
        # The same handle in another tenant is another participant.
        session.add_all([alice, Participant(id=uuid.uuid4(), tenant_id=other.id, handle="bob")])
        session.flush()

        repo = AttemptRepository(session, tenant.id)
        target = repo.submission_target(challenge.id, "alice")
        assert target is not None
        assert (target.challenge_id, target.kind, target.participant_id) == (
            challenge.id,
            "prompt",
            alice.id,
        )
        assert target.limits == LimitsConfig(max_attempts_total=3)
        assert target.opens_at == opens and target.closes_at is None
        assert target.opens_at.tzinfo is not None
        for handle in ("bob", None):
            found = repo.submission_target(challenge.id, handle)
            assert found is not None and found.participant_id is None
        # A handle names one participant ignoring case, shown as first spelled.
        found = repo.submission_target(challenge.id, "ALICE")
        assert found is not None
        assert (found.participant_id, found.participant_handle) == (alice.id, "alice")
        assert repo.submission_target(uuid.uuid4(), "alice") is None
        # Another tenant's challenge is not found, even with a handle of that tenant.
        assert AttemptRepository(session, other.id).submission_target(challenge.id, "bob") is None


def test_insert_new_refuses_a_taken_idempotency_key_of_the_same_tenant(engine: Engine) -> None:
    with Session(engine) as session:
        tenant, challenge = _tenant_with_challenge(session)
        other, other_challenge = _tenant_with_challenge(session)
        alice = Participant(id=uuid.uuid4(), tenant_id=tenant.id, handle="alice")
        bob = Participant(id=uuid.uuid4(), tenant_id=other.id, handle="bob")
        session.add_all([alice, bob])
        session.flush()
        repo = AttemptRepository(session, tenant.id)

        first = _attempt(tenant, challenge, alice, "key-1")
        assert repo.insert_new(first)
        assert first not in session  # a record of the row, not a tracked object
        assert not repo.insert_new(_attempt(tenant, challenge, alice, "key-1"))
        stored = repo.by_idempotency_key("key-1")
        assert stored is not None and stored.id == first.id
        assert stored.status == "queued" and stored.score is None and stored.run_count == 0
        # Without a key nothing conflicts; a key is the tenant's own.
        assert repo.insert_new(_attempt(tenant, challenge, alice, None))
        assert repo.insert_new(_attempt(tenant, challenge, alice, None))
        other_repo = AttemptRepository(session, other.id)
        assert other_repo.insert_new(_attempt(other, other_challenge, bob, "key-1"))
        assert repo.count_counting(challenge.id, alice.id) == 3
        assert repo.count_counting(challenge.id, alice.id, since=utcnow() + timedelta(1)) == 0


def test_a_handle_is_one_participant_per_tenant_made_on_first_use(engine: Engine) -> None:
    with Session(engine) as session:
        tenant, _ = _tenant_with_challenge(session)
        other, _ = _tenant_with_challenge(session)
        participants = ParticipantRepository(session, tenant.id)
        first = participants.id_for_handle("alice")
        assert participants.id_for_handle("alice") == first
        assert participants.id_for_handle("bob") != first
        assert ParticipantRepository(session, other.id).id_for_handle("alice") != first
        assert participants.id_and_handle_for("ALICE") == (first, "alice")
        assert participants.id_and_handle_for("Carol")[1] == "Carol"
        assert participants.id_and_handle_for("cAROL")[1] == "Carol"
        found = participants.get_by_handle("alice")
        assert found is not None and found.id == first and found.created_at is not None


def _impatient(session: Session) -> None:
    """Makes this session give up at once on a lock another holds, instead of waiting."""
    if session.get_bind().dialect.name == "sqlite":
        session.execute(text("PRAGMA busy_timeout = 0"))
    else:
        session.execute(text("SET lock_timeout = '50ms'"))


def test_a_participants_lock_is_held_from_the_check_to_the_end_of_the_transaction(
    engine: Engine,
) -> None:
    """The limit check counts under the lock, so a second submission of the same participant
    cannot count until the first has inserted and committed (both modes: PostgreSQL locks the
    row, SQLite takes its write lock up front)."""
    with Session(engine, expire_on_commit=False) as setup:
        tenant, challenge = _tenant_with_challenge(setup, limits={"max_attempts_total": 1})
        alice = Participant(id=uuid.uuid4(), tenant_id=tenant.id, handle="alice")
        setup.add(alice)
        setup.commit()
    with Session(engine) as first, Session(engine) as second:
        first_repo = AttemptRepository(first, tenant.id)
        second_repo = AttemptRepository(second, tenant.id)
        # Both read first, as a submission does before its check.
        assert first_repo.submission_target(challenge.id, "alice") is not None
        assert second_repo.submission_target(challenge.id, "alice") is not None
        lock_participant(first, tenant.id, alice.id)
        assert first_repo.count_counting(challenge.id, alice.id) == 0
        _impatient(second)
        with pytest.raises(OperationalError):
            lock_participant(second, tenant.id, alice.id)
        second.rollback()
        assert first_repo.insert_new(_attempt(tenant, challenge, alice, None))
        first.commit()
        lock_participant(second, tenant.id, alice.id)
        assert second_repo.count_counting(challenge.id, alice.id) == 1
        second.rollback()


def test_only_a_stalled_queued_attempt_is_marked_to_be_sent_again(engine: Engine) -> None:
    now = utcnow()
    stalled_before = now - timedelta(seconds=60)
    with Session(engine) as session:
        tenant, challenge = _tenant_with_challenge(session)
        alice = Participant(id=uuid.uuid4(), tenant_id=tenant.id, handle="alice")
        session.add(alice)
        session.flush()
        repo = AttemptRepository(session, tenant.id)
        fresh, stalled, running = (_attempt(tenant, challenge, alice, None) for _ in range(3))
        for attempt in (stalled, running):
            attempt.enqueued_at = now - timedelta(minutes=10)
        running.status = "running"
        for attempt in (fresh, stalled, running):
            assert repo.insert_new(attempt)
        assert not repo.mark_resent_if_stalled(fresh.id, now, stalled_before)
        assert not repo.mark_resent_if_stalled(running.id, now, stalled_before)
        assert not AttemptRepository(session, uuid.uuid4()).mark_resent_if_stalled(
            stalled.id, now, stalled_before
        )  # another tenant's
        assert repo.mark_resent_if_stalled(stalled.id, now, stalled_before)
        # Marked as sent now: a second caller (a concurrent replay, the sweep) does not send it.
        assert not repo.mark_resent_if_stalled(stalled.id, now, stalled_before)
        found = repo.get(stalled.id)
        assert found is not None and found.enqueued_at == now


def test_readers_of_scored_play_never_see_practice_or_test_runs(engine: Engine) -> None:
    """Limits, lists, dashboards, bulk re-runs, exports and rescoring read entries only: a
    practice run and a test run (finished, failed, with trials) change none of them."""
    with Session(engine) as session:
        tenant, challenge = _tenant_with_challenge(session)
        alice = Participant(id=uuid.uuid4(), tenant_id=tenant.id, handle="alice")
        session.add(alice)
        session.flush()
        repo = AttemptRepository(session, tenant.id)
        entry = _attempt(tenant, challenge, alice, None)
        practice = _attempt(tenant, challenge, alice, None)
        practice.purpose = RunPurpose.PRACTICE
        test_run = _attempt(tenant, challenge, alice, None)
        test_run.purpose, test_run.participant_id = RunPurpose.TEST, None
        failed_practice = _attempt(tenant, challenge, alice, None)
        failed_practice.purpose, failed_practice.status = RunPurpose.PRACTICE, "error"
        failed_test = _attempt(tenant, challenge, alice, None)
        failed_test.purpose, failed_test.participant_id = RunPurpose.TEST, None
        failed_test.status = "error"
        for attempt in (entry, practice, test_run, failed_practice, failed_test):
            if attempt.status == "queued":
                attempt.status, attempt.finished_at = "completed", utcnow()
            assert repo.insert_new(attempt)
        record = TrialRecord.from_dict(
            {
                "attempt_index": 1,
                "actor": {"model": "offline/echo", "prompt": [], "output": "x"},
                "judge": {"model": None, "success": True, "score": 1.0},
                "critic": {},
            }
        )
        for attempt in (entry, practice, test_run):
            RunTrialRepository(session, tenant.id).insert_trials(attempt.id, [LandedTrial(record)])
        unscored = {practice.id, test_run.id, failed_practice.id, failed_test.id}

        assert repo.count_counting(challenge.id, alice.id) == 1
        assert repo.count_counting(challenge.id, alice.id, purpose=RunPurpose.PRACTICE) == 1
        page, total = repo.page(limit=50, offset=0)
        assert [a.id for a in page] == [entry.id] and total == 1
        page, total = repo.page(limit=50, offset=0, challenge_id=challenge.id, status="error")
        assert page == [] and total == 0
        own, total = repo.of_participant(challenge.id, alice.id, limit=50, offset=0)
        assert [a.id for a in own] == [entry.id] and total == 1
        assert repo.of_participant_by_ids(challenge.id, alice.id, list(unscored)) == []
        assert repo.counts_of_participant(alice.id, [challenge.id]) == {challenge.id: 1}
        assert repo.status_counts([challenge.id]) == {challenge.id: {"completed": 1}}
        assert repo.activity_of([alice.id])[alice.id][0] == 1
        assert repo.errored_of_challenge(challenge.id, limit=10) == []
        assert repo.recent_errors(limit=10) == []
        assert [a.id for a in repo.in_submission_order(challenge.id, None, 50)] == [entry.id]
        exported = repo.trials_in_submission_order(challenge.id, None, 50)
        assert [trial.attempt_id for trial, _, _ in exported] == [entry.id]
        assert count_completed(session, challenge.id) == 1
        assert [a.id for a in completed_after(session, challenge.id, None, 50)] == [entry.id]
        since = utcnow() - timedelta(hours=1)
        assert [a.id for a in completed_since(session, challenge.id, since)] == [entry.id]
        # By id, an unscored run is not an attempt; it is read as what it is.
        assert all(repo.get(run_id) is None for run_id in unscored)
        assert repo.get_with_kind(practice.id) is None
        found = repo.get_with_kind(practice.id, (RunPurpose.PRACTICE,))
        assert found is not None and found[0].id == practice.id
        runs, total = repo.unscored_page(
            challenge.id, RunPurpose.TEST, participant_id=None, limit=50, offset=0
        )
        assert {a.id for a in runs} == {test_run.id, failed_test.id} and total == 2
        assert all(a.participant_id is None for a in runs)
