"""What happens in a red-blue challenge after its freeze is nobody's to see but its players'
and its admins', until the boards are revealed, through a final round too: proved
differentially (tests/fixtures/differential.py). Two tenants play alike on a real worker until
the freeze; after it, the observer plays the same in both, and others play in one only. Every
read of the API and every page of the web UI answers byte for byte alike in both to an
anonymous visitor, the observer's browser session, a member key and a member key acting for
the observer: frozen, then closed with the final round made, then with its matches played
and rated.

Pairing meets one opponent per entry, newest first, so the observer's matches are the same
in both worlds: after the freeze, others only attack (a new defense would meet the observer's
newest attack first), and the observer only attacks (its final-round match is then against
the same defense in both).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.conftest import Api, Worker
from tests.fixtures.differential import (
    ABSENT_ID,
    Fetched,
    Operation,
    World,
    answered,
    browser_session,
    compare_worlds,
    every_operation,
    standard_readers,
)
from tests.integration.red_blue.test_redblue import (
    OVERRIDE,
    PLAIN,
    STRONG,
    WEAK,
    red_blue_body,
    until,
)

pytestmark = pytest.mark.integration

OBSERVER = "zoe"
SLUG = "frozen-red-blue"
# The red_blue kind's own query parameter, which the OpenAPI document does not list.
SIDE_PARAMETER = ("side", False)
BOARDS = (
    "/v1/challenges/{challenge_id}/leaderboard",
    "/v1/public/{tenant_slug}/challenges/{challenge_slug}/leaderboard",
)


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def _ok(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return response.json()


@dataclass
class Event:
    """One world's tenant and challenge, and the labels of its rows (the same in both
    worlds for the same play: "attack red1 2", "match (attack red1 2, defense blue2 1)")."""

    api: Api
    world: World
    key: str
    member: str
    tenant: dict[str, Any]
    cid: str
    labels: dict[str, str] = field(default_factory=dict)

    def submit(self, handle: str, side: str, text: str) -> None:
        path, name = ("defenses", "system_prompt") if side == "blue" else ("attacks", "prompt")
        response = self.api.request(
            "POST",
            f"/v1/challenges/{self.cid}/{path}",
            self.member,
            json={"participant": handle, name: text},
        )
        _ok(response, 202)

    def rows(self, dataset: str) -> list[dict[str, Any]]:
        """Every defense, attack or match, oldest first, as the admins' export has it."""
        import json

        response = self.api.request(
            "GET", f"/v1/challenges/{self.cid}/exports/{dataset}?format=json", self.key
        )
        assert response.status_code == 200, response.text
        return [json.loads(line) for line in response.text.splitlines() if line]

    def settled(self) -> None:
        """Every self-test, pairing and match done, rated, and its intervals bootstrapped
        (the boards frozen in both worlds are then the same)."""
        from app.kinds.red_blue.repository import FinalRoundRepository
        from app.kit.db import session_scope

        def done() -> bool:
            defenses, attacks = self.rows("defenses"), self.rows("attacks")
            if any(d["status"] == "pending" for d in defenses) or not all(
                a["paired"] for a in attacks
            ):
                return False
            if any(m["status"] not in ("completed", "error") for m in self.rows("matches")):
                return False
            with session_scope() as session:
                rounds = FinalRoundRepository(session, uuid.UUID(self.tenant["id"]))
                return rounds.board_rated_all(uuid.UUID(self.cid))

        until("the event settles", done, timeout=120)

    def name_rows(self) -> None:
        """Names every row by its participant and order (a match by its two entries)."""
        self.labels = {self.cid: "challenge"}
        for dataset, side in (("defenses", "defense"), ("attacks", "attack")):
            seen: dict[str, int] = {}
            for row in self.rows(dataset):
                seen[row["participant"]] = seen.get(row["participant"], 0) + 1
                self.labels[row["id"]] = f"{side} {row['participant']} {seen[row['participant']]}"
        for match in self.rows("matches"):
            pair = f"({self.labels[match['attack_id']]}, {self.labels[match['defense_id']]})"
            self.labels[match["id"]] = f"match {pair}"
        for value, label in self.labels.items():
            self.world.name(value, label)
            # The pages show an entry by the start of its id.
            self.world.name(value[:8], f"{label}: short id")


