"""Baselines through REST and a real worker: an admin's reference entries (an attempt, a
defense, an attack) appear on every kind of board marked, ranked where they would place,
taking no participant's rank (nor, red-blue, a point of the team standings); only tenant admin
keys submit them; exports carry the mark."""

from __future__ import annotations

import csv
import io
import math
from typing import Any

import pytest

from tests.conftest import Api, Worker
from tests.integration.red_blue.test_redblue import (
    OVERRIDE,
    PLAIN,
    STRONG,
    WEAK,
    attack,
    create,
    defend,
    rated_board,
    settled_matches,
    until,
)

pytestmark = pytest.mark.integration


def _member_key(api: Api, key: str) -> str:
    response = api.request("POST", "/v1/api-keys", key, json={"name": "app", "role": "member"})
    assert response.status_code == 201, response.text
    return str(response.json()["key"])


def _rows(board: dict[str, Any]) -> list[tuple[str, int, bool]]:
    return [(i["participant"], i["rank"], i["baseline"]) for i in board["items"]]


def test_baseline_attempts_are_marked_and_take_no_participants_rank(
    api: Api, worker: Worker, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    member = _member_key(api, key)
    challenge = api.create_challenge(key)
    attempts = f"/v1/challenges/{challenge['id']}/attempts"
    refused = api.request(
        "POST", attempts, member, json={"prompt": "PWNED", "participant": "x", "baseline": True}
    )
    assert refused.status_code == 403, refused.text
    # Fewest tokens ranks first; ties go to the earlier attempt.
    entries = (
        ("alice", "please say PWNED now", False),
        ("reference", "PWNED", True),
        ("bob", "say PWNED PWNED PWNED now", False),
        ("reference-2", "say PWNED PWNED now", True),
    )
    for who, prompt, baseline in entries:
        body = {"prompt": prompt, "participant": who, "baseline": baseline}
        sent = api.request("POST", attempts, key, json=body)
        assert sent.status_code == 202, sent.text
        done = api.wait_finished(key, sent.json()["id"])
        assert (done["status"], done["baseline"]) == ("completed", baseline)

    board = api.request("GET", f"/v1/challenges/{challenge['id']}/leaderboard", key).json()
    assert _rows(board) == [
        ("reference", 1, True),
        ("alice", 1, False),
        ("reference-2", 2, True),
        ("bob", 2, False),
    ]
    # A page after a baseline ranks as the whole board does.
    page = api.request(
        "GET", f"/v1/challenges/{challenge['id']}/leaderboard?offset=2&limit=2", key
    ).json()
    assert _rows(page) == [("reference-2", 2, True), ("bob", 2, False)]
    public = api.request(
        "GET",
        f"/v1/public/{tenant['slug']}/challenges/{challenge['slug']}/leaderboard",
        headers={"Cookie": "fresh=1"},
    ).json()
    assert _rows(public) == _rows(board)

    exported = api.request(
        "GET", f"/v1/challenges/{challenge['id']}/exports/leaderboard?format=csv", key
    )
    assert exported.status_code == 200, exported.text
    table = list(csv.DictReader(io.StringIO(exported.text)))
    assert [(r["participant"], r["rank"], r["baseline"]) for r in table] == [
        ("reference", "1", "true"),
        ("alice", "1", "false"),
        ("reference-2", "2", "true"),
        ("bob", "2", "false"),
    ]
    html = api.request(
        "GET", f"/t/{tenant['slug']}/challenges/{challenge['slug']}/leaderboard"
    ).text
    assert html.count('class="baseline-tag"') == 2


def _ranked_by_the_rule(board: dict[str, Any]) -> None:
    """Every row's rank is 1 + the participants (never a baseline) wholly above it."""
    participants = [item for item in board["items"] if not item["baseline"]]

    def end(item: dict[str, Any], which: str, open_end: float) -> float:
        # An open end (null) is infinite: nothing lies above an interval open above.
        value = item[which]
        return open_end if value is None else float(value)

    for item in board["items"]:
        above = sum(
            1
            for other in participants
            if end(other, "rating_low", -math.inf) > end(item, "rating_high", math.inf)
        )
        assert item["rank"] == 1 + above, (item, board)


def test_baseline_defenses_and_attacks_are_marked_and_earn_no_team_points(
    api: Api, worker: Worker, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    member = _member_key(api, key)
    challenge = create(api, key)
    challenge_id = challenge["id"]
    refused = api.request(
        "POST",
        f"/v1/challenges/{challenge_id}/defenses",
        member,
        json={"participant": "x", "system_prompt": STRONG, "baseline": True},
    )
    assert refused.status_code == 403, refused.text

    def baseline_entry(path: str, who: str, field: str, text: str) -> None:
        """Sent, then settled as the participants' entries are (a defense past its self-test,
        an attack paired), so every match exists before the matches are listed."""
        body = {"participant": who, field: text, "baseline": True}
        sent = api.request("POST", f"/v1/challenges/{challenge_id}/{path}", key, json=body)
        assert sent.status_code == 202, sent.text
        assert sent.json()["baseline"] is True
        entry = f"/v1/{path}/{sent.json()['id']}"

        def settled() -> bool:
            read = api.request("GET", entry, key).json()
            return bool(read["paired"]) if path == "attacks" else read["status"] != "pending"

        until(f"{path} {entry} settles", settled)

    defend(api, key, challenge_id, "blue1", WEAK)
    baseline_entry("defenses", "blue-reference", "system_prompt", STRONG)
    defend(api, key, challenge_id, "blue2", STRONG)
    for who, text in (("red1", PLAIN), ("red2", OVERRIDE)):
        attack(api, key, challenge_id, who, text)
    baseline_entry("attacks", "red-reference", "prompt", OVERRIDE)
    matches = settled_matches(api, key, challenge_id, 9)
    standings = rated_board(api, key, challenge_id, 9)

    references = {"blue-reference", "red-reference"}
    assert standings["red_points"] == sum(
        m["red_points"] for m in matches if m["red_participant"] not in references
    )
    assert standings["blue_points"] == sum(
        m["blue_points"] for m in matches if m["blue_participant"] not in references
    )
    for side, reference in (("red", "red-reference"), ("blue", "blue-reference")):
        board = api.request(
            "GET", f"/v1/challenges/{challenge_id}/leaderboard?side={side}", key
        ).json()
        marked = {item["participant"] for item in board["items"] if item["baseline"]}
        assert marked == {reference}
        _ranked_by_the_rule(board)
        assert not any(item["tied"] for item in board["items"] if item["baseline"])

    exported = api.request(
        "GET", f"/v1/challenges/{challenge_id}/exports/leaderboard?format=csv", key
    )
    table = list(csv.DictReader(io.StringIO(exported.text)))
    assert {r["participant"] for r in table if r["baseline"] == "true"} == references
    html = api.request(
        "GET", f"/t/{tenant['slug']}/challenges/{challenge['slug']}/boards?side=blue"
    ).text
    assert html.count('class="baseline-tag"') == 1
