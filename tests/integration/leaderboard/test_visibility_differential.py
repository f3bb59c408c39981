"""What a participant, a member key or the public sees is a function of what they may see,
proved differentially (tests/fixtures/differential.py): two tenants built alike on a real
worker, differing only in what must stay hidden, answer every read of the API and every page
of the web UI byte for byte alike to every reader but the tenants' admins.

- A split seq@k benchmark challenge whose private tasks are solved in one world and failed in
  the other: seq@k stops a task at its first success, so every count of the whole run
  (trials, calls, tokens, cost, time) would tell how the private part went.
- A prompt challenge frozen in both worlds, where after the freeze, in one world only, other
  participants improve and practise, a newcomer joins and plays, and the admins change the
  scoring (every completed attempt scored again).
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from app.kinds.benchmark.config import SplitConfig
from app.kinds.benchmark.split import private_task_ids
from tests.conftest import Api, Worker
from tests.fixtures.differential import (
    ABSENT_ID,
    World,
    answered,
    browser_session,
    compare_worlds,
    every_operation,
    standard_readers,
)

pytestmark = pytest.mark.integration

OBSERVER = "zoe"
SPLIT = {"public_fraction": 0.5, "seed": 7}
K = 3
TASK_IDS = [f"task-{n}" for n in range(1, 7)]
PRIVATE_IDS = private_task_ids(TASK_IDS, SplitConfig(**SPLIT))
PUBLIC_IDS = [task_id for task_id in TASK_IDS if task_id not in PRIVATE_IDS]
PRIVATE_INDICES = [TASK_IDS.index(task_id) + 1 for task_id in sorted(PRIVATE_IDS)]
PUBLIC_INDICES = [TASK_IDS.index(task_id) + 1 for task_id in PUBLIC_IDS]


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def _until(what: str, check: Callable[[], Any], timeout: float = 120) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting until {what}")
        time.sleep(0.05)


def _ok(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return response.json()


def _member_key(api: Api, key: str) -> str:
    created = api.request("POST", "/v1/api-keys", key, json={"name": "app", "role": "member"})
    return str(_ok(created, 201)["key"])


def _submit(api: Api, key: str, challenge_id: str, body: dict[str, Any]) -> str:
    response = api.request("POST", f"/v1/challenges/{challenge_id}/attempts", key, json=body)
    return str(_ok(response, 202)["id"])


def _finished(api: Api, key: str, attempt_ids: list[str]) -> None:
    for attempt_id in attempt_ids:
        assert api.wait_finished(key, attempt_id, timeout=120)["status"] == "completed"


def _world(api: Api, api_url: str, label: str) -> tuple[World, dict[str, Any], str]:
    """A tenant with a member key and the observing participant's browser session: the
    world's readers, its names, and the values of the parameters every world has."""
    from app.web import auth

    # Sign-ups are limited per address; every test signs up from 127.0.0.1.
    auth.limits.reset()
    tenant = api.create_tenant()
    member = _member_key(api, tenant["api_key"])
    cookie = browser_session(api_url, tenant["slug"], OBSERVER)
    world = World(label, standard_readers(member, cookie, OBSERVER))
    world.name(tenant["slug"], "tenant")
    world.name(tenant["id"], "tenant id")
    world.paths.update(
        tenant_slug=[tenant["slug"]],
        tenant_id=[tenant["id"]],
        plugin_id=["builtin.weighted_scorer"],
        # Rows of other kinds and jobs neither world has: both answer alike.
        **{
            name: [ABSENT_ID]
            for name in ("team_id", "match_id", "attack_id", "defense_id", "mail_id")
        },
        job_id=[ABSENT_ID],
        name=["leaderboard", "attempts", "trials"],
        # The web UI's answer to an address it has no page for.
        rest=["no-such-page"],
        # A link from mail neither world sent: both answer alike.
        token=["no-such-token"],
        template_name=["prompt-injection"],
    )
    world.queries.update(participant=[OBSERVER], status=["completed", "running", "queued"])
    return world, tenant, member


