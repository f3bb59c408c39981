"""Submission rules over HTTP: idempotency, limits, open/closed windows and bad input."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ADMIN_TOKEN, Api, Worker
from tests.embedded import ADMIN_TOKEN as EMBEDDED_ADMIN_TOKEN
from tests.embedded import Embedded
from tests.services import free_port

pytestmark = pytest.mark.integration


def test_idempotency_key_returns_the_same_attempt(api: Api, tenant: dict[str, Any]) -> None:
    key = tenant["api_key"]
    challenge = api.create_challenge(key)
    headers = {"Idempotency-Key": f"k-{uuid.uuid4()}"}
    first = api.submit(key, challenge["id"], "PWNED", "alice", headers=headers)
    again = api.submit(key, challenge["id"], "PWNED", "alice", headers=headers)
    assert first.status_code == 202 and again.status_code == 202
    assert again.json()["id"] == first.json()["id"]
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json()["participant"] == "alice"
    # The same key for a different request is refused rather than silently answered.
    other = api.submit(key, challenge["id"], "something else", "alice", headers=headers)
    assert other.status_code == 409
    assert "Idempotency-Key" in other.json()["error"]["message"]
    listed = api.request("GET", f"/v1/challenges/{challenge['id']}/attempts", key).json()
    assert listed["total"] == 1


def test_concurrent_first_attempts_of_a_handle_make_one_participant(
    api: Api, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    challenge = api.create_challenge(key)
    with ThreadPoolExecutor(8) as pool:
        responses = list(
            pool.map(lambda _: api.submit(key, challenge["id"], "PWNED", "newcomer"), range(8))
        )
    assert {r.status_code for r in responses} == {202}
    assert len({r.json()["id"] for r in responses}) == 8
    assert len({r.json()["participant_id"] for r in responses}) == 1
    participants = api.request("GET", "/v1/participants", key, params={"limit": 200}).json()
    assert [p["handle"] for p in participants["items"]].count("newcomer") == 1


def test_submission_answers_with_the_attempt_and_checks_the_credential(
    api: Api, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    challenge = api.create_challenge(key)
    accepted = api.submit(key, challenge["id"], "PWNED", "alice")
    assert accepted.status_code == 202
    assert accepted.headers["content-type"] == "application/json"
    assert "Idempotent-Replayed" not in accepted.headers
    attempt = accepted.json()
    assert accepted.headers["Location"] == f"/v1/attempts/{attempt['id']}"
    assert attempt["status"] == "queued" and attempt["participant"] == "alice"
    assert attempt["challenge_id"] == challenge["id"] and attempt["prompt"] == "PWNED"
    read = api.request("GET", f"/v1/attempts/{attempt['id']}", key).json()
    assert read["participant_id"] == attempt["participant_id"]
    assert read["created_at"] == attempt["created_at"]

    # The submission route looks its credential up itself: the same rules as every route.
    path = f"/v1/challenges/{challenge['id']}/attempts"
    body = {"prompt": "PWNED", "participant": "alice"}
    missing = api.request("POST", path, json=body)
    assert missing.status_code == 401 and missing.headers["WWW-Authenticate"] == "Bearer"
    assert api.request("POST", path, "gk_not-a-key", json=body).status_code == 401
    assert api.request("POST", path, ADMIN_TOKEN, json=body).status_code == 403
    member = api.request("POST", "/v1/api-keys", key, json={"name": "app", "role": "member"})
    member_key = member.json()["key"]
    assert api.submit(member_key, challenge["id"], "PWNED", "bob").status_code == 202
    api.request("DELETE", f"/v1/api-keys/{member.json()['id']}", key)
    assert api.submit(member_key, challenge["id"], "PWNED", "bob").status_code == 401
    # Another tenant's challenge is not found; a bad body is refused.
    other = api.create_tenant()
    assert api.submit(other["api_key"], challenge["id"], "PWNED", "eve").status_code == 404
    assert api.request("POST", path, key, json={"prompt": 3}).status_code == 422
    listed = api.request("GET", f"/v1/challenges/{challenge['id']}/attempts", key).json()
    assert listed["total"] == 2


def test_concurrent_retries_with_one_key_make_one_attempt(api: Api, tenant: dict[str, Any]) -> None:
    key = tenant["api_key"]
    challenge = api.create_challenge(key)
    headers = {"Idempotency-Key": f"k-{uuid.uuid4()}"}
    with ThreadPoolExecutor(8) as pool:
        responses = list(
            pool.map(
                lambda _: api.submit(key, challenge["id"], "PWNED", "zed", headers=headers),
                range(8),
            )
        )
    assert {r.status_code for r in responses} == {202}
    assert len({r.json()["id"] for r in responses}) == 1
    listed = api.request("GET", f"/v1/challenges/{challenge['id']}/attempts", key).json()
    assert listed["total"] == 1


def _deadlocks_detected() -> int:
    """Deadlocks PostgreSQL has detected in this run's database (API and workers alike)."""
    from sqlalchemy import text

    from app.kit.db import session_scope

    with session_scope() as session:
        # Statistics reach the shared counters a moment after a transaction ends; flush ours
        # and read them afresh.
        session.execute(text("SELECT pg_stat_force_next_flush()"))
        session.execute(text("SELECT pg_stat_clear_snapshot()"))
        found = session.scalar(
            text("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()")
        )
    return int(found or 0)


