"""A red-blue freeze holds on the matches and entries, not only on the boards: from
`freeze_at` until the boards are revealed, public reads, member keys and the pages see other
people's defenses, attacks and matches (lists, totals, counts, reads by id, match pages) as
they stood at `freeze_at`; each match's two players see it live, a member key as the
participant it names; admin keys see everything live; at the close everyone does."""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import Api, Worker
from tests.e2e.conftest import WebClient
from tests.fixtures.fake_openai import Behaviour, FakeOpenAIServer
from tests.integration.leaderboard.test_board_freeze import (
    _close_now,
    _freeze_now,
    _iso,
    _member_key,
    _soon,
)
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


def _get(api: Api, path: str, token: str | None = None) -> httpx.Response:
    # A cookie opts out of the anonymous reads' one-second shared copy (app.kit.middleware).
    return api.request("GET", path, token, headers={"Cookie": "fresh=1"})


def _json(api: Api, path: str, token: str | None = None) -> Any:
    response = _get(api, path, token)
    assert response.status_code == 200, (path, response.text)
    return response.json()


def _between(matches: list[dict[str, Any]], red: str, blue: str) -> dict[str, Any]:
    [found] = [m for m in matches if (m["red_participant"], m["blue_participant"]) == (red, blue)]
    return found


def test_after_the_freeze_others_matches_and_entries_stay_as_they_were_but_for_their_players(
    api: Api, worker: Worker, tenant: dict[str, Any]
) -> None:
    key, slug = tenant["api_key"], tenant["slug"]
    member = _member_key(api, key)
    challenge = create(api, key, closes_at=_iso(_soon()))
    cid = challenge["id"]
    public = f"/v1/public/{slug}/challenges/{challenge['slug']}"
    pages = f"/t/{slug}/challenges/{challenge['slug']}"
    keyed = f"/v1/challenges/{cid}"
    blue1 = defend(api, key, cid, "blue1", WEAK)["id"]
    red1 = attack(api, key, cid, "red1", PLAIN)["id"]
    [first] = settled_matches(api, key, cid, 1)
    rated_board(api, key, cid, 1)
    reads = {
        "public list": f"{public}/matches",
        "public page 2": f"{public}/matches?limit=1&offset=1",
        "public match": f"{public}/matches/{first['id']}",
    }
    keyed_reads = {
        "list": f"{keyed}/matches",
        "match": f"/v1/matches/{first['id']}",
        "defense": f"/v1/defenses/{blue1}",
        "attack": f"/v1/attacks/{red1}",
    }
    before = {name: _json(api, path) for name, path in reads.items()}
    before |= {name: _json(api, path, member) for name, path in keyed_reads.items()}
    assert before["public list"]["total"] == 1 and before["defense"]["matches"]["completed"] == 1

    frozen_at = _freeze_now(api, key, cid)
    blue2 = defend(api, key, cid, "blue2", STRONG)["id"]  # meets red1's attack
    red2 = attack(api, key, cid, "red2", OVERRIDE)["id"]  # meets both defenses
    matches = settled_matches(api, key, cid, 4)
    rated_board(api, key, cid, 4)
    red2_blue1 = _between(matches, "red2", "blue1")
    red1_blue2 = _between(matches, "red1", "blue2")
    red2_blue2 = _between(matches, "red2", "blue2")

    # The public and a member key read exactly what they read at the freeze: the list, its
    # total and pages, the match, the entries' counts, the standings.
    for name, path in reads.items():
        assert _json(api, path) == before[name], name
    for name, path in keyed_reads.items():
        assert _json(api, path, member) == before[name], name
    for standings in (_json(api, f"{public}/standings"), _json(api, f"{keyed}/standings", member)):
        assert (standings["frozen"], standings["matches"], standings["pending"]) == (True, 1, False)
    # What was made since is not there for them: as an id never made.
    for made_since in (red2_blue1, red1_blue2, red2_blue2):
        for path, token in (
            (f"{public}/matches/{made_since['id']}", None),
            (f"/v1/matches/{made_since['id']}", member),
            (f"{pages}/matches/{made_since['id']}", None),
        ):
            assert _get(api, path, token).status_code == 404, path
    for entry in (f"/v1/defenses/{blue2}", f"/v1/attacks/{red2}"):
        assert _get(api, entry, member).status_code == 404, entry
    assert _get(api, f"{pages}/matches/{first['id']}").status_code == 200
    # A filter of the public list filters only: blue1's matches of then.
    assert _json(api, f"{public}/matches?participant=blue1")["total"] == 1

    # A member key reading for a participant: that participant's entries and matches live,
    # a match being both its players' (red2's new result is blue1's too).
    for handle, total in (("red2", 2), ("blue1", 2), ("red1", 2), ("blue2", 2)):
        own = _json(api, f"{keyed}/matches?participant={handle}", member)
        assert own["total"] == total, handle
        assert {m["status"] for m in own["items"]} == {"completed"}, handle
    for handle in ("red2", "blue1"):
        read = _json(api, f"/v1/matches/{red2_blue1['id']}?participant={handle}", member)
        assert read["red_points"] == red2_blue1["red_points"] and read["output"] is not None
    assert _get(api, f"/v1/matches/{red2_blue1['id']}?participant=red1", member).status_code == 404
    own_attack = _json(api, f"/v1/attacks/{red2}?participant=red2", member)
    assert own_attack["paired"] is True and own_attack["matches"]["completed"] == 2
    assert _json(api, f"/v1/defenses/{blue2}?participant=blue2", member)["status"] == "active"
    # blue1's defense, read for red2: the match red2 played against it is red2's own.
    assert _json(api, f"/v1/defenses/{blue1}?participant=red2", member)["matches"] == {
        "queued": 0,
        "running": 0,
        "completed": 2,
        "error": 0,
    }
    assert _json(api, f"/v1/defenses/{blue1}?participant=nobody", member) == before["defense"]

    # Admin keys: everything live.
    assert _json(api, f"{keyed}/matches", key)["total"] == 4
    assert _json(api, f"/v1/defenses/{blue1}", key)["matches"]["completed"] == 2
    assert _get(api, f"/v1/matches/{red2_blue2['id']}", key).status_code == 200
    admins = _json(api, f"{keyed}/standings", key)
    assert (admins["frozen"], admins["frozen_at"], admins["matches"]) == (False, frozen_at, 4)

    # At the close, everyone sees everything.
    _close_now(api, key, cid)
    assert _json(api, f"{public}/matches")["total"] == 4
    assert _json(api, f"{keyed}/matches", member)["total"] == 4
    assert _json(api, f"/v1/defenses/{blue1}", member)["matches"]["completed"] == 2
    assert _get(api, f"{pages}/matches/{red2_blue2['id']}").status_code == 200


