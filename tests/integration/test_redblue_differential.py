"""What happens in a red-blue challenge after its freeze is nobody's to see but its players'
and its admins', until the boards are revealed: every read the public, a member key and a
signed-in participant can make (every GET of the OpenAPI document, every page of the web UI,
the live fragment) answers byte for byte the same before and after play they must not see,
but for the reads of a participant's own results; through a final round too. On PostgreSQL
with a real worker.

Two states are compared, each pair differing only in that play: the challenge frozen, then
the same after entries and matches made since (by others, by a player and by a member key);
closed with its final round made, then the same after the round's matches are played and
rated. A read of a row made in between must answer as the read of an id never made did.
The walk is `tests/fixtures/reads.py`'s (any kind's world can use it).
"""

from __future__ import annotations

import difflib
import random
import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from tests.conftest import Api, Worker
from tests.e2e.conftest import WebClient
from tests.fixtures.reads import (
    UNKNOWN_ID,
    Answer,
    Read,
    Reader,
    Template,
    World,
    api_templates,
    differences,
    page_templates,
    walk,
)
from tests.integration.test_board_freeze import _freeze_now, _iso, _member_key, _soon
from tests.integration.test_redblue import OVERRIDE, PLAIN, STRONG, WEAK, create, until

pytestmark = pytest.mark.integration

# Operational endpoints (no tenant's data), and those the platform admin token reads.
NOT_WALKED = {"/metrics", "/healthz"}
# Path parameters of objects this world has none of (attempts, runs, teams, plugins, jobs).
NOT_IN_THIS_WORLD = {
    "attempt_id",
    "run_id",
    "job_id",
    "plugin_id",
    "team_id",
    "task_index",
    "rest",
}
ADMIN, ANYONE, MEMBER = "admin key", "anyone", "member key"
ROW_READS = ("/v1/matches/{match_id}", "/v1/defenses/{defense_id}", "/v1/attacks/{attack_id}")
# Signed in on the web: one who never plays, one who played before the freeze, one who
# plays after it.
WATCHER, BOB, PLAYER = "watcher", "bob", "player"
# Played through a member key (the tenant's own application).
KEYED = ("blue1", "red1", "blue3")


@dataclass
class Event:
    api: Api
    key: str
    member: str
    tenant: dict[str, Any]
    challenge: dict[str, Any]
    sessions: dict[str, WebClient] = field(default_factory=dict)

    @property
    def cid(self) -> str:
        return str(self.challenge["id"])

    @property
    def page(self) -> str:
        return f"/t/{self.tenant['slug']}/challenges/{self.challenge['slug']}"

    def submit(self, who: str, side: str, text: str) -> None:
        """An entry: by a signed-in participant's form, or by the member key for them."""
        if who in self.sessions:
            path, name = ("defenses", "system_prompt") if side == "blue" else ("attacks", "prompt")
            sent = self.sessions[who].post_form(
                f"{self.page}/{path}",
                {name: text, "submission_id": uuid.uuid4().hex},
                token_from=f"{self.page}?side={side}",
            )
            assert sent.status_code == 303, sent.text
            return
        path, field_name = (
            ("defenses", "system_prompt") if side == "blue" else ("attacks", "prompt")
        )
        response = self.api.request(
            "POST",
            f"/v1/challenges/{self.cid}/{path}",
            self.member,
            json={"participant": who, field_name: text},
        )
        assert response.status_code == 202, response.text

    def admin(self, path: str) -> Any:
        response = self.api.request("GET", path, self.key)
        assert response.status_code == 200, (path, response.text)
        return response.json()

    def rows(self, dataset: str) -> list[dict[str, Any]]:
        """Every defense, attack or match, as the admins' export has it."""
        response = self.api.request(
            "GET", f"/v1/challenges/{self.cid}/exports/{dataset}?format=json", self.key
        )
        assert response.status_code == 200, response.text
        import json

        return [json.loads(line) for line in response.text.splitlines() if line]

    def settled(self) -> None:
        """Every self-test, pairing and match done and rated."""

        def done() -> bool:
            defenses, attacks, matches = (
                self.rows(name) for name in ("defenses", "attacks", "matches")
            )
            if any(d["status"] == "pending" for d in defenses) or not all(
                a["paired"] for a in attacks
            ):
                return False
            if any(m["status"] not in ("completed", "error") for m in matches):
                return False
            standings = self.admin(f"/v1/challenges/{self.cid}/standings")
            judged = sum(1 for m in matches if m["status"] == "completed")
            return bool(standings["matches"] == judged and not standings["pending"])

        until("the event settles", done, timeout=120)


