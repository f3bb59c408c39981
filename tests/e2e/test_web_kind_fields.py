"""A kind's own submission field, limit and metric on the web pages, through its own templates
(tests.fixtures.word_count_kind): the challenge page states its limit, the form sends the
field, the attempt page and the leaderboard show it and the metric, and a prompt over the
kind's limit is refused on the page naming what to fix; no line of the service names any of
them."""

from __future__ import annotations

import html
import re
import uuid
from typing import Any

import pytest

from tests.conftest import Api, Worker
from tests.e2e.conftest import WebClient, create_tenant

pytestmark = [pytest.mark.e2e, pytest.mark.integration]


def _attempt_id_of(response: Any) -> str:
    found = re.search(r"#attempt-([0-9a-f-]{36})", response.headers["location"])
    assert found, response.headers.get("location")
    return found.group(1)


def test_a_kinds_own_field_and_metric_are_shown_on_its_pages_and_its_limit_refused(
    api: Api, worker: Worker, web_client: Any
) -> None:
    tenant = create_tenant(api)
    key, slug = tenant["api_key"], tenant["slug"]
    created = api.request(
        "POST",
        "/v1/challenges",
        key,
        json={
            "slug": "three-words",
            "title": "Three words",
            "kind": "word_count",
            "word_count": {"words": 3},
            "limits": {"max_prompt_words": 4},
            "visibility": "public",
        },
    )
    assert created.status_code == 201, created.text
    client: WebClient = web_client()
    assert client.sign_up(slug, "wendy").status_code == 303
    page = f"/t/{slug}/challenges/three-words"
    challenge_page = client.get(page).text
    assert 'name="signature"' in challenge_page
    assert "<dt>Longest prompt</dt><dd>4 words</dd>" in challenge_page

    # Over the kind's own limit: refused on the page, saying what to fix.
    refused = client.post_form(
        f"{page}/attempts",
        {"prompt": "one two three four five", "submission_id": uuid.uuid4().hex},
        token_from=page,
    )
    assert refused.status_code == 422
    assert "has 5 words; this challenge allows at most 4" in html.unescape(refused.text)

    sent = client.post_form(
        f"{page}/attempts",
        {"prompt": "one two three", "signature": "Wendy & co", "submission_id": uuid.uuid4().hex},
        token_from=page,
    )
    assert sent.status_code == 303, sent.text
    attempt_id = _attempt_id_of(sent)
    finished = api.wait_finished(key, attempt_id)
    # The API read shows the field and the metric.
    assert finished["kind_fields"] == {"signature": "Wendy & co"}
    assert finished["kind_metrics"] == {"words_answered": 3}

    attempt_page = client.get(f"/t/{slug}/attempts/{attempt_id}")
    assert attempt_page.status_code == 200
    shown = html.unescape(attempt_page.text)
    assert "Signed by Wendy & co" in shown and "Words answered: 3" in shown
    assert "Wendy &amp; co" in attempt_page.text  # escaped, as every value on a page

    board = client.get(f"{page}/leaderboard")
    assert board.status_code == 200
    row = re.search(
        r'<td class="signature">([^<]*)</td>\s*<td class="num words-answered">(\d+)', board.text
    )
    assert row is not None, board.text
    assert (html.unescape(row.group(1)), row.group(2)) == ("Wendy & co", "3")