@pytest.fixture
def provider() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(default=Behaviour.ok("hello")) as server:
        yield server


def test_a_match_made_before_the_freeze_and_judged_after_stays_queued_for_others(
    api: Api, worker: Worker, tenant: dict[str, Any], provider: FakeOpenAIServer
) -> None:
    key, slug = tenant["api_key"], tenant["slug"]
    member = _member_key(api, key)
    challenge = create(
        api,
        key,
        closes_at=_iso(_soon()),
        target={"model": "openai/fake-model", "api_base": provider.base_url},
    )
    cid = challenge["id"]
    public = f"/v1/public/{slug}/challenges/{challenge['slug']}"
    defense = defend(api, key, cid, "blue1", WEAK)["id"]  # its self-test answers "hello"
    provider.default = Behaviour.slow(6, "PWNED")
    calls = provider.request_count
    attack(api, key, cid, "red1", PLAIN)
    until("the match's call is under way", lambda: provider.request_count > calls)
    # The freeze begins a second ago: after the match was made, before it is judged.
    time.sleep(1.5)
    _freeze_now(api, key, cid)
    [played] = settled_matches(api, key, cid, 1)
    assert played["status"] == "completed" and played["red_points"] == 1

    listed = _json(api, f"{public}/matches")
    assert listed["total"] == 1
    [seen] = listed["items"]
    assert seen["id"] == played["id"] and seen["status"] == "queued"
    for hidden in ("breached", "red_points", "blue_points", "attack_won", "finished_at"):
        assert seen[hidden] is None, hidden
    read = _json(api, f"/v1/matches/{played['id']}", member)
    assert (read["status"], read["output"], read["verdicts"], read["user_message"]) == (
        "queued",
        None,
        None,
        None,
    )
    assert _json(api, f"/v1/defenses/{defense}", member)["matches"]["queued"] == 1
    # Its players see how it went.
    for handle in ("red1", "blue1"):
        own = _json(api, f"/v1/matches/{played['id']}?participant={handle}", member)
        assert (own["status"], own["red_points"]) == ("completed", 1), handle

    _close_now(api, key, cid)
    assert _json(api, f"{public}/matches")["items"][0]["status"] == "completed"


