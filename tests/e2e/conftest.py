"""Fixtures of the web-UI tests: headless Chromium driven by Playwright, and an HTTP client that
behaves like a browser (cookies, CSRF tokens from the forms).

The browser is Debian's `chromium` (Playwright's own browser download does not work on the
machines this runs on); without it, the browser tests skip with the reason, and fail under
`make test` and in CI (tests/strict.py), while the plain HTTP tests still run. The sign-in
limits are counted in this run's Redis keys; tests reset them between tests (they all sign in
from 127.0.0.1).
"""

from __future__ import annotations

import os
import re
import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from tests import http
from tests.conftest import ADMIN_TOKEN, ROOT, Api

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Page

# Test artifacts go to an ignored folder; `make screenshots` points this at docs/screenshots to
# refresh the README's pictures, so a test run never leaves the work tree changed.
SCREENSHOTS = Path(
    os.environ.get("GAUNTLET_SCREENSHOTS_DIR") or ROOT / ".artifacts" / "screenshots"
)
PASSWORD = "correct horse battery"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
DESKTOP = {"width": 1280, "height": 860}
# People who asked for less motion: the pending runs' spinner stands still (app.css). A page
# with one spinning cost Chromium 9 % of a core while the tests waited on a worker; nothing
# here checks motion.
REDUCED_MOTION = "reduce"
PHONE = {"width": 375, "height": 800}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "e2e: web UI tests over HTTP and in headless Chromium")


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(autouse=True)
def _fresh_sign_in_limits() -> Iterator[None]:
    """Every test starts with empty sign-in counters (they all come from 127.0.0.1); only this
    run's keys are deleted."""
    from app.web import auth

    auth.limits.reset()
    yield
    auth.limits.reset()


# Browser --------------------------------------------------------------------------------------


@pytest.fixture(scope="package")
def browser() -> Iterator[Browser]:
    path = chromium_path()
    if path is None:
        pytest.skip(
            "Chromium is not installed (Debian package 'chromium'): run "
            "scripts/ensure-chromium.sh, which `make test` calls"
        )
    from playwright.sync_api import sync_playwright

    # Package scope: Playwright's event loop must be gone before other packages' tests run
    # their own asyncio loops.
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=path, headless=True, args=CHROMIUM_ARGS
        )
        yield launched
        launched.close()


@pytest.fixture
def new_context(browser: Browser, api_url: str) -> Iterator[Callable[..., BrowserContext]]:
    """Opens isolated browser contexts (separate cookie jars: separate people)."""
    opened: list[BrowserContext] = []

    def open_context(viewport: dict[str, int] | None = None) -> BrowserContext:
        context = browser.new_context(
            base_url=api_url, viewport=viewport or DESKTOP, reduced_motion=REDUCED_MOTION
        )
        context.set_default_timeout(15_000)
        opened.append(context)
        return context

    yield open_context
    for context in opened:
        context.close()


def screenshot(page: Page, name: str, *, full_page: bool = True) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(path), full_page=full_page, animations="disabled")
    return path


def sign_up_in_browser(page: Page, tenant_slug: str, handle: str, next_path: str = "") -> None:
    suffix = f"?next={next_path}" if next_path else ""
    page.goto(f"/t/{tenant_slug}/sign-up{suffix}")
    page.get_by_label("Handle").fill(handle)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Create account").click()
    page.wait_for_load_state()


def horizontal_overflow(page: Page) -> int:
    """How many CSS pixels the page is wider than the viewport (0: no sideways scrolling)."""
    return int(
        page.evaluate(
            "() => Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)"
            " - document.documentElement.clientWidth"
        )
    )


# HTTP -----------------------------------------------------------------------------------------

_CSRF = re.compile(r'name="csrf_token" value="([0-9a-f]+)"')


class WebClient:
    """A cookie-keeping HTTP client that fills in CSRF tokens like a browser submitting a form."""

    def __init__(self, base_url: str, local_address: str | None = None) -> None:
        # A local address (any of 127.0.0.0/8) makes the client another address to the server.
        transport = httpx.HTTPTransport(local_address=local_address) if local_address else None
        self.http = http.client(
            base_url=base_url, timeout=30, follow_redirects=False, transport=transport
        )

    def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.http.get(path, **kwargs)

    def csrf(self, path: str) -> str:
        response = self.http.get(path)
        found = _CSRF.search(response.text)
        assert found, f"no CSRF token on {path} ({response.status_code})"
        return found.group(1)

    def post_form(
        self, path: str, data: dict[str, str], *, token_from: str | None = None
    ) -> httpx.Response:
        """Posts like a browser: with the CSRF token of the page the form is on."""
        if "csrf_token" not in data:
            data = {**data, "csrf_token": self.csrf(token_from or path)}
        return self.http.post(path, data=data)

    def sign_up(self, tenant_slug: str, handle: str, password: str = PASSWORD) -> httpx.Response:
        return self.post_form(f"/t/{tenant_slug}/sign-up", {"handle": handle, "password": password})

    def sign_in(self, tenant_slug: str, handle: str, password: str = PASSWORD) -> httpx.Response:
        return self.post_form(f"/t/{tenant_slug}/sign-in", {"handle": handle, "password": password})

    def submit(self, tenant_slug: str, challenge_slug: str, prompt: str) -> httpx.Response:
        page = f"/t/{tenant_slug}/challenges/{challenge_slug}"
        return self.post_form(
            f"{page}/attempts",
            {"prompt": prompt, "submission_id": uuid.uuid4().hex},
            token_from=page,
        )

    def close(self) -> None:
        self.http.close()


@pytest.fixture
def web_client(api_url: str) -> Iterator[Callable[[], WebClient]]:
    clients: list[WebClient] = []

    def make() -> WebClient:
        client = WebClient(api_url)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


def create_tenant(api: Api, slug: str | None = None, name: str | None = None) -> dict[str, Any]:
    slug = slug or f"t-{uuid.uuid4().hex[:10]}"
    response = api.request(
        "POST", "/v1/tenants", ADMIN_TOKEN, json={"slug": slug, "name": name or slug}
    )
    assert response.status_code == 201, response.text
    return dict(response.json())
