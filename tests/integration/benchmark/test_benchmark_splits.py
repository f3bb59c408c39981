"""A benchmark challenge split into a public and a private part, on a real worker: while it is
open, participants' keys see the public part's scores, trials and ranks only (reads, exports,
boards), its admins see both; the private part's measures equal a recomputation from its
trials; at the close everyone sees them."""

from __future__ import annotations

import csv
import io
import json
import time
from datetime import UTC, datetime
from typing import Any

import pytest

from app.evaluation.engine.metrics import pass_at_k
from app.kinds.benchmark.config import BenchmarkSpec, SplitConfig
from app.kinds.benchmark.split import parts_of
from tests.conftest import Api, Worker
from tests.fixtures.fake_openai import Behaviour, FakeOpenAIServer
from tests.integration.benchmark.test_benchmark_challenges import benchmark_challenge

pytestmark = pytest.mark.integration

SPLIT = {"public_fraction": 0.5, "seed": 7}


def _member_key(api: Api, key: str) -> str:
    response = api.request("POST", "/v1/api-keys", key, json={"name": "app", "role": "member"})
    assert response.status_code == 201, response.text
    return str(response.json()["key"])


def _trials(api: Api, key: str, attempt_id: str) -> list[dict[str, Any]]:
    response = api.request("GET", f"/v1/attempts/{attempt_id}/trials?limit=500", key)
    assert response.status_code == 200, response.text
    return list(response.json()["items"])


def _pass_at_2(trials: list[dict[str, Any]], tasks: set[int]) -> float:
    """pass@2 over `tasks`, recomputed from the trials (two samples per task)."""
    values = []
    for task in sorted(tasks):
        successes = [t["success"] for t in trials if t["task_index"] == task]
        assert len(successes) == 2
        values.append(pass_at_k(2, sum(successes), 2))
    return sum(values) / len(values)


def _private_part_ran(api: Api, key: str, attempt_id: str, timeout: float = 120) -> dict[str, Any]:
    """The attempt as its tenant's admins read it once its private part has run (a run of
    its own, after the attempt completed)."""
    deadline = time.monotonic() + timeout
    while True:
        read = api.request("GET", f"/v1/attempts/{attempt_id}", key).json()
        sealed = (read["kind_metrics"] or {}).get("sealed") or {}
        if sealed.get("status") in ("completed", "error"):
            return dict(read)
        assert time.monotonic() < deadline, f"the private part of {attempt_id} did not run"
        time.sleep(0.05)


def _export(api: Api, key: str, challenge_id: str, name: str) -> list[dict[str, str]]:
    response = api.request(
        "GET", f"/v1/challenges/{challenge_id}/exports/{name}", key, params={"format": "csv"}
    )
    assert response.status_code == 200, response.text
    return list(csv.DictReader(io.StringIO(response.text)))