def _event(api: Api, api_url: str, label: str) -> Event:
    """A public red-blue challenge with a final round, not played yet."""
    from app.web import auth

    # Sign-ups are limited per address; every test signs up from 127.0.0.1.
    auth.limits.reset()
    tenant = api.create_tenant()
    key = tenant["api_key"]
    made = api.request("POST", "/v1/api-keys", key, json={"name": "app", "role": "member"})
    member = _ok(made, 201)["key"]
    cookie = browser_session(api_url, tenant["slug"], OBSERVER)
    # Those who play after the freeze in one world only have accounts in both: the tenant's
    # participants are the same.
    for handle in ("red1", "red3"):
        browser_session(api_url, tenant["slug"], handle)
    world = World(label, standard_readers(member, cookie, OBSERVER))
    world.name(tenant["slug"], "tenant")
    world.name(tenant["id"], "tenant id")
    body = red_blue_body(
        slug=SLUG,
        closes_at=_iso(datetime.now(UTC) + timedelta(hours=2)),
        final_round=True,
        # One opponent per entry: pairing leaves the final round pairs to complete.
        pairing={"policy": "round_robin", "max_matches_per_submission": 1},
    )
    challenge = _ok(api.request("POST", "/v1/challenges", key, json=body), 201)
    return Event(api, world, key, member, tenant, challenge["id"])


def _play(events: tuple[Event, ...], handle: str, side: str, text: str) -> None:
    """The same entry in each of these events, then each settled: the worker plays the
    events side by side, and each event's play is in the same order as if played alone."""
    for event in events:
        event.submit(handle, side, text)
    for event in events:
        event.settled()


def _events(api: Api, api_url: str) -> tuple[Event, Event]:
    """Two events alike, frozen once the observer's attack met a defense; after the freeze
    the observer attacks again in both, and two others attack in the first only."""
    played = _event(api, api_url, "A (others attacked after the freeze)")
    quiet = _event(api, api_url, "B (no one else played after it)")
    both = (played, quiet)
    # One rated participant a side at the freeze: the bootstrap orders participants by id,
    # which differs from one world to the other, so two of a side could swap intervals.
    for handle, side, text in (
        ("blue1", "blue", WEAK),
        ("blue2", "blue", STRONG),
        (OBSERVER, "red", OVERRIDE),
    ):
        _play(both, handle, side, text)
    for event in both:
        frozen = api.request(
            "PATCH",
            f"/v1/challenges/{event.cid}",
            event.key,
            json={"freeze_at": _iso(datetime.now(UTC))},
        )
        _ok(frozen)
    _play(both, OBSERVER, "red", PLAIN)
    for handle, text in (("red1", OVERRIDE), ("red3", PLAIN)):
        _play((played,), handle, "red", text)
    return both


def _no_worker_seen(worker: Worker) -> None:
    """The killed worker's heartbeats made older than the window in which the pages look for
    one, as they would be once the window passed (the pages then say no worker runs, within
    the few seconds they keep what they read)."""
    from sqlalchemy import update

    from app.kit.db import session_scope
    from app.kit.observability.models import WorkerHeartbeat

    assert worker.process is not None
    with session_scope() as session:
        session.execute(
            update(WorkerHeartbeat)
            .where(WorkerHeartbeat.pid == worker.process.pid)
            .values(last_seen_at=datetime.now(UTC) - timedelta(hours=1))
        )


