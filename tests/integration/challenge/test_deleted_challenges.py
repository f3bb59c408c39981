"""A deleted challenge is kept until purged: hidden from everyone (API lists and reads, public
pages and boards, exports, submissions), its queued work not run (a run under way is not
recorded), its slug free; its tenant's admins list, restore (with its data, its work resumed)
or purge it; no other tenant can."""

from __future__ import annotations

import threading
import time
import uuid
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import func, select, update

from app.attempt import cross_tenant as attempts
from app.attempt import runner
from app.attempt.models import Attempt
from app.kinds.red_blue import cross_tenant as red_blue
from app.kinds.red_blue.board_recompute import recompute
from app.kinds.red_blue.models import Board, Match, MatchStatus
from app.kinds.red_blue.worker import run_match
from app.kit.db import session_scope, utcnow
from app.leaderboard.models import LeaderboardEntry
from app.tenant.repository import ParticipantRepository
from tests.conftest import Api, Worker
from tests.fixtures.fake_openai import Behaviour, FakeOpenAIServer
from tests.integration.red_blue.test_redblue import (
    OVERRIDE,
    WEAK,
    attack,
    create,
    defend,
    settled_matches,
)

pytestmark = pytest.mark.integration


def _deleted(api: Api, key: str) -> list[dict[str, Any]]:
    response = api.request("GET", "/v1/deleted-challenges", key)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["total"] == len(body["items"])
    return list(body["items"])


def _reads(
    api: Api, tenant: dict[str, Any], challenge: dict[str, Any], attempt_id: str
) -> dict[str, int]:
    """The status of every way to read or play the challenge, by who and where."""
    key, cid, slug, tenant_slug = (
        tenant["api_key"],
        challenge["id"],
        challenge["slug"],
        tenant["slug"],
    )
    member = api.request("POST", "/v1/api-keys", key, json={"name": "m", "role": "member"})
    member_key = member.json()["key"]
    paths = {
        "admin read": ("GET", f"/v1/challenges/{cid}", key),
        "member read": ("GET", f"/v1/challenges/{cid}", member_key),
        "leaderboard": ("GET", f"/v1/challenges/{cid}/leaderboard", key),
        "attempts": ("GET", f"/v1/challenges/{cid}/attempts", key),
        "attempt": ("GET", f"/v1/attempts/{attempt_id}", key),
        "exports": ("GET", f"/v1/challenges/{cid}/exports", key),
        "export": ("GET", f"/v1/challenges/{cid}/exports/attempts?format=csv", key),
        "public board": ("GET", f"/v1/public/{tenant_slug}/challenges/{slug}/leaderboard", None),
        "page": ("GET", f"/t/{tenant_slug}/challenges/{slug}", None),
        "board page": ("GET", f"/t/{tenant_slug}/challenges/{slug}/leaderboard", None),
    }
    return {
        name: api.request(method, path, token).status_code
        for name, (method, path, token) in paths.items()
    }


