"""Red-blue matches run in chunks (`gauntlet.redblue.run_matches`): a pairing's matches go to
workers a chunk per task; a chunk runs only the matches that are its to run, a redelivered
chunk runs nothing twice, and a match whose lease was taken over meanwhile is not written."""

from __future__ import annotations

import time
import uuid
from datetime import timedelta
from typing import Any

import pytest

from tests.conftest import Api, Worker
from tests.integration.red_blue.test_redblue import (
    OVERRIDE,
    WEAK,
    attack,
    create,
    defend,
    rated_board,
    settled_matches,
)

pytestmark = pytest.mark.integration


def _load_the_engine() -> None:
    """litellm imported here before a lease is taken in this process: its import takes longer
    than the tests' lease (6 s), and the sweep would rightly take the match over meanwhile."""
    from app.evaluation.engine.llm import warm_up

    warm_up()


def _rows(ids: list[uuid.UUID]) -> dict[uuid.UUID, tuple[Any, ...]]:
    from app.kinds.red_blue.models import Match
    from app.kit.db import session_scope

    with session_scope() as session:
        found = {}
        for match_id in ids:
            match = session.get(Match, match_id)
            assert match is not None
            found[match_id] = (match.status, match.run_count, match.finished_at, match.run_token)
        return found


def test_a_redelivered_chunk_runs_nothing_twice_and_a_chunk_runs_only_its_own(
    api: Api, worker: Worker, tenant: dict[str, Any]
) -> None:
    from app.kinds.red_blue import worker as red_blue_worker
    from app.kinds.red_blue.dispatch import MATCHES_PER_TASK, RUN_MATCHES_TASK, chunks
    from app.kinds.red_blue.models import Match, MatchStatus
    from app.kit.config import get_settings
    from app.kit.db import session_scope, utcnow
    from workers.celery_app import celery_app

    _load_the_engine()
    assert chunks([str(n) for n in range(MATCHES_PER_TASK + 1)])[1] == [str(MATCHES_PER_TASK)]
    key = tenant["api_key"]
    cid = create(api, key)["id"]
    for who in ("bob", "carol", "dave"):
        assert defend(api, key, cid, who, WEAK)["status"] == "active"
    attack(api, key, cid, "oscar", OVERRIDE)
    matches = settled_matches(api, key, cid, 3)
    assert {m["status"] for m in matches} == {"completed"}
    ids = [uuid.UUID(m["id"]) for m in matches]
    before = _rows(ids)
    assert {row[1] for row in before.values()} == {1}

    # The chunk redelivered (one id twice over), through a worker and in this process: nothing
    # is claimed, run or written again.
    celery_app.send_task(
        RUN_MATCHES_TASK, args=[*map(str, ids), str(ids[0])], queue=get_settings().queue
    )
    assert red_blue_worker.run_matches([*ids, ids[0]]) == {}
    time.sleep(1.0)
    assert _rows(ids) == before

    # One match held by another worker (its lease still running), one queued again (an admin's
    # re-run), one completed: the chunk runs the queued one only.
    held, queued, done = ids
    other = uuid.uuid4()
    with session_scope() as session:
        row = session.get(Match, held)
        assert row is not None
        row.status = MatchStatus.RUNNING
        row.run_token = other
        row.lease_expires_at = utcnow() + timedelta(hours=1)
        row = session.get(Match, queued)
        assert row is not None
        row.status = MatchStatus.QUEUED
        row.run_token = None
        row.finished_at = None
        row.enqueued_at = utcnow()
    assert red_blue_worker.run_matches(ids) == {queued: "completed"}
    after = _rows(ids)
    assert after[held][:2] == (MatchStatus.RUNNING, 1) and after[held][3] == other
    assert after[queued][:2] == (MatchStatus.COMPLETED, 2)
    assert after[done] == before[done]
    # The two completed matches are rated: the chunk marked the board dirty.
    assert rated_board(api, key, cid, 2)["matches"] == 2


def test_a_chunk_does_not_write_a_match_whose_lease_was_taken_over(
    api: Api, worker: Worker, tenant: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.kinds.red_blue import worker as red_blue_worker
    from app.kinds.red_blue.models import Match, MatchStatus
    from app.kit.db import session_scope

    _load_the_engine()
    key = tenant["api_key"]
    cid = create(api, key)["id"]
    for who in ("bob", "carol"):
        assert defend(api, key, cid, who, WEAK)["status"] == "active"
    attack(api, key, cid, "oscar", OVERRIDE)
    first, second = (uuid.UUID(m["id"]) for m in settled_matches(api, key, cid, 2))
    with session_scope() as session:
        for match_id in (first, second):
            row = session.get(Match, match_id)
            assert row is not None
            row.status = MatchStatus.QUEUED
            row.run_token = None
            row.finished_at = None
    taker = uuid.uuid4()
    play = red_blue_worker._play_all

    async def taken_over_meanwhile(jobs: Any, settings: Any, land: Any) -> None:
        # While the chunk plays, another worker takes the first match over (its lease ran out).
        with session_scope() as session:
            row = session.get(Match, first)
            assert row is not None and row.status is MatchStatus.RUNNING
            row.run_token = taker
        await play(jobs, settings, land)

    monkeypatch.setattr(red_blue_worker, "_play_all", taken_over_meanwhile)
    outcomes = red_blue_worker.run_matches([first, second])
    assert outcomes == {first: "stopped: lease taken over", second: "completed"}
    rows = _rows([first, second])
    assert rows[first][0] is MatchStatus.RUNNING and rows[first][3] == taker
    assert rows[first][2] is None
    assert rows[second][0] is MatchStatus.COMPLETED and rows[second][1] == 2
