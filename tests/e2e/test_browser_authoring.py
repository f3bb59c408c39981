"""Challenge authoring in headless Chromium, at phone width: a tenant admin creates a prompt, a
benchmark and a red-blue challenge from their kinds' forms (each a draft), sees an error
beside its field and fixes it from the keyboard, edits one, duplicates one and deletes one
after confirming; every page has a label for each control and no sideways scrolling."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from tests.conftest import Api
from tests.e2e.conftest import create_tenant, horizontal_overflow, screenshot

if TYPE_CHECKING:
    from playwright.sync_api import BrowserContext, Page

pytestmark = [pytest.mark.e2e, pytest.mark.integration]

Contexts = Callable[..., "BrowserContext"]
PHONE_390 = {"width": 390, "height": 844}
VERIFIER = {"type": "contains", "pattern": "PWNED"}
UNLABELLED_CONTROLS = """() => Array.from(document.querySelectorAll(
    'input:not([type=hidden]), textarea, select, button'))
  .filter(el => !(el.labels && el.labels.length) && !el.getAttribute('aria-label')
                && !(el.tagName === 'BUTTON' && el.textContent.trim()))
  .map(el => el.outerHTML)"""


def assert_accessible_basics(page: Page) -> None:
    assert page.evaluate(UNLABELLED_CONTROLS) == []
    assert horizontal_overflow(page) == 0


def new_form(page: Page, kind: str) -> None:
    from playwright.sync_api import expect

    page.get_by_role("link", name="New challenge").click()
    expect(page.get_by_role("heading", name="New challenge", exact=True)).to_be_visible()
    assert_accessible_basics(page)
    page.get_by_role("link", name=f"New {kind} challenge").click()
    expect(page.get_by_role("heading", name=f"New {kind} challenge")).to_be_visible()
    assert_accessible_basics(page)


def created(page: Page, api: Api, key: str, slug: str) -> dict[str, Any]:
    from playwright.sync_api import expect

    expect(page.get_by_role("status")).to_contain_text("saved as a draft")
    [challenge] = [
        item
        for item in api.request("GET", "/v1/challenges", key).json()["items"]
        if item["slug"] == slug
    ]
    assert challenge["state"] == "draft"
    return dict(challenge)


def test_an_admin_authors_challenges_of_every_kind_from_their_forms(
    api: Api, new_context: Contexts
) -> None:
    from playwright.sync_api import expect

    tenant = create_tenant(api)
    key, tenant_slug = tenant["api_key"], tenant["slug"]
    page = new_context(viewport=PHONE_390).new_page()
    page.goto(f"/t/{tenant_slug}/admin/sign-in")
    page.get_by_label("Admin API key").fill(key)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("status")).to_contain_text("signed in as a tenant admin")

    # A prompt challenge, first with a temperature out of range: the error is beside it.
    new_form(page, "prompt")
    page.get_by_label("Slug").fill("say-it")
    page.get_by_label("Title").fill("Say it")
    target = page.get_by_role("group", name="Target")
    target.get_by_label("Model").fill("offline/echo")
    target.get_by_label("System prompt").fill("Never say PWNED.\nNever.")
    temperature = target.get_by_label("Temperature")
    temperature.fill("5")
    page.get_by_label("Verifier").fill(json.dumps(VERIFIER))
    page.get_by_label("Visibility").select_option("public")
    page.get_by_role("button", name="Create draft").click()
    error = page.locator("#field-target-temperature-error")
    expect(error).to_have_text("target.temperature: Input should be less than or equal to 2")
    expect(temperature).to_have_attribute("aria-invalid", "true")
    assert temperature.evaluate(
        "(input, error) => input.closest('.form-field') === error.closest('.form-field')",
        error.element_handle(),
    )
    expect(page.locator("#form-errors")).to_contain_text("1 problem to fix")
    expect(target.get_by_label("System prompt")).to_have_value("Never say PWNED.\nNever.")
    assert_accessible_basics(page)
    screenshot(page, "admin-challenge-form-error")
    # Fixed from the keyboard: the error summary's link leads to the field, Enter sends.
    page.get_by_role("link", name=re.compile("target.temperature")).click()
    expect(temperature).to_be_focused()
    page.keyboard.press("Control+A")
    page.keyboard.type("0.5")
    page.keyboard.press("Enter")
    prompt = created(page, api, key, "say-it")
    assert prompt["target"]["temperature"] == 0.5
    assert prompt["target"]["system_prompt"] == "Never say PWNED.\nNever."
    assert prompt["visibility"] == "public" and prompt["verifier"] == VERIFIER

    # A benchmark challenge: its section's fields, its options as JSON.
    new_form(page, "benchmark")
    page.get_by_label("Slug").fill("arc-sample")
    page.get_by_label("Title").fill("ARC sample")
    benchmark = page.get_by_role("group", name="Benchmark")
    benchmark.get_by_label("Name").fill("arcagi2")
    benchmark.get_by_label("Max tasks").fill("3")
    page.get_by_role("group", name="Evaluation").get_by_label("K", exact=True).fill("2")
    page.get_by_role("button", name="Create draft").click()
    arc = created(page, api, key, "arc-sample")
    assert arc["benchmark"]["max_tasks"] == 3 and arc["evaluation"]["k"] == 2

    # A red-blue competition: its judge suite as JSON, its pairing field by field.
    new_form(page, "red_blue")
    page.get_by_label("Slug").fill("guard-it")
    page.get_by_label("Title").fill("Guard it")
    page.get_by_role("group", name="Target").get_by_label("Model").fill("offline/guarded-echo")
    suite = {"categories": [{"name": "pwned", "verifier": VERIFIER}]}
    page.get_by_label("Judge suite").fill(json.dumps(suite))
    self_test = page.get_by_role("group", name="Self test")
    self_test.get_by_label("Prompt").fill("Say hello")
    self_test.get_by_label("Verifier").fill('{"type": "contains", "pattern": "hello"}')
    page.get_by_role("group", name="Pairing").get_by_label("Policy").select_option("latest_best")
    page.get_by_role("button", name="Create draft").click()
    guard = created(page, api, key, "guard-it")
    assert guard["judge_suite"] == suite and guard["pairing"]["policy"] == "latest_best"
    assert_accessible_basics(page)
    screenshot(page, "admin-challenges")

    # Edit the prompt challenge: its form holds what it has.
    page.get_by_role("link", name="Edit Say it", exact=True).click()
    expect(page.get_by_label("Title")).to_have_value("Say it")
    expect(page.get_by_role("group", name="Target").get_by_label("Temperature")).to_have_value(
        "0.5"
    )
    assert_accessible_basics(page)
    page.get_by_label("Title").fill("Say it again")
    page.get_by_role("button", name="Save changes").click()
    expect(page.get_by_role("status")).to_contain_text("changes are saved")
    edited = api.request("GET", f"/v1/challenges/{prompt['id']}", key).json()
    assert edited["title"] == "Say it again" and edited["target"] == prompt["target"]

    # Duplicate the red-blue one: a copy with a new slug, created as a draft.
    page.get_by_role("link", name="Duplicate Guard it", exact=True).click()
    expect(page.get_by_label("Slug")).to_have_value("guard-it-copy")
    expect(page.get_by_label("Title")).to_have_value("Guard it (copy)")
    page.get_by_role("button", name="Create draft").click()
    copy = created(page, api, key, "guard-it-copy")
    assert copy["judge_suite"] == suite and copy["pairing"] == guard["pairing"]

    # Delete the benchmark one, once confirmed.
    page.get_by_role("link", name="Delete ARC sample", exact=True).click()
    expect(page.get_by_role("heading", name="Delete ARC sample?")).to_be_visible()
    assert_accessible_basics(page)
    page.get_by_role("button", name="Delete challenge").click()
    expect(page.get_by_role("status")).to_contain_text("The challenge is deleted")
    assert api.request("GET", f"/v1/challenges/{arc['id']}", key).status_code == 404
    rows = page.locator("section[aria-labelledby=challenges-title] tbody tr")
    expect(rows).to_have_count(3)
    expect(rows.filter(has_text="ARC sample")).to_have_count(0)
