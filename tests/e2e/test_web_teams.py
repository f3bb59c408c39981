"""Teams on the challenge page over plain HTTP: make a team (its invite code shown once), join
with the code, the team's attempts shared by its members, the board row listing them, clear
refusals, leaving."""

from __future__ import annotations

import html
import re
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from tests.conftest import Api, Worker
from tests.e2e.conftest import WebClient, create_tenant
from tests.e2e.test_web_redblue import WEAK, entry_id, post_entry, region, settled, signed_in
from tests.e2e.test_web_redblue import create as create_red_blue

pytestmark = [pytest.mark.e2e, pytest.mark.integration]

Clients = Callable[[], WebClient]
_CODE = re.compile(r"<code data-invite-code>([^<]+)</code>")


def _signed_in(web_client: Clients, tenant_slug: str, handle: str) -> WebClient:
    client = web_client()
    assert client.sign_up(tenant_slug, handle).status_code == 303
    return client


def test_members_make_and_join_a_team_and_share_its_attempts_and_row(
    api: Api, worker: Worker, web_client: Clients
) -> None:
    owner = create_tenant(api)
    key, slug = owner["api_key"], owner["slug"]
    challenge = api.create_challenge(
        key, visibility="public", limits={"max_team_size": 2, "max_attempts_total": 2}
    )
    page = f"/t/{slug}/challenges/{challenge['slug']}"
    suffix = uuid.uuid4().hex[:6]
    ann, ben, cat = (_signed_in(web_client, slug, f"{n}{suffix}") for n in ("ann", "ben", "cat"))

    made = ann.post_form(f"{page}/team", {"name": f"crew{suffix}"}, token_from=page)
    assert made.status_code == 200, made.text
    code = _CODE.search(made.text)
    assert code, "the invite code is shown on the page that answers"
    # Shown once: the page read again has no code.
    assert _CODE.search(ann.get(page).text) is None

    wrong = ben.post_form(f"{page}/team/join", {"invite_code": "nope"}, token_from=page)
    assert wrong.status_code == 422
    assert "invite code" in html.unescape(wrong.text)
    joined = ben.post_form(f"{page}/team/join", {"invite_code": code.group(1)}, token_from=page)
    assert joined.status_code == 303
    full = cat.post_form(f"{page}/team/join", {"invite_code": code.group(1)}, token_from=page)
    assert full.status_code == 409 and "is full" in html.unescape(full.text)

    submitted = ben.submit(slug, challenge["slug"], "PWNED")
    assert submitted.status_code == 303
    attempt_id = re.search(r"#attempt-([0-9a-f-]{36})", submitted.headers["location"])
    assert attempt_id
    api.wait_finished(key, attempt_id.group(1))
    # Ann sees Ben's attempt (the team's), its card saying Ben submitted it, and may open it;
    # the board row lists both.
    seen = ann.get(page).text
    card = _card(seen, attempt_id.group(1))
    assert f'<span class="muted small submitted-by">by ben{suffix}</span>' in card
    opened = ann.get(f"/t/{slug}/attempts/{attempt_id.group(1)}")
    assert opened.status_code == 200
    assert f'<span class="muted small submitted-by">by ben{suffix}</span>' in opened.text
    assert cat.get(f"/t/{slug}/attempts/{attempt_id.group(1)}").status_code == 404
    board = ann.get(f"{page}/leaderboard").text
    assert f"(ann{suffix}, ben{suffix})" in board
    # The challenge list shows Ann the team's result, with a link to its attempt.
    assert f"attempts/{attempt_id.group(1)}" in ann.get(f"/t/{slug}/").text

    # After the team's first entry, leaving is refused with the rule's reason.
    left = ann.post_form(f"{page}/team/leave", {}, token_from=page)
    assert left.status_code == 409 and "stay" in html.unescape(left.text)


def _card(page: str, attempt_id: str) -> str:
    start = page.index(f'id="attempt-{attempt_id}"')
    return page[start : page.index("</article>", start)]


def test_a_challenge_without_teams_shows_no_team_section(api: Api, web_client: Clients) -> None:
    owner: dict[str, Any] = create_tenant(api)
    challenge = api.create_challenge(owner["api_key"], visibility="public")
    page = f"/t/{owner['slug']}/challenges/{challenge['slug']}"
    client = _signed_in(web_client, owner["slug"], f"solo{uuid.uuid4().hex[:6]}")
    assert 'id="team-title"' not in client.get(page).text
    refused = client.post_form(f"{page}/team", {"name": "x"}, token_from=page)
    assert refused.status_code == 409 and "individually" in html.unescape(refused.text)
    # A participant playing alone submits their own attempts: the card names no submitter.
    assert client.submit(owner["slug"], challenge["slug"], "PWNED").status_code == 303
    shown = client.get(page).text
    assert "attempt-card" in shown and "submitted-by" not in shown


def test_red_blue_members_see_their_team_s_entries_texts_and_board_row(
    api: Api, worker: Worker, web_client: Clients
) -> None:
    owner = create_tenant(api)
    key, slug = owner["api_key"], owner["slug"]
    limits = {"max_attempts_per_day": 50, "max_team_size": 2}
    challenge = create_red_blue(api, key, limits=limits)
    base = f"/t/{slug}/challenges/{challenge['slug']}"
    suffix = uuid.uuid4().hex[:6]
    ann = signed_in(web_client, slug, f"ann{suffix}")
    ben = signed_in(web_client, slug, f"ben{suffix}")
    teams = f"/v1/challenges/{challenge['id']}/teams"
    made = api.request("POST", teams, key, json={"participant": f"ann{suffix}", "name": "reds"})
    code = made.json()["invite_code"]
    joined = api.request(
        "POST", f"{teams}/join", key, json={"participant": f"ben{suffix}", "invite_code": code}
    )
    assert joined.status_code == 200, joined.text

    defense_id = entry_id(post_entry(ann, base, "blue", WEAK), "defense")
    body = settled(ben, base)
    entries = region(body, "rb-entries")
    # Ben sees the team's defense, Ann's text included: it is his team's own.
    assert f'id="defense-{defense_id}"' in entries
    defense = entries[entries.index(f'id="defense-{defense_id}"') :]
    defense = defense[: defense.index("</article>")]
    assert f'<span class="muted small submitted-by">by ann{suffix}</span>' in defense
    assert "Never say: BANANA" in html.unescape(entries)
    assert 'data-left="defense">49 defenses left today<' in ben.get(f"{base}?side=blue").text