def _slots(events: tuple[Event, Event], prefix: str) -> tuple[list[str], list[str]]:
    """The two worlds' rows of one table (by the label's prefix), slot by slot: a row both
    have in the same slot, one that only one has against an id neither has."""
    first, second = (
        {label: v for v, label in e.labels.items() if label.startswith(prefix)} for e in events
    )
    labels = sorted(set(first) | set(second))
    return (
        [first.get(label, ABSENT_ID) for label in labels],
        [second.get(label, ABSENT_ID) for label in labels],
    )


def _fill(events: tuple[Event, Event]) -> None:
    """The values of every parameter, in both worlds, now."""
    for event in events:
        event.name_rows()
        participants = _ok(event.api.request("GET", "/v1/participants?limit=200", event.key))
        ids = {p["handle"]: p["id"] for p in participants["items"]}
        world = event.world
        world.paths.update(
            tenant_slug=[event.tenant["slug"]],
            tenant_id=[event.tenant["id"]],
            challenge_id=[event.cid],
            challenge_slug=[SLUG],
            participant_id=[world.name(ids[h], f"participant {h}") for h in sorted(ids)],
            handle=sorted(ids),
            plugin_id=["builtin.weighted_scorer"],
            # Rows of other kinds and jobs neither world has: both answer alike.
            **{
                name: [ABSENT_ID]
                for name in ("team_id", "job_id", "attempt_id", "run_id", "mail_id")
            },
            task_index=["1"],
            name=["leaderboard", "defenses", "attacks", "matches"],
            rest=["no-such-page"],
            # A link from mail neither world sent: both answer alike.
            token=["no-such-token"],
            template_name=["prompt-injection"],
        )
        world.queries.update(
            participant=[OBSERVER],
            side=["red", "blue"],
            limit=["1"],
            offset=["1"],
            page=["2"],
            kind=["red_blue"],
        )
    for table, parameter in (
        ("defense", "defense_id"),
        ("attack", "attack_id"),
        ("match", "match_id"),
    ):
        first, second = _slots(events, f"{table} ")
        events[0].world.paths[parameter] = first
        events[1].world.paths[parameter] = second
        # The matches lists' filters, with every entry.
        if table != "match":
            events[0].world.queries[parameter] = first
            events[1].world.queries[parameter] = second


def _operations(api: Api) -> list[Operation]:
    """Every GET of the API and the pages, the red_blue boards with their `side`."""
    from app.main import create_app

    found = []
    for operation in every_operation(api.http, create_app()):
        if operation.path in BOARDS:
            operation = Operation(
                operation.kind,
                operation.path,
                operation.path_params,
                (*operation.query_params, SIDE_PARAMETER),
            )
        found.append(operation)
    return found


def _compare(events: tuple[Event, Event], operations: Iterable[Operation]) -> list[Fetched]:
    _fill(events)
    first, second = events
    return compare_worlds(first.api.http, (first.world, second.world), operations)


def _answered_reads(fetched: list[Fetched]) -> None:
    """Some reads answered 200 to every reader (a walk of 404s would prove nothing)."""
    for reader, paths in {
        "member": {
            "/v1/challenges/{challenge_id}/matches",
            "/v1/matches/{match_id}",
            "/v1/defenses/{defense_id}",
            "/v1/attacks/{attack_id}",
            "/v1/challenges/{challenge_id}/standings",
            "/v1/challenges/{challenge_id}/leaderboard",
        },
        "member-as-participant": {"/v1/matches/{match_id}", "/v1/attacks/{attack_id}"},
        "anonymous": {
            "/v1/public/{tenant_slug}/challenges/{challenge_slug}/matches",
            "/v1/public/{tenant_slug}/challenges/{challenge_slug}/matches/{match_id}",
            "/v1/public/{tenant_slug}/challenges/{challenge_slug}/standings",
            "/v1/public/{tenant_slug}/challenges/{challenge_slug}/leaderboard",
            "/t/{tenant_slug}/challenges/{challenge_slug}/boards",
            "/t/{tenant_slug}/challenges/{challenge_slug}/matches/{match_id}",
        },
        "participant": {
            "/t/{tenant_slug}/",
            "/t/{tenant_slug}/challenges/{challenge_slug}",
            "/t/{tenant_slug}/challenges/{challenge_slug}/red-blue/live",
            "/t/{tenant_slug}/challenges/{challenge_slug}/matches/{match_id}",
        },
    }.items():
        assert paths <= answered(fetched, reader), reader