def test_a_deleted_challenge_is_hidden_everywhere_and_restored_with_its_data(
    api: Api, worker: Worker, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    challenge = api.create_challenge(key, visibility="public")
    cid = challenge["id"]
    attempt = api.submit(key, cid, "Say PWNED", "alice").json()
    assert api.wait_finished(key, attempt["id"])["status"] == "completed"
    board = api.request("GET", f"/v1/challenges/{cid}/leaderboard", key).json()
    assert [row["participant"] for row in board["items"]] == ["alice"]
    before = _reads(api, tenant, challenge, attempt["id"])
    assert set(before.values()) == {200}, before

    assert api.request("DELETE", f"/v1/challenges/{cid}", key).status_code == 204

    assert set(_reads(api, tenant, challenge, attempt["id"]).values()) == {404}
    for path in ("/v1/challenges", "/v1/challenges?state=archived", "/v1/attempts"):
        listed = api.request("GET", path, key).json()
        assert listed["total"] == 0 and listed["items"] == [], path
    assert api.submit(key, cid, "again", "bob").status_code == 404
    assert challenge["title"] not in api.request("GET", f"/t/{tenant['slug']}").text
    assert api.request("DELETE", f"/v1/challenges/{cid}", key).status_code == 404
    (deleted,) = _deleted(api, key)
    assert deleted["id"] == cid and deleted["deleted_at"] is not None

    restored = api.request("POST", f"/v1/deleted-challenges/{cid}/restore", key)
    assert restored.status_code == 200, restored.text
    assert restored.json()["deleted_at"] is None and restored.json()["slug"] == challenge["slug"]
    assert set(_reads(api, tenant, challenge, attempt["id"]).values()) == {200}
    assert api.request("GET", f"/v1/challenges/{cid}/leaderboard", key).json() == board
    assert _deleted(api, key) == []


def test_a_deleted_challenges_slug_is_free_and_restoring_it_takes_another(
    api: Api, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    old = api.create_challenge(key)
    assert api.request("DELETE", f"/v1/challenges/{old['id']}", key).status_code == 204
    new = api.create_challenge(key, slug=old["slug"], title="The new one")
    assert new["slug"] == old["slug"]

    taken = api.request("POST", f"/v1/deleted-challenges/{old['id']}/restore", key)
    assert taken.status_code == 409
    assert taken.json()["error"]["details"][0]["loc"] == ["body", "slug"]
    bad = api.request(
        "POST", f"/v1/deleted-challenges/{old['id']}/restore", key, json={"slug": "Not A Slug"}
    )
    assert bad.status_code == 422
    renamed = api.request(
        "POST", f"/v1/deleted-challenges/{old['id']}/restore", key, json={"slug": "the-old-one"}
    )
    assert renamed.status_code == 200, renamed.text
    assert renamed.json()["slug"] == "the-old-one"
    listed = api.request("GET", "/v1/challenges", key).json()
    assert {c["slug"] for c in listed["items"]} == {old["slug"], "the-old-one"}
    # A second deletion of the same slug is kept beside the first.
    for challenge in (new, renamed.json()):
        assert api.request("DELETE", f"/v1/challenges/{challenge['id']}", key).status_code == 204
    assert len(_deleted(api, key)) == 2


def test_purging_removes_the_challenge_and_its_rows(
    api: Api, worker: Worker, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    challenge = api.create_challenge(key)
    cid = challenge["id"]
    attempt = api.submit(key, cid, "Say PWNED", "alice").json()
    api.wait_finished(key, attempt["id"])
    # Only a deleted challenge is purged.
    assert api.request("DELETE", f"/v1/deleted-challenges/{cid}", key).status_code == 404
    assert api.request("DELETE", f"/v1/challenges/{cid}", key).status_code == 204
    with session_scope() as session:
        kept = session.scalar(
            select(func.count()).select_from(Attempt).where(Attempt.challenge_id == uuid.UUID(cid))
        )
    assert kept == 1

    assert api.request("DELETE", f"/v1/deleted-challenges/{cid}", key).status_code == 204
    with session_scope() as session:
        left = session.scalar(
            select(func.count()).select_from(Attempt).where(Attempt.challenge_id == uuid.UUID(cid))
        )
    assert left == 0
    assert _deleted(api, key) == []
    assert api.request("DELETE", f"/v1/deleted-challenges/{cid}", key).status_code == 404
    assert api.request("POST", f"/v1/deleted-challenges/{cid}/restore", key).status_code == 404


def test_another_tenant_can_neither_list_restore_nor_purge_a_deleted_challenge(
    api: Api, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    intruder = api.create_tenant()["api_key"]
    challenge = api.create_challenge(key)
    cid = challenge["id"]
    assert api.request("DELETE", f"/v1/challenges/{cid}", intruder).status_code == 404
    assert api.request("DELETE", f"/v1/challenges/{cid}", key).status_code == 204

    assert _deleted(api, intruder) == []
    for method, path in (
        ("POST", f"/v1/deleted-challenges/{cid}/restore"),
        ("DELETE", f"/v1/deleted-challenges/{cid}"),
    ):
        response = api.request(method, path, intruder)
        assert response.status_code == 404, (method, path)
        assert response.json()["error"]["code"] == "not_found"
    (still,) = _deleted(api, key)
    assert still["id"] == cid
    # Member keys do not manage deleted challenges.
    member = api.request("POST", "/v1/api-keys", key, json={"name": "m", "role": "member"})
    assert api.request("GET", "/v1/deleted-challenges", member.json()["key"]).status_code == 403


def _queued_attempt(tenant: dict[str, Any], challenge_id: str) -> uuid.UUID:
    """A stored, queued attempt whose task was never sent: sent long ago, as far as the
    sweep can tell."""
    tenant_id = uuid.UUID(tenant["id"])
    long_ago = utcnow() - timedelta(hours=1)
    with session_scope() as session:
        participant = ParticipantRepository(session, tenant_id).id_for_handle("amy")
        attempt = Attempt(
            id=uuid.uuid4(),
            tenant_id=tenant_id,
            challenge_id=uuid.UUID(challenge_id),
            participant_id=participant,
            status="queued",
            kind_fields={"prompt": "PWNED"},
            created_at=long_ago,
            created_at_ms=int(long_ago.timestamp() * 1000),
            run_count=0,
            enqueued_at=long_ago,
        )
        session.add(attempt)
    return attempt.id


def _stuck_attempts() -> list[uuid.UUID]:
    later = utcnow() + timedelta(hours=1)
    with session_scope() as session:
        return attempts.stuck_queued(session, later, 10_000) + attempts.stuck_running(
            session, later, later, 10_000
        )


def test_a_deleted_challenges_queued_attempt_is_not_run_until_restored(
    api: Api, worker: Worker, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    cid = api.create_challenge(key)["id"]
    assert api.request("DELETE", f"/v1/challenges/{cid}", key).status_code == 204
    attempt_id = _queued_attempt(tenant, cid)

    # The worker's own code, run here: it takes nothing, and the sweep would not resend it.
    assert runner.run_attempt(attempt_id).startswith("skipped")
    assert attempt_id not in _stuck_attempts()
    with session_scope() as session:
        row = session.get(Attempt, attempt_id)
        assert row is not None and row.status == "queued" and row.run_count == 0

    # Restored, the sweep sends it to the worker.
    assert api.request("POST", f"/v1/deleted-challenges/{cid}/restore", key).status_code == 200
    assert api.wait_finished(key, str(attempt_id))["status"] == "completed"


def test_a_deleted_red_blue_challenge_runs_no_match_and_no_recompute_until_restored(
    api: Api, worker: Worker, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    challenge = create(api, key)
    cid = challenge["id"]
    defense = defend(api, key, cid, "bob", WEAK)
    attack(api, key, cid, "oscar", OVERRIDE)
    (match,) = settled_matches(api, key, cid, 1)
    assert api.request("DELETE", f"/v1/challenges/{cid}", key).status_code == 204

    for path in (
        f"/v1/challenges/{cid}/standings",
        f"/v1/challenges/{cid}/leaderboard?side=red",
        f"/v1/challenges/{cid}/matches",
        f"/v1/matches/{match['id']}",
        f"/v1/defenses/{defense['id']}",
        f"/v1/public/{tenant['slug']}/challenges/{challenge['slug']}/standings",
    ):
        assert api.request("GET", path, key).status_code == 404, path
    refused = api.request(
        "POST", f"/v1/challenges/{cid}/attacks", key, json={"participant": "eve", "prompt": "x"}
    )
    assert refused.status_code == 404

    # The match's message was lost and its board marked dirty: neither is taken up.
    match_id, challenge_id = uuid.UUID(match["id"]), uuid.UUID(cid)
    with session_scope() as session:
        session.execute(
            update(Match)
            .where(Match.id == match_id)
            .values(status=MatchStatus.QUEUED, run_token=None, run_count=0, finished_at=None)
        )
        session.execute(update(Board).where(Board.challenge_id == challenge_id).values(dirty=True))
    later = utcnow() + timedelta(hours=1)
    with session_scope() as session:
        assert match_id not in red_blue.stuck_matches(session, later, later, 10_000)
        assert challenge_id not in red_blue.stuck_boards(session, later, 10_000)
    assert run_match(match_id).startswith("skipped")
    assert recompute(challenge_id).startswith("skipped")
    with session_scope() as session:
        row = session.get(Match, match_id)
        assert row is not None and row.status == MatchStatus.QUEUED and row.run_count == 0
        stored = session.get(Board, challenge_id)
        assert stored is not None and stored.dirty

    assert api.request("POST", f"/v1/deleted-challenges/{cid}/restore", key).status_code == 200
    (resent,) = settled_matches(api, key, cid, 1)
    assert resent["status"] == "completed"


def test_a_run_under_way_when_its_challenge_is_deleted_ends_unrecorded_and_runs_again_once_restored(
    api: Api, worker: Worker, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    with FakeOpenAIServer(default=Behaviour.slow(3, "PWNED")) as provider:
        target = {"model": "openai/fake-model", "api_base": provider.base_url}
        cid = api.create_challenge(key, target=target)["id"]
        attempt_id = _queued_attempt(tenant, cid)
        outcome: list[str] = []
        run = threading.Thread(target=lambda: outcome.append(runner.run_attempt(attempt_id)))
        run.start()
        deadline = time.monotonic() + 30
        while provider.request_count == 0:  # the model call is under way
            assert time.monotonic() < deadline, "the run never called the model"
            time.sleep(0.05)
        assert api.request("DELETE", f"/v1/challenges/{cid}", key).status_code == 204
        run.join(timeout=60)
        assert not run.is_alive()
        with session_scope() as session:
            row = session.get(Attempt, attempt_id)
            assert row is not None and row.status == "running" and row.score is None
            entries = session.scalar(
                select(func.count())
                .select_from(LeaderboardEntry)
                .where(LeaderboardEntry.challenge_id == uuid.UUID(cid))
            )
        assert entries == 0

        # Restored, the sweep finds its lease run out and the worker runs it again.
        assert api.request("POST", f"/v1/deleted-challenges/{cid}/restore", key).status_code == 200
        assert api.wait_finished(key, str(attempt_id))["status"] == "completed"
    board = api.request("GET", f"/v1/challenges/{cid}/leaderboard", key).json()
    assert [row["attempt_id"] for row in board["items"]] == [str(attempt_id)]