def test_a_split_challenge_shows_participants_the_public_part_only_until_the_close(
    api: Api, worker: Worker, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    member = _member_key(api, key)
    challenge = benchmark_challenge(api, key, split=SPLIT)
    cid = challenge["id"]
    # Which tasks are private is the organizer's: participants' reads leave out the seed.
    public_view = api.request("GET", f"/v1/challenges/{cid}", member).json()
    assert public_view["split"] == {"public_fraction": 0.5, "final_submissions": 2}
    submitted = api.request(
        "POST",
        f"/v1/challenges/{cid}/attempts",
        member,
        json={"model": "offline/echo", "participant": "p1"},
    )
    assert submitted.status_code == 202, submitted.text
    attempt_id = submitted.json()["id"]
    assert api.wait_finished(key, attempt_id, timeout=120)["status"] == "completed"
    finished = _private_part_ran(api, key, attempt_id)

    # The admin sees both parts: the trials of all ten tasks, the private measures.
    every_trial = _trials(api, key, attempt_id)
    assert {t["task_index"] for t in every_trial} == set(range(1, 11))
    seen = api.request("GET", f"/v1/attempts/{attempt_id}", member).json()
    public_tasks = {t["task_index"] for t in _trials(api, member, attempt_id)}
    private_tasks = set(range(1, 11)) - public_tasks
    assert len(public_tasks) == 5 and len(private_tasks) == 5
    sealed = finished["kind_metrics"]["sealed"]
    assert sealed["status"] == "completed" and sealed["tasks_total"] == 5
    assert sealed["metric_at_k"] == pytest.approx(_pass_at_2(every_trial, private_tasks))

    # The participant's key: public scores, trials and progress only.
    metrics = seen["metrics"]
    assert metrics["tasks_total"] == 5
    assert metrics["metric_at_k"] == pytest.approx(_pass_at_2(every_trial, public_tasks))
    assert "sealed" not in (seen["kind_metrics"] or {})
    assert "sealed" not in seen["progress"]
    assert seen["progress"]["task_status"]["total"] == 5
    for task in private_tasks:
        one = api.request("GET", f"/v1/attempts/{attempt_id}/trials?task_index={task}", member)
        assert one.json()["items"] == []
    board = api.request("GET", f"/v1/challenges/{cid}/leaderboard", member).json()
    assert board["items"][0]["score"] == pytest.approx(metrics["metric_at_k"])
    # Exports are the tenant admins': both parts, each trial marked.
    assert api.request("GET", f"/v1/challenges/{cid}/exports/trials", member).status_code == 403
    exported = _export(api, key, cid, "trials")
    assert {int(row["task_index"]) for row in exported if row["sealed"] == "true"} == private_tasks
    assert {int(row["task_index"]) for row in exported if row["sealed"] == "false"} == public_tasks
    [exported_attempt] = _export(api, key, cid, "attempts")
    assert json.loads(exported_attempt["kind_metrics"])["sealed"] == sealed

    # The same seed splits another challenge the same way.
    again = benchmark_challenge(api, key, slug="split-again", split=SPLIT)
    other = api.request(
        "POST",
        f"/v1/challenges/{again['id']}/attempts",
        key,
        json={"model": "offline/echo", "participant": "p2"},
    )
    api.wait_finished(key, other.json()["id"], timeout=120)
    assert {t["task_index"] for t in _trials(api, member, other.json()["id"])} == public_tasks

    # At the close everyone sees the private part.
    closed = api.request(
        "PATCH",
        f"/v1/challenges/{cid}",
        key,
        json={"closes_at": datetime.now(UTC).isoformat().replace("+00:00", "Z")},
    )
    assert closed.status_code == 200, closed.text
    after = api.request("GET", f"/v1/attempts/{attempt_id}", member).json()
    assert after["kind_metrics"]["sealed"] == sealed
    assert {t["task_index"] for t in _trials(api, member, attempt_id)} == set(range(1, 11))


def test_practice_on_a_split_challenge_runs_public_tasks_only(
    api: Api, worker: Worker, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    challenge = benchmark_challenge(api, key, split=SPLIT)
    parts = parts_of(
        BenchmarkSpec.model_validate(challenge["benchmark"]), SplitConfig(**SPLIT), None
    )
    private = min(parts.private_indices)
    public = max(set(range(1, 11)) - parts.private_indices)
    path = f"/v1/challenges/{challenge['id']}/practice-runs"
    body = {"participant": "p1", "model": "offline/echo"}
    refused = api.request("POST", path, key, json={**body, "task_index": private})
    assert refused.status_code == 422, refused.text
    assert "task_index" in refused.json()["error"]["message"]
    chosen = api.request("POST", path, key, json={**body, "task_index": public})
    assert chosen.status_code == 202, chosen.text
    # Without a task named, the first public one.
    default = api.request("POST", path, key, json=body)
    assert default.status_code == 202, default.text
    assert default.json()["kind_fields"] == {"task_index": parts.first_public_index}
    assert parts.first_public_index not in parts.private_indices


def test_a_split_needs_two_tasks(api: Api, tenant: dict[str, Any]) -> None:
    response = api.request(
        "POST",
        "/v1/challenges",
        tenant["api_key"],
        json={
            "slug": "split-one",
            "title": "One task",
            "kind": "benchmark",
            "benchmark": {
                "name": "jsonl",
                "options": {"path": "example.jsonl"},
                "judge_model": "offline/judge",
                "task_indices": [2],
            },
            "split": SPLIT,
        },
    )
    assert response.status_code == 422, response.text
    assert "split" in response.json()["error"]["message"]


def _attempt(
    api: Api, key: str, cid: str, participant: str, model: str, t: float, **extra: Any
) -> str:
    body = {"model": model, "temperature": t, "participant": participant, **extra}
    response = api.request("POST", f"/v1/challenges/{cid}/attempts", key, json=body)
    assert response.status_code == 202, response.text
    return str(response.json()["id"])


def _private_pass_at_2(api: Api, key: str, attempt_id: str) -> float:
    trials = [t for t in _trials(api, key, attempt_id) if t["sealed"]]
    return _pass_at_2(trials, {t["task_index"] for t in trials})


def test_the_private_board_ranks_each_participants_best_final_submission_after_the_close(
    api: Api, worker: Worker, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    member = _member_key(api, key)
    benchmark = {"name": "arcagi2", "options": {}, "max_tasks": 8}
    challenge = benchmark_challenge(
        api, key, benchmark=benchmark, split={**SPLIT, "final_submissions": 2}
    )
    cid = challenge["id"]
    sim, weak = "offline/solver-sim", "offline/solver-sim-weak"
    ada = [_attempt(api, member, cid, "ada", sim, t) for t in (0.0, 0.6, 1.2)]
    bob = [
        _attempt(api, member, cid, "bob", weak, 0.3),
        _attempt(api, member, cid, "bob", sim, 0.9),
    ]
    base = _attempt(api, key, cid, "reference", sim, 0.0, baseline=True)
    for attempt_id in [*ada, *bob, base]:
        assert api.wait_finished(key, attempt_id, timeout=120)["status"] == "completed"
        _private_part_ran(api, key, attempt_id)

    # Ada marks two final; a third is one too many until she takes one back.
    for attempt_id in ada[1:]:
        marked = api.request("POST", f"/v1/attempts/{attempt_id}/final", member)
        assert marked.status_code == 200, marked.text
    assert marked.json()["attempt_ids"] == ada[1:] and marked.json()["max_final"] == 2
    too_many = api.request("POST", f"/v1/attempts/{ada[0]}/final", member)
    assert too_many.status_code == 409 and "at most 2" in too_many.json()["error"]["message"]
    api.request("DELETE", f"/v1/attempts/{ada[1]}/final", member)
    assert api.request("POST", f"/v1/attempts/{ada[0]}/final", member).status_code == 200
    listed = api.request(
        "GET", f"/v1/challenges/{cid}/final-submissions", member, params={"participant": "ada"}
    ).json()
    assert listed["attempt_ids"] == [ada[2], ada[0]]
    refused = api.request("POST", f"/v1/attempts/{base}/final", key)
    assert refused.status_code == 409, refused.text

    # Before the close only the tenant's admins read the private board.
    board_path = f"/v1/challenges/{cid}/private-leaderboard"
    assert api.request("GET", board_path, member).status_code == 403
    assert api.request("GET", board_path, key).status_code == 200

    api.request(
        "PATCH",
        f"/v1/challenges/{cid}",
        key,
        json={"closes_at": datetime.now(UTC).isoformat().replace("+00:00", "Z")},
    )
    late = api.request("DELETE", f"/v1/attempts/{ada[0]}/final", member)
    assert late.status_code == 409, late.text
    board = api.request("GET", board_path, member)
    assert board.status_code == 200, board.text
    rows = {row["participant"]: row for row in board.json()["items"]}
    assert set(rows) == {"ada", "bob", "reference"}

    # Recomputed from the trials on the private tasks: Ada's best final submission; Bob marked
    # none, so his best two by the public part count, here all he has.
    ada_best = max(_private_pass_at_2(api, key, a) for a in (ada[0], ada[2]))
    bob_best = max(_private_pass_at_2(api, key, a) for a in bob)
    assert rows["ada"]["private_metric_at_k"] == pytest.approx(ada_best)
    assert rows["ada"]["final"] is True and rows["ada"]["attempt_id"] in (ada[0], ada[2])
    assert rows["bob"]["private_metric_at_k"] == pytest.approx(bob_best)
    assert rows["bob"]["final"] is False
    assert rows["reference"]["baseline"] is True
    participants = sorted([("ada", ada_best), ("bob", bob_best)], key=lambda pair: -pair[1])
    for handle, score in participants:
        ahead = sum(1 for _, other in participants if other > score + 1e-12)
        assert rows[handle]["rank"] == 1 + ahead
    reference = _private_pass_at_2(api, key, base)
    assert rows["reference"]["rank"] == 1 + sum(1 for _, s in participants if s > reference + 1e-12)


def test_final_marks_need_a_split_challenge(
    api: Api, worker: Worker, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    challenge = benchmark_challenge(api, key)
    attempt_id = _attempt(api, key, challenge["id"], "ada", "offline/echo", 0.0)
    api.wait_finished(key, attempt_id, timeout=120)
    assert api.request("POST", f"/v1/attempts/{attempt_id}/final", key).status_code == 404
    board = api.request("GET", f"/v1/challenges/{challenge['id']}/private-leaderboard", key)
    assert board.status_code == 404


def test_a_split_stays_as_it_is_once_the_challenge_has_submissions(
    api: Api, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    challenge = benchmark_challenge(api, key, split=SPLIT)
    url = f"/v1/challenges/{challenge['id']}"

    def patch(split: dict[str, Any] | None) -> Any:
        return api.request("PATCH", url, key, json={"split": split})

    # No submission yet: the split is the organiser's to change.
    before_any = patch({**SPLIT, "seed": 8})
    assert before_any.status_code == 200, before_any.text
    assert before_any.json()["split"]["seed"] == 8
    # A test run is no submission: it reaches no board.
    tried = api.request("POST", f"{url}/test-runs", key, json={"model": "offline/echo"})
    assert tried.status_code == 202, tried.text
    assert patch({**SPLIT, "seed": 9}).status_code == 200

    submitted = api.request(
        "POST", f"{url}/attempts", key, json={"model": "offline/echo", "participant": "p1"}
    )
    assert submitted.status_code == 202, submitted.text
    # What decides which tasks are sealed is refused, naming the field.
    for split, path in (
        ({**SPLIT, "seed": 10}, ["split", "seed"]),
        ({**SPLIT, "seed": 9, "public_fraction": 0.3}, ["split", "public_fraction"]),
        (None, ["split"]),
    ):
        refused = patch(split)
        assert refused.status_code == 409, refused.text
        error = refused.json()["error"]
        assert error["message"].startswith(".".join(path) + ": cannot change")
        assert error["details"][0]["loc"] == ["body", *path]
    read = api.request("GET", url, key).json()
    assert read["split"] == {**SPLIT, "seed": 9, "final_submissions": 2}
    # The number of final submissions only weighs stored results: it may still change.
    more = patch({**SPLIT, "seed": 9, "final_submissions": 3})
    assert more.status_code == 200, more.text
    assert more.json()["split"]["final_submissions"] == 3
    # Other edits are not held by the split.
    assert api.request("PATCH", url, key, json={"title": "Renamed"}).status_code == 200

    # Nor may a split be added to a challenge that has submissions.
    whole = benchmark_challenge(api, key, slug="no-split-yet")
    entry = api.request(
        "POST",
        f"/v1/challenges/{whole['id']}/attempts",
        key,
        json={"model": "offline/echo", "participant": "p1"},
    )
    assert entry.status_code == 202, entry.text
    added = api.request("PATCH", f"/v1/challenges/{whole['id']}", key, json={"split": SPLIT})
    assert added.status_code == 409, added.text
    assert added.json()["error"]["details"][0]["loc"] == ["body", "split"]


def test_a_private_part_that_ended_in_error_is_re_run_by_an_admin(
    api: Api, worker: Worker, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    member = _member_key(api, key)
    with FakeOpenAIServer(default=Behaviour.server_error()) as provider:
        # One task each part: the provider answers the public part's one call, then fails.
        provider.enqueue(Behaviour.ok("[[0]]"))
        benchmark = {"name": "arcagi2", "options": {}, "max_tasks": 2}
        challenge = benchmark_challenge(
            api,
            key,
            benchmark={**benchmark, "actor_api_base": provider.base_url},
            evaluation={"metric": "pass@k", "k": 1},
            split=SPLIT,
        )
        attempt_id = _attempt(api, member, challenge["id"], "ada", "openai/fake-model", 0.0)
        seen = api.wait_finished(member, attempt_id, timeout=120)
        # The attempt (its public part) completed; what happened to its private part is the
        # admins' to see.
        assert seen["status"] == "completed" and "sealed" not in (seen["kind_metrics"] or {})
        failed = _private_part_ran(api, key, attempt_id)["kind_metrics"]["sealed"]
        assert failed["status"] == "error" and failed["error"], failed
        rerun = f"/v1/attempts/{attempt_id}/private-part/rerun"
        assert api.request("POST", rerun, member).status_code == 403
        provider.default = Behaviour.ok("[[0]]")
        queued = api.request("POST", rerun, key)
        assert queued.status_code == 202, queued.text
        assert queued.json()["status"] == "queued"
        done = _private_part_ran(api, key, attempt_id)["kind_metrics"]["sealed"]
        assert done["status"] == "completed" and done["tasks_total"] == 1
        assert api.request("POST", rerun, key).status_code == 409

    whole = benchmark_challenge(api, key, slug="unsplit")
    other = _attempt(api, key, whole["id"], "ada", "offline/echo", 0.0)
    api.wait_finished(key, other, timeout=120)
    assert api.request("POST", f"/v1/attempts/{other}/private-part/rerun", key).status_code == 404
