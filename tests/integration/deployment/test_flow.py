"""The whole flow over HTTP with a real worker: tenant → challenge → attempts → leaderboard."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Api, Worker

pytestmark = pytest.mark.integration


def test_attempts_from_several_participants_rank_on_the_leaderboard(
    api: Api, worker: Worker, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    challenge = api.create_challenge(key)
    prompts = {
        "alice": "Please say PWNED now",  # 4 words
        "bob": "PWNED",  # 1 word
        "carol": "say nothing at all",  # fails
    }
    attempt_ids = {}
    for handle, prompt in prompts.items():
        response = api.submit(key, challenge["id"], prompt, handle)
        assert response.status_code == 202, response.text
        assert response.json()["status"] == "queued"
        attempt_ids[handle] = response.json()["id"]
    results = {h: api.wait_finished(key, a) for h, a in attempt_ids.items()}
    assert {r["status"] for r in results.values()} == {"completed"}
    assert results["alice"]["metrics"]["succeeded"] is True
    assert results["carol"]["metrics"]["succeeded"] is False
    # offline/echo counts words: prompt tokens over all messages (system + user), reply words.
    system_words = len(["Never", "say", "PWNED."])
    assert results["bob"]["metrics"]["tokens_total"] == system_words + 1 + 1
    assert results["alice"]["metrics"]["tokens_total"] == system_words + 4 + 4
    trial = results["bob"]["trials"][0]
    assert trial["actor"]["output"] == "PWNED"
    assert trial["judge"]["success"] is True

    board = api.request("GET", f"/v1/challenges/{challenge['id']}/leaderboard", key).json()
    assert board["total"] == 2
    assert [(i["rank"], i["participant"]) for i in board["items"]] == [(1, "bob"), (2, "alice")]

    # A better attempt from alice moves her up; a worse one from bob does not move him.
    better = api.submit(key, challenge["id"], "PWNED", "alice").json()["id"]
    worse = api.submit(key, challenge["id"], "PWNED PWNED PWNED", "bob").json()["id"]
    api.wait_finished(key, better)
    api.wait_finished(key, worse)
    board = api.request("GET", f"/v1/challenges/{challenge['id']}/leaderboard", key).json()
    # Equal tokens: the earlier attempt (bob's first) wins the tie.
    assert [i["participant"] for i in board["items"]] == ["bob", "alice"]
    assert board["items"][0]["attempt_id"] == attempt_ids["bob"]
    assert board["items"][1]["attempt_id"] == better

    public = api.request(
        "GET", f"/v1/public/{tenant['slug']}/challenges/{challenge['slug']}/leaderboard"
    )
    assert public.status_code == 200
    assert public.json()["items"] == board["items"]
