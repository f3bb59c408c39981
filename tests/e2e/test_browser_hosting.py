"""A new organizer in headless Chromium, with sign-ups open: from the home page's "Host a
challenge" to the form, a mistake shown beside its field and fixed, then the new tenant's
console, signed in, with its first admin key shown once (which the REST API takes); a reload
no longer shows it, and the console's own pages open. At desktop and phone width, every
control has a label and nothing scrolls sideways."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

from app.kit.config import get_settings
from tests.conftest import Api
from tests.e2e.conftest import PASSWORD, PHONE, horizontal_overflow, screenshot
from tests.e2e.test_browser_authoring import UNLABELLED_CONTROLS

if TYPE_CHECKING:
    from playwright.sync_api import BrowserContext

pytestmark = [pytest.mark.e2e, pytest.mark.integration]


@pytest.mark.parametrize("viewport", [None, PHONE], ids=["desktop", "phone"])
def test_a_new_organizer_signs_up_and_lands_on_the_console_of_their_tenant(
    api: Api,
    new_context: Callable[..., BrowserContext],
    monkeypatch: pytest.MonkeyPatch,
    viewport: dict[str, int] | None,
) -> None:
    from playwright.sync_api import expect

    monkeypatch.setattr(get_settings(), "tenant_signup", "open")
    unique = uuid.uuid4().hex[:8]
    name, handle = f"Lantern Lab {unique}", f"host{unique}"
    page = new_context(viewport=viewport).new_page()
    page.goto("/")
    page.get_by_role("link", name="Host a challenge").first.click()
    expect(page.get_by_role("heading", name="Host a challenge")).to_be_visible()
    assert page.evaluate(UNLABELLED_CONTROLS) == []
    assert horizontal_overflow(page) == 0

    page.get_by_label("Organization or event name").fill(name)
    page.get_by_label("Your handle").fill(handle)
    page.get_by_label("Email address").fill(f"{handle}@example.org")
    page.get_by_label("Password").fill("password")  # too common: refused beside its field
    page.get_by_role("button", name="Create my event").click()
    expect(page.get_by_role("alert")).to_be_visible()
    expect(page.get_by_label("Password")).to_have_attribute("aria-invalid", "true")
    # What was typed is still there; the address was left blank, to be made from the name.
    expect(page.get_by_label("Organization or event name")).to_have_value(name)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Create my event").click()

    slug = f"lantern-lab-{unique}"
    expect(page.get_by_role("heading", name=f"{name} · admin")).to_be_visible()
    expect(page.get_by_role("heading", name=f"{name} is ready")).to_be_visible()
    expect(page.get_by_role("status").first).to_contain_text("this is its console")
    key = page.locator("#first-admin-key").inner_text()
    assert key.startswith("gk_")
    assert horizontal_overflow(page) == 0
    screenshot(page, f"host-landing-{'phone' if viewport else 'desktop'}")
    own = api.request("GET", "/v1/tenant", key).json()
    assert (own["slug"], own["name"], own["status"]) == (slug, name, "active")

    # Signed in as the tenant's admin: its console, without the key now.
    page.goto(f"/t/{slug}/admin")
    expect(page.get_by_role("heading", name=f"{name} · admin")).to_be_visible()
    expect(page.get_by_text("an account with the admin role")).to_be_visible()
    assert page.locator("#first-admin-key").count() == 0
    page.get_by_role("link", name="New challenge").first.click()
    expect(page.get_by_role("heading", name="New challenge", exact=True)).to_be_visible()
    page.goto(f"/t/{slug}/admin/participants")
    expect(page.locator(f'[data-participant="{handle}"]')).to_contain_text("admin")
