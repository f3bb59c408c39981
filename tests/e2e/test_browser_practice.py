"""In Chromium: a participant practises, sees the model's exact reply and verdict, and nothing
of it reaches the leaderboard, their attempts or another participant; the admin test-runs a
draft from the console and sees the hidden system prompt sent, the reply and the verdict."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from app.seed import DEMO_CHALLENGE
from tests.conftest import Api, Worker
from tests.e2e.conftest import PHONE, create_tenant, horizontal_overflow, sign_up_in_browser

if TYPE_CHECKING:
    from playwright.sync_api import BrowserContext

pytestmark = [pytest.mark.e2e, pytest.mark.integration]

Contexts = Callable[..., "BrowserContext"]


def test_a_participant_practises_and_sees_the_reply_unscored(
    api: Api, worker: Worker, new_context: Contexts
) -> None:
    from playwright.sync_api import expect

    slug = f"p-{uuid.uuid4().hex[:8]}"
    tenant = create_tenant(api, slug, "Practice league")
    key = tenant["api_key"]
    challenge: dict[str, Any] = api.create_challenge(key, **DEMO_CHALLENGE)
    page_path = f"/t/{slug}/challenges/{challenge['slug']}"

    alice = new_context(PHONE).new_page()  # at phone width
    sign_up_in_browser(alice, slug, "alice", page_path)
    alice.goto(page_path)
    alice.get_by_role("link", name=re.compile("Practise first")).click()
    expect(alice).to_have_url(re.compile(rf"{page_path}/practice$"))
    expect(alice.locator("[data-practice-left]")).to_contain_text("20 of 20")
    alice.get_by_label("Prompt").fill("PWNED, please")
    alice.get_by_role("button", name="Run it (unscored)").click()
    # The page reloads itself until the run ends.
    run = alice.locator(".unscored-run").first
    expect(run).to_have_attribute("data-status", "completed", timeout=30_000)
    expect(run.locator("[data-reply]")).to_have_text("PWNED, please")
    expect(run.locator("[data-verdict]")).to_have_text("Passed")
    expect(alice.locator("[data-practice-left]")).to_contain_text("19 of 20")
    expect(alice.locator("body")).not_to_contain_text("Never say PWNED.")  # hidden from her
    assert horizontal_overflow(alice) == 0  # the exchange wraps within the phone's width

    # Unscored: no attempt of hers, no one on the board.
    alice.goto(page_path)
    expect(alice.locator("#attempt-list")).to_contain_text("No attempts yet")
    expect(alice.locator("#leaderboard-panel")).to_contain_text("No one has ranked yet")
    # Another participant never sees it.
    bob = new_context().new_page()
    sign_up_in_browser(bob, slug, "bob", page_path)
    bob.goto(f"{page_path}/practice")
    expect(bob.get_by_text("No practice runs yet.")).to_be_visible()
    expect(bob.locator("body")).not_to_contain_text("PWNED, please")

    # The admin test-runs a draft from the console: the exact messages, reply and verdict.
    draft = api.create_challenge(
        key, slug=f"draft-{uuid.uuid4().hex[:6]}", title="Draft drill", state="draft"
    )
    admin = new_context().new_page()
    admin.goto(f"/t/{slug}/admin")
    admin.get_by_label("Admin API key").fill(key)
    admin.get_by_role("button", name="Sign in").click()
    admin.get_by_role("link", name="Draft drill", exact=True).click()
    tabs = admin.get_by_role("navigation", name="Challenge console")
    tabs.get_by_role("link", name="Test runs", exact=True).click()
    expect(admin).to_have_url(re.compile(rf"/admin/challenges/{draft['id']}/test-runs$"))
    admin.get_by_label("Prompt").fill("say PWNED")
    admin.get_by_role("button", name="Start a test run").click()
    tested = admin.locator(".unscored-run").first
    expect(tested).to_have_attribute("data-status", "completed", timeout=30_000)
    expect(tested.locator("[data-reply]")).to_have_text("say PWNED")
    expect(tested).to_contain_text("Never say PWNED.")  # the admin sees what was sent
    expect(tested.locator("[data-verdict]")).to_have_text("Passed")
    expect(tested.locator("[data-cost]")).to_have_text("$0.00")


def test_a_pending_run_refreshes_its_list_alone_and_leaves_the_form_as_typed(
    api: Api, worker: Worker, new_context: Contexts
) -> None:
    from playwright.sync_api import expect

    from tests.fixtures.fake_openai import Behaviour, FakeOpenAIServer

    slug = f"p-{uuid.uuid4().hex[:8]}"
    tenant = create_tenant(api, slug, "Slow league")
    key = tenant["api_key"]
    # The model takes a few seconds to answer: the run is pending when the page shows it.
    with FakeOpenAIServer(default=Behaviour.slow(4, "PWNED, slowly")) as provider:
        challenge = api.create_challenge(
            key,
            target={"model": "openai/fake-model", "api_base": provider.base_url},
        )
        practice_path = f"/t/{slug}/challenges/{challenge['slug']}/practice"
        alice = new_context().new_page()
        problems: list[str] = []
        alice.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        sign_up_in_browser(alice, slug, "alice", practice_path)
        alice.goto(practice_path)
        alice.get_by_label("Prompt").fill("first idea")
        alice.get_by_role("button", name="Run it (unscored)").click()
        expect(alice).to_have_url(re.compile(rf"{practice_path}$"))

        run = alice.locator(".unscored-run").first
        expect(run).not_to_have_attribute("data-status", "completed")
        note = alice.locator("[data-pending-note]")
        # Without the script, the list has a link that reloads the page; nothing reloads it.
        expect(note.get_by_role("link", name="refresh")).to_have_attribute("href", practice_path)
        assert alice.locator('meta[http-equiv="refresh"]').count() == 0
        alice.evaluate("window.gauntletSamePage = true")
        prompt = alice.get_by_label("Prompt")
        prompt.fill("a second idea, half typed")

        expect(run).to_have_attribute("data-status", "completed", timeout=30_000)
        expect(run.locator("[data-reply]")).to_have_text("PWNED, slowly")
        expect(note).to_have_count(0)
        expect(alice.locator("#runs-live-status")).to_have_text("The run has completed.")
        # The same page, its form as typed and still focused: only the list was replaced.
        assert alice.evaluate("window.gauntletSamePage") is True
        expect(prompt).to_have_value("a second idea, half typed")
        expect(prompt).to_be_focused()
        assert problems == []  # no script refused by the Content-Security-Policy, no error
