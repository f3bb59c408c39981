"""Challenge templates over REST: every template of every kind saves with only a title (its
slug made from the title) and its sample test run completes through a real worker, showing
the challenge working offline; the templates are their tenant admins' to read; and a body's
problems come all at once, each in plain words beside the validator's."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.conftest import Api, Worker

pytestmark = pytest.mark.integration


def _templates(api: Api, key: str) -> list[dict[str, Any]]:
    """Every template, a page of two at a time (the list pages as every list does)."""
    found: list[dict[str, Any]] = []
    while True:
        page = api.request(
            "GET", "/v1/challenge-templates", key, params={"limit": 2, "offset": len(found)}
        )
        assert page.status_code == 200, page.text
        body = page.json()
        found.extend(body["items"])
        if len(found) >= body["total"]:
            return found


def _finished(api: Api, key: str, run_id: str, timeout: float = 90) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        response = api.request("GET", f"/v1/test-runs/{run_id}", key)
        assert response.status_code == 200, response.text
        run = dict(response.json())
        if run["status"] in ("completed", "error"):
            return run
        assert time.monotonic() < deadline, f"test run still {run['status']}"
        time.sleep(0.05)


def test_every_template_saves_with_only_a_title_and_its_test_run_shows_it_working(
    api: Api, worker: Worker, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    templates = _templates(api, key)
    names = [template["name"] for template in templates]
    # At least the three a new organizer starts from; each kind's default first.
    assert names[0] == "prompt-injection"
    assert {"benchmark-arcagi2-sample-passk", "red-blue-guard"} <= set(names)
    assert len(names) == len(set(names))
    assert {template["kind"] for template in templates} == {"prompt", "benchmark", "red_blue"}
    for template in templates:
        title = f"My {template['title']}"
        created = api.request(
            "POST", "/v1/challenges", key, json={"template": template["name"], "title": title}
        )
        assert created.status_code == 201, (template["name"], created.text)
        challenge = created.json()
        # What the template holds is what was saved; the slug comes from the title.
        assert challenge["kind"] == template["kind"] and challenge["title"] == title
        assert challenge["slug"].startswith("my-")
        for section, value in template["body"].items():
            if isinstance(value, dict) and section in challenge:
                assert value.items() <= challenge[section].items(), (template["name"], section)
        started = api.request(
            "POST", f"/v1/challenges/{challenge['id']}/test-runs", key, json=template["test_run"]
        )
        assert started.status_code == 202, (template["name"], started.text)
        run = _finished(api, key, started.json()["id"])
        assert run["status"] == "completed", (template["name"], run["error"], run["error_detail"])
        assert run["reply"] is not None and run["verdict"] is not None, template["name"]
        assert run["cost_usd"] == 0.0, template["name"]  # offline: free, and priced as such
        if template["kind"] == "prompt":
            assert run["verdict"]["success"] is True, run["verdict"]
        if template["kind"] == "red_blue":
            # The sample defense holds: no category is breached.
            assert run["verdict"]["success"] is False, run["verdict"]
            assert run["kind_metrics"]["breached"] == [], run["kind_metrics"]
    # The same title again: the next free slug.
    first = templates[0]
    again = api.request(
        "POST",
        "/v1/challenges",
        key,
        json={"template": first["name"], "title": f"My {first['title']}"},
    )
    assert again.status_code == 201, again.text
    assert again.json()["slug"].endswith("-2")


def test_a_template_is_laid_under_the_body_as_a_merge_patch(
    api: Api, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    created = api.request(
        "POST",
        "/v1/challenges",
        key,
        json={
            "template": "prompt-injection",
            "slug": "own-slug",
            "title": "Own",
            "target": {"system_prompt": "Never say PWNED.", "max_tokens": None},
            "visibility": "private",
        },
    )
    assert created.status_code == 201, created.text
    challenge = created.json()
    assert challenge["slug"] == "own-slug" and challenge["visibility"] == "private"
    template = api.request("GET", "/v1/challenge-templates/prompt-injection", key).json()
    # The given fields of `target` replace the template's, the others stay; null removes one.
    assert challenge["target"]["model"] == template["body"]["target"]["model"]
    assert challenge["target"]["system_prompt"] == "Never say PWNED."
    assert challenge["target"]["max_tokens"] is None
    assert challenge["verifier"] == template["body"]["verifier"]


def test_templates_are_their_tenant_admins_and_an_unknown_one_is_named(
    api: Api, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    member = api.request("POST", "/v1/api-keys", key, json={"name": "app", "role": "member"})
    assert member.status_code == 201, member.text
    member_key = member.json()["key"]
    assert api.request("GET", "/v1/challenge-templates", member_key).status_code == 403
    assert api.request("GET", "/v1/challenge-templates").status_code == 401
    assert api.request("GET", "/v1/challenge-templates/nope", key).status_code == 404
    one = api.request("GET", "/v1/challenge-templates/red-blue-guard", key)
    assert one.status_code == 200 and one.json()["kind"] == "red_blue"
    only = api.request("GET", "/v1/challenge-templates", key, params={"kind": "red_blue"}).json()
    assert [t["kind"] for t in only["items"]] == ["red_blue"] * only["total"]
    refused = api.request(
        "POST", "/v1/challenges", key, json={"template": "nope", "title": "T", "slug": "Bad!"}
    )
    assert refused.status_code == 422, refused.text
    fields = [detail["field"] for detail in refused.json()["error"]["details"]]
    assert fields[0] == "template" and "slug" in fields


# The three mistakes of tests/e2e/test_web_authoring.py's form, over REST: the red-blue
# template's body as its form shows it, but for a slug that is no slug, a judge suite whose
# one field is misspelt, and a close before the opening.
THREE_MISTAKES = {
    "slug": "Guard It",
    "title": "Guard it",
    "judge_suite": {
        "categries": [{"name": "pwned", "verifier": {"type": "contains", "pattern": "PWNED"}}]
    },
    "opens_at": "2030-01-02T00:00:00Z",
    "closes_at": "2030-01-01T00:00:00Z",
}
THREE_PROBLEMS = [
    (
        "slug",
        "use 1 to 64 lowercase letters, digits and hyphens, starting and ending with a letter "
        "or digit",
    ),
    ("judge_suite.categries", "unknown field; did you mean 'categories'?"),
    (
        "closes_at",
        "must be after opens_at: it is 2030-01-01 00:00 UTC, and opens_at is 2030-01-02 00:00 UTC",
    ),
]


def test_a_body_with_three_mistakes_gets_three_problems_in_plain_words(
    api: Api, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    template = api.request("GET", "/v1/challenge-templates/red-blue-guard", key).json()
    body = {**template["body"], **THREE_MISTAKES}
    refused = api.request("POST", "/v1/challenges", key, json=body)
    assert refused.status_code == 422, refused.text
    error = refused.json()["error"]
    problems = [(detail["field"], detail["message"]) for detail in error["details"]]
    assert sorted(problems) == sorted(THREE_PROBLEMS)
    # The validator's words stay, for programs; `loc` and `msg` as they always were.
    by_field = {detail["field"]: detail for detail in error["details"]}
    slug = by_field["slug"]
    assert slug["loc"] == ["body", "slug"] and slug["type"] == "string_pattern_mismatch"
    assert slug["validator_message"] == slug["msg"]
    assert slug["msg"].startswith("String should match pattern")
    # The message lists them, in plain words.
    for field, message in THREE_PROBLEMS:
        assert f"{field}: {message}" in error["message"]


def test_the_checks_that_need_the_world_outside_come_all_at_once_too(
    api: Api, tenant: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once the body is well formed, every model no worker could call is named at once, with
    the kind's own rules."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    keyless = "anthropic/claude-3-5-haiku-latest"
    body = {
        "template": "prompt-injection",
        "title": "T",
        "target": {"model": keyless},
        "verifier": {"type": "llm_judge", "model": keyless, "rubric": "r"},
        "evaluation": {"metric": "seq@k", "k": 2, "feedback_mode": "nope"},
    }
    refused = api.request("POST", "/v1/challenges", tenant["api_key"], json=body)
    assert refused.status_code == 422, refused.text
    fields = sorted(detail["field"] for detail in refused.json()["error"]["details"])
    assert fields == ["evaluation.feedback_mode", "target.model", "verifier.model"], fields
