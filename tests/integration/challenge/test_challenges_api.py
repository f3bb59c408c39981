"""Challenge CRUD and validation over HTTP: invalid configs answer 422 naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import ADMIN_TOKEN, Api

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"verifier": {"type": "regex", "pattern": "(unclosed"}}, "verifier.pattern: "),
        ({"verifier": {"type": "telepathy"}}, "verifier"),
        ({"target": {"model": "nosuchprovider/model-x"}}, "target.model"),
        ({"target": {"model": "offline/nope"}}, "target.model"),
        ({"target": {"model": "gpt-unknown-bare-name"}}, "target.model"),
        # No base URL to call it at: refused when saved, not at the first call.
        ({"target": {"model": "openai-compatible/llama"}}, "target.api_base"),
        (
            {"verifier": {"type": "llm_judge", "model": "openai-compatible/j", "rubric": "r"}},
            "verifier.model",
        ),
        (
            {"target": {"model": "offline/echo", "user_template": "no placeholder"}},
            "target.user_template",
        ),
        (
            {"target": {"model": "offline/echo", "api_base": "http://10.0.0.1/v1"}},
            "target.api_base",
        ),
        ({"target": {"model": "offline/echo", "temperature": 5}}, "target.temperature"),
        ({"evaluation": {"metric": "pass@k", "k": 0}}, "evaluation.k"),
        ({"evaluation": {"metric": "pass@k", "k": 21}}, "evaluation.k"),
        ({"evaluation": {"metric": "best@k", "k": 2}}, "evaluation.metric"),
        (
            {"evaluation": {"metric": "seq@k", "k": 2, "feedback_mode": "vibes"}},
            "evaluation.feedback_mode",
        ),
        ({"scoring": {"strategy": "custom", "plugin_id": "no.such.plugin"}}, "scoring.plugin_id"),
        ({"scoring": {"strategy": "custom"}}, "scoring"),
        ({"scoring": {"strategy": "highest_rating"}}, "highest_rating"),
        ({"scoring": {"strategy": "most_vibes"}}, "scoring.strategy"),
        ({"limits": {"max_attempts_per_day": 0}}, "limits.max_attempts_per_day"),
        ({"visibility": "secret"}, "visibility"),
        ({"slug": "Not A Slug"}, "slug"),
        ({"kind": "blue_green"}, "kind"),
        ({"kind": "red_blue"}, "verifier"),
        ({"unknown_field": 1}, "unknown_field"),
        ({"opens_at": "2030-01-02T00:00:00Z", "closes_at": "2030-01-01T00:00:00Z"}, "closes_at"),
        ({"opens_at": "2030-01-01T00:00:00"}, "opens_at"),
    ],
)
def test_invalid_configs_answer_422_naming_the_field(
    api: Api, tenant: dict[str, Any], overrides: dict[str, Any], field: str
) -> None:
    body: dict[str, Any] = {
        "slug": "valid-slug",
        "title": "T",
        "target": {"model": "offline/echo"},
        "verifier": {"type": "contains", "pattern": "PWNED"},
    }
    body.update(overrides)
    response = api.request("POST", "/v1/challenges", tenant["api_key"], json=body)
    assert response.status_code == 422, response.text
    assert field in response.json()["error"]["message"], response.json()


def test_a_misspelt_field_is_named_with_the_one_it_probably_meant(
    api: Api, tenant: dict[str, Any]
) -> None:
    body = {
        "slug": "typo",
        "title": "T",
        "target": {"modle": "offline/echo"},
        "verifier": {"type": "contains", "pattern": "PWNED"},
    }
    response = api.request("POST", "/v1/challenges", tenant["api_key"], json=body)
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["message"] == "target.modle: unknown field; did you mean 'model'?"
    top = api.request("POST", "/v1/challenges", tenant["api_key"], json={**body, "titel": "T"})
    # Every problem at once: the misspelt top-level field and the misspelt section's field.
    assert top.json()["error"]["message"] == (
        "titel: unknown field; did you mean 'title'?; "
        "target.modle: unknown field; did you mean 'model'?"
    )
    # An optional field misspelt: the field it probably meant, though nothing is missing.
    optional = {**body, "target": {"model": "offline/echo", "system_promt": "x"}}
    response = api.request("POST", "/v1/challenges", tenant["api_key"], json=optional)
    assert response.json()["error"]["message"] == (
        "target.system_promt: unknown field; did you mean 'system_prompt'?"
    )
    # Inside a tagged union (the verifier's `type`), named as written, without the tag.
    tagged = {**body, "target": {"model": "offline/echo"}}
    tagged["verifier"] = {"type": "contains", "patern": "PWNED"}
    response = api.request("POST", "/v1/challenges", tenant["api_key"], json=tagged)
    assert response.json()["error"]["message"] == (
        "verifier.patern: unknown field; did you mean 'pattern'?"
    )
    assert response.json()["error"]["details"][0]["loc"] == ["body", "verifier", "patern"]


def test_a_misspelt_field_of_any_request_body_is_named_with_the_one_it_probably_meant(
    api: Api, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    body = {
        "slug": "typos",
        "title": "T",
        "target": {"model": "offline/echo"},
        "verifier": {"type": "contains", "pattern": "PWNED"},
    }

    def message(method: str, path: str, token: str, sent: Any) -> str:
        response = api.request(method, path, token, json=sent)
        assert response.status_code == 422, response.text
        return str(response.json()["error"]["message"])

    # A section of the challenge body's own, and the body's own top level.
    wrong = {**body, "scoring": {"stratgy": "first"}}
    assert message("POST", "/v1/challenges", key, wrong) == (
        "scoring.stratgy: unknown field; did you mean 'strategy'?"
    )
    wrong = {**body, "visibilty": "public"}
    assert message("POST", "/v1/challenges", key, wrong) == (
        "visibilty: unknown field; did you mean 'visibility'?"
    )
    challenge = api.create_challenge(key)
    path = f"/v1/challenges/{challenge['id']}"
    assert message("PATCH", path, key, {"visibilty": "public"}) == (
        "visibilty: unknown field; did you mean 'visibility'?"
    )
    assert message("PATCH", path, key, {"limits": {"max_attempts_per_dya": 3}}).startswith(
        "limits.max_attempts_per_dya: unknown field; did you mean 'max_attempts_per_"
    )
    # Other operations' bodies: an attempt's own field, an API key's, a tenant's.
    attempt = {"participnt": "amy", "prompt": "PWNED"}
    assert message("POST", f"{path}/attempts", key, attempt) == (
        "participnt: unknown field; did you mean 'participant'?"
    )
    assert message("POST", "/v1/api-keys", key, {"name": "k", "rol": "member"}).startswith(
        "rol: unknown field; did you mean 'role'?"
    )
    assert message("POST", "/v1/tenants", ADMIN_TOKEN, {"slug": "t", "nmae": "T"}).startswith(
        "nmae: unknown field; did you mean 'name'?"
    )


def test_crud_round_trip(api: Api, tenant: dict[str, Any]) -> None:
    key = tenant["api_key"]
    created = api.create_challenge(
        key,
        verifier={"type": "rubric", "correct_keywords": ["$1.4M"], "incorrect_patterns": ["$1.2M"]},
        target={"model": "openai/gpt-4o-mini", "system_prompt": "secret", "temperature": 0.2},
    )
    assert created["target"]["system_prompt"] == "secret"
    assert created["status"] == "open"
    duplicate = api.request(
        "POST",
        "/v1/challenges",
        key,
        json={
            "slug": created["slug"],
            "title": "x",
            "target": {"model": "offline/echo"},
            "verifier": {"type": "contains", "pattern": "x"},
        },
    )
    assert duplicate.status_code == 409

    patched = api.request(
        "PATCH",
        f"/v1/challenges/{created['id']}",
        key,
        json={"title": "New title", "evaluation": {"metric": "seq@k", "k": 3}},
    )
    assert patched.status_code == 200, patched.text
    assert patched.json()["title"] == "New title"
    assert patched.json()["evaluation"]["k"] == 3
    assert patched.json()["target"]["system_prompt"] == "secret"
    # A patch is validated as a whole; a bad one changes nothing.
    bad = api.request(
        "PATCH", f"/v1/challenges/{created['id']}", key, json={"scoring": {"strategy": "custom"}}
    )
    assert bad.status_code == 422
    bad = api.request(
        "PATCH",
        f"/v1/challenges/{created['id']}",
        key,
        json={"scoring": {"strategy": "highest_rating"}},
    )
    assert bad.status_code == 422 and "llm_judge" in bad.json()["error"]["message"]
    assert api.request("GET", f"/v1/challenges/{created['id']}", key).json()["title"] == "New title"

    unlisted = api.create_challenge(key, visibility="unlisted")
    listed = api.request("GET", "/v1/challenges?limit=1", key).json()
    assert listed["total"] == 2 and len(listed["items"]) == 1
    filtered = api.request("GET", "/v1/challenges?visibility=unlisted", key).json()
    assert [c["id"] for c in filtered["items"]] == [unlisted["id"]]
    assert filtered["total"] == 1

    assert api.request("DELETE", f"/v1/challenges/{created['id']}", key).status_code == 204
    assert api.request("GET", f"/v1/challenges/{created['id']}", key).status_code == 404
    assert api.request("DELETE", f"/v1/challenges/{created['id']}", key).status_code == 404


def test_openapi_documents_the_contract(api: Api) -> None:
    spec = api.request("GET", "/openapi.json").json()
    paths = spec["paths"]
    for path in (
        "/healthz",
        "/v1/tenants",
        "/v1/api-keys",
        "/v1/challenges",
        "/v1/challenges/{challenge_id}",
        "/v1/challenges/{challenge_id}/attempts",
        "/v1/attempts/{attempt_id}",
        "/v1/challenges/{challenge_id}/leaderboard",
        "/v1/public/{tenant_slug}/challenges/{challenge_slug}/leaderboard",
        "/v1/scorers",
    ):
        assert path in paths, path
    health = api.request("GET", "/healthz")
    assert health.status_code == 200 and health.json()["checks"]["database"] == {"ok": True}
    # Every operation is grouped under a tag, and the groups come in reading order (the
    # routers are matched in another order, busiest first).
    used = {
        tag for operations in paths.values() for op in operations.values() for tag in op["tags"]
    }
    listed = [tag["name"] for tag in spec["tags"]]
    assert listed[:3] == ["tenants", "api keys", "participants"]
    assert used <= set(listed)
    submit = paths["/v1/challenges/{challenge_id}/attempts"]["post"]
    assert submit["responses"]["202"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/AttemptRead"
    }
    assert [p["name"] for p in submit["parameters"]] == ["challenge_id", "Idempotency-Key"]


def test_every_list_says_which_page_it_is(api: Api, tenant: dict[str, Any]) -> None:
    """Lists answer `limit` and `offset` beside `items` and `total`, as leaderboards do."""
    key = tenant["api_key"]
    challenge = api.create_challenge(key)
    attempt = api.submit(key, challenge["id"], "PWNED", "pat").json()
    pages = {
        "/v1/challenges?limit=3&offset=0": key,
        f"/v1/challenges/{challenge['id']}/attempts?limit=2&offset=1": key,
        "/v1/attempts?limit=5": key,
        f"/v1/attempts/{attempt['id']}/trials?limit=4&offset=2": key,
        "/v1/participants?limit=7&offset=3": key,
        "/v1/tenants?limit=1&offset=0": ADMIN_TOKEN,
    }
    for path, token in pages.items():
        body = api.request("GET", path, token).json()
        query = dict(part.split("=") for part in path.split("?")[1].split("&"))
        assert body["limit"] == int(query["limit"]), path
        assert body["offset"] == int(query.get("offset", 0)), path
        assert isinstance(body["items"], list) and isinstance(body["total"], int), path
    unknown = api.request("GET", "/v1/attempts?participant=nobody-here&limit=9&offset=4", key)
    assert unknown.json() == {"items": [], "total": 0, "limit": 9, "offset": 4}


def test_a_draft_is_its_admins_alone_until_published_and_an_archived_challenge_is_read_only(
    api: Api, tenant: dict[str, Any]
) -> None:
    key, slug = tenant["api_key"], tenant["slug"]
    member = api.request("POST", "/v1/api-keys", key, json={"name": "m", "role": "member"})
    member_key = member.json()["key"]
    draft = api.create_challenge(key, state="draft", visibility="public")
    path = f"/v1/challenges/{draft['id']}"
    assert draft["state"] == "draft" and draft["status"] == "draft"

    def listed(caller: str, **params: Any) -> list[str]:
        found = api.request("GET", "/v1/challenges", caller, params=params).json()["items"]
        return [c["id"] for c in found]

    def public_list() -> str:  # the home page: tenants with public challenges
        return api.request("GET", "/").text

    # A draft: its admins read and list it; nobody else sees or plays it.
    assert draft["id"] in listed(key)
    assert draft["id"] not in listed(member_key)
    assert api.request("GET", path, member_key).status_code == 404
    assert api.request("GET", path, key).json()["status"] == "draft"
    # (The public API's answers are cached for seconds: its first read comes once published.)
    web_page = f"/t/{slug}/challenges/{draft['slug']}"
    public_board = f"/v1/public/{slug}/challenges/{draft['slug']}/leaderboard"
    assert api.request("GET", web_page).status_code == 404
    refused = api.submit(key, draft["id"], "PWNED", "ada")
    assert refused.status_code == 409 and "draft" in refused.json()["error"]["message"]

    # Published: live, listed, playable.
    published = api.request("PATCH", path, key, json={"state": "live"})
    assert published.status_code == 200 and published.json()["status"] == "open"
    assert draft["id"] in listed(member_key)
    assert api.request("GET", web_page).status_code == 200
    assert api.request("GET", public_board).status_code == 200
    assert api.submit(key, draft["id"], "PWNED", "ada").status_code == 202

    # Archived: hidden from lists (unless asked for), read-only, its pages and board kept.
    archived = api.request("PATCH", path, key, json={"state": "archived"})
    assert archived.status_code == 200 and archived.json()["status"] == "archived"
    assert draft["id"] not in listed(key) and draft["id"] not in listed(member_key)
    assert listed(key, state="archived") == [draft["id"]]
    assert draft["slug"] not in public_list()
    assert "archived" in api.request("GET", web_page).text.lower()
    assert api.request("GET", f"{path}/leaderboard", key).status_code == 200
    late = api.submit(key, draft["id"], "PWNED", "bob")
    assert late.status_code == 409 and "archived" in late.json()["error"]["message"]
    edit = api.request("PATCH", path, key, json={"title": "Renamed"})
    assert edit.status_code == 409 and "archived" in edit.json()["error"]["message"]
    assert api.request("PATCH", path, key, json={"state": "live"}).json()["status"] == "open"
    assert api.request("PATCH", path, key, json={"title": "Renamed"}).status_code == 200

    # A new challenge is a draft or live, never archived; members change no state.
    born_archived = api.request(
        "POST",
        "/v1/challenges",
        key,
        json={
            "slug": "born-archived",
            "title": "x",
            "target": {"model": "offline/echo"},
            "verifier": {"type": "contains", "pattern": "x"},
            "state": "archived",
        },
    )
    assert born_archived.status_code == 422
    assert born_archived.json()["error"]["details"][0]["loc"][-1] == "state"
    assert api.request("PATCH", path, member_key, json={"state": "draft"}).status_code == 403
