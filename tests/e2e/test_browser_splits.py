"""In Chromium, a split benchmark challenge from a participant's side: the countdown to the
close, the frozen mark on the board, two submissions marked final, and after the close the
private board found from the challenge page."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest

from tests.conftest import Api, Worker
from tests.e2e.conftest import PHONE, create_tenant, horizontal_overflow, sign_up_in_browser

if TYPE_CHECKING:
    from playwright.sync_api import BrowserContext

pytestmark = [pytest.mark.e2e, pytest.mark.integration]

Contexts = Callable[..., "BrowserContext"]


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def test_a_participant_marks_two_final_submissions_and_finds_the_private_board(
    api: Api, worker: Worker, new_context: Contexts
) -> None:
    from playwright.sync_api import expect

    slug = f"s-{uuid.uuid4().hex[:8]}"
    key = create_tenant(api, slug, "Split league")["api_key"]
    challenge = api.create_challenge(
        key,
        title="Split sample",
        kind="benchmark",
        target=None,
        verifier=None,
        benchmark={"name": "arcagi2", "options": {}, "max_tasks": 4},
        evaluation={"metric": "pass@k", "k": 2},
        scoring={"strategy": "metric_at_k"},
        split={"public_fraction": 0.5, "seed": 3, "final_submissions": 2},
        closes_at=_iso(datetime.now(UTC) + timedelta(hours=2)),
    )
    cid = challenge["id"]
    page_path = f"/t/{slug}/challenges/{challenge['slug']}"

    ada = new_context(PHONE).new_page()
    sign_up_in_browser(ada, slug, "ada", page_path)
    ada.goto(page_path)
    expect(ada.locator("dl")).to_contain_text("Public part")
    expect(ada.locator("dl")).to_contain_text("2 of 4 tasks")
    expect(ada.locator("time.countdown, [data-countdown]").first).to_be_visible()

    attempts = []
    for temperature in (0.1, 0.8, 1.4):
        submitted = api.request(
            "POST",
            f"/v1/challenges/{cid}/attempts",
            key,
            json={"model": "offline/solver-sim", "temperature": temperature, "participant": "ada"},
        )
        assert submitted.status_code == 202, submitted.text
        attempts.append(submitted.json()["id"])
    for attempt_id in attempts:
        assert api.wait_finished(key, attempt_id, timeout=120)["status"] == "completed"

    # The board freezes: the participant sees the mark.
    frozen = api.request(
        "PATCH", f"/v1/challenges/{cid}", key, json={"freeze_at": _iso(datetime.now(UTC))}
    )
    assert frozen.status_code == 200, frozen.text
    ada.goto(f"{page_path}/leaderboard")
    expect(ada.locator(".frozen-mark")).to_contain_text("Frozen")

    # Two of the three marked final from their pages.
    for attempt_id in attempts[:2]:
        ada.goto(f"/t/{slug}/attempts/{attempt_id}")
        ada.get_by_role("button", name="Mark as final").click()
        expect(ada.locator("#final")).to_contain_text("Marked final")
    ada.goto(f"/t/{slug}/attempts/{attempts[2]}")
    expect(ada.locator("#final")).to_contain_text("2 of 2 marked")
    assert horizontal_overflow(ada) == 0

    # Before the close the private board is the admins' only.
    assert ada.goto(f"{page_path}/private-leaderboard").status == 403  # type: ignore[union-attr]

    closed = api.request(
        "PATCH", f"/v1/challenges/{cid}", key, json={"closes_at": _iso(datetime.now(UTC))}
    )
    assert closed.status_code == 200, closed.text
    ada.goto(page_path)
    ada.get_by_role("link", name="the private board").click()
    expect(ada).to_have_url(re.compile(rf"{page_path}/private-leaderboard$"))
    row = ada.locator("table.private-board tbody tr").filter(has_text="ada")
    expect(row).to_contain_text("marked final")
    board = api.request("GET", f"/v1/challenges/{cid}/private-leaderboard", key).json()
    [mine] = [item for item in board["items"] if item["participant"] == "ada"]
    assert mine["attempt_id"] in attempts[:2] and mine["final"] is True
    assert horizontal_overflow(ada) == 0
