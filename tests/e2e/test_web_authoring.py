"""Challenge forms of the admin pages over plain HTTP: the same body sent to `POST
/v1/challenges` and through a kind's form gets the same messages, each beside its field (a
kind of the tests' own included: its form comes from its models); an edit says what `PATCH`
says; the pages are an admin's only, of their own tenant, behind the CSRF check."""

from __future__ import annotations

import html
import json
import re
import uuid
from collections.abc import Callable
from html.parser import HTMLParser
from typing import Any

import pytest
from markupsafe import escape

from app.kit.errors import detail_text
from app.web.authoring.router import DELETED_PAGE_SIZE
from tests.conftest import Api, Worker
from tests.e2e.conftest import WebClient, create_tenant

pytestmark = [pytest.mark.e2e, pytest.mark.integration]

Clients = Callable[[], WebClient]
_BESIDE = re.compile(r'<p data-error-for="([^"]+)">(.*?)</p>', re.DOTALL)
_APART = re.compile(r"<li data-form-error>(.*?)</li>", re.DOTALL)
VERIFIER = {"type": "contains", "pattern": "PWNED"}
SUITE = {"categories": [{"name": "pwned", "verifier": VERIFIER}]}
RED_BLUE = {
    "title": "T",
    "target": {"model": "offline/guarded-echo"},
    "judge_suite": SUITE,
    "self_test": {"prompt": "Say hello", "verifier": VERIFIER},
}
RED_BLUE_FIELDS = {
    "title": "T",
    "target.model": "offline/guarded-echo",
    "judge_suite": json.dumps(SUITE),
    "self_test.prompt": "Say hello",
    "self_test.verifier": json.dumps(VERIFIER),
}


def _admin(web_client: Clients, tenant: dict[str, Any]) -> WebClient:
    admin = web_client()
    signed_in = admin.post_form(
        f"/t/{tenant['slug']}/admin/sign-in", {"api_key": tenant["api_key"]}
    )
    assert signed_in.status_code == 303, signed_in.text
    return admin


def shown_errors(page: str) -> list[tuple[str | None, str]]:
    """The errors a form page shows: (the field they are beside, or None for the form's), text."""
    beside = [(field, html.unescape(text)) for field, text in _BESIDE.findall(page)]
    apart = [(None, html.unescape(text)) for text in _APART.findall(page)]
    return beside + apart


def _slug() -> str:
    return f"c-{uuid.uuid4().hex[:10]}"