def test_concurrent_sends_of_many_keys_answer_with_one_attempt_each_run_once_without_deadlock(
    api: Api, worker: Worker, tenant: dict[str, Any]
) -> None:
    """Forty keys, each sent four times at once, for four participants under attempt limits
    (their rows are held for the count) while the worker completes the earlier ones (its
    leaderboard writes name the same participants): every send is answered 202 with its key's
    attempt, PostgreSQL detects no deadlock, and each attempt runs once."""
    from sqlalchemy import func, select

    from app.attempt.models import Attempt, Trial
    from app.kit.db import session_scope

    key = tenant["api_key"]
    challenge = api.create_challenge(
        key, evaluation={"metric": "pass@k", "k": 3}, limits={"max_attempts_per_day": 50}
    )
    keys = [f"k-{uuid.uuid4()}" for _ in range(40)]
    sends = [(number, idempotency_key) for number, idempotency_key in enumerate(keys)] * 4
    deadlocks_before = _deadlocks_detected()

    def send(sent: tuple[int, str]) -> Any:
        number, idempotency_key = sent
        return api.submit(
            key,
            challenge["id"],
            f"PWNED {number}",
            f"player-{number % 4}",
            headers={"Idempotency-Key": idempotency_key},
        )

    with ThreadPoolExecutor(48) as pool:
        responses = list(pool.map(send, sends))
    assert [r.status_code for r in responses] == [202] * 160, [
        r.text for r in responses if r.status_code != 202
    ][:3]
    ids_by_key: dict[str, set[str]] = {}
    for (_, idempotency_key), response in zip(sends, responses, strict=True):
        ids_by_key.setdefault(idempotency_key, set()).add(response.json()["id"])
    assert all(len(ids) == 1 for ids in ids_by_key.values())
    assert sum("Idempotent-Replayed" not in r.headers for r in responses) == 40
    attempt_ids = [next(iter(ids)) for ids in ids_by_key.values()]
    for attempt_id in attempt_ids:
        assert api.wait_finished(key, attempt_id, timeout=60)["status"] == "completed"
    assert _deadlocks_detected() == deadlocks_before
    with session_scope() as session:
        runs = session.scalars(
            select(Attempt.run_count).where(Attempt.challenge_id == uuid.UUID(challenge["id"]))
        ).all()
        trials = session.scalar(
            select(func.count())
            .select_from(Trial)
            .join(Attempt, Attempt.id == Trial.attempt_id)
            .where(Attempt.challenge_id == uuid.UUID(challenge["id"]))
        )
    assert sorted(runs) == [1] * 40
    assert trials == 40 * 3