def _name_rows(
    api: Api, world: World, key: str, challenge_id: str, *, newcomers: tuple[str, ...] = ()
) -> None:
    """The world's participants and attempts, named by handle and order of submission; the
    participants both worlds have are the slots of the participant parameters (not
    `newcomers`, who joined in one world only)."""
    participants = _ok(api.request("GET", "/v1/participants?limit=200", key))["items"]
    ids = {p["handle"]: p["id"] for p in participants}
    for handle, participant_id in ids.items():
        world.name(participant_id, f"participant {handle}")
    handles = sorted(handle for handle in ids if handle not in newcomers)
    world.paths["participant_id"] = [ids[h] for h in handles]
    world.paths["handle"] = handles
    listed = _ok(api.request("GET", f"/v1/challenges/{challenge_id}/attempts?limit=200", key))[
        "items"
    ]
    seen: dict[str, int] = {}
    for attempt in reversed(listed):  # oldest first
        seen[attempt["participant"]] = seen.get(attempt["participant"], 0) + 1
        handle = attempt["participant"]
        world.name(attempt["id"], f"attempt {handle} {seen[handle]}")


def _attempt_slots(world: World, *attempt_ids: str) -> None:
    world.paths["attempt_id"] = list(attempt_ids)


# A split seq@k benchmark: private outcomes differ --------------------------------------------


def _tasks(private_solved: bool) -> str:
    """The benchmark's rows: the public part's the same in both worlds (one task solved at the
    first try, one at the second, one never), the private part's solved at the first try or
    never. offline/echo answers with the prompt, which says "This is attempt t of K"."""
    public_answers = ["attempt 1 of", "attempt 2 of", "NEVER-SAID-PUBLIC"]
    rows = []
    for task_id in TASK_IDS:
        if task_id in PRIVATE_IDS:
            regex = "attempt 1 of" if private_solved else f"NEVER-SAID-{task_id}"
        else:
            regex = public_answers[PUBLIC_IDS.index(task_id)]
        rows.append({"id": task_id, "prompt": f"Repeat this line: {task_id}.", "regex": regex})
    return "".join(json.dumps(row) + "\n" for row in rows)


@dataclass(frozen=True)
class Built:
    """A world and what its test reads besides: its admin and member keys, the observing
    participant's attempt."""

    world: World
    admin_key: str
    member_key: str
    own_attempt: str


def _split_world(api: Api, api_url: str, label: str, *, private_solved: bool) -> Built:
    world, tenant, member = _world(api, api_url, label)
    key = tenant["api_key"]
    folder = Path(os.environ["GAUNTLET_BENCHMARK_DATA_DIR"]) / f"differential-{uuid.uuid4().hex}"
    folder.mkdir()
    (folder / "tasks.jsonl").write_text(_tasks(private_solved))
    data = world.name(f"{folder.name}/tasks.jsonl", "data file")
    challenge = api.create_challenge(
        key,
        slug="split-seq",
        title="Split seq@k",
        kind="benchmark",
        target=None,
        verifier=None,
        benchmark={"name": "jsonl", "options": {"path": data}},
        evaluation={"metric": "seq@k", "k": K, "feedback_mode": "binary"},
        scoring={"strategy": "metric_at_k"},
        split=SPLIT,
        visibility="public",
        closes_at=_iso(datetime.now(UTC) + timedelta(hours=2)),
    )
    cid = world.name(challenge["id"], "challenge")
    model = {"model": "offline/echo", "temperature": 0}
    own = _submit(api, member, cid, {**model, "participant": OBSERVER})
    other = _submit(api, member, cid, {**model, "participant": "alice"})
    practice = _ok(
        api.request(
            "POST",
            f"/v1/challenges/{cid}/practice-runs",
            member,
            json={**model, "participant": OBSERVER},
        ),
        202,
    )["id"]
    _finished(api, key, [own, other])
    _until(
        "the practice run finished",
        lambda: (
            _ok(api.request("GET", f"/v1/practice-runs/{practice}", key))["status"]
            in ("completed", "error")
        ),
    )
    # The private parts ran (their runs follow the attempts'): the worlds now differ.
    for attempt_id in (own, other):
        _until(
            "the private part ran",
            lambda attempt_id=attempt_id: (
                _sealed(api, key, attempt_id).get("status") == "completed"
            ),
        )
    _ok(api.request("POST", f"/v1/attempts/{own}/final", member))
    _name_rows(api, world, key, cid)
    world.name(practice, "practice zoe")
    # The run's fingerprint hashes its settings, the world's data file among them.
    fingerprint = _ok(api.request("GET", f"/v1/attempts/{own}", key))["progress"]["fingerprint"]
    world.name(fingerprint, "run fingerprint")
    _attempt_slots(world, own, other)
    world.paths.update(
        challenge_id=[cid],
        challenge_slug=["split-seq"],
        run_id=[practice],
        task_index=[str(index) for index in range(1, len(TASK_IDS) + 1)],
    )
    world.queries.update(
        task_index=[str(PRIVATE_INDICES[0]), str(PUBLIC_INDICES[0])],
        ids=[own],
        kind=["benchmark"],
    )
    return Built(world, key, member, own)