def _web(api_url: str, address: str) -> WebClient:
    return WebClient(api_url, local_address=address)


def test_the_pages_hold_the_freeze_but_for_a_matchs_players_and_the_admins(
    api: Api, api_url: str, worker: Worker, tenant: dict[str, Any]
) -> None:
    key, slug = tenant["api_key"], tenant["slug"]
    challenge = create(api, key, closes_at=_iso(_soon()))
    cid = challenge["id"]
    pages = f"/t/{slug}/challenges/{challenge['slug']}"
    # Its own loopback address: its sign-ups count for no other test's limit.
    address = f"127.{random.randint(1, 254)}.{random.randint(1, 254)}.{random.randint(2, 254)}"
    people = {}
    for handle in ("bluebell", "redwood", "watcher", "olga"):
        people[handle] = _web(api_url, address)
        assert people[handle].sign_up(slug, handle).status_code == 303
    admin = _web(api_url, address)
    assert admin.post_form(f"/t/{slug}/admin/sign-in", {"api_key": key}).status_code == 303
    given = admin.post_form(
        f"/t/{slug}/admin/participants/olga/role",
        {"admin": "yes"},
        token_from=f"/t/{slug}/admin/participants/olga",
    )
    assert "role-given" in given.headers["location"]

    def play(handle: str, side: str, text: str) -> None:
        path, field = ("defenses", "system_prompt") if side == "blue" else ("attacks", "prompt")
        sent = people[handle].post_form(
            f"{pages}/{path}",
            {field: text, "submission_id": uuid.uuid4().hex},
            token_from=f"{pages}?side={side}",
        )
        assert sent.status_code == 303, sent.text

    play("bluebell", "blue", WEAK)
    until(
        "the defense is active",
        lambda: 'data-status="active"' in people["bluebell"].get(f"{pages}?side=blue").text,
    )
    attack(api, key, cid, "red1", PLAIN)
    [first] = settled_matches(api, key, cid, 1)
    rated_board(api, key, cid, 1)
    _freeze_now(api, key, cid)
    play("redwood", "red", OVERRIDE)
    until(
        "the attack is paired",
        lambda: 'data-status="paired"' in people["redwood"].get(f"{pages}?side=red").text,
    )
    matches = settled_matches(api, key, cid, 2)
    rated_board(api, key, cid, 2)
    since = _between(matches, "redwood", "bluebell")

    def page_of(who: WebClient | None, match: dict[str, Any]) -> httpx.Response:
        path = f"{pages}/matches/{match['id']}"
        if who is None:
            return _get(api, path)
        return who.get(path)

    # Its two players see the match made after the freeze, with its answer; so does an
    # account with the admin role, and a tenant admin on the admin pages.
    for handle in ("redwood", "bluebell", "olga"):
        shown = page_of(people[handle], since)
        assert shown.status_code == 200 and "red-points" in shown.text, handle
    for handle in ("redwood", "bluebell"):
        assert "data-reply" in people[handle].get(f"{pages}/red-blue/live").text, handle
    assert admin.get(f"/t/{slug}/admin/red-blue/matches/{since['id']}").status_code == 200
    # Anyone else: as it stood at the freeze, the match of then and not the one made since.
    for who in (people["watcher"], None):
        assert page_of(who, since).status_code == 404
        assert page_of(who, first).status_code == 200
    watching = people["watcher"].get(f"{pages}/red-blue/live").json()
    assert "Frozen" in watching["regions"]["rb-standings"]["html"]
    assert "redwood" not in watching["regions"]["rb-board-red"]["html"]
    assert "redwood" in people["olga"].get(f"{pages}/boards?side=red").text

    _close_now(api, key, cid)
    assert page_of(people["watcher"], since).status_code == 200
    for client in (*people.values(), admin):
        client.close()
