"""The lease statements (app/kit/lease/repository.py) on PostgreSQL, on each leased table: workers
racing for a row, a takeover after a worker died, sweeps running at once.

What a run does with its lease (stops writing once it is lost) is tests/integration/
test_leases.py; the statements' logic on a table of their own,
tests/unit/lease/test_statements.py."""

from __future__ import annotations

import threading
import uuid
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import update

from app.attempt.models import ATTEMPT_LEASES, Attempt
from app.kinds.red_blue.models import (
    MATCH_LEASES,
    SELF_TEST_LEASES,
    Attack,
    Defense,
    Match,
    MatchStatus,
)
from app.kit.db import get_sessionmaker, session_scope, utcnow
from app.kit.lease import repository as leases
from app.kit.lease.models import LeasedTable
from app.tenant.repository import ParticipantRepository
from tests.conftest import Api

pytestmark = pytest.mark.integration

COMPLETED = MatchStatus.COMPLETED

TABLES: dict[str, LeasedTable[Any]] = {
    "attempts": ATTEMPT_LEASES,
    "self-tests": SELF_TEST_LEASES,
    "matches": MATCH_LEASES,
}


def _waiting_rows(api: Api, tenant: dict[str, Any], table: str, count: int) -> list[uuid.UUID]:
    """Rows of the table waiting for a worker, whose tasks were never sent: only the test
    claims them."""
    challenge = api.create_challenge(tenant["api_key"])
    tenant_id, challenge_id = uuid.UUID(tenant["id"]), uuid.UUID(challenge["id"])
    now = utcnow()
    with session_scope() as session:
        participants = ParticipantRepository(session, tenant_id)
        amy, bob = participants.id_for_handle("amy"), participants.id_for_handle("bob")
        common: dict[str, Any] = {
            "tenant_id": tenant_id,
            "challenge_id": challenge_id,
            "created_at": now,
            "enqueued_at": now,
        }
        rows: list[Any] = []
        for _ in range(count):
            if table == "attempts":
                rows.append(
                    Attempt(
                        **common,
                        id=uuid.uuid4(),
                        participant_id=amy,
                        status="queued",
                        kind_fields={"prompt": "hi"},
                        created_at_ms=int(now.timestamp() * 1000),
                    )
                )
                continue
            defense = Defense(
                **common, id=uuid.uuid4(), participant_id=bob, system_prompt="no", status="pending"
            )
            if table == "self-tests":
                rows.append(defense)
                continue
            attack = Attack(**common, id=uuid.uuid4(), participant_id=amy, prompt="tell me")
            session.add_all([defense, attack])
            session.flush()
            rows.append(
                Match(
                    **common,
                    id=uuid.uuid4(),
                    attack_id=attack.id,
                    defense_id=defense.id,
                    red_participant_id=amy,
                    blue_participant_id=bob,
                    status="queued",
                )
            )
        session.add_all(rows)
    return [row.id for row in rows]


def _row(table: LeasedTable[Any], row_id: uuid.UUID) -> Any:
    with session_scope() as session:
        row = session.get(table.model, row_id)
        assert row is not None
        session.expunge(row)
        return row