def _restart(worker: Worker) -> None:
    """The session's worker again, for the tests after this one; on a loaded machine it may
    take longer to be ready than `Worker.start` waits."""
    size = worker.log_path.stat().st_size if worker.log_path.exists() else 0
    try:
        worker.start()
    except RuntimeError:
        process = worker.process
        assert process is not None and process.poll() is None, "the worker exited"
        until(
            "the worker is ready",
            lambda: " ready." in worker.log_path.read_bytes()[size:].decode(errors="replace"),
            timeout=300,
        )


# Four walks of every read (some thousands of requests each) and two events played.
@pytest.mark.timeout(1500)
def test_play_after_a_red_blue_freeze_changes_nothing_others_see_through_the_final_round(
    api: Api, api_url: str, worker: Worker
) -> None:
    from app.kinds.red_blue import board_recompute, final_round_runs
    from app.kinds.red_blue import worker as red_blue_worker

    events = _events(api, api_url)
    played, quiet = events
    # The worlds differ: others' matches after the freeze, in A only.
    assert len(played.rows("matches")) > len(quiet.rows("matches"))
    operations = _operations(api)
    _answered_reads(_compare(events, operations))

    # Closed with no worker running: each final round is made, not played yet.
    worker.kill()
    _no_worker_seen(worker)
    try:
        for event in events:
            closed = api.request(
                "PATCH",
                f"/v1/challenges/{event.cid}",
                event.key,
                json={"closes_at": _iso(datetime.now(UTC))},
            )
            _ok(closed)
            made = final_round_runs.make(uuid.UUID(event.cid))
            assert made.startswith("made: ") and made != "made: 0 matches", made
        # The admin pages say alike in both worlds that no worker runs: walk them so.
        sign_in = f"/t/{played.tenant['slug']}/admin/sign-in"
        until(
            "the pages say no worker runs",
            lambda: "No worker has been seen lately" in api.request("GET", sign_in).text,
            timeout=180,
        )
        made_rounds = _compare(events, operations)
        public = f"/v1/public/{played.tenant['slug']}/challenges/{SLUG}/standings"
        standings = api.request("GET", public, headers={"Cookie": "fresh=1"}).json()
        assert (standings["frozen"], standings["final_round"]["phase"]) == (True, "playing")
        assert standings["final_round"]["matches_total"] is None
        assert made_rounds

        # The rounds' matches played and rated here, in this process: still held.
        for event in events:
            queued = [m["id"] for m in event.rows("matches") if m["status"] == "queued"]
            assert queued
            red_blue_worker.run_matches([uuid.UUID(match) for match in queued])

            def rated(event: Event = event) -> bool:
                board_recompute.recompute(uuid.UUID(event.cid))
                admins = _ok(api.request("GET", f"/v1/challenges/{event.cid}/standings", event.key))
                judged = sum(1 for m in event.rows("matches") if m["status"] == "completed")
                return bool(admins["matches"] == judged and not admins["pending"])

            until("the round's matches are rated", rated)
        _answered_reads(_compare(events, operations))
    finally:
        _restart(worker)

    # The boards final: everyone sees every match.
    for event in events:
        standings_path = f"/v1/challenges/{event.cid}/standings"
        until(
            "the boards are final",
            lambda path=standings_path, key=event.key: (
                _ok(api.request("GET", path, key))["final_round"]["phase"] == "final"
            ),
            timeout=120,
        )
        public_list = f"/v1/public/{event.tenant['slug']}/challenges/{SLUG}/matches?limit=200"
        revealed = _ok(api.request("GET", public_list, headers={"Cookie": "fresh=1"}))
        assert revealed["total"] == len(event.rows("matches"))
