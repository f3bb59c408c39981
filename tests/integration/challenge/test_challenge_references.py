"""A tenant names a challenge by its id or by its slug on every route that takes one, as the
public addresses do: the answers are the same either way. A slug resolves only within the
caller's tenant (another tenant's slug answers 404, as its ids do), and no slug can read as an
id, so no reference is ambiguous."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from tests.conftest import Api, Worker
from tests.integration.red_blue.test_redblue import (
    PLAIN,
    WEAK,
    attack,
    create,
    defend,
    rated_board,
    settled_matches,
)

pytestmark = pytest.mark.integration

DELETED = "/v1/deleted-challenges/"


def _get(api: Api, key: str, path: str) -> Any:
    response = api.request("GET", path, key)
    assert response.status_code == 200, (path, response.text)
    return response.json()


def _same_by_slug_and_id(api: Api, key: str, challenge: dict[str, Any], path: str) -> Any:
    """GET `path` (with `{ref}` for the challenge) by slug and by id: the same answer."""
    by_slug = _get(api, key, path.format(ref=challenge["slug"]))
    by_id = _get(api, key, path.format(ref=challenge["id"]))
    assert by_slug == by_id, path
    return by_slug


def _same_items_by_slug_and_id(
    api: Api, key: str, challenge: dict[str, Any], path: str
) -> list[str]:
    """The ids of the items a list answers by slug and by id (runs still under way change
    between two reads, their ids do not)."""
    by_slug = _get(api, key, path.format(ref=challenge["slug"]))
    by_id = _get(api, key, path.format(ref=challenge["id"]))
    ids = [item["id"] for item in by_slug["items"]]
    assert ids == [item["id"] for item in by_id["items"]], path
    assert by_slug["total"] == by_id["total"], path
    return ids


def test_every_tenant_route_that_names_a_challenge_takes_its_id_or_slug(api: Api) -> None:
    """The document says so for each of them: a challenge parameter is a reference (text),
    never a bare UUID, on every route outside the public ones (which take slugs only)."""
    document = api.request("GET", "/openapi.json").json()
    named = []
    for path, item in document["paths"].items():
        for method, operation in item.items():
            for parameter in operation.get("parameters", []):
                # A deleted challenge is named by its id alone: its slug may be taken again.
                if parameter["name"] != "challenge_id" or path.startswith(DELETED):
                    continue
                named.append((method, path))
                assert "or its slug" in json.dumps(parameter), (method, path, parameter)
                assert "uuid" not in json.dumps(parameter["schema"]), (method, path)
    paths = {path for _, path in named}
    for family in (
        "/v1/challenges/{challenge_id}",
        "/v1/challenges/{challenge_id}/attempts",
        "/v1/challenges/{challenge_id}/leaderboard",
        "/v1/challenges/{challenge_id}/exports/{name}",
        "/v1/challenges/{challenge_id}/matches",
        "/v1/challenges/{challenge_id}/test-runs",
        "/v1/challenges/{challenge_id}/practice-runs",
        "/v1/challenges/{challenge_id}/rescore",
        "/v1/attempts",
    ):
        assert family in paths, family


def test_a_prompt_challenge_is_played_read_exported_and_deleted_by_its_slug(
    api: Api, worker: Worker, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    challenge = api.create_challenge(key, visibility="public")
    slug, cid = challenge["slug"], challenge["id"]

    # Challenges.
    assert _same_by_slug_and_id(api, key, challenge, "/v1/challenges/{ref}")["id"] == cid
    patched = api.request("PATCH", f"/v1/challenges/{slug}", key, json={"title": "By slug"})
    assert patched.status_code == 200, patched.text
    assert patched.json()["id"] == cid and patched.json()["title"] == "By slug"

    # Attempts.
    submitted = api.submit(key, slug, "PWNED", "pat")
    assert submitted.status_code == 202, submitted.text
    assert submitted.json()["challenge_id"] == cid
    assert api.wait_finished(key, submitted.json()["id"])["status"] == "completed"
    listed = _same_by_slug_and_id(api, key, challenge, "/v1/challenges/{ref}/attempts")
    assert [a["id"] for a in listed["items"]] == [submitted.json()["id"]]
    filtered = _same_by_slug_and_id(api, key, challenge, "/v1/attempts?challenge_id={ref}")
    assert filtered == listed
    left = _same_by_slug_and_id(
        api, key, challenge, "/v1/challenges/{ref}/attempts/left?participant=pat"
    )
    assert "left_total" in left
    rerun = api.request("POST", f"/v1/challenges/{slug}/attempts/rerun-failed", key)
    assert rerun.status_code == 202 and rerun.json() == {"queued": 0}

    # Leaderboards.
    board = _same_by_slug_and_id(api, key, challenge, "/v1/challenges/{ref}/leaderboard")
    assert [row["participant"] for row in board["items"]] == ["pat"]

    # Exports.
    offered = _same_by_slug_and_id(api, key, challenge, "/v1/challenges/{ref}/exports")
    for name in (item["name"] for item in offered["items"]):
        by_slug = api.request("GET", f"/v1/challenges/{slug}/exports/{name}?format=json", key)
        by_id = api.request("GET", f"/v1/challenges/{cid}/exports/{name}?format=json", key)
        assert by_slug.status_code == 200 and by_slug.content == by_id.content, name

    # Test runs and practice.
    tested = api.request("POST", f"/v1/challenges/{slug}/test-runs", key, json={"prompt": "x"})
    assert tested.status_code == 202, tested.text
    runs = _same_items_by_slug_and_id(api, key, challenge, "/v1/challenges/{ref}/test-runs")
    assert runs == [tested.json()["id"]]
    practice = {"participant": "pat", "prompt": "PWNED"}
    practised = api.request("POST", f"/v1/challenges/{slug}/practice-runs", key, json=practice)
    assert practised.status_code == 202, practised.text
    runs = _same_items_by_slug_and_id(api, key, challenge, "/v1/challenges/{ref}/practice-runs")
    assert runs == [practised.json()["id"]]
    quota = "/v1/challenges/{ref}/practice-runs/left?participant=pat"
    assert _same_by_slug_and_id(api, key, challenge, quota)["left_today"] >= 0

    # Rescoring.
    job = api.request("POST", f"/v1/challenges/{slug}/rescore", key)
    assert job.status_code == 202, job.text
    jobs = api.request("GET", f"/v1/challenges/{slug}/rescore-jobs", key).json()
    assert [j["id"] for j in jobs["items"]] == [job.json()["id"]]

    # The board's slug, public and tenant, names the same challenge.
    public = f"/v1/public/{tenant['slug']}/challenges/{slug}/leaderboard"
    assert api.request("GET", public).json()["challenge_id"] == cid

    assert api.request("DELETE", f"/v1/challenges/{slug}", key).status_code == 204
    assert api.request("GET", f"/v1/challenges/{cid}", key).status_code == 404
    assert api.request("GET", f"/v1/challenges/{slug}", key).status_code == 404


def test_a_red_blue_challenge_takes_entries_and_shows_its_boards_by_its_slug(
    api: Api, worker: Worker, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    challenge = create(api, key)
    slug = challenge["slug"]
    defense = defend(api, key, slug, "bob", WEAK)
    assert defense["status"] == "active" and defense["challenge_id"] == challenge["id"]
    entry = attack(api, key, slug, "pam", PLAIN)
    assert entry["challenge_id"] == challenge["id"]
    settled_matches(api, key, slug, 1)
    rated_board(api, key, slug, 1)
    matches = _same_by_slug_and_id(api, key, challenge, "/v1/challenges/{ref}/matches")
    assert [(m["attack_id"], m["defense_id"]) for m in matches["items"]] == [
        (entry["id"], defense["id"])
    ]
    assert _same_by_slug_and_id(api, key, challenge, "/v1/challenges/{ref}/standings")
    for side, who in (("red", "pam"), ("blue", "bob")):
        path = f"/v1/challenges/{{ref}}/leaderboard?side={side}"
        board = _same_by_slug_and_id(api, key, challenge, path)
        assert [row["participant"] for row in board["items"]] == [who]
    offered = _same_by_slug_and_id(api, key, challenge, "/v1/challenges/{ref}/exports")
    assert {"defenses", "attacks", "matches"} <= {item["name"] for item in offered["items"]}
    blue_test = {"system_prompt": WEAK, "prompt": PLAIN}
    tested = api.request("POST", f"/v1/challenges/{slug}/test-runs", key, json=blue_test)
    assert tested.status_code == 202, tested.text


def test_a_slug_names_only_the_callers_own_challenge(api: Api) -> None:
    first, second = api.create_tenant(), api.create_tenant()
    shared = f"shared-{uuid.uuid4().hex[:8]}"
    mine = api.create_challenge(first["api_key"], slug=shared)
    theirs = api.create_challenge(second["api_key"], slug=shared)
    assert (
        api.request("GET", f"/v1/challenges/{shared}", first["api_key"]).json()["id"]
        == (mine["id"])
    )
    assert (
        api.request("GET", f"/v1/challenges/{shared}", second["api_key"]).json()["id"]
        == (theirs["id"])
    )
    submitted = api.submit(second["api_key"], shared, "PWNED", "pat")
    assert submitted.json()["challenge_id"] == theirs["id"]
    assert (
        api.submit(first["api_key"], shared, "PWNED", "pat").json()["challenge_id"] == (mine["id"])
    )

    # A slug only the other tenant has answers as an id it does not have: 404, alike.
    only_theirs = api.create_challenge(second["api_key"])["slug"]
    unknown_id = str(uuid.uuid4())
    key = first["api_key"]
    for template, method, body in (
        ("/v1/challenges/{}", "GET", None),
        ("/v1/challenges/{}", "PATCH", {"title": "x"}),
        ("/v1/challenges/{}", "DELETE", None),
        ("/v1/challenges/{}/attempts", "POST", {"participant": "pat", "prompt": "PWNED"}),
        ("/v1/challenges/{}/attempts", "GET", None),
        ("/v1/challenges/{}/attempts/left?participant=pat", "GET", None),
        ("/v1/challenges/{}/leaderboard", "GET", None),
        ("/v1/challenges/{}/exports", "GET", None),
        ("/v1/challenges/{}/exports/attempts", "GET", None),
        ("/v1/challenges/{}/matches", "GET", None),
        ("/v1/challenges/{}/standings", "GET", None),
        ("/v1/challenges/{}/defenses", "POST", {"participant": "b", "system_prompt": "x"}),
        ("/v1/challenges/{}/attacks", "POST", {"participant": "r", "prompt": "x"}),
        ("/v1/challenges/{}/test-runs", "POST", {"prompt": "x"}),
        ("/v1/challenges/{}/practice-runs", "POST", {"participant": "pat", "prompt": "x"}),
        ("/v1/challenges/{}/rescore", "POST", None),
        ("/v1/challenges/{}/rescore-jobs", "GET", None),
        ("/v1/challenges/{}/final-submissions?participant=pat", "GET", None),
        ("/v1/challenges/{}/private-leaderboard", "GET", None),
    ):
        by_slug = api.request(method, template.format(only_theirs), key, json=body)
        by_id = api.request(method, template.format(unknown_id), key, json=body)
        assert by_slug.status_code == 404, (template, method, by_slug.text)
        assert by_slug.json() == by_id.json(), (template, method)
    # A list filtered by an id it has no attempt of is an empty page; by a slug that names
    # none of the tenant's challenges, a mistake to report.
    filtered = api.request("GET", f"/v1/attempts?challenge_id={only_theirs}", key)
    assert filtered.status_code == 404
    assert filtered.json()["error"]["message"] == "challenge not found"
    # ... and the other tenant's challenge was left alone.
    assert (
        api.request("GET", f"/v1/challenges/{only_theirs}", second["api_key"]).json()["title"]
        != "x"
    )


def test_a_members_slug_reads_as_its_id_does(api: Api, tenant: dict[str, Any]) -> None:
    """A draft is its admins' only, by slug as by id; a member's key resolves slugs too."""
    key = tenant["api_key"]
    member = api.request("POST", "/v1/api-keys", key, json={"name": "m", "role": "member"})
    member_key = member.json()["key"]
    draft = api.create_challenge(key, state="draft")
    live = api.create_challenge(key)
    assert api.request("GET", f"/v1/challenges/{draft['slug']}", member_key).status_code == 404
    assert api.request("GET", f"/v1/challenges/{draft['slug']}", key).status_code == 200
    assert (
        api.request("GET", f"/v1/challenges/{live['slug']}", member_key).json()["id"]
        == (live["id"])
    )
    # A member may not do an admin's work by slug either.
    path = f"/v1/challenges/{live['slug']}/rescore"
    assert api.request("POST", path, member_key).status_code == 403


@pytest.mark.parametrize(
    "slug",
    [
        "3f2b8a4e-5c1d-4e6f-9a7b-0c1d2e3f4a5b",  # the form the API writes ids in
        "3f2b8a4e5c1d4e6f9a7b0c1d2e3f4a5b",  # 32 hex digits
    ],
)
def test_a_slug_that_reads_as_an_id_is_refused_naming_the_field(
    api: Api, tenant: dict[str, Any], slug: str
) -> None:
    body = {
        "slug": slug,
        "title": "T",
        "target": {"model": "offline/echo"},
        "verifier": {"type": "contains", "pattern": "PWNED"},
    }
    response = api.request("POST", "/v1/challenges", tenant["api_key"], json=body)
    assert response.status_code == 422, response.text
    assert response.json()["error"]["message"].startswith("slug: ")
    assert "UUID" in response.json()["error"]["message"]


def test_a_reference_that_is_neither_an_id_nor_a_slug_answers_404(
    api: Api, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    assert api.request("GET", "/v1/challenges/Not%20A%20Slug", key).status_code == 404
    too_long = "a" * 65
    refused = api.request("GET", f"/v1/challenges/{too_long}", key)
    assert refused.status_code == 422 and "challenge_id" in refused.json()["error"]["message"]


def test_a_slug_taken_again_after_a_delete_names_the_live_challenge(
    api: Api, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    first = api.create_challenge(key)
    slug = first["slug"]
    assert api.request("DELETE", f"/v1/challenges/{slug}", key).status_code == 204
    assert api.request("GET", f"/v1/challenges/{slug}", key).status_code == 404
    second = api.create_challenge(key, slug=slug)
    assert api.request("GET", f"/v1/challenges/{slug}", key).json()["id"] == second["id"]
    board = api.request("GET", f"/v1/challenges/{slug}/leaderboard", key).json()
    assert board["challenge_id"] == second["id"]
    # The deleted one is still there for its admins, by its id.
    restore = api.request("POST", f"/v1/deleted-challenges/{slug}/restore", key)
    assert restore.status_code == 422
    assert api.request("DELETE", f"/v1/deleted-challenges/{first['id']}", key).status_code == 204
