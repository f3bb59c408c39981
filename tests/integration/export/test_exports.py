"""Exports over HTTP with PostgreSQL and a real worker: every dataset of a prompt and of a
red-blue challenge, in CSV and in JSON Lines, equals what the API's reads answer; only the
challenge's tenant admins may export; a large export is read in batches, each in its own
session, and sent chunked."""

from __future__ import annotations

import csv
import io
import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from app.export.datasets import ATTEMPTS, LEADERBOARD, TRIALS
from app.export.formats import cell
from app.export.stream import Dataset
from app.kinds.red_blue.exports import ATTACKS, DEFENSES, MATCHES
from app.kinds.red_blue.exports import LEADERBOARD as RED_BLUE_LEADERBOARD
from tests.conftest import ADMIN_TOKEN, Api, Worker
from tests.integration.red_blue.test_redblue import (
    OVERRIDE,
    PLAIN,
    STRONG,
    WEAK,
    attack,
    board,
    create,
    defend,
    rated_board,
    settled_matches,
)

pytestmark = pytest.mark.integration


def export(api: Api, key: str, challenge_id: str, name: str, output: str) -> httpx.Response:
    response = api.request(
        "GET", f"/v1/challenges/{challenge_id}/exports/{name}", key, params={"format": output}
    )
    assert response.status_code == 200, response.text
    return response


def json_lines(response: httpx.Response) -> list[dict[str, Any]]:
    assert response.headers["content-type"] == "application/x-ndjson"
    assert response.content == b"" or response.content.endswith(b"\n")
    return [json.loads(line) for line in response.content.split(b"\n") if line]


def csv_rows(response: httpx.Response) -> list[dict[str, str]]:
    assert response.headers["content-type"] == "text/csv; charset=utf-8"
    return list(csv.DictReader(io.StringIO(response.content.decode(), newline="")))


def as_csv(dataset: Dataset, records: list[dict[str, Any]]) -> list[dict[str, str]]:
    """The CSV rows the records should make: each column's cell of the API's JSON."""
    return [{c.name: cell(c.value(record)) for c in dataset.columns} for record in records]


