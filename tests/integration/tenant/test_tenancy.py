"""Another tenant's objects answer 404 on every endpoint, never 403, and are never counted."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.conftest import ADMIN_TOKEN, Api

pytestmark = pytest.mark.integration


@pytest.fixture
def two_tenants(api: Api) -> tuple[dict[str, Any], dict[str, Any]]:
    return api.create_tenant(), api.create_tenant()


def test_every_tenant_endpoint_hides_other_tenants_objects(
    api: Api, two_tenants: tuple[dict[str, Any], dict[str, Any]]
) -> None:
    owner, intruder = two_tenants
    key, other = owner["api_key"], intruder["api_key"]
    challenge = api.create_challenge(key, visibility="private")
    attempt = api.submit(key, challenge["id"], "PWNED", "alice").json()
    member = api.request("POST", "/v1/api-keys", key, json={"name": "m", "role": "member"}).json()
    participants = api.request("GET", "/v1/participants", key).json()["items"]
    participant_id = participants[0]["id"]
    cid = challenge["id"]
    test_run = api.request("POST", f"/v1/challenges/{cid}/test-runs", key, json={"prompt": "x"})
    practice = api.request(
        "POST", f"/v1/challenges/{cid}/practice-runs", key, json={"prompt": "x", "participant": "a"}
    )

    not_found = [
        ("GET", f"/v1/challenges/{challenge['id']}", None),
        ("PATCH", f"/v1/challenges/{challenge['id']}", {"title": "mine now"}),
        ("DELETE", f"/v1/challenges/{challenge['id']}", None),
        ("GET", f"/v1/challenges/{challenge['id']}/leaderboard", None),
        ("GET", f"/v1/challenges/{challenge['id']}/attempts", None),
        (
            "POST",
            f"/v1/challenges/{challenge['id']}/attempts",
            {"prompt": "PWNED", "participant": "mallory"},
        ),
        ("GET", f"/v1/attempts/{attempt['id']}", None),
        ("GET", f"/v1/participants/{participant_id}", None),
        ("DELETE", f"/v1/api-keys/{member['id']}", None),
        ("POST", f"/v1/challenges/{cid}/test-runs", {"prompt": "mine"}),
        ("GET", f"/v1/challenges/{cid}/test-runs", None),
        ("GET", f"/v1/test-runs/{test_run.json()['id']}", None),
        ("POST", f"/v1/challenges/{cid}/practice-runs", {"prompt": "x", "participant": "m"}),
        ("GET", f"/v1/challenges/{cid}/practice-runs", None),
        ("GET", f"/v1/challenges/{cid}/practice-runs/left?participant=a", None),
        ("GET", f"/v1/practice-runs/{practice.json()['id']}", None),
        ("POST", f"/v1/challenges/{cid}/teams", {"participant": "m", "name": "m-team"}),
        ("POST", f"/v1/challenges/{cid}/teams/join", {"participant": "m", "invite_code": "x"}),
        ("GET", f"/v1/challenges/{cid}/teams", None),
        ("GET", f"/v1/challenges/{cid}/teams/{uuid.uuid4()}", None),
        ("DELETE", f"/v1/challenges/{cid}/teams/{uuid.uuid4()}/members/m", None),
        ("POST", f"/v1/challenges/{cid}/teams/{uuid.uuid4()}/invite-code", {"participant": "m"}),
    ]
    for method, path, body in not_found:
        response = api.request(method, path, other, json=body)
        assert response.status_code == 404, (method, path, response.status_code, response.text)
        assert response.json()["error"]["code"] == "not_found"

    # Lists are scoped: the intruder sees none of the owner's objects and counts none.
    for path in ("/v1/challenges", "/v1/attempts", "/v1/participants"):
        body = api.request("GET", path, other).json()
        assert body["total"] == 0 and body["items"] == [], path
    keys = api.request("GET", "/v1/api-keys", other).json()["items"]
    assert {k["id"] for k in keys}.isdisjoint({member["id"]})
    filtered = api.request("GET", f"/v1/attempts?challenge_id={challenge['id']}", other).json()
    assert filtered["total"] == 0

    # Nothing the intruder did changed the owner's objects.
    mine = api.request("GET", f"/v1/challenges/{challenge['id']}", key)
    assert mine.status_code == 200 and mine.json()["title"] == challenge["title"]
    assert api.request("GET", "/v1/api-keys", key).json()["items"][-1]["revoked_at"] is None


def test_unknown_ids_and_private_public_leaderboards_answer_404(
    api: Api, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    assert api.request("GET", f"/v1/challenges/{uuid.uuid4()}", key).status_code == 404
    assert api.request("GET", f"/v1/attempts/{uuid.uuid4()}", key).status_code == 404
    private = api.create_challenge(key, visibility="private")
    unlisted = api.create_challenge(key, visibility="unlisted")
    for challenge in (private, unlisted):
        path = f"/v1/public/{tenant['slug']}/challenges/{challenge['slug']}/leaderboard"
        assert api.request("GET", path).status_code == 404
    public = api.create_challenge(key, visibility="public")
    path = f"/v1/public/{tenant['slug']}/challenges/{public['slug']}/leaderboard"
    assert api.request("GET", path).status_code == 200
    # The same slug under another tenant's slug is not found.
    other = api.create_tenant()
    path = f"/v1/public/{other['slug']}/challenges/{public['slug']}/leaderboard"
    assert api.request("GET", path).status_code == 404


def test_roles_and_credentials(api: Api, tenant: dict[str, Any]) -> None:
    key = tenant["api_key"]
    assert api.request("GET", "/v1/challenges").status_code == 401
    assert api.request("GET", "/v1/challenges", "gk_not-a-key").status_code == 401
    assert api.request("GET", "/v1/challenges", "Basic abc").status_code == 401
    # Tenant keys cannot create tenants; the admin token has no tenant.
    response = api.request("POST", "/v1/tenants", key, json={"slug": "x-y", "name": "x"})
    assert response.status_code == 403
    assert api.request("GET", "/v1/challenges", ADMIN_TOKEN).status_code == 403
    member = api.request("POST", "/v1/api-keys", key, json={"name": "app", "role": "member"})
    assert member.status_code == 201
    member_key = member.json()["key"]
    assert member.json()["key_prefix"] == member_key[:10]
    # Members submit and read, but do not administer.
    challenge = api.create_challenge(key)
    assert api.request("POST", "/v1/challenges", member_key, json={}).status_code == 403
    assert (
        api.request(
            "POST", "/v1/api-keys", member_key, json={"name": "x", "role": "admin"}
        ).status_code
        == 403
    )
    response = api.submit(member_key, challenge["id"], "PWNED", "bob")
    assert response.status_code == 202
    # Members see the participant view: no system prompt, no verifier pattern.
    seen = api.request("GET", f"/v1/challenges/{challenge['id']}", member_key).json()
    assert "system_prompt" not in str(seen) and "Never say" not in str(seen)
    assert seen["verifier"] == {"type": "contains"}
    # A revoked key stops working at once.
    revoked = api.request("DELETE", f"/v1/api-keys/{member.json()['id']}", key)
    assert revoked.status_code == 200 and revoked.json()["revoked_at"] is not None
    assert api.request("GET", "/v1/challenges", member_key).status_code == 401


def test_tenant_creation_shows_key_once_and_refuses_duplicates(api: Api) -> None:
    slug = f"t-{uuid.uuid4().hex[:8]}"
    created = api.request("POST", "/v1/tenants", ADMIN_TOKEN, json={"slug": slug, "name": "T"})
    assert created.status_code == 201
    assert created.json()["api_key"].startswith("gk_")
    again = api.request("POST", "/v1/tenants", ADMIN_TOKEN, json={"slug": slug, "name": "T"})
    assert again.status_code == 409
    listed = api.request("GET", "/v1/tenants?limit=200", ADMIN_TOKEN).json()
    assert listed["items"] and all("api_key" not in t for t in listed["items"])
    keys = api.request("GET", "/v1/api-keys", created.json()["api_key"]).json()["items"]
    assert len(keys) == 1 and all("key" not in k and "key_hash" not in k for k in keys)


def test_answers_with_keys_or_private_texts_are_never_kept_by_caches(api: Api) -> None:
    """Every answer under /v1 but the public reads says `Cache-Control: no-store`: new keys,
    attempts with their prompts and outputs, errors; public boards may be kept a second."""
    created = api.request(
        "POST", "/v1/tenants", ADMIN_TOKEN, json={"slug": f"t-{uuid.uuid4().hex[:8]}", "name": "t"}
    )
    assert created.status_code == 201 and created.headers["cache-control"] == "no-store"
    key = created.json()["api_key"]
    member = api.request("POST", "/v1/api-keys", key, json={"name": "m", "role": "member"})
    assert member.status_code == 201 and member.headers["cache-control"] == "no-store"
    challenge = api.create_challenge(key, visibility="public")
    attempt = api.submit(key, challenge["id"], "PWNED", "alice")
    assert attempt.headers["cache-control"] == "no-store"
    read = api.request("GET", f"/v1/attempts/{attempt.json()['id']}", key)
    assert read.headers["cache-control"] == "no-store"
    refused = api.request("GET", "/v1/challenges", "gk_not-a-key")
    assert refused.status_code == 401 and refused.headers["cache-control"] == "no-store"
    public = api.http.get(
        f"/v1/public/{created.json()['slug']}/challenges/{challenge['slug']}/leaderboard"
    )
    assert public.status_code == 200 and public.headers["cache-control"] == "public, max-age=1"
