"""The lists that were once answered whole (API keys, scorers, installed scorers, rescore jobs,
exports) are pages like every other: `limit` and `offset` taken, the total of all answered."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.conftest import ADMIN_TOKEN, Api

pytestmark = pytest.mark.integration


def _identity(item: dict[str, Any]) -> Any:
    """An item by its id where it has one: a rescore job's status moves on between two reads
    (a worker takes it), its id does not."""
    return item.get("id", item)


def _pages(api: Api, path: str, token: str) -> None:
    """Pages of one item each, and a page past the end, tile the whole list (the same items in
    the same order)."""
    whole = api.request("GET", path, token, params={"limit": 200})
    assert whole.status_code == 200, whole.text
    everything = whole.json()
    assert everything["total"] == len(everything["items"]) >= 1, (path, everything)
    for offset in range(everything["total"]):
        page = api.request("GET", path, token, params={"limit": 1, "offset": offset}).json()
        assert (page["limit"], page["offset"], page["total"]) == (1, offset, everything["total"])
        wanted = [_identity(item) for item in everything["items"][offset : offset + 1]]
        assert [_identity(item) for item in page["items"]] == wanted, path
    past = api.request("GET", path, token, params={"offset": everything["total"]}).json()
    assert past["items"] == [] and past["total"] == everything["total"]
    refused = api.request("GET", path, token, params={"limit": 0})
    assert refused.status_code == 422 and refused.json()["error"]["details"][0]["loc"] == [
        "query",
        "limit",
    ]


def test_the_lists_once_answered_whole_are_paged(api: Api, tenant: dict[str, Any]) -> None:
    key = tenant["api_key"]
    for name in ("app", "reporting"):
        made = api.request("POST", "/v1/api-keys", key, json={"name": name, "role": "member"})
        assert made.status_code == 201, made.text
    _pages(api, "/v1/api-keys", key)

    for _ in range(2):
        plugin_id = f"paging.{uuid.uuid4().hex[:8]}"
        body = {"plugin_id": plugin_id, "entrypoint": "scorers.testing:EchoScorer"}
        registered = api.request("POST", "/v1/scorers", ADMIN_TOKEN, json=body)
        assert registered.status_code == 201, registered.text
    _pages(api, "/v1/scorers", key)
    _pages(api, "/v1/scorers/installed", ADMIN_TOKEN)

    challenge = api.create_challenge(key)
    for _ in range(2):
        job = api.request("POST", f"/v1/challenges/{challenge['id']}/rescore", key)
        assert job.status_code == 202, job.text
    _pages(api, f"/v1/challenges/{challenge['id']}/rescore-jobs", key)
    _pages(api, f"/v1/challenges/{challenge['id']}/exports", key)