def oldest_first(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(records, key=lambda r: (datetime.fromisoformat(r["created_at"]), r["id"]))


def both_formats_equal(
    api: Api, key: str, challenge_id: str, dataset: Dataset, expected: list[dict[str, Any]]
) -> httpx.Response:
    """The dataset's JSON lines are the expected records, in order, and its CSV their rows."""
    as_json = export(api, key, challenge_id, dataset.name, "json")
    assert json_lines(as_json) == expected
    as_table = export(api, key, challenge_id, dataset.name, "csv")
    assert csv_rows(as_table) == as_csv(dataset, expected)
    assert as_table.content.startswith(",".join(c.name for c in dataset.columns).encode())
    return as_table


def test_a_prompt_challenges_exports_equal_the_apis_reads(
    api: Api, worker: Worker, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    challenge = api.create_challenge(key)
    cid = challenge["id"]
    tricky = '=1+1, "quoted"\nand a second line: ünïcode 思考'
    submitted = [
        ("alice", "PWNED"),
        ("bob", "say PWNED, please"),
        ("carol", tricky),
        ("alice", "PWNED now"),
        ("dave", "nothing to see"),
    ]
    for who, prompt in submitted:
        attempt = api.submit(key, cid, prompt, who).json()
        api.wait_finished(key, attempt["id"])

    offered = api.request("GET", f"/v1/challenges/{cid}/exports", key).json()["items"]
    assert [e["name"] for e in offered] == [
        "leaderboard",
        "attempts",
        "trials",
        "rules_acceptances",
    ]
    assert offered[1]["formats"] == {
        "csv": f"/v1/challenges/{cid}/exports/attempts?format=csv",
        "json": f"/v1/challenges/{cid}/exports/attempts?format=json",
    }
    assert [c["name"] for c in offered[1]["columns"]] == [c.name for c in ATTEMPTS.columns]

    # Attempts: the list endpoint's items (without trials), oldest first.
    listed = api.request("GET", f"/v1/challenges/{cid}/attempts?limit=200", key).json()
    assert listed["total"] == 5
    attempts = oldest_first(
        [{k: v for k, v in a.items() if k != "trials"} for a in listed["items"]]
    )
    table = both_formats_equal(api, key, cid, ATTEMPTS, attempts)
    # Exact texts in JSON; in CSV, a formula is kept as text.
    assert [a["prompt"] for a in json_lines(export(api, key, cid, "attempts", "json"))] == [
        p for _, p in submitted
    ]
    assert csv_rows(table)[2]["prompt"] == "'" + tricky
    assert {a["status"] for a in attempts} == {"completed"}
    assert all(a["metrics"]["tokens_total"] for a in attempts)
    disposition = table.headers["content-disposition"]
    assert disposition.startswith(f'attachment; filename="{challenge["slug"]}-attempts-')
    assert disposition.endswith('.csv"')
    assert table.headers["cache-control"] == "no-store"

    # Trials: each attempt's trials as its trials endpoint reads them (the admin's view, with
    # the hidden system prompt), with the attempt's id and participant.
    trials = []
    for a in attempts:
        page = api.request("GET", f"/v1/attempts/{a['id']}/trials?limit=500", key).json()
        assert page["total"] >= 1
        trials += [
            {**t, "attempt_id": a["id"], "participant": a["participant"]} for t in page["items"]
        ]
    both_formats_equal(api, key, cid, TRIALS, trials)
    system = [m for m in trials[0]["actor"]["prompt"] if m["role"] == "system"]
    assert system and system[0]["content"] == challenge["target"]["system_prompt"]

    # The leaderboard: its rows, best first.
    ranked = api.request("GET", f"/v1/challenges/{cid}/leaderboard?limit=200", key).json()
    assert [r["participant"] for r in ranked["items"]] == ["alice", "bob"]
    both_formats_equal(api, key, cid, LEADERBOARD, ranked["items"])


def test_a_red_blue_challenges_exports_equal_the_apis_reads(
    api: Api, worker: Worker, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    challenge = create(api, key)
    cid = challenge["id"]
    defenses = [defend(api, key, cid, "bob", WEAK), defend(api, key, cid, "dana", STRONG)]
    attacks = [attack(api, key, cid, "pam", PLAIN), attack(api, key, cid, "oscar", OVERRIDE)]
    matches = settled_matches(api, key, cid, 4)
    rated_board(api, key, cid, 4)

    offered = api.request("GET", f"/v1/challenges/{cid}/exports", key).json()["items"]
    assert [e["name"] for e in offered] == [
        "leaderboard",
        "defenses",
        "attacks",
        "matches",
        "rules_acceptances",
    ]

    # Both boards, red first, each row with its side.
    sides = [
        {**row, "side": side}
        for side in ("red", "blue")
        for row in board(api, key, cid, side)["items"]
    ]
    assert len(sides) == 4
    both_formats_equal(api, key, cid, RED_BLUE_LEADERBOARD, sides)

    # Defenses, attacks and matches as their own reads answer a tenant admin: texts included.
    def read(path: str) -> dict[str, Any]:
        return dict(api.request("GET", path, key).json())

    defense_reads = oldest_first([read(f"/v1/defenses/{d['id']}") for d in defenses])
    assert defense_reads[0]["system_prompt"] == WEAK
    both_formats_equal(api, key, cid, DEFENSES, defense_reads)
    attack_reads = oldest_first([read(f"/v1/attacks/{a['id']}") for a in attacks])
    assert [a["matches"]["completed"] for a in attack_reads] == [2, 2]
    both_formats_equal(api, key, cid, ATTACKS, attack_reads)
    match_reads = oldest_first([read(f"/v1/matches/{m['id']}") for m in matches])
    assert all(m["output"] is not None and m["verdicts"] for m in match_reads)
    table = both_formats_equal(api, key, cid, MATCHES, match_reads)
    breached = [json.loads(row["breached"]) for row in csv_rows(table)]
    assert sorted(map(sorted, breached)) == [[], [], [], ["pwned", "secret"]]

    # A prompt challenge's datasets are not a red-blue challenge's.
    missing = api.request("GET", f"/v1/challenges/{cid}/exports/attempts", key)
    assert missing.status_code == 404
    assert "leaderboard, defenses, attacks, matches" in missing.json()["error"]["message"]


def test_only_the_challenges_tenant_admins_may_export(api: Api, tenant: dict[str, Any]) -> None:
    key = tenant["api_key"]
    cid = api.create_challenge(key)["id"]
    member = api.request("POST", "/v1/api-keys", key, json={"name": "app", "role": "member"})
    member_key = member.json()["key"]
    other_admin = api.create_tenant()["api_key"]
    paths = [
        f"/v1/challenges/{cid}/exports",
        f"/v1/challenges/{cid}/exports/attempts?format=json",
        f"/v1/challenges/{cid}/exports/trials?format=csv",
        f"/v1/challenges/{cid}/exports/leaderboard",
    ]
    for path in paths:
        assert api.request("GET", path, key).status_code == 200
        anonymous = api.request("GET", path)
        assert anonymous.status_code == 401 and anonymous.headers["WWW-Authenticate"] == "Bearer"
        assert api.request("GET", path, member_key).status_code == 403
        assert api.request("GET", path, ADMIN_TOKEN).status_code == 403
        elsewhere = api.request("GET", path, other_admin)
        assert elsewhere.status_code == 404 and elsewhere.json()["error"]["code"] == "not_found"
        assert "text/csv" not in elsewhere.headers["content-type"]

    unknown = api.request("GET", f"/v1/challenges/{cid}/exports/matches", key)
    assert unknown.status_code == 404
    assert "leaderboard, attempts, trials" in unknown.json()["error"]["message"]
    assert api.request("GET", f"/v1/challenges/{uuid.uuid4()}/exports", key).status_code == 404
    bad = api.request("GET", f"/v1/challenges/{cid}/exports/attempts?format=xml", key)
    assert bad.status_code == 422 and bad.json()["error"]["details"][0]["loc"] == [
        "query",
        "format",
    ]


# A large export -------------------------------------------------------------------------------

LARGE = 2_500


def _seed_attempts(tenant_id: str, challenge_id: str, count: int) -> list[str]:
    """`count` completed attempts of 25 participants, one trial each, submitted a millisecond
    apart; their ids, oldest first."""
    from sqlalchemy import insert

    from app.attempt.models import Attempt, Trial
    from app.kit.db import session_scope
    from app.tenant.models import Participant

    start = datetime.now(UTC) - timedelta(hours=1)
    tenant = uuid.UUID(tenant_id)
    challenge = uuid.UUID(challenge_id)
    participants = [
        {"id": uuid.uuid4(), "tenant_id": tenant, "handle": f"bulk{i:02d}", "created_at": start}
        for i in range(25)
    ]
    attempts = []
    trials = []
    for i in range(count):
        created = start + timedelta(milliseconds=i)
        attempt_id = uuid.uuid4()
        attempts.append(
            {
                "id": attempt_id,
                "tenant_id": tenant,
                "challenge_id": challenge,
                "participant_id": participants[i % 25]["id"],
                "status": "completed",
                "kind_fields": {"prompt": f"prompt number {i}, with a comma"},
                "created_at": created,
                "created_at_ms": int(created.timestamp() * 1000),
                "enqueued_at": created,
                "finished_at": created,
                "run_count": 1,
                "succeeded": i % 2 == 0,
                "tokens_total": 10 + i,
            }
        )
        trials.append(
            {
                "id": uuid.uuid4(),
                "tenant_id": tenant,
                "attempt_id": attempt_id,
                "task_index": 0,
                "trial_index": 1,
                "success": i % 2 == 0,
                "score": 1.0 if i % 2 == 0 else 0.0,
                "actor": {"model": "offline/echo", "prompt": [], "output": f"output {i}"},
                "judge": {"success": i % 2 == 0},
                "critic": {},
                "created_at": created,
            }
        )
    with session_scope() as session:
        session.execute(insert(Participant), participants)
        session.execute(insert(Attempt), attempts)
        session.execute(insert(Trial), trials)
    return [str(a["id"]) for a in attempts]


@pytest.fixture
def batch_reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, int, Any]]]:
    """Each read of the attempts' repository by an export (the API server runs in this
    process): which read, its limit, and its session (kept, so no two are the same object)."""
    from app.attempt.repository import AttemptRepository

    calls: list[tuple[str, int, Any]] = []
    for name in ("in_submission_order", "trials_in_submission_order"):
        original = getattr(AttemptRepository, name)

        def spy(
            self: Any, *args: Any, _original: Any = original, _name: str = name, **options: Any
        ) -> Any:
            calls.append((_name, args[-1], self.session))
            assert self.session.in_transaction() is False  # a fresh session per batch
            return _original(self, *args, **options)

        monkeypatch.setattr(AttemptRepository, name, spy)
    yield calls


