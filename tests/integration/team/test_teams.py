"""Teams over HTTP, with a real worker and PostgreSQL: members share one quota and one board
row, a team is one side of red-blue pairing (never against itself), joining and leaving follow
the rules docs/teams.md states, and a team is its tenant's only."""

from __future__ import annotations

import csv
import io
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from sqlalchemy import text

from app.kit.db import get_engine, get_sessionmaker
from app.team.service import leave_team
from app.tenant.service import lock_participant
from tests.conftest import Api, Worker, counting_queries
from tests.integration.red_blue.test_redblue import (
    PLAIN,
    WEAK,
    attack,
    board,
    create,
    defend,
    rated_board,
    settled_matches,
)

pytestmark = pytest.mark.integration


def teams_path(challenge_id: str) -> str:
    return f"/v1/challenges/{challenge_id}/teams"


def create_team(api: Api, key: str, challenge_id: str, who: str, name: str) -> dict[str, Any]:
    response = api.request(
        "POST", teams_path(challenge_id), key, json={"participant": who, "name": name}
    )
    assert response.status_code == 201, response.text
    return dict(response.json())


def join(api: Api, key: str, challenge_id: str, who: str, code: str) -> Any:
    return api.request(
        "POST",
        f"{teams_path(challenge_id)}/join",
        key,
        json={"participant": who, "invite_code": code},
    )


def leave(api: Api, key: str, challenge_id: str, team_id: str, who: str) -> Any:
    return api.request("DELETE", f"{teams_path(challenge_id)}/{team_id}/members/{who}", key)


def refusal(response: Any, status: int) -> str:
    assert response.status_code == status, response.text
    return str(response.json()["error"]["message"])