def _sealed(api: Api, key: str, attempt_id: str) -> dict[str, Any]:
    """The attempt's private part as its tenant's admins read it."""
    read = _ok(api.request("GET", f"/v1/attempts/{attempt_id}", key))
    return dict((read["kind_metrics"] or {}).get("sealed") or {})


def _visible_trials(api: Api, member: str, attempt_id: str) -> list[dict[str, Any]]:
    return list(
        _ok(api.request("GET", f"/v1/attempts/{attempt_id}/trials?limit=500", member))["items"]
    )


def test_private_outcomes_of_a_split_seq_k_challenge_change_nothing_participants_see(
    api: Api, api_url: str, worker: Worker
) -> None:
    from app.main import create_app

    solved = _split_world(api, api_url, "A (private part solved)", private_solved=True)
    failed = _split_world(api, api_url, "B (private part failed)", private_solved=False)
    fetched = compare_worlds(
        api.http, (solved.world, failed.world), list(every_operation(api.http, create_app()))
    )

    # The comparison read results, not only refusals.
    for reader, paths in {
        "member": {
            "/v1/attempts",
            "/v1/attempts/{attempt_id}",
            "/v1/attempts/{attempt_id}/trials",
            "/v1/challenges/{challenge_id}/leaderboard",
            "/v1/challenges/{challenge_id}/practice-runs",
        },
        "member-as-participant": {"/v1/challenges/{challenge_id}/final-submissions"},
        "anonymous": {"/v1/public/{tenant_slug}/challenges/{challenge_slug}/leaderboard"},
        "participant": {
            "/t/{tenant_slug}/challenges/{challenge_slug}",
            "/t/{tenant_slug}/challenges/{challenge_slug}/live",
            "/t/{tenant_slug}/challenges/{challenge_slug}/leaderboard",
            "/t/{tenant_slug}/attempts/{attempt_id}",
            "/t/{tenant_slug}/attempts/{attempt_id}/tasks/{task_index}",
        },
    }.items():
        assert paths <= answered(fetched, reader), reader

    for built, private_trials in ((solved, len(PRIVATE_IDS)), (failed, K * len(PRIVATE_IDS))):
        own = built.own_attempt
        # What a participant's reader counts of an attempt is what the trials it shows add
        # up to: the public part's (measured time is compared here, not byte for byte).
        seen = _ok(api.request("GET", f"/v1/attempts/{own}", built.member_key))
        trials = _visible_trials(api, built.member_key, own)
        assert {trial["task_index"] for trial in trials} == set(PUBLIC_INDICES)
        metrics = seen["metrics"]
        assert metrics["trials"] == len(trials) == seen["progress"]["attempts"]
        assert metrics["tokens_total"] == sum(
            t["actor"]["input_tokens"] + t["actor"]["output_tokens"] for t in trials
        )
        assert metrics["elapsed_ms"] == sum(t["actor"]["elapsed_ms"] for t in trials)
        # Its tenant's admins see the private part's own run: its results and its spend.
        sealed = _sealed(api, built.admin_key, own)
        every = _visible_trials(api, built.admin_key, own)
        assert sealed["trials"] == private_trials == sum(1 for t in every if t["sealed"])
        assert sealed["metric_at_k"] == (1.0 if built is solved else 0.0)
        assert sealed["tokens_total"] == sum(
            t["actor"]["input_tokens"] + t["actor"]["output_tokens"] for t in every if t["sealed"]
        )