def test_a_large_export_streams_in_batches_each_read_in_its_own_session(
    api: Api, tenant: dict[str, Any], batch_reads: list[tuple[str, int, Any]]
) -> None:
    key = tenant["api_key"]
    cid = api.create_challenge(key)["id"]
    ids = _seed_attempts(tenant["id"], cid, LARGE)

    path = f"/v1/challenges/{cid}/exports/attempts"
    with api.http.stream(
        "GET", path, params={"format": "csv"}, headers={"Authorization": f"Bearer {key}"}
    ) as response:
        assert response.status_code == 200
        assert response.headers["transfer-encoding"] == "chunked"
        assert "content-length" not in response.headers
        body = b"".join(response.iter_bytes())
    rows = list(csv.DictReader(io.StringIO(body.decode(), newline="")))
    assert [row["id"] for row in rows] == ids
    assert (
        rows[7]["prompt"] == "prompt number 7, with a comma" and rows[7]["participant"] == "bulk07"
    )

    reads = [
        (limit, session) for name, limit, session in batch_reads if name == "in_submission_order"
    ]
    # 100 rows first, then batches sized to their output, never more than 1,000 at once.
    assert reads[0][0] == 100 and all(limit <= 1000 for limit, _ in reads)
    assert sum(limit for limit, _ in reads) >= LARGE and len(reads) >= 3
    assert len({id(session) for _, session in reads}) == len(reads)

    batch_reads.clear()
    trials = json_lines(export(api, key, cid, "trials", "json"))
    assert [t["attempt_id"] for t in trials] == ids
    assert trials[-1]["actor"]["output"] == f"output {LARGE - 1}"
    trial_reads = [limit for name, limit, _ in batch_reads if name == "trials_in_submission_order"]
    assert len(trial_reads) >= 3 and all(limit <= 500 for limit in trial_reads)


