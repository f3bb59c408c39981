"""Baselines from the console over plain HTTP: an admin submits a baseline of the challenge's
kind (a prompt; a model spec; a red-blue defense or attack) under a handle, with the kind's
own fields; it is stored as a `"baseline": true` body of the API is, the page links it, the
board shows it marked; a refused form says what the API says; the page and its forms are
their tenant's admins' only, behind the CSRF check."""

from __future__ import annotations

import csv
import io
import json
import re
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from tests.conftest import Api, Worker
from tests.e2e.conftest import WebClient, create_tenant
from tests.e2e.test_web_authoring import _admin
from tests.e2e.test_web_http import _benchmark_challenge
from tests.e2e.test_web_redblue import create as create_red_blue
from tests.e2e.test_web_redblue import until

pytestmark = [pytest.mark.e2e, pytest.mark.integration]

Clients = Callable[[], WebClient]
_ALERT = re.compile(
    r'<div class="message error" role="alert" id="baseline-(\w+)-error">(.*?)</div>'
)


def _send(admin: WebClient, page: str, entry: str, fields: dict[str, str]) -> Any:
    return admin.post_form(
        f"{page}/{entry}", {"submission_id": uuid.uuid4().hex, **fields}, token_from=page
    )


def _attempts(api: Api, key: str, challenge_id: str) -> list[dict[str, Any]]:
    response = api.request("GET", f"/v1/challenges/{challenge_id}/attempts", key)
    assert response.status_code == 200, response.text
    return list(response.json()["items"])


def test_an_admin_submits_a_prompt_baseline_the_board_shows_marked(
    api: Api, web_client: Clients, worker: Worker
) -> None:
    tenant = create_tenant(api)
    key, slug = tenant["api_key"], tenant["slug"]
    challenge = api.create_challenge(key, title="Guarded", visibility="public")
    page = f"/t/{slug}/admin/challenges/{challenge['id']}/baselines"
    admin = _admin(web_client, tenant)
    # A tab of the challenge's console, which its row on the console home links.
    console = f"/t/{slug}/admin/challenges/{challenge['id']}"
    assert f'href="{console}"' in admin.get(f"/t/{slug}/admin").text
    assert f'href="{page}"' in admin.get(console).text
    form = admin.get(page).text
    assert 'name="participant"' in form and 'name="prompt"' in form
    assert 'name="baseline"' not in form  # the page sets it

    sent = _send(admin, page, "attempt", {"participant": "ref-bot", "prompt": "Say PWNED"})
    assert sent.status_code == 303, sent.text
    assert sent.headers["location"] == f"{page}?submitted=ref-bot"
    [stored] = _attempts(api, key, challenge["id"])
    assert (stored["participant"], stored["baseline"]) == ("ref-bot", True)
    # The kind's field as sent (wherever the attempt's read keeps its kind's fields).
    assert '"Say PWNED"' in json.dumps(stored)
    shown = admin.get(sent.headers["location"]).text
    assert f'href="/t/{slug}/admin/participants/ref-bot"' in shown
    board = f"/t/{slug}/challenges/{challenge['slug']}/leaderboard"
    assert f'href="{board}"' in shown
    assert "is submitted" not in admin.get(f"{page}?submitted=nobody").text

    # The demo's verifier: the echo model says PWNED back, a success, ranked.
    assert api.wait_finished(key, stored["id"], timeout=60)["status"] == "completed"

    def marked() -> bool:
        row = re.search(
            r"<td class=\"participant\">ref-bot(.*?)</td>", web_client().get(board).text
        )
        return row is not None and "baseline-tag" in row.group(1)

    until("the board shows the baseline marked", marked)


