"""Competition pages through the web routes, with mail read from a real SMTP server on
loopback that a real worker sends to: the challenge page's tabs show sanitized Markdown, a
participant accepts the rules with the form before playing, the console saves the pages and
posts an announcement that arrives by mail, and the notices of a close arrive once however
often the sweep runs, a red-blue final round's boards mailed as revealed once final."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import select

from app.competition import notices
from app.competition.models import ChallengeNotice
from app.kit.db import session_scope
from tests.conftest import Api, Worker
from tests.e2e.conftest import WebClient, create_tenant
from tests.e2e.test_web_authoring import _admin
from tests.e2e.test_web_mail import Clients, _confirmed_account, _one
from tests.fixtures.mail_server import MailServer
from tests.integration.benchmark.test_benchmark_challenges import benchmark_challenge

pytestmark = [pytest.mark.e2e, pytest.mark.integration]

RULES = "## Fair play\n\nOne account each. <script>alert('rules')</script>"


@pytest.fixture
def owner(api: Api, worker: Worker, mail_server: MailServer) -> dict[str, Any]:
    return create_tenant(api)


def close(api: Api, owner: dict[str, Any], challenge: dict[str, Any]) -> None:
    now = datetime.now(UTC).isoformat()
    closed = api.request(
        "PATCH", f"/v1/challenges/{challenge['id']}", owner["api_key"], json={"closes_at": now}
    )
    assert closed.status_code == 200 and closed.json()["status"] == "closed", closed.text


def _challenge(api: Api, owner: dict[str, Any], **overrides: Any) -> dict[str, Any]:
    return api.create_challenge(owner["api_key"], visibility="public", **overrides)


def test_the_tabs_show_sanitized_pages_and_the_rules_form_lets_a_participant_play(
    api: Api, owner: dict[str, Any], web_client: Clients
) -> None:
    slug = owner["slug"]
    challenge = _challenge(
        api,
        owner,
        pages={
            "overview": "Read **this** [first](javascript:alert(1)) <img src=x onerror=alert(1)>",
            "rules": RULES,
        },
    )
    page = f"/t/{slug}/challenges/{challenge['slug']}"
    anonymous = web_client().get(page)
    assert anonymous.status_code == 200
    assert "<strong>this</strong>" in anonymous.text
    assert "onerror=alert(1)>" not in anonymous.text and 'href="javascript:' not in anonymous.text
    assert "&lt;img src=x onerror=alert(1)&gt;" in anonymous.text
    assert '?tab=rules#pages">Rules</a>' in anonymous.text
    assert "Evaluation</a>" not in anonymous.text  # an empty page has no tab

    player = web_client()
    handle = f"p{uuid.uuid4().hex[:8]}"
    assert player.sign_up(slug, handle).status_code == 303
    assert "accept them before your first submission" in player.get(page).text
    refused = player.submit(slug, challenge["slug"], "hello")
    assert refused.status_code == 409 and "accept this challenge" in refused.text
    rules = player.get(f"{page}?tab=rules")
    assert "<h3>Fair play</h3>" in rules.text
    assert "&lt;script&gt;alert('rules')&lt;/script&gt;" in rules.text
    assert "I have read these rules and accept them" in rules.text
    # Without the box ticked nothing is recorded.
    unticked = player.post_form(f"{page}/rules", {}, token_from=page)
    assert unticked.status_code == 303
    assert player.submit(slug, challenge["slug"], "hello").status_code == 409
    accepted = player.post_form(f"{page}/rules", {"accept": "yes"}, token_from=page)
    assert accepted.status_code == 303 and "notice=rules-accepted" in accepted.headers["location"]
    assert "You accepted these rules" in player.get(f"{page}?tab=rules").text
    assert player.submit(slug, challenge["slug"], "hello").status_code == 303

    exported = api.request(
        "GET",
        f"/v1/challenges/{challenge['id']}/exports/rules_acceptances?format=json",
        owner["api_key"],
    )
    assert handle in exported.text


def test_the_console_saves_pages_and_an_announcement_reaches_players_by_mail(
    api: Api, owner: dict[str, Any], web_client: Clients, mail_server: MailServer
) -> None:
    slug = owner["slug"]
    challenge = _challenge(api, owner)
    page = f"/t/{slug}/challenges/{challenge['slug']}"
    handle, email = _confirmed_account(web_client(), mail_server, slug)
    player = web_client()
    assert player.sign_in(slug, handle).status_code == 303
    assert player.submit(slug, challenge["slug"], "hello").status_code == 303

    admin: WebClient = _admin(web_client, owner)
    console = f"/t/{slug}/admin/challenges/{challenge['id']}/pages"
    # The challenge's console has the Pages tab.
    assert console in admin.get(f"/t/{slug}/admin/challenges/{challenge['id']}").text
    saved = admin.post_form(
        console,
        {"overview": "Solve it.", "rules": "Be fair.", "data": "", "evaluation": "Fewest tokens."},
    )
    assert saved.status_code == 303, saved.text
    assert admin.get(saved.headers["location"]).text.count("The pages are saved.") == 1
    stored = api.request("GET", f"/v1/challenges/{challenge['id']}", owner["api_key"]).json()
    assert stored["pages"]["evaluation"] == "Fewest tokens." and stored["rules_sha256"]

    posted = admin.post_form(
        f"/t/{slug}/admin/challenges/{challenge['id']}/announcements",
        {"title": "Deadline extended", "body": "Two more **days**."},
        token_from=console,
    )
    assert posted.status_code == 303, posted.text
    assert "mailed=1" in posted.headers["location"]
    received = _one(
        mail_server.inbox.wait_for(
            email, matching=lambda m: "Deadline extended" in str(m.message["Subject"])
        )
    )
    assert "Two more **days**." in received.text and page in received.text
    assert received.message["List-Unsubscribe"]
    shown = player.get(page).text
    assert "Deadline extended" in shown and "Two more <strong>days</strong>." in shown
    refused = admin.post_form(
        f"/t/{slug}/admin/challenges/{challenge['id']}/announcements",
        {"title": "", "body": "x"},
        token_from=console,
    )
    assert refused.status_code == 422

    # Another tenant's console does not find the challenge.
    other = create_tenant(api)
    stranger = _admin(web_client, other)
    assert (
        stranger.get(f"/t/{other['slug']}/admin/challenges/{challenge['id']}/pages").status_code
        == 404
    )


def test_a_close_is_mailed_once_however_often_the_sweep_runs(
    api: Api, owner: dict[str, Any], web_client: Clients, mail_server: MailServer
) -> None:
    slug = owner["slug"]
    challenge = _challenge(api, owner)
    handle, email = _confirmed_account(web_client(), mail_server, slug)
    player = web_client()
    assert player.sign_in(slug, handle).status_code == 303
    assert player.submit(slug, challenge["slug"], "hello").status_code == 303
    close(api, owner, challenge)

    notices.sweep()
    notices.sweep()
    received = _one(
        mail_server.inbox.wait_for(
            email, matching=lambda m: str(m.message["Subject"]).endswith("has closed")
        )
    )
    assert challenge["title"] in received.text
    with session_scope() as session:
        sent = session.scalars(
            select(ChallengeNotice).where(
                ChallengeNotice.challenge_id == uuid.UUID(challenge["id"])
            )
        ).all()
        assert [(notice.event, notice.mailed) for notice in sent] == [("closed", 1)]
    # Reopened and closed again: a new close, mailed once more.
    reopened = api.request(
        "PATCH", f"/v1/challenges/{challenge['id']}", owner["api_key"], json={"closes_at": None}
    )
    assert reopened.status_code == 200 and reopened.json()["status"] == "open"
    close(api, owner, challenge)
    notices.sweep()
    mail_server.inbox.wait_for(
        email, count=2, matching=lambda m: str(m.message["Subject"]).endswith("has closed")
    )


def test_a_split_challenges_close_mails_that_its_private_board_is_revealed_once(
    api: Api, owner: dict[str, Any], web_client: Clients, mail_server: MailServer
) -> None:
    """A split benchmark's private board is revealed at its close: its players get one mail
    that says both, however often the sweep runs, and a challenge without a private board
    says only that it closed."""
    slug, key = owner["slug"], owner["api_key"]
    split = benchmark_challenge(
        api,
        key,
        visibility="public",
        split={"public_fraction": 0.5, "seed": 7},
        pages={"rules": "Play fair."},
    )
    handle, email = _confirmed_account(web_client(), mail_server, slug)
    accepted = api.request(
        "POST", f"/v1/challenges/{split['id']}/rules/acceptance", key, json={"participant": handle}
    )
    assert accepted.status_code == 201, accepted.text
    close(api, owner, split)

    notices.sweep()
    notices.sweep()
    received = _one(
        mail_server.inbox.wait_for(
            email, matching=lambda m: split["title"] in str(m.message["Subject"])
        )
    )
    assert str(received.message["Subject"]) == (
        f"{split['title']} has closed: the private leaderboard is revealed"
    )
    assert "Its private leaderboard is revealed" in received.text
    with session_scope() as session:
        sent = session.scalars(
            select(ChallengeNotice).where(ChallengeNotice.challenge_id == uuid.UUID(split["id"]))
        ).all()
        assert sorted((notice.event, notice.mailed) for notice in sent) == [
            ("closed", 1),
            ("revealed", 1),
        ]


def test_a_red_blue_final_rounds_boards_are_mailed_as_revealed_once_they_are_final(
    api: Api, owner: dict[str, Any], web_client: Clients, mail_server: MailServer
) -> None:
    """A red-blue challenge with a final round reveals its boards once the round is played,
    after its close: its players are told of both, each once, however often the sweep runs."""
    from tests.integration.red_blue.test_redblue import OVERRIDE, STRONG, attack, create, defend
    from tests.integration.red_blue.test_redblue_final_round import _final

    slug, key = owner["slug"], owner["api_key"]
    challenge = create(api, key, final_round=True)
    handle, email = _confirmed_account(web_client(), mail_server, slug)
    defend(api, key, challenge["id"], handle, STRONG)
    attack(api, key, challenge["id"], "rex", OVERRIDE)
    close(api, owner, challenge)
    notices.sweep()
    _final(api, key, challenge["id"])
    notices.sweep()
    notices.sweep()

    def mentioned(text: str) -> Any:
        return lambda m: challenge["title"] in str(m.message["Subject"]) and text in m.text

    revealed = _one(mail_server.inbox.wait_for(email, matching=mentioned("is revealed")))
    assert "the final results are on its page" in revealed.text
    with session_scope() as session:
        sent = session.scalars(
            select(ChallengeNotice).where(
                ChallengeNotice.challenge_id == uuid.UUID(challenge["id"])
            )
        ).all()
        assert sorted((notice.event, notice.mailed) for notice in sent) == [
            ("closed", 1),
            ("revealed", 1),
        ]
    # The close was told once: in a mail of its own, or in the reveal's when both were due.
    closed = mail_server.inbox.wait_for(email, matching=mentioned("takes no more submissions"))
    assert len(closed) == 1