def test_a_participant_held_for_a_count_never_holds_up_a_row_that_names_it(
    api: Api, tenant: dict[str, Any]
) -> None:
    """While a submission holds its participant's row (limits, a team's entry), a worker's
    leaderboard row or another submission naming that participant goes ahead: its foreign-key
    check does not wait (NOWAIT here: it would fail at once if it had to)."""
    from sqlalchemy import text
    from sqlalchemy.exc import OperationalError

    from app.kit.db import session_scope
    from app.tenant.repository import ParticipantRepository
    from app.tenant.service import lock_participant

    tenant_id = uuid.UUID(tenant["id"])
    with session_scope() as session:
        participant_id = ParticipantRepository(session, tenant_id).id_for_handle("held")
    with session_scope() as holder, session_scope() as other:
        assert lock_participant(holder, tenant_id, participant_id)
        # What the foreign-key check of an INSERT naming the participant runs.
        checked = other.scalar(
            text("SELECT 1 FROM participants WHERE id = :id FOR KEY SHARE NOWAIT"),
            {"id": participant_id},
        )
        assert checked == 1
        # Another holder still waits: counts of one participant still happen one at a time.
        with pytest.raises(OperationalError, match="could not obtain lock"):
            other.execute(
                text("SELECT 1 FROM participants WHERE id = :id FOR NO KEY UPDATE NOWAIT"),
                {"id": participant_id},
            )