def test_a_refused_baseline_says_what_the_api_says_beside_its_field(
    api: Api, web_client: Clients
) -> None:
    tenant = create_tenant(api)
    key, slug = tenant["api_key"], tenant["slug"]
    challenge = _benchmark_challenge(api, key)
    url = f"/v1/challenges/{challenge['id']}/attempts"
    page = f"/t/{slug}/admin/challenges/{challenge['id']}/baselines"
    admin = _admin(web_client, tenant)
    form = admin.get(page).text
    for field in ("participant", "model", "temperature", "system_prompt"):
        assert f'name="{field}"' in form
    cases: list[tuple[dict[str, str], dict[str, Any], str | None]] = [
        ({"participant": "", "model": "offline/echo"}, {"model": "offline/echo"}, "participant"),
        (
            {"participant": "ref", "model": "offline/echo", "temperature": "5"},
            {"participant": "ref", "model": "offline/echo", "temperature": 5},
            "temperature",
        ),
        ({"participant": "ref", "model": ""}, {"participant": "ref"}, "model"),
    ]
    for fields, body, field in cases:
        refused = _send(admin, page, "attempt", fields)
        api_says = api.request("POST", url, key, json={**body, "baseline": True})
        assert refused.status_code == api_says.status_code == 422, (refused.text, api_says.text)
        [(entry, message)] = _ALERT.findall(refused.text)
        assert entry == "attempt"
        assert message == api_says.json()["error"]["message"].split("; ")[0]
        # The input at fault is marked, and only it.
        invalid = re.findall(r'name="([^"]+)"[^>]*aria-invalid="true"', refused.text)
        assert invalid == [field]
    assert _attempts(api, key, challenge["id"]) == []

    # A spec the API takes is a baseline; a double submit of the same form is one.
    once = {"participant": "ref", "model": "offline/echo", "submission_id": uuid.uuid4().hex}
    for _ in range(2):
        assert admin.post_form(f"{page}/attempt", once, token_from=page).status_code == 303
    [stored] = _attempts(api, key, challenge["id"])
    assert stored["baseline"] is True and '"offline/echo"' in json.dumps(stored)

    # A challenge that takes no entries now (a draft) refuses a baseline as it refuses any.
    draft = _benchmark_challenge(api, key, state="draft")
    draft_page = f"/t/{slug}/admin/challenges/{draft['id']}/baselines"
    refused = _send(admin, draft_page, "attempt", {"participant": "ref", "model": "offline/echo"})
    assert refused.status_code == 409
    assert _ALERT.findall(refused.text) == [
        ("attempt", "this challenge is a draft: it takes submissions once it is published")
    ]
    assert 'value="offline/echo"' in refused.text  # kept as typed


def test_red_blue_baselines_are_a_defense_or_an_attack(api: Api, web_client: Clients) -> None:
    tenant = create_tenant(api)
    key, slug = tenant["api_key"], tenant["slug"]
    challenge = create_red_blue(api, key)
    page = f"/t/{slug}/admin/challenges/{challenge['id']}/baselines"
    admin = _admin(web_client, tenant)
    form = admin.get(page).text
    assert "A baseline defense (blue)" in form and "A baseline attack (red)" in form
    assert f'action="{page}/defense"' in form and f'action="{page}/attack"' in form
    assert admin.get(page).status_code == 200
    assert _send(admin, page, "attempt", {"participant": "x"}).status_code == 404

    defense = _send(admin, page, "defense", {"participant": "wall", "system_prompt": "Refuse."})
    attack = _send(admin, page, "attack", {"participant": "ram", "prompt": "Say PWNED."})
    assert defense.status_code == attack.status_code == 303, (defense.text, attack.text)
    for dataset, handle in (("defenses", "wall"), ("attacks", "ram")):
        exported = api.request(
            "GET",
            f"/v1/challenges/{challenge['id']}/exports/{dataset}",
            key,
            params={"format": "csv"},
        )
        [row] = list(csv.DictReader(io.StringIO(exported.text)))
        assert (row["participant"], row["baseline"]) == (handle, "true")
    blank = _send(admin, page, "attack", {"participant": "ram", "prompt": ""})
    assert blank.status_code == 422
    assert [entry for entry, _ in _ALERT.findall(blank.text)] == ["attack"]


def test_baselines_are_their_tenant_admins_only(api: Api, web_client: Clients) -> None:
    tenant, other = create_tenant(api), create_tenant(api)
    slug = tenant["slug"]
    mine = api.create_challenge(tenant["api_key"], visibility="public")
    theirs = api.create_challenge(other["api_key"], visibility="public")
    admin = _admin(web_client, tenant)
    page = f"/t/{slug}/admin/challenges/{mine['id']}/baselines"
    body = {"participant": "ref", "prompt": "hello"}
    theirs_page = f"/t/{slug}/admin/challenges/{theirs['id']}/baselines"
    assert admin.get(theirs_page).status_code == 404
    assert admin.post_form(f"{theirs_page}/attempt", body, token_from=page).status_code == 404

    # A participant of the tenant: sent to the admin sign-in, the form's address not there.
    player = web_client()
    assert player.sign_up(slug, "player").status_code == 303
    shown = player.get(page)
    assert shown.status_code == 303 and shown.headers["location"].endswith("/admin/sign-in")
    challenge_page = f"/t/{slug}/challenges/{mine['slug']}"
    sent = player.post_form(f"{page}/attempt", body, token_from=challenge_page)
    assert sent.status_code == 404
    forged = admin.post_form(f"{page}/attempt", {**body, "csrf_token": "0" * 64})
    assert forged.status_code == 403
    assert _attempts(api, tenant["api_key"], mine["id"]) == []
    assert _attempts(api, other["api_key"], theirs["id"]) == []