@pytest.fixture
def event(api: Api, api_url: str, worker: Worker, tenant: dict[str, Any]) -> Iterator[Event]:
    key = tenant["api_key"]
    challenge = create(
        api,
        key,
        closes_at=_iso(_soon()),
        final_round=True,
        # One opponent per entry: the final round has pairs to complete.
        pairing={"policy": "round_robin", "max_matches_per_submission": 1},
    )
    found = Event(api, key, _member_key(api, key), tenant, challenge)
    # Its own loopback address: its sign-ups count for no other test's limit.
    address = f"127.{random.randint(1, 254)}.{random.randint(1, 254)}.{random.randint(2, 254)}"
    for handle in (WATCHER, BOB, PLAYER, "blue3"):
        client = WebClient(api_url, local_address=address)
        signed = client.sign_up(tenant["slug"], handle)
        assert signed.status_code == 303, signed.text
        if handle != "blue3":
            found.sessions[handle] = client
        else:
            client.close()
    yield found
    for client in found.sessions.values():
        client.close()


# The walk -------------------------------------------------------------------------------------


def _readers(event: Event, api_url: str) -> list[Reader]:
    def client() -> httpx.Client:
        return httpx.Client(base_url=api_url, timeout=30, follow_redirects=False)

    return [
        # A cookie opts out of the anonymous reads' one-second shared copy (app.middleware).
        Reader(ANYONE, client(), {"Cookie": "fresh=1"}),
        Reader(MEMBER, client(), {"Authorization": f"Bearer {event.member}"}),
        Reader(ADMIN, client(), {"Authorization": f"Bearer {event.key}"}),
        *(Reader(name, session.http) for name, session in event.sessions.items()),
    ]


def _templates(api: Api) -> tuple[list[Template], list[Template]]:
    from app.web.router import web_router

    document = api.request("GET", "/openapi.json").json()
    operations = [t for t in api_templates(document) if t.path not in NOT_WALKED]
    return operations, page_templates(web_router())


def _world(event: Event) -> World:
    ids = {
        name: [row["id"] for row in event.rows(name)] + [UNKNOWN_ID]
        for name in ("defenses", "attacks", "matches")
    }
    participants = event.admin("/v1/participants?limit=200")["items"]
    handles = [p["handle"] for p in participants] + ["nobody"]
    sides = ["side=red", "side=blue", "side=red&limit=1&offset=1"]
    tenant = event.tenant
    return World(
        path_values={
            "tenant_slug": [tenant["slug"]],
            "tenant_id": [tenant["id"]],
            "challenge_slug": [event.challenge["slug"]],
            "challenge_id": [event.cid],
            "match_id": ids["matches"],
            "defense_id": ids["defenses"],
            "attack_id": ids["attacks"],
            "participant_id": [p["id"] for p in participants],
            "handle": handles,
            "name": ["leaderboard", "defenses", "attacks", "matches"],
        },
        queries={
            "participant": [f"participant={handle}" for handle in handles],
            "attack_id": [f"attack_id={i}" for i in ids["attacks"]],
            "defense_id": [f"defense_id={i}" for i in ids["defenses"]],
            "offset": ["limit=1&offset=1", "limit=2&offset=2"],
        },
        # The red_blue kind's own parameters, which the document does not list.
        template_queries={
            "/v1/challenges/{challenge_id}/leaderboard": sides,
            "/v1/public/{tenant_slug}/challenges/{challenge_slug}/leaderboard": sides,
            "/t/{tenant_slug}/challenges/{challenge_slug}": ["side=red", "side=blue"],
            "/t/{tenant_slug}/challenges/{challenge_slug}/boards": [
                "side=blue",
                "side=red&page=2",
            ],
            "/t/{tenant_slug}/challenges/{challenge_slug}/red-blue/live": ["side=red"],
        },
    )


@dataclass
class State:
    answers: dict[Read, Answer]
    world: World


def _state(event: Event, api_url: str) -> State:
    """Every read of every reader, now."""
    world = _world(event)
    operations, pages = _templates(event.api)
    public = [t for t in operations if t.path.startswith("/v1/public/")]
    reads: list[Read] = []
    unfilled: set[str] = set()
    for reader, templates in (
        (ANYONE, public + pages),
        (MEMBER, operations),
        *((name, pages) for name in event.sessions),
    ):
        found, missing = world.reads(reader, templates)
        reads += found
        unfilled |= set(missing)
    # The admins' reads of each row, as they stand: whose results changed.
    rows = [t for t in operations if t.path in ROW_READS]
    reads += World(world.path_values).reads(ADMIN, rows)[0]
    # Every red-blue read is walked; what is not is of objects this world has none of.
    for template in unfilled:
        names = set(re.findall(r"{(\w+)", template))
        assert names - set(world.path_values) <= NOT_IN_THIS_WORLD, template
    readers = _readers(event, api_url)
    try:
        return State(walk(readers, reads), world)
    finally:
        for reader in readers:
            if reader.name in (ANYONE, MEMBER, ADMIN):
                reader.client.close()


