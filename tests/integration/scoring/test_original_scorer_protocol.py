"""Scorers and challenge bodies written for the original protocol, through HTTP, PostgreSQL,
Redis and a real worker: dict plugins score real attempts, and the flat scoring fields are
accepted, mapped onto `scoring`, and never let a tenant choose the code that runs."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from app.seed import DEMO_CHALLENGE
from tests.conftest import ADMIN_TOKEN, Api, Worker

pytestmark = pytest.mark.integration

MODULE = "tests.fixtures.original_scorers"
EXAMPLE = f"{MODULE}:OriginalExampleScorer"
PROBING = f"{MODULE}:OriginalProbingScorer"
FLAT_FIELDS = {"scoring_strategy", "scoring_plugin_id", "scoring_entrypoint", "scoring_config"}


def register(api: Api, entrypoint: str, **extra: Any) -> str:
    plugin_id = f"original.{entrypoint.rsplit(':', 1)[1].lower()}.{uuid.uuid4().hex[:6]}"
    response = api.request(
        "POST",
        "/v1/scorers",
        ADMIN_TOKEN,
        json={"plugin_id": plugin_id, "entrypoint": entrypoint, **extra},
    )
    assert response.status_code == 201, response.text
    return plugin_id


def flat_body(**flat: Any) -> dict[str, Any]:
    """The demo challenge, its scoring given in the original flat form instead."""
    body = {key: value for key, value in DEMO_CHALLENGE.items() if key != "scoring"}
    return {**body, "slug": f"flat-{uuid.uuid4().hex[:10]}", **flat}


def post_challenge(api: Api, key: str, body: dict[str, Any]) -> Any:
    return api.request("POST", "/v1/challenges", key, json=body)


def refusal(response: Any) -> tuple[list[Any], str]:
    """The field path and message of a 422."""
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    return error["details"][0]["loc"], error["message"]


def test_the_original_example_scorer_scores_real_attempts(
    api: Api, worker: Worker, tenant: dict[str, Any]
) -> None:
    """The original protocol's documented example (metrics.get('succeeded', False),
    metrics.get('tokens_total', 0), ctx['tenant_id']), registered, attached through the flat
    fields exactly as the original body gave them, scores attempts run by a worker."""
    key = tenant["api_key"]
    plugin_id = register(api, EXAMPLE)
    created = post_challenge(
        api,
        key,
        flat_body(
            scoring_strategy="custom",
            scoring_plugin_id=plugin_id,
            scoring_entrypoint=EXAMPLE,
            scoring_config={"token_cost": 1},
        ),
    )
    assert created.status_code == 201, created.text
    challenge = created.json()
    assert challenge["scoring"] == {
        "strategy": "custom",
        "plugin_id": plugin_id,
        "config": {"token_cost": 1},
        "timeout_ms": 5000,
    }
    assert not FLAT_FIELDS & set(challenge)
    read = api.request("GET", f"/v1/challenges/{challenge['id']}", key).json()
    assert read["scoring"] == challenge["scoring"] and not FLAT_FIELDS & set(read)

    won = api.submit(key, challenge["id"], "PWNED", "bob").json()["id"]
    lost = api.submit(key, challenge["id"], "nothing", "carol").json()["id"]
    bob, carol = api.wait_finished(key, won), api.wait_finished(key, lost)
    # offline/echo: tokens = system prompt words (3) + prompt words + echoed words.
    assert bob["status"] == "completed" and bob["metrics"]["tokens_total"] == 5
    assert bob["score"] == 95.0, bob["score_details"]
    assert bob["score_details"] == {"tenant_id": tenant["id"], "succeeded": True, "tokens_total": 5}
    assert carol["score"] == 0.0  # 0 - 5 tokens, clamped
    assert carol["score_details"]["succeeded"] is False
    board = api.request("GET", f"/v1/challenges/{challenge['id']}/leaderboard", key).json()
    assert [(item["participant"], item["score"]) for item in board["items"]] == [
        ("bob", 95.0),
        ("carol", 0.0),
    ]


def test_a_dict_plugin_sees_what_the_original_context_lacked_as_missing(
    api: Api, worker: Worker, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    plugin_id = register(api, PROBING)
    challenge = api.create_challenge(key, scoring={"strategy": "custom", "plugin_id": plugin_id})
    result = api.wait_finished(key, api.submit(key, challenge["id"], "PWNED", "amy").json()["id"])
    assert result["status"] == "completed" and result["score"] is not None, result
    details = result["score_details"]
    assert details["app_id"] is None and details["end_user_id"] == "absent"
    assert details["app_id_in_ctx"] is False and details["tenant_in_ctx"] is True
    assert details["ctx"] == {
        "tenant_id": tenant["id"],
        "challenge_id": challenge["id"],
        "participant_id": result["participant_id"],
        "timeout_ms": 5000,
    }
    # The metrics mapping holds what is known (no judge here, so no rating), and went into
    # `details` as the dict it is to such a plugin.
    assert "rating" not in details["metric_keys"]
    assert details["metrics"]["succeeded"] is True
    assert details["metrics"]["tokens_total"] == result["metrics"]["tokens_total"]
    assert result["score"] == float(len(details["metric_keys"]))
    assert details["as_attribute"] is True


def test_flat_fields_are_refused_where_they_would_be_wrong(
    api: Api, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    plugin_id = register(api, EXAMPLE)
    both = post_challenge(
        api,
        key,
        flat_body(
            scoring={"strategy": "custom", "plugin_id": plugin_id},
            scoring_plugin_id=plugin_id,
            scoring_entrypoint=EXAMPLE,
        ),
    )
    _, message = refusal(both)
    assert "'scoring' conflicts with 'scoring_plugin_id', 'scoring_entrypoint'" in message
    assert both.json()["error"]["details"][0]["type"] == "scoring_forms_conflict"

    cases: list[tuple[dict[str, Any], list[str], str]] = [
        # Registered code, but another plugin's: the tenant cannot swap the code that runs.
        (
            {"scoring_plugin_id": plugin_id, "scoring_entrypoint": "scorers.testing:EchoScorer"},
            ["body", "scoring_entrypoint"],
            f"is not the entrypoint of scorer '{plugin_id}' ('{EXAMPLE}')",
        ),
        (
            {"scoring_plugin_id": plugin_id, "scoring_entrypoint": "os:system"},
            ["body", "scoring_entrypoint"],
            "register this entrypoint",
        ),
        (
            {"scoring_plugin_id": plugin_id, "scoring_entrypoint": "no colon"},
            ["body", "scoring_entrypoint"],
            # What an entrypoint is, in words (the pattern itself is in the detail).
            "a Python module path, a colon and a class name",
        ),
        (
            {"scoring_entrypoint": EXAMPLE},
            ["body", "scoring_plugin_id"],
            "is required when the strategy is 'custom'",
        ),
        (
            {"scoring_plugin_id": "no.such.plugin", "scoring_entrypoint": EXAMPLE},
            ["body", "scoring_plugin_id"],
            "no scorer 'no.such.plugin' is registered",
        ),
        (
            {"scoring_strategy": "first", "scoring_plugin_id": plugin_id},
            ["body", "scoring_plugin_id"],
            "is only used with scoring_strategy 'custom'",
        ),
        (
            {"scoring_strategy": "best_vibes"},
            ["body", "scoring_strategy"],
            "must be one of 'first'",
        ),
        (
            {
                "scoring_plugin_id": "builtin.weighted_scorer",
                "scoring_config": {"time_penalty": "slow"},
            },
            ["body", "scoring_config", "time_penalty"],
            "is not of type 'number'",
        ),
        (
            {"scoring_strategy": "metric_at_k"},
            [],
            "only for benchmark challenges",
        ),
    ]
    for flat, location, reason in cases:
        found_location, message = refusal(post_challenge(api, key, flat_body(**flat)))
        assert reason in message, (flat, message)
        if location:
            assert found_location == location, (flat, found_location)
    listed = api.request("GET", "/v1/challenges", key).json()
    assert listed["total"] == 0


def test_flat_fields_on_update_change_only_what_they_give(api: Api, tenant: dict[str, Any]) -> None:
    key = tenant["api_key"]
    echo_id = register(api, "scorers.testing:EchoScorer")
    challenge = api.create_challenge(
        key,
        scoring={
            "strategy": "custom",
            "plugin_id": "builtin.weighted_scorer",
            "config": {"time_penalty": 0},
            "timeout_ms": 2000,
        },
    )
    path = f"/v1/challenges/{challenge['id']}"

    def patch(**flat: Any) -> dict[str, Any]:
        response = api.request("PATCH", path, key, json=flat)
        assert response.status_code == 200, response.text
        assert not FLAT_FIELDS & set(response.json())
        return dict(response.json()["scoring"])

    assert patch(scoring_config={"token_penalty": 2}) == {
        "strategy": "custom",
        "plugin_id": "builtin.weighted_scorer",
        "config": {"token_penalty": 2},
        "timeout_ms": 2000,
    }
    # Another plugin: its config starts empty rather than inheriting the last plugin's.
    assert patch(scoring_plugin_id=echo_id, scoring_entrypoint="scorers.testing:EchoScorer") == {
        "strategy": "custom",
        "plugin_id": echo_id,
        "config": {},
        "timeout_ms": 2000,
    }
    # Leaving 'custom' leaves the plugin behind.
    assert patch(scoring_strategy="fastest") == {
        "strategy": "fastest",
        "plugin_id": None,
        "config": {},
        "timeout_ms": 2000,
    }
    # Naming a plugin again means 'custom'; nulls count as not given.
    assert patch(scoring_plugin_id=echo_id, scoring_strategy=None, scoring_config=None) == {
        "strategy": "custom",
        "plugin_id": echo_id,
        "config": {},
        "timeout_ms": 2000,
    }
    before = api.request("GET", path, key).json()
    wrong = api.request(
        "PATCH", path, key, json={"scoring_entrypoint": "scorers.testing:RaisingScorer"}
    )
    assert refusal(wrong)[0] == ["body", "scoring_entrypoint"]
    both = api.request(
        "PATCH", path, key, json={"scoring": {"strategy": "first"}, "scoring_strategy": "first"}
    )
    assert "'scoring' conflicts with 'scoring_strategy'" in refusal(both)[1]
    assert api.request("GET", path, key).json() == before
    # Another tenant's challenge is not found, in this form too.
    other = api.create_tenant()["api_key"]
    assert api.request("PATCH", path, other, json={"scoring_strategy": "first"}).status_code == 404


def test_openapi_shows_the_flat_fields(api: Api) -> None:
    schemas = api.request("GET", "/openapi.json").json()["components"]["schemas"]
    for name in ("ChallengeCreate", "ChallengeUpdate"):
        properties = schemas[name]["properties"]
        assert set(properties) >= FLAT_FIELDS, name
        for field in FLAT_FIELDS:
            assert "original flat form" in properties[field]["description"], (name, field)
    for name in ("ChallengeRead", "ChallengePublic"):
        assert not FLAT_FIELDS & set(schemas[name]["properties"]), name


def test_the_documented_flat_body_reads_back_as_documented(
    api: Api, tenant: dict[str, Any]
) -> None:
    """The example of scorers/README.md, "The original flat challenge fields", as written there
    (only the plugin id and slug made unique to this run)."""
    text = (Path(__file__).resolve().parents[3] / "scorers" / "README.md").read_text()
    section = text.split("## The original flat challenge fields", 1)[1]
    body = json.loads(section.split("```json", 1)[1].split("```", 1)[0])
    assert body["scoring_plugin_id"] == "acme.frugal"
    plugin_id = register(api, body["scoring_entrypoint"])
    body.update(scoring_plugin_id=plugin_id, slug=f"doc-{uuid.uuid4().hex[:10]}")
    created = post_challenge(api, tenant["api_key"], body)
    assert created.status_code == 201, created.text
    assert created.json()["scoring"] == {
        "strategy": "custom",
        "plugin_id": plugin_id,
        "config": {"budget": 500},
        "timeout_ms": 5000,
    }