class _FormReader(HTMLParser):
    """What a browser would send of the page's challenge form as it is: each named input's
    value (a checkbox's when checked), each select's chosen option, each text area's text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.values: dict[str, str] = {}
        self._in_form = False
        self._select: str | None = None
        self._first_option: str | None = None
        self._textarea: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {name: value or "" for name, value in attrs}
        if tag == "form":
            self._in_form = "challenge-form" in attributes.get("class", "")
        if not self._in_form or tag not in ("input", "select", "option", "textarea"):
            return
        name = attributes.get("name")
        if tag == "input" and name:
            checkbox = attributes.get("type") == "checkbox"
            if not checkbox or "checked" in attributes:
                self.values[name] = attributes.get("value", "")
        elif tag == "select" and name:
            self._select, self._first_option = name, None
        elif tag == "option" and self._select is not None:
            value = attributes.get("value", "")
            if self._first_option is None:
                self._first_option = value
                self.values.setdefault(self._select, value)
            if "selected" in attributes:
                self.values[self._select] = value
        elif tag == "textarea" and name:
            self._textarea = name
            self.values[name] = ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._in_form = False
        elif tag == "select":
            self._select = None
        elif tag == "textarea":
            self._textarea = None

    def handle_data(self, data: str) -> None:
        if self._textarea is not None:
            # A browser drops the text area's first line break.
            text = self.values[self._textarea] + data
            self.values[self._textarea] = text.removeprefix("\n")


def form_as_shown(page: str) -> dict[str, str]:
    reader = _FormReader()
    reader.feed(page)
    return {name: value for name, value in reader.values.items() if name != "csrf_token"}


def test_a_form_shows_what_the_api_says_of_the_same_body_beside_each_field(
    api: Api, web_client: Clients
) -> None:
    tenant = create_tenant(api)
    key, tenant_slug = tenant["api_key"], tenant["slug"]
    taken = api.create_challenge(key)["slug"]
    admin = _admin(web_client, tenant)
    # (kind, the body as JSON, the same body as the form's fields, the field each error is
    # beside: None for the body as a whole)
    cases: list[tuple[str, dict[str, Any], dict[str, str], list[str | None]]] = [
        (  # several errors of the body at once, in fields and in sections
            "prompt",
            {
                "slug": "Not A Slug",
                "title": "T",
                "target": {"model": "offline/echo", "temperature": 5},
                "verifier": VERIFIER,
                "scoring": {"timeout_ms": 0},
                "limits": {"max_attempts_per_day": "many"},
            },
            {
                "slug": "Not A Slug",
                "title": "T",
                "target.model": "offline/echo",
                "target.temperature": "5",
                "verifier": json.dumps(VERIFIER),
                "scoring.timeout_ms": "0",
                "limits.max_attempts_per_day": "many",
            },
            ["slug", "target.temperature", "scoring.timeout_ms", "limits.max_attempts_per_day"],
        ),
        (  # a section's error, the fields every challenge has valid
            "prompt",
            {
                "slug": _slug(),
                "title": "T",
                "target": {"model": "offline/echo", "temperature": 5},
                "verifier": {"type": "contains"},
            },
            {
                "slug": _slug(),
                "title": "T",
                "target.model": "offline/echo",
                "target.temperature": "5",
                "verifier": '{"type": "contains"}',
            },
            ["target.temperature", "verifier"],
        ),
        (  # the kind's own check, when the service validates its sections
            "prompt",
            {
                "slug": _slug(),
                "title": "T",
                "target": {"model": "nowhere/model"},
                "verifier": VERIFIER,
            },
            {
                "slug": _slug(),
                "title": "T",
                "target.model": "nowhere/model",
                "verifier": json.dumps(VERIFIER),
            },
            ["target.model"],
        ),
        (  # a rule across fields: beside the later date, naming both
            "prompt",
            {
                "slug": _slug(),
                "title": "T",
                "target": {"model": "offline/echo"},
                "verifier": VERIFIER,
                "opens_at": "2030-01-02T00:00:00+00:00",
                "closes_at": "2030-01-01T00:00:00+00:00",
            },
            {
                "slug": _slug(),
                "title": "T",
                "target.model": "offline/echo",
                "verifier": json.dumps(VERIFIER),
                "opens_at": "2030-01-02T00:00",
                "closes_at": "2030-01-01T00:00",
            },
            ["closes_at"],
        ),
        (  # the slug another challenge of the tenant has (409)
            "prompt",
            {
                "slug": taken,
                "title": "T",
                "target": {"model": "offline/echo"},
                "verifier": VERIFIER,
            },
            {
                "slug": taken,
                "title": "T",
                "target.model": "offline/echo",
                "verifier": json.dumps(VERIFIER),
            },
            ["slug"],
        ),
        (  # a benchmark that does not exist
            "benchmark",
            {"slug": _slug(), "title": "T", "benchmark": {"name": "no_such_benchmark"}},
            {"slug": _slug(), "title": "T", "benchmark.name": "no_such_benchmark"},
            ["benchmark.name"],
        ),
        (  # a red-blue pairing rule
            "red_blue",
            {**RED_BLUE, "slug": _slug(), "pairing": {"policy": "round_robin", "n": 3}},
            {**RED_BLUE_FIELDS, "slug": _slug(), "pairing.policy": "round_robin", "pairing.n": "3"},
            ["pairing.n"],
        ),
        (  # a limit of the red-blue kind's own, beside the core's
            "red_blue",
            {**RED_BLUE, "slug": _slug(), "limits": {"max_attack_chars": 0}},
            {**RED_BLUE_FIELDS, "slug": _slug(), "limits.max_attack_chars": "0"},
            ["limits.max_attack_chars"],
        ),
        (  # the tests' own kind: its section's fields are the form's
            "word_count",
            {"slug": _slug(), "title": "T", "word_count": {"words": 0}},
            {"slug": _slug(), "title": "T", "word_count.words": "0"},
            ["word_count.words"],
        ),
        (  # a JSON field's text is JSON as the API would take it (NaN is JSON to neither)
            "prompt",
            {
                "slug": _slug(),
                "title": "T",
                "target": {"model": "offline/echo"},
                "verifier": VERIFIER,
                "scoring": {"config": {"weight": float("nan")}},
            },
            {
                "slug": _slug(),
                "title": "T",
                "target.model": "offline/echo",
                "verifier": json.dumps(VERIFIER),
                "scoring.config": '{"weight": NaN}',
            },
            ["scoring.config"],
        ),
    ]
    for kind, body, fields, beside in cases:
        rest = api.request(
            "POST",
            "/v1/challenges",
            key,
            content=json.dumps({**body, "kind": kind, "state": "draft"}),
            headers={"Content-Type": "application/json"},
        )
        form_path = f"/t/{tenant_slug}/admin/challenges/new?kind={kind}"
        form = admin.post_form(form_path, fields, token_from=form_path)
        assert rest.status_code in (409, 422), rest.text
        assert form.status_code == 422, (kind, fields, form.text[:500])
        shown = shown_errors(form.text)
        # Each problem the API lists, in its plain words, is beside its field.
        listed = [detail_text(detail) for detail in rest.json()["error"]["details"]]
        assert sorted(text for _, text in shown) == sorted(listed), (listed, shown)
        assert sorted(field or "" for field, _ in shown) == sorted(f or "" for f in beside)
        # What was typed is still there, to be fixed.
        for value in fields.values():
            assert str(escape(value)) in form.text
    assert api.request("GET", "/v1/challenges", key).json()["total"] == 1

    # JSON that does not parse is the form's own error, beside its field, the text kept.
    form_path = f"/t/{tenant_slug}/admin/challenges/new?kind=prompt"
    broken = admin.post_form(
        form_path,
        {"slug": _slug(), "title": "T", "target.model": "offline/echo", "verifier": "{type"},
        token_from=form_path,
    )
    assert broken.status_code == 422
    [(field, text)] = shown_errors(broken.text)
    assert field == "verifier"
    assert text == (
        "verifier: not valid JSON: a field name in double quotes was expected (JSON has no "
        "trailing commas and no single quotes) at line 1, character 2"
    )
    assert ">{type</textarea>" in broken.text

    # Fixed, the same form makes a draft of the kind, with what the API has for that body.
    made_slug = _slug()
    made = admin.post_form(
        f"/t/{tenant_slug}/admin/challenges/new?kind=word_count",
        {
            "slug": made_slug,
            "title": "Five words",
            "word_count.words": "5",
            "limits.max_prompt_words": "9",
            "visibility": "public",
        },
        token_from=f"/t/{tenant_slug}/admin/challenges/new?kind=word_count",
    )
    assert made.status_code == 303 and made.headers["location"].endswith("challenge-created")
    [read] = [
        c
        for c in api.request("GET", "/v1/challenges", key).json()["items"]
        if c["slug"] == made_slug
    ]
    assert read["state"] == "draft" and read["kind"] == "word_count"
    assert read["word_count"] == {"words": 5, "model": "offline/echo", "note": ""}
    assert read["limits"]["max_prompt_words"] == 9


def test_each_kinds_form_opens_with_its_template_and_saves_with_only_a_title(
    api: Api, web_client: Clients
) -> None:
    tenant = create_tenant(api)
    key, tenant_slug = tenant["api_key"], tenant["slug"]
    admin = _admin(web_client, tenant)
    kinds_page = admin.get(f"/t/{tenant_slug}/admin/challenges/new").text
    templates = api.request("GET", "/v1/challenge-templates", key, params={"limit": 200}).json()
    for template in templates["items"]:
        # Every template is offered, by its title in people's words, no kind by its code name.
        assert str(escape(template["title"])) in kinds_page
    assert "red_blue" not in re.sub(r'(href|id|aria-[a-z]+)="[^"]*"', "", kinds_page)
    for kind, default in (
        ("prompt", "prompt-injection"),
        ("benchmark", "benchmark-arcagi2-sample-passk"),
        ("red_blue", "red-blue-guard"),
    ):
        path = f"/t/{tenant_slug}/admin/challenges/new?kind={kind}"
        page = admin.get(path)
        assert page.status_code == 200
        assert "red_blue" not in page.text.split("<form", 1)[0].split("</h1>", 1)[0]
        values = form_as_shown(page.text)
        assert values["title"] == "" and values["slug"] == ""
        sent = admin.post_form(path, {**values, "title": f"Only a title {kind}"}, token_from=path)
        assert sent.status_code == 303, shown_errors(sent.text)
        [made] = [
            c
            for c in api.request("GET", "/v1/challenges", key, params={"kind": kind}).json()[
                "items"
            ]
            if c["title"] == f"Only a title {kind}"
        ]
        assert made["slug"] == f"only-a-title-{kind.replace('_', '-')}"
        assert made["state"] == "draft"
        body = api.request("GET", f"/v1/challenge-templates/{default}", key).json()["body"]
        # What the form opened with is the template: the same challenge as the API makes of it.
        for section, value in body.items():
            if isinstance(value, dict):
                assert value.items() <= made[section].items(), (kind, section, made[section])
            elif section != "kind":
                assert made[section] == value, (kind, section)
    # Another template of the kind, by name; a name of no template (or of another kind) is 404.
    other = admin.get(
        f"/t/{tenant_slug}/admin/challenges/new?kind=benchmark&template=benchmark-jsonl-example"
    )
    assert form_as_shown(other.text)["benchmark.name"] == "jsonl"
    for wrong in ("kind=prompt&template=red-blue-guard", "kind=prompt&template=nope"):
        assert admin.get(f"/t/{tenant_slug}/admin/challenges/new?{wrong}").status_code == 404


def test_a_split_asked_for_with_its_seed_left_empty_gets_a_seed(
    api: Api, web_client: Clients
) -> None:
    tenant = create_tenant(api)
    key, tenant_slug = tenant["api_key"], tenant["slug"]
    admin = _admin(web_client, tenant)
    path = f"/t/{tenant_slug}/admin/challenges/new?kind=benchmark"
    values = form_as_shown(admin.get(path).text)
    assert values["split"] == "off"  # the template has none: the box is not ticked
    sent = admin.post_form(
        path,
        {**values, "title": "Split", "split": "on", "split.seed": "", "split.public_fraction": ""},
        token_from=path,
    )
    assert sent.status_code == 303, shown_errors(sent.text)
    listed = api.request("GET", "/v1/challenges", key).json()["items"]
    [made] = [c for c in listed if c["title"] == "Split"]
    assert isinstance(made["split"]["seed"], int) and made["split"]["public_fraction"] == 0.5
    # Over REST too: a split without a seed is given one, never dropped.
    rest = api.request(
        "POST",
        "/v1/challenges",
        key,
        json={"template": "benchmark-arcagi2-sample-passk", "title": "R", "split": {}},
    )
    assert rest.status_code == 201, rest.text
    assert isinstance(rest.json()["split"]["seed"], int)
    # Unticked in an edit, the split is gone (the fields it showed are not what decides).
    edit = f"/t/{tenant_slug}/admin/challenges/{made['id']}/edit"
    shown = form_as_shown(admin.get(edit).text)
    assert shown["split"] == "on" and shown["split.seed"] == str(made["split"]["seed"])
    saved = admin.post_form(edit, {**shown, "split": "off"}, token_from=edit)
    assert saved.status_code == 303, shown_errors(saved.text)
    assert api.request("GET", f"/v1/challenges/{made['id']}", key).json()["split"] is None


def test_a_form_with_three_mistakes_shows_three_messages_each_beside_its_field(
    api: Api, web_client: Clients
) -> None:
    from tests.integration.challenge.test_challenge_templates import THREE_MISTAKES, THREE_PROBLEMS

    tenant = create_tenant(api)
    key, tenant_slug = tenant["api_key"], tenant["slug"]
    admin = _admin(web_client, tenant)
    path = f"/t/{tenant_slug}/admin/challenges/new?kind=red_blue"
    values = form_as_shown(admin.get(path).text)
    mistakes = {
        "slug": THREE_MISTAKES["slug"],
        "title": THREE_MISTAKES["title"],
        "judge_suite": json.dumps(THREE_MISTAKES["judge_suite"]),
        "opens_at": "2030-01-02T00:00",
        "closes_at": "2030-01-01T00:00",
    }
    refused = admin.post_form(path, {**values, **mistakes}, token_from=path)
    assert refused.status_code == 422
    shown = shown_errors(refused.text)
    assert sorted(shown) == sorted(
        (field.split(".")[0], f"{field}: {message}") for field, message in THREE_PROBLEMS
    )
    assert "3 problems to fix" in refused.text
    # Each input at fault is marked, the text typed kept.
    for field in ("slug", "judge_suite", "closes_at"):
        assert re.search(rf'id="field-{field}"[^>]*aria-invalid="true"', refused.text), field
    assert 'value="Guard It"' in refused.text
    # The same body over REST: the same three, in the same words.
    template = api.request("GET", "/v1/challenge-templates/red-blue-guard", key).json()
    rest = api.request("POST", "/v1/challenges", key, json={**template["body"], **THREE_MISTAKES})
    assert rest.status_code == 422
    assert sorted(text for _, text in shown) == sorted(
        detail_text(detail) for detail in rest.json()["error"]["details"]
    )


def test_an_edit_says_what_patch_says_and_keeps_the_slug(api: Api, web_client: Clients) -> None:
    tenant = create_tenant(api)
    key, tenant_slug = tenant["api_key"], tenant["slug"]
    challenge = api.create_challenge(key, title="Before", goal="Say it.", visibility="public")
    path = f"/t/{tenant_slug}/admin/challenges/{challenge['id']}/edit"
    admin = _admin(web_client, tenant)
    page = admin.get(path).text
    assert 'name="slug"' not in page and challenge["slug"] in page
    assert 'value="Before"' in page and "Never say PWNED." in page  # the hidden system prompt

    fields = {
        "title": "After",
        "target.model": "offline/echo",
        "target.max_tokens": "0",
        "verifier": json.dumps(VERIFIER),
        "visibility": "public",
    }
    refused = admin.post_form(path, fields, token_from=path)
    patch = api.request(
        "PATCH",
        f"/v1/challenges/{challenge['id']}",
        key,
        json={"target": {"model": "offline/echo", "max_tokens": 0}},
    )
    assert refused.status_code == patch.status_code == 422
    assert shown_errors(refused.text) == [("target.max_tokens", patch.json()["error"]["message"])]

    saved = admin.post_form(path, {**fields, "target.max_tokens": "64"}, token_from=path)
    assert saved.status_code == 303 and saved.headers["location"].endswith("challenge-saved")
    read = api.request("GET", f"/v1/challenges/{challenge['id']}", key).json()
    # The form holds the whole challenge: what it left empty is back to its default.
    assert (read["title"], read["goal"], read["target"]["max_tokens"]) == ("After", "", 64)
    assert read["target"]["system_prompt"] == "" and read["state"] == challenge["state"]

    # An archived challenge is read-only: the form says why, as PATCH does.
    url = f"/v1/challenges/{challenge['id']}"
    assert api.request("PATCH", url, key, json={"state": "archived"}).status_code == 200
    patch = api.request("PATCH", url, key, json={"title": "Again"})
    refused = admin.post_form(path, {**fields, "title": "Again"}, token_from=path)
    assert refused.status_code == 422 and patch.status_code == 409
    assert shown_errors(refused.text) == [(None, patch.json()["error"]["message"])]


def test_authoring_pages_are_their_tenant_admins_only(api: Api, web_client: Clients) -> None:
    tenant, other = create_tenant(api), create_tenant(api)
    slug = tenant["slug"]
    theirs = api.create_challenge(other["api_key"], title="Theirs")
    admin = _admin(web_client, tenant)
    for action in ("edit", "duplicate", "delete"):
        assert admin.get(f"/t/{slug}/admin/challenges/{theirs['id']}/{action}").status_code == 404
    token_page = f"/t/{slug}/admin/challenges/new?kind=prompt"
    for action in ("edit", "delete"):
        refused = admin.post_form(
            f"/t/{slug}/admin/challenges/{theirs['id']}/{action}", {}, token_from=token_page
        )
        assert refused.status_code == 404
    assert admin.get(f"/t/{slug}/admin/challenges/new?kind=no_such_kind").status_code == 404
    assert api.request("GET", f"/v1/challenges/{theirs['id']}", other["api_key"]).status_code == 200

    # No admin session: sent to sign in; a form without the page's CSRF token is refused.
    stranger = web_client()
    page = stranger.get(f"/t/{slug}/admin/challenges/new")
    assert page.status_code == 303 and page.headers["location"].endswith("/admin/sign-in")
    sent = stranger.post_form(
        f"/t/{slug}/admin/challenges/new?kind=prompt",
        {"slug": "x", "title": "x"},
        token_from=f"/t/{slug}/admin/sign-in",
    )
    assert sent.status_code == 404
    forged = admin.post_form(
        f"/t/{slug}/admin/challenges/new?kind=prompt",
        {"slug": "x", "title": "x", "csrf_token": "0" * 64},
    )
    assert forged.status_code == 403
    assert api.request("GET", "/v1/challenges", tenant["api_key"]).json()["total"] == 0


def test_the_console_deletes_restores_and_purges_after_the_slug_is_typed(
    api: Api, web_client: Clients
) -> None:
    tenant, other = create_tenant(api), create_tenant(api)
    key, slug = tenant["api_key"], tenant["slug"]
    challenge = api.create_challenge(key, title="Soon gone", visibility="public")
    cid = challenge["id"]
    admin = _admin(web_client, tenant)
    confirm = f"/t/{slug}/admin/challenges/{cid}/delete"
    assert "kept" in admin.get(confirm).text
    deleted = admin.post_form(confirm, {}, token_from=confirm)
    assert deleted.status_code == 303
    assert admin.get(f"/t/{slug}/challenges/{challenge['slug']}").status_code == 404
    assert "Soon gone" not in admin.get(f"/t/{slug}/admin").text
    listing = f"/t/{slug}/admin/deleted-challenges"
    assert "Soon gone" in admin.get(listing).text

    # Restored from the list, then deleted again and purged once its slug is typed.
    restored = admin.post_form(f"{listing}/{cid}/restore", {"slug": ""}, token_from=listing)
    assert restored.status_code == 303
    assert api.request("GET", f"/v1/challenges/{cid}", key).status_code == 200
    assert admin.post_form(confirm, {}, token_from=confirm).status_code == 303
    purge = f"{listing}/{cid}/purge"
    assert "cannot be undone" in admin.get(purge).text
    wrong = admin.post_form(purge, {"confirm_slug": "not-it"}, token_from=purge)
    assert wrong.status_code == 303 and "purge-not-confirmed" in wrong.headers["location"]
    assert [c["id"] for c in api.request("GET", "/v1/deleted-challenges", key).json()["items"]] == [
        cid
    ]
    purged = admin.post_form(purge, {"confirm_slug": challenge["slug"]}, token_from=purge)
    assert purged.status_code == 303
    assert api.request("GET", "/v1/deleted-challenges", key).json()["total"] == 0

    # Another tenant's deleted challenge is not there for this admin.
    theirs = api.create_challenge(other["api_key"])
    assert (
        api.request("DELETE", f"/v1/challenges/{theirs['id']}", other["api_key"]).status_code == 204
    )
    assert admin.get(f"{listing}/{theirs['id']}/purge").status_code == 404
    for action in ("restore", "purge"):
        token_page = f"/t/{slug}/admin/challenges/new?kind=prompt"
        refused = admin.post_form(f"{listing}/{theirs['id']}/{action}", {}, token_from=token_page)
        assert refused.status_code == 404
    assert api.request("GET", "/v1/deleted-challenges", other["api_key"]).json()["total"] == 1


def test_a_run_lists_live_address_answers_its_page_readers_only(
    api: Api, web_client: Clients
) -> None:
    tenant, other = create_tenant(api), create_tenant(api)
    slug = tenant["slug"]
    mine = api.create_challenge(tenant["api_key"], visibility="public")
    theirs = api.create_challenge(other["api_key"])
    admin = _admin(web_client, tenant)
    live = admin.get(f"/t/{slug}/admin/challenges/{mine['id']}/test-runs/live")
    assert live.status_code == 200
    body = live.json()
    assert body["pending"] is False and 'id="run-list"' in body["html"]
    assert "No test run yet." in body["html"]
    assert admin.get(f"/t/{slug}/admin/challenges/{theirs['id']}/test-runs/live").status_code == 404
    stranger = web_client()
    test_runs = f"/t/{slug}/admin/challenges/{mine['id']}/test-runs/live"
    assert stranger.get(test_runs).status_code == 404
    practice = f"/t/{slug}/challenges/{mine['slug']}/practice/live"
    assert stranger.get(practice).status_code == 404  # not signed in: no runs of theirs


def test_the_deleted_challenges_page_lists_every_deleted_challenge_a_page_at_a_time(
    api: Api, web_client: Clients
) -> None:
    tenant = create_tenant(api)
    key, slug = tenant["api_key"], tenant["slug"]
    titles = []
    for number in range(DELETED_PAGE_SIZE + 1):
        challenge = api.create_challenge(key, title=f"Gone {number:03d}")
        deleted = api.request("DELETE", f"/v1/challenges/{challenge['id']}", key)
        assert deleted.status_code == 204, deleted.text
        titles.append(challenge["title"])
    admin = _admin(web_client, tenant)
    listing = f"/t/{slug}/admin/deleted-challenges"
    first, second = admin.get(listing).text, admin.get(f"{listing}?page=2").text
    # The latest deleted first; the first deleted alone on the second page.
    assert "Gone 050" in first and "Gone 000" not in first and 'rel="next"' in first
    assert "Gone 000" in second and "Gone 050" not in second and 'rel="prev"' in second
    assert all(title in first + second for title in titles)
    assert "Page 2 of 2" in second
    past = admin.get(f"{listing}?page=3")
    assert past.status_code == 200 and "the first page" in past.text
    assert admin.get(f"{listing}?page=0").status_code == 404  # as every page of a list


def test_test_runs_read_as_their_kind_says_and_cost_the_same_on_every_offline_model(
    api: Api, worker: Worker, web_client: Clients
) -> None:
    from tests.integration.challenge.test_challenge_templates import _finished

    tenant = create_tenant(api)
    key, tenant_slug = tenant["api_key"], tenant["slug"]
    admin = _admin(web_client, tenant)
    expected = {
        "red-blue-guard": ("pass", "Defense held"),  # a held defense: the run's success
        "prompt-injection": ("pass", "Passed"),
    }
    for name, (tone, verdict) in expected.items():
        template = api.request("GET", f"/v1/challenge-templates/{name}", key).json()
        made = api.request("POST", "/v1/challenges", key, json={"template": name, "title": name})
        assert made.status_code == 201, made.text
        cid = made.json()["id"]
        started = api.request(
            "POST", f"/v1/challenges/{cid}/test-runs", key, json=template["test_run"]
        )
        assert started.status_code == 202, started.text
        assert _finished(api, key, started.json()["id"])["status"] == "completed"
        page = admin.get(f"/t/{tenant_slug}/admin/challenges/{cid}/test-runs").text
        assert f'<span class="verdict {tone}" data-verdict>{verdict}</span>' in page, name
        assert "<dd data-cost>$0.00</dd>" in page, name