# Whose results changed ---------------------------------------------------------------------------


def _json_of(answer: Answer) -> Any:
    import json

    return json.loads(answer[1])


def _changed_rows(before: State, after: State) -> dict[str, set[str]]:
    """Per participant (handle), the ids of the rows of theirs that changed between the two
    states, as the admins read them: their entries and matches, and the entries their
    changed matches were played with."""
    changed: dict[str, set[str]] = {}
    for read, answer in after.answers.items():
        if read.reader != ADMIN or read.query or answer[0] != 200:
            continue
        if read.template not in (
            "/v1/matches/{match_id}",
            "/v1/defenses/{defense_id}",
            "/v1/attacks/{attack_id}",
        ):
            continue
        if before.answers.get(read) == answer:
            continue
        row = _json_of(answer)
        if "red_participant" in row:
            for handle in (row["red_participant"], row["blue_participant"]):
                changed.setdefault(handle, set()).update(
                    {row["id"], row["attack_id"], row["defense_id"]}
                )
        else:
            changed.setdefault(row["participant"], set()).add(row["id"])
    return changed


OWN_PAGES = {
    "/t/{tenant_slug}",
    "/t/{tenant_slug}/",
    "/t/{tenant_slug}/challenges/{challenge_slug}",
    "/t/{tenant_slug}/challenges/{challenge_slug}/red-blue/live",
}
MATCH_LISTS = {"/v1/challenges/{challenge_id}/matches"}


def _own(changed: dict[str, set[str]]) -> Callable[[Read], bool]:
    """The reads of a participant's own results that changed: theirs to see live (a member
    key reads for the participant it names). Their pages' other parts are compared apart."""

    def own(read: Read) -> bool:
        if read.reader in changed:
            return read.template in OWN_PAGES or bool(read.values() & changed[read.reader])
        if read.reader != MEMBER:
            return False
        named = re.search(r"participant=([^&]+)", read.query)
        if named is None or named.group(1) not in changed:
            return False
        return read.template in MATCH_LISTS or bool(read.values() & changed[named.group(1)])

    return own


def _new_values(before: State, after: State) -> dict[str, str]:
    """Each id made between the two states, and the never-made id that stands for it."""
    new: dict[str, str] = {}
    for name in ("match_id", "defense_id", "attack_id"):
        known = set(before.world.path_values[name])
        new |= {value: UNKNOWN_ID for value in after.world.path_values[name] if value not in known}
    return new


LIVE_REGIONS = ("rb-standings", "rb-board-red", "rb-board-blue")


def _held(before: State, after: State) -> tuple[list[Read], dict[str, set[str]]]:
    """The reads of everyone but the admins that changed between the two states, the own
    results of participants aside; and whose own changed."""
    changed = _changed_rows(before, after)
    new = _new_values(before, after)
    others = {read: a for read, a in after.answers.items() if read.reader != ADMIN}
    earlier = {read: a for read, a in before.answers.items() if read.reader != ADMIN}
    leaks = differences(earlier, others, new_values=new, own=_own(changed))
    # A player's own pages: the standings and the boards on them hold too.
    for read in others:
        if read.reader in changed and read.template.endswith("/red-blue/live"):
            now, then = _json_of(others[read]), _json_of(earlier[read])
            for region in LIVE_REGIONS:
                if now["regions"][region] != then["regions"][region]:
                    leaks.append(Read(read.reader, read.template, read.path, region))
    return leaks, changed


def _describe(leaks: list[Read], before: State, after: State, new: dict[str, str]) -> str:
    """The first reads that changed, each with how its answer changed."""
    lines = [f"{len(leaks)} reads changed:"]
    for read in leaks[:5]:
        then = before.answers.get(read.replaced(new), (0, ""))
        now = after.answers.get(read, (0, ""))
        diff = difflib.unified_diff(
            f"{then[0]}\n{then[1]}".splitlines(), f"{now[0]}\n{now[1]}".splitlines(), lineterm=""
        )
        lines += [f"{read.reader}: {read.url}", *list(diff)[2:40]]
    return "\n".join(lines)


# The test -----------------------------------------------------------------------------------


