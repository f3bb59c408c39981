"""The admin page's exports over plain HTTP: a button per dataset and format of every
challenge, each downloading what the API exports, for the tenant's signed-in admins only."""

from __future__ import annotations

import html
import re
import uuid
from typing import Any

import pytest

from tests.conftest import Api, Worker
from tests.e2e.conftest import WebClient, create_tenant
from tests.integration.red_blue.test_redblue import red_blue_body

pytestmark = [pytest.mark.e2e, pytest.mark.integration]


def _hrefs(page: str) -> set[str]:
    return {html.unescape(h) for h in re.findall(r'href="([^"]*/exports/[^"]*)"', page)}


def test_the_admin_page_offers_every_export_and_downloads_it_as_the_api_does(
    api: Api, web_client: Any, worker: Worker
) -> None:
    owner = create_tenant(api)
    key, slug = owner["api_key"], owner["slug"]
    prompt = api.create_challenge(key, title="Exported prompts", visibility="private")
    duel = api.request("POST", "/v1/challenges", key, json=red_blue_body()).json()
    attempt = api.submit(key, prompt["id"], "PWNED", "alice").json()
    api.wait_finished(key, attempt["id"])

    admin: WebClient = web_client()
    base = f"/t/{slug}/admin/challenges/{prompt['id']}/exports"
    # Without an admin session, a download sends to the admin sign-in.
    refused = admin.get(f"{base}/attempts?format=csv")
    assert refused.status_code == 303
    assert refused.headers["location"] == f"/t/{slug}/admin/sign-in"
    signed_in = admin.post_form(f"/t/{slug}/admin/sign-in", {"api_key": key})
    assert signed_in.status_code == 303

    # Each challenge's console has its own downloads.
    assert "/exports/" not in admin.get(f"/t/{slug}/admin").text
    pages = [
        admin.get(f"/t/{slug}/admin/challenges/{c['id']}/exports").text for c in (prompt, duel)
    ]
    assert all('id="exports-title"' in page for page in pages)
    offered = _hrefs(pages[0]) | _hrefs(pages[1])
    page = pages[0]
    for challenge, names in (
        (prompt, ("leaderboard", "attempts", "trials", "rules_acceptances")),
        (duel, ("leaderboard", "defenses", "attacks", "matches", "rules_acceptances")),
    ):
        for name in names:
            for output in ("csv", "json"):
                link = (
                    f"/t/{slug}/admin/challenges/{challenge['id']}/exports/{name}?format={output}"
                )
                assert link in offered
    assert len(offered) == 2 * (4 + 5)
    assert "of attempts of Exported prompts" in page  # each button says what it downloads

    for name in ("leaderboard", "attempts", "trials"):
        for output in ("csv", "json"):
            downloaded = admin.get(f"{base}/{name}?format={output}")
            assert downloaded.status_code == 200
            assert downloaded.headers["content-disposition"].startswith("attachment; filename=")
            assert downloaded.headers["cache-control"] == "no-store"
            from_api = api.request(
                "GET",
                f"/v1/challenges/{prompt['id']}/exports/{name}",
                key,
                params={"format": output},
            )
            assert downloaded.content == from_api.content
            assert downloaded.headers["content-type"] == from_api.headers["content-type"]
    assert b"alice" in admin.get(f"{base}/attempts?format=csv").content

    # Another tenant's challenge, or an export its kind lacks, is not found.
    other = create_tenant(api)
    theirs = api.create_challenge(other["api_key"])
    elsewhere = admin.get(f"/t/{slug}/admin/challenges/{theirs['id']}/exports/attempts")
    assert elsewhere.status_code == 404 and "text/html" in elsewhere.headers["content-type"]
    assert admin.get(f"{base}/matches").status_code == 404
    assert (
        admin.get(f"/t/{slug}/admin/challenges/{uuid.uuid4()}/exports/attempts").status_code == 404
    )
    # This tenant's admin session opens no export under another tenant's address.
    crossed = admin.get(f"/t/{other['slug']}/admin/challenges/{theirs['id']}/exports/attempts")
    assert crossed.status_code == 303
