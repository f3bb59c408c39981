"""A split benchmark challenge's pages: a participant's attempt page and task pages show the
public part's tasks only until the challenge closes, then every task."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from app.kinds.benchmark.config import BenchmarkSpec, SplitConfig
from app.kinds.benchmark.split import parts_of
from app.web.authoring.service import challenge_form
from app.web.schema_form import shown_values
from tests.conftest import Api, Worker
from tests.e2e.conftest import WebClient, create_tenant
from tests.e2e.test_web_authoring import _admin, shown_errors
from tests.e2e.test_web_http import (
    _attempt_id_of,
    _benchmark_challenge,
    _signed_in,
    _submit_spec,
    _wait_finished,
)
from tests.integration.benchmark.test_benchmark_splits import _private_part_ran

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
    # Its private part runs after it, in a run of its own: its results exist, and stay hidden.
    _private_part_ran(api, key, attempt_id)

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


def test_the_edit_form_refuses_a_new_split_once_there_are_submissions_as_patch_does(
    api: Api, web_client: Callable[[], WebClient]
) -> None:
    tenant = create_tenant(api)
    key, slug = tenant["api_key"], tenant["slug"]
    challenge = _benchmark_challenge(api, key, split=SPLIT)
    url = f"/v1/challenges/{challenge['id']}"
    entry = api.request(
        "POST", f"{url}/attempts", key, json={"model": "offline/echo", "participant": "p1"}
    )
    assert entry.status_code == 202, entry.text
    admin = _admin(web_client, tenant)
    path = f"/t/{slug}/admin/challenges/{challenge['id']}/edit"
    form = challenge_form("benchmark", editing=True)
    values = shown_values(form.items, api.request("GET", url, key).json())
    assert values["split.seed"] == "11"

    refused = admin.post_form(path, {**values, "split.seed": "12"}, token_from=path)
    patch = api.request("PATCH", url, key, json={"split": {**SPLIT, "seed": 12}})
    assert patch.status_code == 409
    assert refused.status_code == 422  # a refused form comes back, whatever the API's status
    assert shown_errors(refused.text) == [("split.seed", patch.json()["error"]["message"])]

    saved = admin.post_form(path, {**values, "split.final_submissions": "3"}, token_from=path)
    assert saved.status_code == 303, saved.text
    assert api.request("GET", url, key).json()["split"] == {**SPLIT, "final_submissions": 3}