# Four walks of every read, each some thousand requests, and an event played twice over.
@pytest.mark.timeout(1200)
def test_play_after_the_freeze_changes_no_read_but_its_players_own_through_the_final_round(
    event: Event, api_url: str, worker: Worker
) -> None:
    from app.kinds.red_blue import board_recompute, final_round
    from app.kinds.red_blue import worker as red_blue_worker

    # Before the freeze: bob on both sides, and the member key's players.
    event.submit(BOB, "blue", WEAK)
    event.submit(BOB, "red", OVERRIDE)
    event.settled()
    event.submit("blue1", "blue", STRONG)
    event.settled()
    event.submit("red1", "red", PLAIN)
    event.settled()
    _freeze_now(event.api, event.key, event.cid)
    frozen = _state(event, api_url)

    # After it: others play (a new defense, a new attack) and so does the player, on the web.
    event.submit("blue3", "blue", WEAK)
    event.settled()
    event.submit("red1", "red", OVERRIDE)
    event.settled()
    event.submit(PLAYER, "blue", STRONG)
    event.settled()
    event.submit(PLAYER, "red", OVERRIDE)
    event.settled()
    played = _state(event, api_url)

    leaks, changed = _held(frozen, played)
    assert not leaks, _describe(leaks, frozen, played, _new_values(frozen, played))
    # The play happened: the admins see it, and the player sees their own results.
    new = _new_values(frozen, played)
    assert sum(1 for read in played.answers if read.reader == ADMIN and read.values() & set(new))
    assert PLAYER in changed and WATCHER not in changed
    others_new = [
        m
        for m in event.rows("matches")
        if m["id"] in new and PLAYER not in (m["red_participant"], m["blue_participant"])
    ]
    assert others_new, "no match between others after the freeze"
    own_list = Read(
        MEMBER,
        "/v1/challenges/{challenge_id}/matches",
        (("challenge_id", event.cid),),
        f"participant={PLAYER}",
    )
    assert _json_of(played.answers[own_list])["total"] > _json_of(frozen.answers[own_list])["total"]

    # Closed, with the worker down: the final round is made, not played yet.
    worker.kill()
    try:
        close = event.api.request(
            "PATCH", f"/v1/challenges/{event.cid}", event.key, json={"closes_at": _iso(_now())}
        )
        assert close.status_code == 200, close.text
        made = final_round.make(uuid.UUID(event.cid))
        assert made.startswith("made: ") and made != "made: 0 matches", made
        # The pages tell everyone alike when no worker runs: both walks are taken so.
        sign_in = f"/t/{event.tenant['slug']}/admin/sign-in"
        until(
            "the pages say no worker runs",
            lambda: "No worker has been seen lately" in event.api.request("GET", sign_in).text,
            timeout=180,
        )
        round_made = _state(event, api_url)
        standings = _json_of(
            round_made.answers[
                Read(
                    ANYONE,
                    "/v1/public/{tenant_slug}/challenges/{challenge_slug}/standings",
                    (
                        ("tenant_slug", event.tenant["slug"]),
                        ("challenge_slug", event.challenge["slug"]),
                    ),
                )
            ]
        )
        assert standings["frozen"] is True and standings["final_round"]["phase"] == "playing"
        assert standings["final_round"]["matches_total"] is None

        # Its matches played and rated here, in this process: still held for everyone else.
        queued = [m["id"] for m in event.rows("matches") if m["status"] == "queued"]
        assert queued
        red_blue_worker.run_matches([uuid.UUID(i) for i in queued])

        def rated() -> bool:
            board_recompute.recompute(uuid.UUID(event.cid))
            admins = event.admin(f"/v1/challenges/{event.cid}/standings")
            judged = sum(1 for m in event.rows("matches") if m["status"] == "completed")
            return bool(admins["matches"] == judged and not admins["pending"])

        until("the round's matches are rated", rated)
        round_played = _state(event, api_url)
        leaks, changed = _held(round_made, round_played)
        new = _new_values(round_made, round_played)
        assert not leaks, _describe(leaks, round_made, round_played, new)
        assert changed and WATCHER not in changed
    finally:
        worker.start()

    # The boards final: everyone sees every match.
    until(
        "the boards are final",
        lambda: (
            event.admin(f"/v1/challenges/{event.cid}/standings")["final_round"]["phase"] == "final"
        ),
        timeout=120,
    )
    public = f"/v1/public/{event.tenant['slug']}/challenges/{event.challenge['slug']}"
    revealed = event.api.request(
        "GET", f"{public}/matches?limit=200", headers={"Cookie": "fresh=1"}
    )
    assert revealed.json()["total"] == len(event.rows("matches"))


def _now() -> Any:
    from datetime import UTC, datetime

    return datetime.now(UTC)