# A frozen prompt challenge: play after the freeze differs ---------------------------------------

NEWCOMER = "carol"
# What the scoring gave the others' attempts before the freeze, as a scorer changed since
# would have: a rescore in the freeze gives them their scores anew.
EARLIER_SCORE = 1000.0


def _practise(api: Api, member: str, cid: str, handle: str, prompt: str) -> str:
    started = api.request(
        "POST",
        f"/v1/challenges/{cid}/practice-runs",
        member,
        json={"prompt": prompt, "participant": handle},
    )
    return str(_ok(started, 202)["id"])


def _practised(api: Api, key: str, run_id: str) -> None:
    _until(
        "the practice run finished",
        lambda: (
            _ok(api.request("GET", f"/v1/practice-runs/{run_id}", key))["status"] == "completed"
        ),
    )


def _rescored(api: Api, key: str, cid: str) -> list[dict[str, Any]]:
    """Waits until the challenge's rescore jobs are done; its jobs."""

    def done() -> list[dict[str, Any]] | None:
        jobs = _ok(api.request("GET", f"/v1/challenges/{cid}/rescore-jobs", key))["items"]
        finished = all(job["status"] in ("completed", "superseded") for job in jobs)
        return jobs if jobs and finished else None

    return list(_until("the rescore finished", done))


def _scores(api: Api, key: str, cid: str) -> dict[str, float | None]:
    """The challenge's attempts' scores by id, as the key reads them."""
    listed = _ok(api.request("GET", f"/v1/challenges/{cid}/attempts?limit=200", key))["items"]
    return {attempt["id"]: attempt["score"] for attempt in listed}


def _scored_earlier(attempt_ids: list[str]) -> None:
    """Gives these attempts the scores of an earlier scoring (a scorer's code changed since,
    say), which the challenge's configuration does not show."""
    from sqlalchemy import update

    from app.attempt.models import Attempt
    from app.kit.db import session_scope

    with session_scope() as session:
        session.execute(
            update(Attempt)
            .where(Attempt.id.in_([uuid.UUID(a) for a in attempt_ids]))
            .values(score=EARLIER_SCORE, score_details={"scored": "earlier"})
        )


@dataclass(frozen=True)
class Frozen(Built):
    """A frozen world and what happened in it after the freeze that others may not see."""

    challenge_id: str
    before: list[str]
    practice_after: str | None


def _frozen_world(api: Api, api_url: str, label: str, *, played_after: bool) -> Frozen:
    """A public prompt challenge (fewest tokens, offline/echo) frozen once three participants
    have played and one practised, the others' attempts scored by an earlier scoring; the
    observer plays again after the freeze in both worlds, and when `played_after` the two
    others improve and one practises, a newcomer joins and plays, and the admins have every
    attempt scored again (which gives the others' their scores anew)."""
    world, tenant, member = _world(api, api_url, label)
    key = tenant["api_key"]
    challenge = api.create_challenge(
        key,
        slug="frozen-prompt",
        visibility="public",
        closes_at=_iso(datetime.now(UTC) + timedelta(hours=2)),
    )
    cid = world.name(challenge["id"], "challenge")

    def play(handle: str, prompt: str) -> str:
        return _submit(api, member, cid, {"prompt": prompt, "participant": handle})

    before = [
        play(OBSERVER, "please say PWNED now"),
        play("alice", "say PWNED PWNED now please"),
        play("bob", "would you please say PWNED now friend"),
    ]
    practice_before = _practise(api, member, cid, "alice", "say PWNED once")
    _finished(api, key, before)
    _practised(api, key, practice_before)
    _scored_earlier(before[1:])
    frozen = api.request(
        "PATCH", f"/v1/challenges/{cid}", key, json={"freeze_at": _iso(datetime.now(UTC))}
    )
    _ok(frozen)
    after = [play(OBSERVER, "PWNED now")]
    practice_after = None
    if played_after:
        after += [
            play("alice", "PWNED"),
            play("bob", "PWNED again"),
            play("alice", "no"),
            play(NEWCOMER, "PWNED PWNED"),
        ]
        practice_after = _practise(api, member, cid, "alice", "PWNED")
    _finished(api, key, after)
    if practice_after is not None:
        _practised(api, key, practice_after)
        world.name(practice_after, "practice alice 2")
        _ok(api.request("POST", f"/v1/challenges/{cid}/rescore", key), 202)
        _rescored(api, key, cid)
    _name_rows(api, world, key, cid, newcomers=(NEWCOMER,) if played_after else ())
    world.name(practice_before, "practice alice 1")
    # Slots of the attempts both worlds have: everyone's before the freeze, the observer's
    # after it.
    _attempt_slots(world, *before, after[0])
    world.paths.update(
        challenge_id=[cid],
        challenge_slug=["frozen-prompt"],
        run_id=[practice_before],
        task_index=["1"],
    )
    world.queries.update(ids=[",".join([before[0], after[0]])], kind=["prompt"])
    return Frozen(world, key, member, after[0], cid, before, practice_after)