def test_three_members_share_one_quota_and_one_board_row(
    api: Api, worker: Worker, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    challenge = api.create_challenge(key, limits={"max_attempts_total": 3, "max_team_size": 3})
    cid = challenge["id"]
    team = create_team(api, key, challenge["slug"], "alice", "squad")
    assert [m["participant"] for m in team["members"]] == ["alice"]
    code = team["invite_code"]
    for who in ("bob", "carol"):
        joined = join(api, key, cid, who, code)
        assert joined.status_code == 200, joined.text
    assert [m["participant"] for m in joined.json()["members"]] == ["alice", "bob", "carol"]

    attempts = []
    # Carol names herself in capitals: the entry names her as her handle is spelled.
    for who in ("alice", "bob", "CAROL"):
        submitted = api.submit(key, cid, "PWNED", who, headers={"Idempotency-Key": f"k-{who}"})
        assert submitted.status_code == 202, submitted.text
        assert submitted.json()["participant"] == "squad"
        assert submitted.json()["submitted_by"] == who.lower()
        attempts.append(submitted.json())
    assert len({a["participant_id"] for a in attempts}) == 1
    replayed = api.submit(key, cid, "PWNED", "bob", headers={"Idempotency-Key": "k-bob"})
    assert replayed.json()["id"] == attempts[1]["id"]
    assert replayed.json()["submitted_by"] == "bob"
    # The limit counts the team's attempts, whichever member submits the fourth.
    assert "attempt limit reached" in refusal(api.submit(key, cid, "PWNED", "alice"), 409)
    left = api.request("GET", f"/v1/challenges/{cid}/attempts/left?participant=bob", key)
    assert left.json()["left_total"] == 0
    # A participant playing alone has a quota of their own.
    alone = api.submit(key, cid, "PWNED", "dave-x")
    assert alone.status_code == 202 and alone.json()["participant"] == "dave-x"
    assert alone.json()["submitted_by"] is None
    submitters = {a["id"]: who for a, who in zip(attempts, ("alice", "bob", "carol"), strict=True)}
    submitters[alone.json()["id"]] = None
    for attempt_id, who in submitters.items():
        read = api.wait_finished(key, attempt_id)
        assert read["status"] == "completed"
        assert read["submitted_by"] == who
    # Every member sees who submitted each of the team's attempts, in lists and the export.
    listed_attempts = api.request("GET", f"/v1/challenges/{cid}/attempts", key).json()["items"]
    assert {a["id"]: a["submitted_by"] for a in listed_attempts} == submitters
    # The members' handles are read with the page, not one query per attempt.
    statements = []
    for limit in (1, 4):
        with counting_queries() as ran:
            page = api.request("GET", f"/v1/challenges/{cid}/attempts?limit={limit}", key)
            assert len(page.json()["items"]) == limit
        statements.append(len(ran))
    assert statements[0] == statements[1]
    by_member = api.request("GET", "/v1/attempts?participant=squad", key).json()["items"]
    assert sorted(a["submitted_by"] for a in by_member) == ["alice", "bob", "carol"]
    exported = api.request("GET", f"/v1/challenges/{cid}/exports/attempts?format=csv", key)
    assert exported.status_code == 200, exported.text
    table = list(csv.DictReader(io.StringIO(exported.text)))
    assert {row["id"]: row["submitted_by"] or None for row in table} == submitters

    items = api.request("GET", f"/v1/challenges/{cid}/leaderboard", key).json()["items"]
    rows = {item["participant"]: item for item in items}
    assert rows["squad"]["members"] == ["alice", "bob", "carol"]
    assert rows["dave-x"]["members"] is None
    assert not {"alice", "bob", "carol"} & set(rows)

    # A lost code is replaced by a member, never read back; the old one stops working.
    renew = f"{teams_path(cid)}/{team['id']}/invite-code"
    assert api.request("POST", renew, key, json={"participant": "dave-x"}).status_code == 404
    renewed = api.request("POST", renew, key, json={"participant": "carol"})
    assert renewed.status_code == 200 and renewed.json()["invite_code"] != code
    assert join(api, key, cid, "erin", code).status_code == 422

    read = api.request("GET", f"{teams_path(cid)}/{team['id']}", key)
    assert read.status_code == 200 and "invite_code" not in read.json()
    listed = api.request("GET", teams_path(cid), key).json()
    assert [t["name"] for t in listed["items"]] == ["squad"] and listed["total"] == 1
    export = api.request("GET", f"/v1/challenges/{cid}/exports/leaderboard?format=csv", key)
    assert export.status_code == 200, export.text
    assert '"[""alice"",""bob"",""carol""]"' in export.text


def test_a_team_name_submits_nothing_itself(api: Api, tenant: dict[str, Any]) -> None:
    key = tenant["api_key"]
    cid = api.create_challenge(key, limits={"max_team_size": 2})["id"]
    create_team(api, key, cid, "ann", "pair")
    refused = api.submit(key, cid, "PWNED", "pair")
    assert refused.status_code == 422, refused.text
    assert refused.json()["error"]["details"][0]["loc"][-1] == "participant"


def test_joining_and_leaving_follow_the_rules(api: Api, tenant: dict[str, Any]) -> None:
    key = tenant["api_key"]
    alone = api.create_challenge(key)["id"]
    no_teams = api.request("POST", teams_path(alone), key, json={"participant": "a", "name": "t"})
    assert "played individually" in refusal(no_teams, 409)

    draft = api.create_challenge(key, state="draft", limits={"max_team_size": 3})["id"]
    early = api.request("POST", teams_path(draft), key, json={"participant": "a", "name": "t"})
    assert "draft" in refusal(early, 409)

    cid = api.create_challenge(key, limits={"max_team_size": 3})["id"]
    team = create_team(api, key, cid, "alice", "trio")
    code = team["invite_code"]
    # A name is a player's name: no participant's handle, no other team's, ignoring case.
    taken = api.request("POST", teams_path(cid), key, json={"participant": "erin", "name": "ALICE"})
    assert "taken" in refusal(taken, 409)
    wrong = join(api, key, cid, "bob", "not-the-code")
    assert wrong.status_code == 422
    assert wrong.json()["error"]["details"][0]["loc"][-1] == "invite_code"
    assert join(api, key, cid, "bob", code).status_code == 200
    again = api.request("POST", teams_path(cid), key, json={"participant": "bob", "name": "b2"})
    assert "already in a team" in refusal(again, 409)

    # Who has played alone joins no team (their entries would sit outside its limits).
    assert api.submit(key, cid, "PWNED", "frank").status_code == 202
    assert "entries of their own" in refusal(join(api, key, cid, "frank", code), 409)

    # Before the first entry, leaving is free; after it, joining and leaving are closed.
    assert leave(api, key, cid, team["id"], "bob").status_code == 204
    assert join(api, key, cid, "bob", code).status_code == 200
    assert api.submit(key, cid, "PWNED", "bob").status_code == 202
    assert "joining closed" in refusal(join(api, key, cid, "carol", code), 409)
    assert "stay" in refusal(leave(api, key, cid, team["id"], "bob"), 409)
    assert leave(api, key, cid, team["id"], "carol").status_code == 404

    # The last member leaving deletes the team, and its name is free again.
    solo = create_team(api, key, cid, "gina", "solo")
    assert leave(api, key, cid, solo["id"], "gina").status_code == 204
    assert api.request("GET", f"{teams_path(cid)}/{solo['id']}", key).status_code == 404
    assert create_team(api, key, cid, "gina", "solo")["name"] == "solo"


def test_a_full_team_and_late_joins_as_the_challenge_sets_them(
    api: Api, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    limits = {"max_team_size": 2, "team_joins_after_first_entry": True}
    cid = api.create_challenge(key, limits=limits)["id"]
    team = create_team(api, key, cid, "ann", "duo")
    assert api.submit(key, cid, "PWNED", "ann").status_code == 202
    assert join(api, key, cid, "ben", team["invite_code"]).status_code == 200
    assert "full" in refusal(join(api, key, cid, "cat", team["invite_code"]), 409)


def test_another_tenant_s_team_answers_404(api: Api, tenant: dict[str, Any]) -> None:
    key = tenant["api_key"]
    cid = api.create_challenge(key, limits={"max_team_size": 2})["id"]
    team = create_team(api, key, cid, "ann", "ours")
    stranger = api.create_tenant()["api_key"]
    theirs = api.create_challenge(stranger, limits={"max_team_size": 2})["id"]
    path = f"{teams_path(cid)}/{team['id']}"
    assert api.request("GET", path, stranger).status_code == 404
    assert api.request("GET", teams_path(cid), stranger).status_code == 404
    assert leave(api, stranger, cid, team["id"], "ann").status_code == 404
    renew = f"{path}/invite-code"
    assert api.request("POST", renew, stranger, json={"participant": "ann"}).status_code == 404
    assert join(api, stranger, cid, "bob", team["invite_code"]).status_code == 404
    # Their own challenge does not find our team either, by id or by invite code.
    assert api.request("GET", f"{teams_path(theirs)}/{team['id']}", stranger).status_code == 404
    assert join(api, stranger, theirs, "bob", team["invite_code"]).status_code == 422


def test_a_member_s_attack_never_meets_a_teammate_s_defense(
    api: Api, worker: Worker, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    challenge = create(api, key, limits={"max_attempts_per_day": 50, "max_team_size": 2})
    cid = challenge["id"]
    team = create_team(api, key, cid, "alice", "blues")
    assert join(api, key, cid, "bob", team["invite_code"]).status_code == 200
    ours = defend(api, key, cid, "alice", WEAK)
    theirs = defend(api, key, cid, "carol", WEAK)
    assert ours["participant"] == "blues"
    mine = attack(api, key, cid, "bob", PLAIN)
    other = attack(api, key, cid, "dave", PLAIN)
    matches = settled_matches(api, key, cid, 3)
    assert all(m["red_participant"] != m["blue_participant"] for m in matches)
    met = {m["defense_id"] for m in matches if m["attack_id"] == mine["id"]}
    assert met == {theirs["id"]}
    assert {m["defense_id"] for m in matches if m["attack_id"] == other["id"]} == {
        ours["id"],
        theirs["id"],
    }
    rated_board(api, key, cid, 3)
    red = {item["participant"]: item for item in board(api, key, cid, "red")["items"]}
    blue = {item["participant"]: item for item in board(api, key, cid, "blue")["items"]}
    assert red["blues"]["members"] == ["alice", "bob"] and red["dave"]["members"] is None
    assert blue["blues"]["members"] == ["alice", "bob"] and blue["carol"]["members"] is None

    # Each team entry names the member who submitted it; one played alone names no one.
    assert (ours["submitted_by"], theirs["submitted_by"]) == ("alice", None)
    assert (mine["submitted_by"], other["submitted_by"]) == ("bob", None)
    for name, expected in (
        ("defenses", {ours["id"]: "alice", theirs["id"]: None}),
        ("attacks", {mine["id"]: "bob", other["id"]: None}),
    ):
        exported = api.request("GET", f"/v1/challenges/{cid}/exports/{name}?format=csv", key)
        assert exported.status_code == 200, exported.text
        table = csv.DictReader(io.StringIO(exported.text))
        assert {row["id"]: row["submitted_by"] or None for row in table} == expected
    # The submission's own answer names the member too, and so does its replay.
    for _ in range(2):
        answer = api.request(
            "POST",
            f"/v1/challenges/{cid}/defenses",
            key,
            json={"participant": "Bob", "system_prompt": WEAK},
            headers={"Idempotency-Key": "bob-defends"},
        )
        assert answer.status_code == 202, answer.text
        assert (answer.json()["participant"], answer.json()["submitted_by"]) == ("blues", "bob")


def wait_for_a_lock_waiter(deadline_s: float = 30.0) -> None:
    """Until some session of this database waits for a row lock (each look a transaction of its
    own: PostgreSQL keeps one view of its activity per transaction)."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        with get_engine().connect() as connection:
            waiting = connection.scalar(
                text(
                    "SELECT count(*) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND wait_event_type = 'Lock'"
                )
            )
        if waiting:
            return
        time.sleep(0.05)
    raise AssertionError(f"no session waited for a lock within {deadline_s} s")


def test_an_entry_waits_for_a_leave_in_flight_and_then_plays_alone(
    api: Api, tenant: dict[str, Any]
) -> None:
    """An entry on a challenge without attempt limits still holds its team's row: a leave that
    deletes the team (its last member gone) commits first, and the entry is its submitter's own,
    stored, not a failure on a team that no longer exists."""
    key = tenant["api_key"]
    challenge = api.create_challenge(key, limits={"max_team_size": 3})
    team = create_team(api, key, challenge["slug"], "dana", "dana-and-co")
    tenant_id, challenge_id = uuid.UUID(tenant["id"]), uuid.UUID(challenge["id"])
    team_id = uuid.UUID(team["id"])
    with get_sessionmaker()() as leaving, ThreadPoolExecutor(1) as pool:
        assert lock_participant(leaving, tenant_id, team_id)
        entry = pool.submit(api.submit, key, challenge["id"], "PWNED", "dana")
        wait_for_a_lock_waiter()
        leave_team(leaving, tenant_id, challenge_id, team_id, "dana")
        leaving.commit()
        submitted = entry.result(timeout=60)
    assert submitted.status_code == 202, submitted.text
    assert submitted.json()["participant"] == "dana"
    gone = api.request("GET", f"{teams_path(challenge['id'])}/{team['id']}", key)
    assert gone.status_code == 404, gone.text