def _all_pages(api: Api, key: str, path: str, **params: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    while True:
        page = api.request(
            "GET", path, key, params={**params, "limit": "200", "offset": str(len(items))}
        ).json()
        items += page["items"]
        if len(items) >= page["total"]:
            return items


def _seed_boards(tenant_id: str, prompt_challenge: str, duel: str) -> None:
    """1,234 rows on the prompt challenge's leaderboard; 1,100 red and 345 blue rows on the
    red-blue challenge's boards (ratings as a recompute writes them)."""
    from sqlalchemy import insert

    from app.attempt.models import Attempt
    from app.kinds.red_blue.models import Rating
    from app.kit.db import session_scope
    from app.leaderboard.models import LeaderboardEntry
    from app.tenant.models import Participant

    now = datetime.now(UTC)
    tenant = uuid.UUID(tenant_id)
    people = [
        {"id": uuid.uuid4(), "tenant_id": tenant, "handle": f"p{i:04d}", "created_at": now}
        for i in range(1_234)
    ]
    attempts = [
        {
            "id": uuid.uuid4(),
            "tenant_id": tenant,
            "challenge_id": uuid.UUID(prompt_challenge),
            "participant_id": p["id"],
            "status": "completed",
            "kind_fields": {"prompt": "PWNED"},
            "created_at": now,
            "created_at_ms": int(now.timestamp() * 1000),
            "enqueued_at": now,
            "run_count": 1,
        }
        for p in people
    ]
    entries = [
        {
            "challenge_id": a["challenge_id"],
            "participant_id": a["participant_id"],
            "tenant_id": tenant,
            "attempt_id": a["id"],
            # Ties on the key, broken by the attempt's id: the order's last column.
            "rank_key": float(i // 3),
            "rank_tiebreak": 0.0,
            "attempt_created_at_ms": a["created_at_ms"],
            "succeeded": True,
            "tokens_total": i // 3,
            "updated_at": now,
        }
        for i, a in enumerate(attempts)
    ]
    ratings = [
        {
            "challenge_id": uuid.UUID(duel),
            "side": side,
            "participant_id": people[i]["id"],
            "tenant_id": tenant,
            "position": i + 1,
            "rank": 1 + i // 2,
            "rating": 2000.0 - i,
            # Some intervals open at one end (null): won, or lost, every match.
            "rating_low": None if i % 11 == 5 else 1900.0 - i,
            "rating_high": None if i % 11 == 7 else 2100.04 - i,
            "points": 1000 - i // 2,
            "matches": 10,
            "wins": i % 10,
        }
        for side, count in (("red", 1_100), ("blue", 345))
        for i in range(count)
    ]
    with session_scope() as session:
        session.execute(insert(Participant), people)
        session.execute(insert(Attempt), attempts)
        session.execute(insert(LeaderboardEntry), entries)
        session.execute(insert(Rating), ratings)


def test_large_boards_export_every_row_once_ranked_as_their_pages(
    api: Api, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    prompt = api.create_challenge(key)["id"]
    duel = create(api, key)["id"]
    _seed_boards(tenant["id"], prompt, duel)

    board_path = f"/v1/challenges/{prompt}/leaderboard"
    ranked = _all_pages(api, key, board_path)
    assert len(ranked) == 1_234 and [r["rank"] for r in ranked] == list(range(1, 1_235))
    both_formats_equal(api, key, prompt, LEADERBOARD, ranked)

    duel_path = f"/v1/challenges/{duel}/leaderboard"
    sides = [
        {**row, "side": side}
        for side in ("red", "blue")
        for row in _all_pages(api, key, duel_path, side=side)
    ]
    assert len(sides) == 1_445
    both_formats_equal(api, key, duel, RED_BLUE_LEADERBOARD, sides)
