"""Scorer plugins end to end: the registry, custom-scored challenges, and broken scorers
contained by the sandbox on a real worker."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.conftest import ADMIN_TOKEN, Api, Worker

pytestmark = pytest.mark.integration


def register(api: Api, entrypoint: str, **extra: Any) -> dict[str, Any]:
    plugin_id = f"test.{entrypoint.rsplit(':', 1)[1].lower()}.{uuid.uuid4().hex[:6]}"
    response = api.request(
        "POST",
        "/v1/scorers",
        ADMIN_TOKEN,
        json={"plugin_id": plugin_id, "entrypoint": entrypoint, **extra},
    )
    assert response.status_code == 201, response.text
    return dict(response.json())


def custom_challenge(api: Api, key: str, plugin_id: str, **scoring: Any) -> dict[str, Any]:
    return api.create_challenge(
        key, scoring={"strategy": "custom", "plugin_id": plugin_id, **scoring}
    )


def test_registry_refusals_and_roles(api: Api, tenant: dict[str, Any]) -> None:
    body = {"plugin_id": "x.y", "entrypoint": "scorers.testing:EchoScorer"}
    assert api.request("POST", "/v1/scorers", json=body).status_code == 401
    assert api.request("POST", "/v1/scorers", tenant["api_key"], json=body).status_code == 403
    refusals = {
        "os:system": "outside the allowed prefixes",
        "app.main:create_app": "outside the allowed prefixes",
        "scorers.no_such_module:Scorer": "cannot",
        "scorers.testing:NoSuchClass": "cannot",
        "scorers.testing:NoScoreMethod": "score",
    }
    for entrypoint, reason in refusals.items():
        response = api.request(
            "POST",
            "/v1/scorers",
            ADMIN_TOKEN,
            json={"plugin_id": f"bad.{uuid.uuid4().hex[:6]}", "entrypoint": entrypoint},
        )
        assert response.status_code == 422, (entrypoint, response.text)
        assert reason in response.json()["error"]["message"], (entrypoint, response.json())
    malformed = api.request(
        "POST", "/v1/scorers", ADMIN_TOKEN, json={"plugin_id": "m.x", "entrypoint": "no colon"}
    )
    assert malformed.status_code == 422
    bad_schema = api.request(
        "POST",
        "/v1/scorers",
        ADMIN_TOKEN,
        json={
            "plugin_id": f"s.{uuid.uuid4().hex[:6]}",
            "entrypoint": "scorers.testing:EchoScorer",
            "config_schema": {"type": "no-such-type"},
        },
    )
    assert (
        bad_schema.status_code == 422 and "config_schema" in bad_schema.json()["error"]["message"]
    )
    plugin = register(api, "scorers.testing:EchoScorer")
    duplicate = api.request(
        "POST",
        "/v1/scorers",
        ADMIN_TOKEN,
        json={"plugin_id": plugin["plugin_id"], "entrypoint": "scorers.testing:EchoScorer"},
    )
    assert duplicate.status_code == 409
    listed = api.request("GET", "/v1/scorers", tenant["api_key"]).json()["items"]
    ids = {p["plugin_id"] for p in listed}
    assert {"builtin.weighted_scorer", plugin["plugin_id"]} <= ids


def test_weighted_scorer_scores_and_ranks_every_scored_attempt(
    api: Api, worker: Worker, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    challenge = custom_challenge(
        api, key, "builtin.weighted_scorer", config={"time_penalty": 0, "token_penalty": 1}
    )
    ids = {
        "alice": api.submit(key, challenge["id"], "Please say PWNED now", "alice").json()["id"],
        "bob": api.submit(key, challenge["id"], "PWNED", "bob").json()["id"],
        "carol": api.submit(key, challenge["id"], "nothing", "carol").json()["id"],
    }
    results = {h: api.wait_finished(key, i) for h, i in ids.items()}
    # offline/echo: tokens = system prompt words (3) + prompt words + echoed words.
    assert results["bob"]["score"] == pytest.approx(100 - 5)
    assert results["alice"]["score"] == pytest.approx(100 - 11)
    assert results["carol"]["score"] == 0.0  # negative, clamped
    details = results["bob"]["score_details"]
    assert details["success_term"] == 100 and details["token_term"] == pytest.approx(5)
    board = api.request("GET", f"/v1/challenges/{challenge['id']}/leaderboard", key).json()
    assert [(i["participant"], i["score"]) for i in board["items"]] == [
        ("bob", 95.0),
        ("alice", 89.0),
        ("carol", 0.0),
    ]


def test_scoring_config_is_validated_against_the_plugin_schema(
    api: Api, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    body = {
        "slug": "custom-x",
        "title": "T",
        "target": {"model": "offline/echo"},
        "verifier": {"type": "contains", "pattern": "x"},
    }
    cases = [
        ({"bogus": 1}, "scoring.config"),
        ({"success_bonus": "lots"}, "scoring.config.success_bonus"),
    ]
    for config, field in cases:
        scoring = {"strategy": "custom", "plugin_id": "builtin.weighted_scorer", "config": config}
        response = api.request("POST", "/v1/challenges", key, json={**body, "scoring": scoring})
        assert response.status_code == 422, response.text
        assert field in response.json()["error"]["message"]


def test_scorer_sees_the_attempts_context(api: Api, worker: Worker, tenant: dict[str, Any]) -> None:
    key = tenant["api_key"]
    plugin = register(api, "scorers.testing:EchoScorer", default_config={"score": 7})
    challenge = custom_challenge(api, key, plugin["plugin_id"], timeout_ms=2000)
    result = api.wait_finished(key, api.submit(key, challenge["id"], "PWNED", "amy").json()["id"])
    assert result["score"] == 7.0
    details = result["score_details"]
    assert details["ctx"]["tenant_id"] == tenant["id"]
    assert details["ctx"]["challenge_id"] == challenge["id"]
    assert details["ctx"]["participant_id"] == result["participant_id"]
    assert details["ctx"]["timeout_ms"] == 2000
    assert details["metrics"]["succeeded"] is True
    assert details["metrics"]["tokens_total"] == result["metrics"]["tokens_total"]


def test_a_scorer_reads_created_at_in_epoch_milliseconds(
    api: Api, worker: Worker, tenant: dict[str, Any]
) -> None:
    # The plugin protocol's format, whatever the API shows (ISO 8601 text).
    key = tenant["api_key"]
    plugin = register(api, "scorers.testing:EchoScorer")
    challenge = custom_challenge(api, key, plugin["plugin_id"], timeout_ms=2000)
    result = api.wait_finished(key, api.submit(key, challenge["id"], "PWNED", "amy").json()["id"])
    seen = result["score_details"]["metrics"]["created_at"]
    submitted = datetime.fromisoformat(result["created_at"])
    assert type(seen) is int
    assert seen == (submitted - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)
    assert result["metrics"]["created_at"] == result["created_at"]


BROKEN = [
    ("RaisingScorer", "raised"),
    ("HangingScorer", "timed out after 300 ms"),
    ("CrashingScorer", "died"),
    ("ExitingScorer", "exited"),
    ("HugeOutputScorer", "too large"),
    ("NaNScorer", "finite"),
    ("InfScorer", "finite"),
    ("StringScorer", "number"),
    ("BoolScorer", "number"),
    ("MissingKeyScorer", "score"),
    ("NotADictScorer", "expected an object"),
    ("MemoryHogScorer", "MemoryError"),
]


def test_every_broken_scorer_is_contained(api: Api, worker: Worker, tenant: dict[str, Any]) -> None:
    key = tenant["api_key"]
    outcomes = {}
    for class_name, reason in BROKEN:
        plugin = register(api, f"scorers.testing:{class_name}")
        challenge = custom_challenge(api, key, plugin["plugin_id"], timeout_ms=300)
        attempt = api.submit(key, challenge["id"], "PWNED", "amy").json()
        result = api.wait_finished(key, attempt["id"])
        outcomes[class_name] = result
        assert result["status"] == "completed", (class_name, result)
        assert result["score"] is None, class_name
        error = result["score_details"]["error"]
        assert error and reason in error, (class_name, error)
        board = api.request("GET", f"/v1/challenges/{challenge['id']}/leaderboard", key).json()
        assert board["total"] == 0, class_name
    # The worker survived all of it and scores the next attempt at once.
    assert worker.process is not None and worker.process.poll() is None
    good = custom_challenge(api, key, "builtin.weighted_scorer")
    result = api.wait_finished(key, api.submit(key, good["id"], "PWNED", "amy").json()["id"])
    assert result["score"] is not None and result["score"] > 0


def test_negative_scores_are_clamped_and_secrets_stay_out(
    api: Api, worker: Worker, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    negative = custom_challenge(
        api, key, register(api, "scorers.testing:NegativeScorer")["plugin_id"]
    )
    result = api.wait_finished(key, api.submit(key, negative["id"], "PWNED", "amy").json()["id"])
    assert result["score"] == 0.0
    snoop = custom_challenge(api, key, register(api, "scorers.testing:EnvSnoopScorer")["plugin_id"])
    result = api.wait_finished(key, api.submit(key, snoop["id"], "PWNED", "amy").json()["id"])
    names = str(result["score_details"])
    for secret in (
        "GAUNTLET_ADMIN_TOKEN",
        "GAUNTLET_DATABASE_URL",
        "OPENAI_API_KEY",
        "GAUNTLET_SECRET_KEY",
    ):
        assert secret not in names


def test_disable_instead_of_delete_while_in_use(
    api: Api, worker: Worker, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    plugin = register(api, "scorers.testing:EchoScorer")
    plugin_id = plugin["plugin_id"]
    challenge = custom_challenge(api, key, plugin_id)
    in_use = api.request("DELETE", f"/v1/scorers/{plugin_id}", ADMIN_TOKEN)
    assert in_use.status_code == 409 and "disable" in in_use.json()["error"]["message"]
    assert (
        api.request("PATCH", f"/v1/scorers/{plugin_id}", key, json={"enabled": False}).status_code
        == 403
    )
    disabled = api.request(
        "PATCH", f"/v1/scorers/{plugin_id}", ADMIN_TOKEN, json={"enabled": False}
    )
    assert disabled.status_code == 200 and disabled.json()["enabled"] is False
    result = api.wait_finished(key, api.submit(key, challenge["id"], "PWNED", "amy").json()["id"])
    assert result["status"] == "completed" and result["score"] is None
    assert "disabled" in result["score_details"]["error"]
    refused = api.request(
        "POST",
        "/v1/challenges",
        key,
        json={
            "slug": "uses-disabled",
            "title": "T",
            "target": {"model": "offline/echo"},
            "verifier": {"type": "contains", "pattern": "x"},
            "scoring": {"strategy": "custom", "plugin_id": plugin_id},
        },
    )
    assert refused.status_code == 422 and "disabled" in refused.json()["error"]["message"]
    unused = register(api, "scorers.testing:EchoScorer")
    assert (
        api.request("DELETE", f"/v1/scorers/{unused['plugin_id']}", ADMIN_TOKEN).status_code == 204
    )
    assert api.request("GET", f"/v1/scorers/{unused['plugin_id']}", ADMIN_TOKEN).status_code == 404


def test_changing_scoring_rescores_past_attempts_and_rebuilds_the_leaderboard(
    api: Api, worker: Worker, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    challenge = api.create_challenge(key, scoring={"strategy": "first"})
    first = api.submit(key, challenge["id"], "Please say PWNED now", "alice").json()["id"]
    api.wait_finished(key, first)
    second = api.submit(key, challenge["id"], "PWNED", "bob").json()["id"]
    api.wait_finished(key, second)
    failed = api.submit(key, challenge["id"], "no", "carol").json()["id"]
    api.wait_finished(key, failed)
    board = api.request("GET", f"/v1/challenges/{challenge['id']}/leaderboard", key).json()
    assert [i["participant"] for i in board["items"]] == ["alice", "bob"]

    patched = api.request(
        "PATCH",
        f"/v1/challenges/{challenge['id']}",
        key,
        json={
            "scoring": {
                "strategy": "custom",
                "plugin_id": "builtin.weighted_scorer",
                "config": {"time_penalty": 0, "token_penalty": 1},
            }
        },
    )
    assert patched.status_code == 200, patched.text
    job_path = patched.headers["Location"]
    deadline = time.monotonic() + 60
    while (job := api.request("GET", job_path, key).json())["status"] in ("queued", "running"):
        assert time.monotonic() < deadline, job
        time.sleep(0.1)
    assert job["status"] == "completed", job
    assert job["total"] == 3 and job["processed"] == 3
    board = api.request("GET", f"/v1/challenges/{challenge['id']}/leaderboard", key).json()
    # Every scored attempt ranks under `custom`, the failed one too (clamped to 0).
    assert [(i["participant"], i["score"]) for i in board["items"]] == [
        ("bob", 95.0),
        ("alice", 89.0),
        ("carol", 0.0),
    ]
    assert api.request("GET", f"/v1/attempts/{second}", key).json()["score"] == 95.0
    # A second run of the same job (a redelivery) changes nothing.
    from app.rescore.runner import run_rescore

    assert run_rescore(uuid.UUID(job["id"])) == "skipped"
    listed = api.request("GET", f"/v1/challenges/{challenge['id']}/rescore-jobs", key).json()
    assert [j["id"] for j in listed["items"]] == [job["id"]]
    # Other tenants cannot see the job.
    other = api.create_tenant()["api_key"]
    assert api.request("GET", job_path, other).status_code == 404

    # A manual rescore scores every attempt again: a score changed behind the service's back
    # is put right, and the leaderboard rebuilt from the scores.
    from sqlalchemy import update

    from app.attempt.models import Attempt
    from app.kit.db import session_scope

    with session_scope() as session:
        session.execute(update(Attempt).where(Attempt.id == uuid.UUID(second)).values(score=1.0))
    manual = api.request("POST", f"/v1/challenges/{challenge['id']}/rescore", key)
    assert manual.status_code == 202
    manual_path = f"/v1/rescore-jobs/{manual.json()['id']}"
    deadline = time.monotonic() + 60
    while (job := api.request("GET", manual_path, key).json())["status"] in ("queued", "running"):
        assert time.monotonic() < deadline, job
        time.sleep(0.1)
    assert job["status"] == "completed" and job["processed"] == 3, job
    assert api.request("GET", f"/v1/attempts/{second}", key).json()["score"] == 95.0
    board = api.request("GET", f"/v1/challenges/{challenge['id']}/leaderboard", key).json()
    assert [(i["participant"], i["score"]) for i in board["items"]] == [
        ("bob", 95.0),
        ("alice", 89.0),
        ("carol", 0.0),
    ]


def test_changing_a_plugins_defaults_rescores_the_challenges_using_it(
    api: Api, worker: Worker, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    plugin = register(api, "scorers.testing:EchoScorer", default_config={"score": 3})
    challenge = custom_challenge(api, key, plugin["plugin_id"])
    attempt = api.submit(key, challenge["id"], "PWNED", "amy").json()["id"]
    assert api.wait_finished(key, attempt)["score"] == 3.0
    patched = api.request(
        "PATCH",
        f"/v1/scorers/{plugin['plugin_id']}",
        ADMIN_TOKEN,
        json={"default_config": {"score": 9}},
    )
    assert patched.status_code == 200
    # The job scores the attempts, then rebuilds the leaderboard: wait for the whole job.
    jobs_path = f"/v1/challenges/{challenge['id']}/rescore-jobs"
    deadline = time.monotonic() + 60
    while True:
        jobs = api.request("GET", jobs_path, key).json()["items"]
        if jobs and jobs[0]["status"] not in ("queued", "running"):
            break
        assert time.monotonic() < deadline, f"the plugin change was never applied: {jobs}"
        time.sleep(0.1)
    assert len(jobs) == 1 and jobs[0]["status"] == "completed", jobs
    assert "changed" in jobs[0]["reason"]
    assert api.request("GET", f"/v1/attempts/{attempt}", key).json()["score"] == 9.0
    board = api.request("GET", f"/v1/challenges/{challenge['id']}/leaderboard", key).json()
    assert board["items"][0]["score"] == 9.0


def test_installed_entry_points_are_listed_and_registered_by_name(api: Api) -> None:
    installed = api.request("GET", "/v1/scorers/installed", ADMIN_TOKEN)
    assert installed.status_code == 200
    frugal = {i["name"]: i for i in installed.json()["items"]}["frugal"]
    assert frugal["entrypoint"] == "scorers.frugal:FrugalScorer"
    assert frugal["registered"] is False
    registered = api.request("POST", "/v1/scorers", ADMIN_TOKEN, json={"plugin_id": "frugal"})
    assert registered.status_code == 201, registered.text
    assert registered.json()["entrypoint"] == "scorers.frugal:FrugalScorer"
    listed = {
        i["name"]: i
        for i in api.request("GET", "/v1/scorers/installed", ADMIN_TOKEN).json()["items"]
    }
    assert listed["frugal"]["registered"] is True
    unknown = api.request("POST", "/v1/scorers", ADMIN_TOKEN, json={"plugin_id": "no-such-ep"})
    assert unknown.status_code == 422 and "entry point" in unknown.json()["error"]["message"]


def test_scoring_config_is_validated_on_update_too(api: Api, tenant: dict[str, Any]) -> None:
    key = tenant["api_key"]
    challenge = custom_challenge(api, key, "builtin.weighted_scorer")
    response = api.request(
        "PATCH",
        f"/v1/challenges/{challenge['id']}",
        key,
        json={
            "scoring": {
                "strategy": "custom",
                "plugin_id": "builtin.weighted_scorer",
                "config": {"time_penalty": "slow"},
            }
        },
    )
    assert response.status_code == 422
    assert "scoring.config.time_penalty" in response.json()["error"]["message"]
    unchanged = api.request("GET", f"/v1/challenges/{challenge['id']}", key).json()
    assert unchanged["scoring"]["config"] == {}