def test_a_participant_s_attempts_left_are_read_as_the_limits_count_them(
    api: Api, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    limited = api.create_challenge(key, limits={"max_attempts_total": 3, "max_attempts_per_day": 2})
    path = f"/v1/challenges/{limited['id']}/attempts/left"

    def left(caller: str, handle: str) -> dict[str, Any]:
        response = api.request("GET", path, caller, params={"participant": handle})
        assert response.status_code == 200, response.text
        return dict(response.json())

    midnight = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    fresh = left(key, "ann")
    assert fresh == {
        "participant": "ann",
        "max_attempts_total": 3,
        "max_attempts_per_day": 2,
        "left_total": 3,
        "left_today": 2,
        "resets_at": (midnight + timedelta(days=1)).isoformat().replace("+00:00", "Z"),
    }
    assert api.submit(key, limited["id"], "PWNED", "Ann").status_code == 202
    member = api.request("POST", "/v1/api-keys", key, json={"name": "m", "role": "member"})
    after = left(member.json()["key"], "ANN")  # handles ignore case; shown as first spelled
    assert (after["participant"], after["left_total"], after["left_today"]) == ("Ann", 2, 1)
    assert api.submit(key, limited["id"], "PWNED", "ann").status_code == 202
    assert left(key, "ann")["left_today"] == 0
    assert api.submit(key, limited["id"], "PWNED", "ann").status_code == 429

    free = api.create_challenge(key)
    unlimited = api.request(
        "GET", f"/v1/challenges/{free['id']}/attempts/left", key, params={"participant": "ann"}
    ).json()
    assert (unlimited["left_total"], unlimited["left_today"], unlimited["resets_at"]) == (
        None,
        None,
        None,
    )
    assert api.request("GET", path, key).status_code == 422  # which participant?
    stranger = api.create_tenant()["api_key"]
    assert api.request("GET", path, stranger, params={"participant": "ann"}).status_code == 404


def test_total_and_daily_limits(api: Api, worker: Worker, tenant: dict[str, Any]) -> None:
    key = tenant["api_key"]
    total = api.create_challenge(key, limits={"max_attempts_total": 2})
    for _ in range(2):
        assert api.submit(key, total["id"], "PWNED", "amy").status_code == 202
    refused = api.submit(key, total["id"], "PWNED", "amy")
    assert refused.status_code == 409
    assert "attempt limit reached" in refused.json()["error"]["message"]
    # The limit is per participant.
    assert api.submit(key, total["id"], "PWNED", "ben").status_code == 202

    daily = api.create_challenge(key, limits={"max_attempts_per_day": 1})
    assert api.submit(key, daily["id"], "PWNED", "amy").status_code == 202
    refused = api.submit(key, daily["id"], "PWNED", "amy")
    assert refused.status_code == 429
    assert "daily attempt limit" in refused.json()["error"]["message"]
    assert int(refused.headers["Retry-After"]) > 0


@pytest.fixture(params=["production", "embedded"])
def api_of_each_mode(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Api]:
    """The API on PostgreSQL (this run's server), or `gauntlet run` on its SQLite file."""
    if request.param == "production":
        yield request.getfixturevalue("api")
        return
    # The bursts below are one tenant's 12 requests at once: past its share of the API
    # (docs/capacity.md), which is not what they test.
    embedded = Embedded(
        tmp_path / "data",
        free_port(),
        tmp_path / "run.log",
        settings={"GAUNTLET_API_MAX_IN_FLIGHT_PER_TENANT": "64"},
    )
    embedded.start()
    client = Api(embedded.base, admin_token=EMBEDDED_ADMIN_TOKEN)
    try:
        yield client
    finally:
        client.http.close()
        embedded.stop()


def test_concurrent_submissions_never_pass_a_limit(api_of_each_mode: Api) -> None:
    # Limits are checked under a lock held to the insert, so a burst cannot slip past them:
    # not for a handle that does not exist yet (its first attempts create it), nor for one that
    # does, on either database. A race shows in some bursts only, so there are several.
    api = api_of_each_mode
    key = api.create_tenant()["api_key"]
    for _ in range(10):
        challenge = api.create_challenge(key, limits={"max_attempts_total": 3})
        path = f"/v1/challenges/{challenge['id']}/attempts"
        body = {"prompt": "PWNED", "participant": "burst"}
        with ThreadPoolExecutor(12) as pool:
            sent = [pool.submit(api.request, "POST", path, key, json=body) for _ in range(12)]
            responses = [future.result() for future in sent]
        assert sorted(r.status_code for r in responses) == [202] * 3 + [409] * 9
        assert api.request("GET", path, key).json()["total"] == 3


def test_the_daily_limit_resets_at_midnight_utc(
    api: Api, tenant: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The API server runs in this process: its clock is set to either side of midnight UTC."""
    from app.attempt import service

    key = tenant["api_key"]
    challenge = api.create_challenge(key, limits={"max_attempts_per_day": 2})
    clock = datetime(2026, 3, 1, 23, 59, 58, tzinfo=UTC)
    monkeypatch.setattr(service, "utcnow", lambda: clock)
    for _ in range(2):
        assert api.submit(key, challenge["id"], "PWNED", "owl").status_code == 202
    clock = datetime(2026, 3, 1, 23, 59, 59, 250_000, tzinfo=UTC)
    refused = api.submit(key, challenge["id"], "PWNED", "owl")
    assert refused.status_code == 429
    assert "it resets at 2026-03-02 00:00 UTC" in refused.json()["error"]["message"]
    assert refused.headers["Retry-After"] == "1"  # 0.75 s, rounded up
    # Yesterday's attempts no longer count from midnight on; today's do.
    clock = datetime(2026, 3, 2, 0, 0, tzinfo=UTC)
    for _ in range(2):
        assert api.submit(key, challenge["id"], "PWNED", "owl").status_code == 202
    refused = api.submit(key, challenge["id"], "PWNED", "owl")
    assert refused.status_code == 429
    assert "it resets at 2026-03-03 00:00 UTC" in refused.json()["error"]["message"]
    assert refused.headers["Retry-After"] == str(24 * 3600)
    listed = api.request("GET", f"/v1/challenges/{challenge['id']}/attempts", key).json()
    assert listed["total"] == 4


def test_upcoming_and_closed_challenges_refuse_attempts(api: Api, tenant: dict[str, Any]) -> None:
    key = tenant["api_key"]
    now = datetime.now(UTC)
    upcoming = api.create_challenge(key, opens_at=(now + timedelta(days=1)).isoformat())
    closed = api.create_challenge(
        key,
        opens_at=(now - timedelta(days=2)).isoformat(),
        closes_at=(now - timedelta(days=1)).isoformat(),
    )
    assert upcoming["status"] == "upcoming" and closed["status"] == "closed"
    response = api.submit(key, upcoming["id"], "PWNED", "amy")
    assert response.status_code == 409 and "opens at" in response.json()["error"]["message"]
    response = api.submit(key, closed["id"], "PWNED", "amy")
    assert response.status_code == 409 and "closed at" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"prompt": 42, "participant": "amy"}, "prompt"),
        ({"prompt": "", "participant": "amy"}, "prompt"),
        ({"prompt": "   ", "participant": "amy"}, "prompt"),
        ({"prompt": "a\x00b", "participant": "amy"}, "prompt"),
        ({"prompt": "hi", "participant": "amy", "extra": 1}, "extra"),
        ({"prompt": "hi", "participant": "has space"}, "participant"),
        ({"prompt": "hi", "participant": "x" * 65}, "participant"),
        ({"prompt": "hi"}, "participant"),
        ({"prompt": ["PWNED"], "participant": "amy"}, "prompt"),
    ],
)
def test_bad_attempt_bodies_are_refused_naming_the_field(
    api: Api, tenant: dict[str, Any], body: dict[str, Any], field: str
) -> None:
    key = tenant["api_key"]
    challenge = api.create_challenge(key)
    response = api.request("POST", f"/v1/challenges/{challenge['id']}/attempts", key, json=body)
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "validation_error"
    assert field in error["message"]


def test_oversize_prompts_and_bodies(api: Api, tenant: dict[str, Any]) -> None:
    key = tenant["api_key"]
    challenge = api.create_challenge(key, limits={"max_prompt_chars": 10})
    response = api.submit(key, challenge["id"], "x" * 11, "amy")
    assert response.status_code == 422
    assert "at most 10" in response.json()["error"]["message"]
    # Characters, not bytes: ten emoji fit a ten-character limit.
    assert api.submit(key, challenge["id"], "🙂" * 10, "amy").status_code == 202
    huge = api.submit(key, challenge["id"], "x" * 2_000_000, "amy")
    assert huge.status_code == 413
    not_json = api.request(
        "POST",
        f"/v1/challenges/{challenge['id']}/attempts",
        key,
        content=b"{nope",
        headers={"Content-Type": "application/json"},
    )
    assert not_json.status_code == 422


def test_unicode_prompts_round_trip(api: Api, worker: Worker, tenant: dict[str, Any]) -> None:
    key = tenant["api_key"]
    challenge = api.create_challenge(key)
    prompt = "Ünïcödé 漢字 \u202e PWNED 👾 {prompt} {0} %s"
    response = api.submit(key, challenge["id"], prompt, "émilie")
    assert response.status_code == 422  # handles are ASCII-safe identifiers
    response = api.submit(key, challenge["id"], prompt, "emilie")
    assert response.status_code == 202
    result = api.wait_finished(key, response.json()["id"])
    assert result["status"] == "completed"
    assert result["prompt"] == prompt
    assert result["trials"][0]["actor"]["output"] == prompt  # braces stay literal
    assert result["metrics"]["succeeded"] is True


def test_metrics_created_at_is_iso_text_and_old_rows_read_the_same(
    api: Api, worker: Worker, tenant: dict[str, Any]
) -> None:
    from sqlalchemy import bindparam, text

    from app.kit.db import JSONType, session_scope

    key = tenant["api_key"]
    challenge = api.create_challenge(key)
    submitted = api.submit(key, challenge["id"], "PWNED", "alice").json()
    result = api.wait_finished(key, submitted["id"])
    assert result["status"] == "completed"
    # The attempt's own created_at, as every other created_at of the API gives it.
    assert result["metrics"]["created_at"] == result["created_at"]
    created = datetime.fromisoformat(result["created_at"])
    board = api.request("GET", f"/v1/challenges/{challenge['id']}/leaderboard", key).json()
    # The board keeps the time to the millisecond.
    shown = datetime.fromisoformat(board["items"][0]["created_at"])
    assert shown == created.replace(microsecond=created.microsecond // 1000 * 1000)

    # An attempt completed before this held epoch milliseconds in its stored metrics.
    old_metrics = {**result["metrics"], "created_at": int(created.timestamp() * 1000)}
    with session_scope() as session:
        session.execute(
            text("UPDATE attempts SET metrics = :metrics WHERE id = :id").bindparams(
                bindparam("metrics", type_=JSONType)
            ),
            {"metrics": old_metrics, "id": uuid.UUID(submitted["id"])},
        )
    read = api.request("GET", f"/v1/attempts/{submitted['id']}", key).json()
    assert datetime.fromisoformat(read["metrics"]["created_at"]) == datetime.fromtimestamp(
        old_metrics["created_at"] / 1000, UTC
    )
    assert read["metrics"]["succeeded"] is True
