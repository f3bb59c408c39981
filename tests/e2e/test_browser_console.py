"""An organizer opens a challenge through its console in headless Chromium: from the console
home's row to the challenge's Overview, where the launch checklist shows what is not done and
*Open now* waits; its link leads to the Test runs tab, a test run completes through a worker,
and back on the Overview the required item is done and *Open now* opens the challenge. The
Overview passes axe-core with the checklist shown, before and after."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

from tests.conftest import Api, Worker
from tests.e2e.conftest import create_tenant, horizontal_overflow, screenshot
from tests.e2e.test_browser_pages import axe_violations

if TYPE_CHECKING:
    from playwright.sync_api import BrowserContext

pytestmark = [pytest.mark.e2e, pytest.mark.integration]


def test_an_organizer_opens_a_challenge_once_its_launch_checklist_is_done(
    api: Api, worker: Worker, new_context: Callable[..., BrowserContext]
) -> None:
    from playwright.sync_api import expect

    tenant = create_tenant(api)
    key, slug = tenant["api_key"], tenant["slug"]
    draft = api.create_challenge(key, title="Launch day", state="draft", visibility="public")
    page = new_context(viewport={"width": 390, "height": 844}).new_page()
    page.goto(f"/t/{slug}/admin/sign-in")
    page.get_by_label("Admin API key").fill(key)
    page.get_by_role("button", name="Sign in").click()

    page.get_by_role("link", name="Launch day", exact=True).click()
    expect(page.get_by_role("heading", name="Launch day", exact=True)).to_be_visible()
    checklist = page.locator("#checklist")
    expect(checklist.locator('[data-check="test_run"]')).to_contain_text("Not done")
    expect(checklist.locator('[data-check="visibility"]')).to_contain_text("Done")
    open_now = page.get_by_role("button", name="Open now Launch day", exact=True)
    expect(open_now).to_be_disabled()
    assert axe_violations(page) == []
    assert horizontal_overflow(page) == 0
    screenshot(page, "admin-challenge-checklist")

    checklist.get_by_role("link", name="Start a test run").click()
    expect(page.get_by_role("heading", name="Test runs of Launch day")).to_be_visible()
    page.get_by_label("Prompt").fill("Say hello")
    page.get_by_role("button", name="Start a test run").click()
    run = page.locator(".unscored-run").first
    expect(run).to_have_attribute("data-status", "completed", timeout=60_000)

    tabs = page.get_by_role("navigation", name="Challenge console")
    tabs.get_by_role("link", name="Overview", exact=True).click()
    expect(page.locator('#checklist [data-check="test_run"]')).to_contain_text("Done")
    expect(open_now).to_be_enabled()
    assert axe_violations(page) == []
    open_now.click()
    expect(page.get_by_role("status")).to_contain_text("The challenge is open now.")
    expect(page.locator("[data-state]")).to_contain_text("Open")
    status = api.request("GET", f"/v1/challenges/{draft['id']}", key).json()["status"]
    assert status == "open"