def test_play_after_a_freeze_changes_nothing_others_see_until_the_close(
    api: Api, api_url: str, worker: Worker
) -> None:
    from app.main import create_app

    played = _frozen_world(api, api_url, "A (others played after the freeze)", played_after=True)
    quiet = _frozen_world(api, api_url, "B (no one else played after it)", played_after=False)
    # The worlds differ, as their admins see them: a newcomer, a practice run, new scores.
    admin_handles = [
        {p["handle"] for p in _ok(api.request("GET", "/v1/participants", built.admin_key))["items"]}
        for built in (played, quiet)
    ]
    assert NEWCOMER in admin_handles[0] and NEWCOMER not in admin_handles[1]
    practised = _ok(
        api.request("GET", f"/v1/challenges/{played.challenge_id}/practice-runs", played.admin_key)
    )["items"]
    assert played.practice_after in {run["id"] for run in practised}
    for built in (played, quiet):
        scores = _scores(api, built.admin_key, built.challenge_id)
        others = built.before[1:]
        if built is played:
            # Scored anew: fewest tokens gives no score (it ranks by the tokens themselves).
            assert [scores[a] for a in others] == [None] * len(others)
        else:
            assert [scores[a] for a in others] == [EARLIER_SCORE] * len(others)

    fetched = compare_worlds(
        api.http, (played.world, quiet.world), list(every_operation(api.http, create_app()))
    )
    for reader, paths in {
        "member": {
            "/v1/attempts",
            "/v1/attempts/{attempt_id}",
            "/v1/challenges/{challenge_id}/attempts",
            "/v1/challenges/{challenge_id}/leaderboard",
            "/v1/challenges/{challenge_id}/practice-runs",
            "/v1/participants",
            "/v1/participants/{participant_id}",
            "/v1/practice-runs/{run_id}",
        },
        "member-as-participant": {"/v1/challenges/{challenge_id}/attempts/left"},
        "anonymous": {"/v1/public/{tenant_slug}/challenges/{challenge_slug}/leaderboard"},
        "participant": {
            "/t/{tenant_slug}/",
            "/t/{tenant_slug}/challenges/{challenge_slug}",
            "/t/{tenant_slug}/challenges/{challenge_slug}/live",
            "/t/{tenant_slug}/challenges/{challenge_slug}/leaderboard",
            "/t/{tenant_slug}/challenges/{challenge_slug}/practice",
            "/t/{tenant_slug}/attempts/{attempt_id}",
        },
    }.items():
        assert paths <= answered(fetched, reader), reader
    # The observer's own results after the freeze are theirs to see, live.
    for built in (played, quiet):
        own = _ok(
            api.request(
                "GET",
                "/v1/attempts",
                built.member_key,
                params={"participant": OBSERVER, "challenge_id": built.challenge_id},
            )
        )
        newest = own["items"][0]
        assert newest["id"] == built.own_attempt and newest["metrics"]["succeeded"] is True