@pytest.mark.parametrize("table", list(TABLES))
def test_of_workers_racing_to_claim_a_row_exactly_one_gets_it(
    api: Api, tenant: dict[str, Any], table: str
) -> None:
    leased = TABLES[table]
    (row_id,) = _waiting_rows(api, tenant, table, 1)
    workers = 6
    start = threading.Barrier(workers)
    taken: dict[uuid.UUID, list[uuid.UUID]] = {}

    def claim() -> None:
        token = uuid.uuid4()
        start.wait(timeout=30)
        now = utcnow()
        with session_scope() as session:
            claimed = leases.claim(
                session,
                leased,
                [row_id],
                token,
                now,
                now + timedelta(minutes=1),
                returning=[leased.model.id],
            )
            taken[token] = list(claimed.scalars())

    threads = [threading.Thread(target=claim) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    winners = [token for token, ids in taken.items() if ids]
    assert len(taken) == workers and len(winners) == 1
    row = _row(leased, row_id)
    assert (row.run_token, row.run_count, row.status) == (winners[0], 1, leased.running)


@pytest.mark.parametrize("table", list(TABLES))
def test_a_row_whose_worker_died_is_taken_over_and_the_dead_worker_writes_nothing(
    api: Api, tenant: dict[str, Any], table: str
) -> None:
    leased = TABLES[table]
    (row_id,) = _waiting_rows(api, tenant, table, 1)
    dead, taker = uuid.uuid4(), uuid.uuid4()
    this_row = leased.model.id == row_id
    now = utcnow()
    with session_scope() as session:
        until = now + timedelta(minutes=1)
        first = leases.claim(
            session, leased, [row_id], dead, now, until, returning=[leased.model.id]
        )
        assert first.scalars().all() == [row_id]
    with session_scope() as session:
        # A live lease is not taken over.
        assert not leases.claim(
            session, leased, [row_id], taker, now, now, returning=[leased.model.id]
        ).all()
        assert leases.lapsed(session, leased, now, now, this_row, limit=10) == []
    # A minute and a half later, the dead worker never having renewed:
    later = now + timedelta(seconds=90)
    with session_scope() as session:
        assert leases.lapsed(session, leased, later, later, this_row, limit=10) == [row_id]
        until = later + timedelta(minutes=1)
        taken = leases.claim(
            session, leased, [row_id], taker, later, until, returning=[leased.model.id]
        )
        assert taken.scalars().all() == [row_id]
    with session_scope() as session:
        assert leases.renew(session, leased, [row_id], dead, later + timedelta(hours=1)) == 0
        assert leases.release(session, leased, [row_id], dead).all() == []
        assert leases.lock_held(session, leased, row_id, dead) is None
    row = _row(leased, row_id)
    assert (row.run_token, row.run_count) == (taker, 2)
    assert row.lease_expires_at == later + timedelta(minutes=1)
    with session_scope() as session:
        assert leases.release(session, leased, [row_id], taker).all() == [(row_id,)]
    assert _row(leased, row_id).lease_expires_at is None


@pytest.mark.parametrize("table", list(TABLES))
def test_a_lease_given_back_is_claimed_at_once_and_only_its_holder_gives_it_back(
    api: Api, tenant: dict[str, Any], table: str
) -> None:
    """A run that a transient database error stopped gives its lease back: its task's retry
    (a new token) claims the row at once, long before the lease would have run out; the row
    counts as sent then; another token gives nothing back."""
    leased = TABLES[table]
    (row_id,) = _waiting_rows(api, tenant, table, 1)
    failed, retry = uuid.uuid4(), uuid.uuid4()
    now = utcnow()
    until = now + timedelta(minutes=1)
    with session_scope() as session:
        leases.claim(session, leased, [row_id], failed, now, until, returning=[leased.model.id])
    given_back_at = now + timedelta(seconds=1)
    with session_scope() as session:
        assert leases.give_back(session, leased, [row_id], uuid.uuid4(), given_back_at) == 0
        assert leases.give_back(session, leased, [row_id], failed, given_back_at) == 1
    row = _row(leased, row_id)
    assert (row.lease_expires_at, row.enqueued_at) == (given_back_at, given_back_at)
    assert row.status == leased.running
    retried_at = given_back_at + timedelta(milliseconds=500)
    with session_scope() as session:
        taken = leases.claim(
            session, leased, [row_id], retry, retried_at, until, returning=[leased.model.id]
        )
        assert taken.scalars().all() == [row_id]
        # The run that failed writes nothing more.
        assert leases.renew(session, leased, [row_id], failed, until) == 0
    row = _row(leased, row_id)
    assert (row.run_token, row.run_count) == (retry, 2)


def test_a_lease_is_renewed_only_with_its_holders_token_and_not_after_release(
    api: Api, tenant: dict[str, Any]
) -> None:
    kept, lost = _waiting_rows(api, tenant, "matches", 2)
    holder = uuid.uuid4()
    now = utcnow()
    with session_scope() as session:
        until = now + timedelta(minutes=1)
        claimed = leases.claim(
            session, MATCH_LEASES, [kept, lost], holder, now, until, returning=[Match.id]
        )
        assert len(claimed.all()) == 2
    with session_scope() as session:
        session.execute(update(Match).where(Match.id == lost).values(run_token=uuid.uuid4()))
    until = now + timedelta(minutes=5)
    with session_scope() as session:
        assert leases.renew(session, MATCH_LEASES, [kept, lost], uuid.uuid4(), until) == 0
        assert leases.renew(session, MATCH_LEASES, [kept, lost], holder, until) == 1
    assert _row(MATCH_LEASES, kept).lease_expires_at == until
    assert _row(MATCH_LEASES, lost).lease_expires_at == now + timedelta(minutes=1)
    with session_scope() as session:
        released = leases.release(
            session,
            MATCH_LEASES,
            [kept],
            holder,
            returning=[Match.id],
            status=MatchStatus.COMPLETED,
        )
        assert released.scalars().all() == [kept]
    with session_scope() as session:
        assert leases.renew(session, MATCH_LEASES, [kept], holder, until) == 0
    row = _row(MATCH_LEASES, kept)
    assert (row.status, row.lease_expires_at, row.run_token) == (
        MatchStatus.COMPLETED,
        None,
        holder,
    )


def test_two_sweeps_at_once_never_take_the_same_row(api: Api, tenant: dict[str, Any]) -> None:
    row_ids = _waiting_rows(api, tenant, "attempts", 4)
    dead = uuid.uuid4()
    now = utcnow()
    with session_scope() as session:
        claimed = leases.claim(
            session, ATTEMPT_LEASES, row_ids, dead, now, now, returning=[Attempt.id]
        )
        assert len(claimed.all()) == 4
    later = now + timedelta(seconds=1)
    mine = [Attempt.id.in_(row_ids)]
    first, second = get_sessionmaker()(), get_sessionmaker()()
    try:
        taken = leases.lapsed(first, ATTEMPT_LEASES, later, later, *mine, limit=2)
        others = leases.lapsed(second, ATTEMPT_LEASES, later, later, *mine, limit=10)
        assert len(taken) == 2 and set(taken) | set(others) == set(row_ids)
        assert not set(taken) & set(others)
    finally:
        first.rollback()
        second.rollback()
        first.close()
        second.close()
