"""A split benchmark challenge's pages: a participant's attempt page and task pages show the
public part's tasks only until the challenge closes, then every task."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from app.kinds.benchmark.config import BenchmarkSpec, SplitConfig
from app.kinds.benchmark.split import parts_of
from tests.conftest import Api, Worker
from tests.e2e.conftest import WebClient, create_tenant
from tests.e2e.test_web_http import (
    _attempt_id_of,
    _benchmark_challenge,
    _signed_in,
    _submit_spec,
    _wait_finished,
)

pytestmark = [pytest.mark.e2e, pytest.mark.integration]

SPLIT = {"public_fraction": 0.5, "seed": 11}


def test_a_participants_pages_show_the_private_tasks_only_after_the_close(
    api: Api, web_client: Callable[[], WebClient], worker: Worker
) -> None:
    owner = create_tenant(api)
    key, slug = owner["api_key"], owner["slug"]
    benchmark = {"name": "arcagi2", "options": {}, "max_tasks": 4}
    challenge = _benchmark_challenge(api, key, benchmark=benchmark, split=SPLIT)
    parts = parts_of(BenchmarkSpec.model_validate(benchmark), SplitConfig(**SPLIT), None)
    private = sorted(parts.private_indices)
    public = sorted(set(range(1, 5)) - parts.private_indices)
    assert len(private) == 2 and len(public) == 2

    ada = _signed_in(web_client, slug, "ada")
    page = ada.get(f"/t/{slug}/challenges/{challenge['slug']}").text
    assert "Public part" in page and "2 of 4 tasks" in page
    submitted = _submit_spec(ada, slug, challenge["slug"], model="offline/solver-sim")
    assert submitted.status_code == 303
    attempt_id = _attempt_id_of(submitted)
    assert _wait_finished(api, key, attempt_id)["status"] == "completed"

    attempt_page = f"/t/{slug}/attempts/{attempt_id}"
    tasks = f"{attempt_page}/tasks"
    assert ada.get(attempt_page).text.count('class="trials-toggle"') == 2
    for index in public:
        assert ada.get(f"{tasks}/{index}").status_code == 200
    for index in private:
        assert ada.get(f"{tasks}/{index}").status_code == 404

    closed = api.request(
        "PATCH",
        f"/v1/challenges/{challenge['id']}",
        key,
        json={"closes_at": datetime.now(UTC).isoformat().replace("+00:00", "Z")},
    )
    assert closed.status_code == 200, closed.text
    assert ada.get(attempt_page).text.count('class="trials-toggle"') == 4
    for index in private:
        assert ada.get(f"{tasks}/{index}").status_code == 200
