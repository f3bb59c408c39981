"""A challenge kind added as docs/architecture.md says (a package declaring an entry point in
gauntlet.challenge_kinds, here tests.fixtures.word_count_kind, installed beside the service) goes
through REST, a real worker and the leaderboard, with its own section, checks, redaction,
metrics, web fragments, endpoint and worker task; nothing of the service was changed for it."""

from __future__ import annotations

import csv
import io
import json
import time
import uuid
from typing import Any

import httpx
import pytest
import redis

from tests import http
from tests.conftest import TEST_SETTINGS, Api, Stack, Worker

pytestmark = pytest.mark.integration


def word_count_challenge(api: Api, key: str, **overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "slug": f"words-{uuid.uuid4().hex[:8]}",
        "title": "Three words",
        "goal": "Write exactly three words.",
        "kind": "word_count",
        "word_count": {"words": 3, "note": "organisers only: the answer is any three words"},
        "visibility": "public",
        **overrides,
    }
    response = api.request("POST", "/v1/challenges", key, json=body)
    assert response.status_code == 201, response.text
    return dict(response.json())


def test_a_registered_kind_runs_through_rest_a_worker_and_the_leaderboard(
    api: Api, worker: Worker, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    challenge = word_count_challenge(api, key)
    # Its own section, stored without a column of its own, shown whole to tenant admins, its
    # kind's default strategy filled in.
    assert challenge["word_count"] == {
        "words": 3,
        "model": "offline/echo",
        "note": "organisers only: the answer is any three words",
    }
    assert challenge["scoring"]["strategy"] == "fewest_tokens"
    assert challenge["target"] is None and challenge["benchmark"] is None
    # Participants and member keys do not see what the kind hides.
    member = api.request(
        "POST", "/v1/api-keys", key, json={"name": "reader", "role": "member"}
    ).json()["key"]
    seen = api.request("GET", f"/v1/challenges/{challenge['id']}", member).json()
    assert seen["word_count"] == {"words": 3, "model": "offline/echo"}
    listed = api.request("GET", "/v1/challenges?kind=word_count", key).json()
    assert [c["id"] for c in listed["items"]] == [challenge["id"]]

    path = f"/v1/challenges/{challenge['id']}/attempts"
    ids = {}
    for handle, prompt in (
        ("alice", "one two three"),
        ("bob", "one two three four"),
        ("carol", "red green blue"),
    ):
        response = api.submit(key, challenge["id"], prompt, handle)
        assert response.status_code == 202, response.text
        ids[handle] = response.json()["id"]
        api.wait_finished(key, ids[handle])
    results = {
        handle: api.request("GET", f"/v1/attempts/{i}", key).json() for handle, i in ids.items()
    }
    assert {h: r["status"] for h, r in results.items()} == dict.fromkeys(ids, "completed")
    assert {h: r["metrics"]["succeeded"] for h, r in results.items()} == {
        "alice": True,
        "bob": False,
        "carol": True,
    }
    # The worker called the model through the engine: the echo came back and was judged by
    # the kind's own verifier.
    trial = results["bob"]["trials"][0]
    assert trial["actor"]["output"] == "one two three four"
    assert results["bob"]["kind_metrics"] == {"words_answered": 4}
    assert trial["judge"]["raw_eval_output"] == "4 words, 3 wanted"
    # The leaderboard ranks those that succeeded, fewest tokens first, ties to the earlier.
    board = api.request("GET", f"/v1/challenges/{challenge['id']}/leaderboard", key).json()
    assert [item["participant"] for item in board["items"]] == ["alice", "carol"]
    public = api.request(
        "GET", f"/v1/public/{tenant['slug']}/challenges/{challenge['slug']}/leaderboard"
    ).json()
    assert public["items"] == board["items"]

    # The kind's submission check: what it does not use is refused, naming the field.
    refused = api.request(
        "POST", path, key, json={"prompt": "a b c", "model": "offline/echo", "participant": "d"}
    )
    assert refused.status_code == 422 and "model" in refused.json()["error"]["message"]
    # Its section's own validation names the field.
    bad = api.request(
        "POST",
        "/v1/challenges",
        key,
        json={"slug": "bad-words", "title": "x", "kind": "word_count", "word_count": {"words": 0}},
    )
    assert bad.status_code == 422 and "word_count.words" in bad.json()["error"]["message"]
    # Another kind's section is named as such.
    foreign = api.request(
        "POST",
        "/v1/challenges",
        key,
        json={
            "slug": "foreign",
            "title": "x",
            "kind": "word_count",
            "word_count": {"words": 2},
            "target": {"model": "offline/echo"},
        },
    )
    assert foreign.status_code == 422
    # `target` is a section of the prompt and red_blue kinds, not of word_count.
    assert "target: is for prompt and red_blue challenges" in foreign.json()["error"]["message"]


def test_a_registered_kinds_endpoint_task_and_web_fragments(
    api: Api, worker: Worker, tenant: dict[str, Any], stack: Stack, api_url: str
) -> None:
    key = tenant["api_key"]
    challenge = word_count_challenge(api, key)
    # Its own endpoint, 404 for another tenant's challenge and for another kind's.
    target = api.request("GET", f"/v1/challenges/{challenge['id']}/word-count", key)
    assert target.status_code == 200 and target.json()["words"] == 3
    other = api.create_tenant()["api_key"]
    assert (
        api.request("GET", f"/v1/challenges/{challenge['id']}/word-count", other).status_code == 404
    )
    prompt_challenge = api.create_challenge(key)
    assert (
        api.request("GET", f"/v1/challenges/{prompt_challenge['id']}/word-count", key).status_code
        == 404
    )
    # Its own worker task, sent after the commit by the unit of work, run by the worker.
    ping = api.request("POST", f"/v1/challenges/{challenge['id']}/word-count/ping", key)
    assert ping.status_code == 202, ping.text
    broker = redis.Redis.from_url(stack.broker_url)
    mark = f"{TEST_SETTINGS['GAUNTLET_REDIS_KEY_PREFIX']}word-count-ping:{challenge['id']}"
    deadline = time.monotonic() + 30
    while broker.get(mark) != b"pong":
        assert time.monotonic() < deadline, "the kind's task never ran"
        time.sleep(0.1)
    broker.delete(mark)

    # Its web fragments: the challenge page's facts and form are the kind's, and what it
    # hides is not on the page.
    with http.client(base_url=api_url, timeout=30) as browser:
        page = browser.get(f"/t/{tenant['slug']}/challenges/{challenge['slug']}")
        assert page.status_code == 200
        assert "Words to hit" in page.text and ">3<" in page.text
        assert "organisers only" not in page.text
        board = browser.get(f"/t/{tenant['slug']}/challenges/{challenge['slug']}/leaderboard")
        assert board.status_code == 200 and "No one has ranked yet" in board.text
        # A page of its own, before the web's catch-all 404; another kind's challenge has none.
        own = browser.get(f"/t/{tenant['slug']}/challenges/{challenge['slug']}/words")
        assert own.status_code == 200 and "Write exactly 3 words." in own.text
        assert "organisers only" not in own.text
        other_kind = f"/t/{tenant['slug']}/challenges/{prompt_challenge['slug']}/words"
        assert browser.get(other_kind).status_code == 404


def test_a_challenges_kind_and_slug_stay_as_created(api: Api, tenant: dict[str, Any]) -> None:
    key = tenant["api_key"]
    challenge = api.create_challenge(key)
    for change in ({"kind": "word_count", "word_count": {"words": 2}}, {"slug": "renamed"}):
        response = api.request("PATCH", f"/v1/challenges/{challenge['id']}", key, json=change)
        assert response.status_code == 422, response.text
        field = next(iter(change))
        assert response.json()["error"]["message"] == f"{field}: cannot be changed"
    after = api.request("GET", f"/v1/challenges/{challenge['id']}", key).json()
    assert (after["kind"], after["slug"]) == ("prompt", challenge["slug"])
    # A section of another kind is refused too, naming the kind it is for.
    foreign = api.request(
        "PATCH", f"/v1/challenges/{challenge['id']}", key, json={"word_count": {"words": 2}}
    )
    assert foreign.status_code == 422
    assert "word_count: is for word_count challenges" in foreign.json()["error"]["message"]


def test_a_kinds_fields_live_in_its_document_read_and_shown_by_the_kind(
    api: Api, worker: Worker, tenant: dict[str, Any]
) -> None:
    from app.attempt.models import Attempt
    from app.kit.db import session_scope

    key = tenant["api_key"]
    challenge = word_count_challenge(api, key)
    body = {"participant": "amy", "prompt": "one two three", "signature": "Amy W."}
    accepted = api.request("POST", f"/v1/challenges/{challenge['id']}/attempts", key, json=body)
    assert accepted.status_code == 202, accepted.text
    view = accepted.json()
    # The attempts table has no column of any kind's: both fields are in the kind's document.
    assert not {"prompt", "model_spec", "signature"} & set(Attempt.__table__.columns.keys())
    with session_scope() as session:
        row = session.get(Attempt, uuid.UUID(view["id"]))
        assert row is not None
        assert row.kind_fields == {"prompt": "one two three", "signature": "Amy W."}
    # The kind says how they read: its prompt as the read's `prompt`, its own field apart.
    assert (view["prompt"], view["model_spec"], view["kind_fields"]) == (
        "one two three",
        None,
        {"signature": "Amy W."},
    )
    # Its run read the prompt from there (the echo answered its three words).
    finished = api.wait_finished(key, view["id"])
    assert finished["prompt"] == "one two three"
    assert finished["kind_metrics"] == {"words_answered": 3}
    exported = api.request(
        "GET", f"/v1/challenges/{challenge['id']}/exports/attempts", key, params={"format": "csv"}
    )
    [exported_row] = list(csv.DictReader(io.StringIO(exported.text)))
    assert exported_row["prompt"] == "one two three"
    assert json.loads(exported_row["kind_fields"]) == {"signature": "Amy W."}


def test_a_kinds_own_submission_field_is_validated_stored_and_shown(
    api: Api, worker: Worker, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    challenge = word_count_challenge(api, key)
    path = f"/v1/challenges/{challenge['id']}/attempts"

    def post(body: dict[str, Any], **kwargs: Any) -> httpx.Response:
        return api.request("POST", path, key, json={"participant": "amy", **body}, **kwargs)

    # Validated by the kind's own model, a 422 naming the field.
    for bad in ("x" * 41, "   ", 7):
        refused = post({"prompt": "one two three", "signature": bad})
        assert refused.status_code == 422, (bad, refused.text)
        error = refused.json()["error"]
        assert error["details"][0]["loc"] == ["body", "signature"], error
        assert error["message"].startswith("signature: "), error
    # A misspelt field is named, with the field it probably meant.
    misspelt = post({"promt": "one two three"})
    assert misspelt.status_code == 422
    assert "promt: unknown field; did you mean 'prompt'?" in misspelt.json()["error"]["message"]
    # Another kind's challenge refuses it, naming the kind it is for.
    prompt_challenge = api.create_challenge(key)
    foreign = api.request(
        "POST",
        f"/v1/challenges/{prompt_challenge['id']}/attempts",
        key,
        json={"prompt": "PWNED", "signature": "Amy", "participant": "amy"},
    )
    assert foreign.status_code == 422
    assert foreign.json()["error"]["message"] == (
        "signature: is for word_count challenges, not prompt challenges"
    )

    # Stored with the attempt and shown on its reads.
    headers = {"Idempotency-Key": f"k-{uuid.uuid4()}"}
    accepted = post({"prompt": "one two three", "signature": "Amy W."}, headers=headers)
    assert accepted.status_code == 202, accepted.text
    assert accepted.json()["kind_fields"] == {"signature": "Amy W."}
    attempt = api.wait_finished(key, accepted.json()["id"])
    assert attempt["status"] == "completed" and attempt["kind_fields"] == {"signature": "Amy W."}
    # Its own metric, measured by the kind beside the core's and stored with the attempt.
    assert attempt["kind_metrics"] == {"words_answered": 3}
    assert attempt["metrics"]["succeeded"] is True
    listed = api.request("GET", f"{path}?participant=amy", key).json()["items"]
    assert [item["kind_fields"] for item in listed] == [{"signature": "Amy W."}]
    # And exported with it (the attempts export's CSV).
    exported = api.request(
        "GET", f"/v1/challenges/{challenge['id']}/exports/attempts", key, params={"format": "csv"}
    )
    assert exported.status_code == 200, exported.text
    [row] = list(csv.DictReader(io.StringIO(exported.text)))
    assert json.loads(row["kind_fields"]) == {"signature": "Amy W."}
    assert json.loads(row["kind_metrics"]) == {"words_answered": 3}
    unsigned = post({"prompt": "four five six"})
    assert unsigned.status_code == 202 and unsigned.json()["kind_fields"] is None
    # The idempotency fingerprint covers the kind's fields: the same key with another
    # signature is another request.
    replay = post({"prompt": "one two three", "signature": "Amy W."}, headers=headers)
    assert replay.status_code == 202 and replay.json()["id"] == accepted.json()["id"]
    changed = post({"prompt": "one two three", "signature": "Someone else"}, headers=headers)
    assert changed.status_code == 409, changed.text

    # The OpenAPI document describes it on the submission body, with the kind it is for.
    document = api.request("GET", "/openapi.json").json()
    body = document["components"]["schemas"]["AttemptCreate"]["properties"]
    said = body["signature"]["description"]
    assert said == "A field of word_count challenges. Who the words are signed by."
    assert body["prompt"]["description"].startswith("A field of prompt and word_count challenges.")
    assert set(body) >= {"participant", "model", "temperature", "system_prompt"}


def test_the_core_refuses_attempts_to_a_kind_that_takes_none(
    api: Api, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    body = {
        "slug": f"rb-{uuid.uuid4().hex[:8]}",
        "title": "Guard",
        "kind": "red_blue",
        "target": {"model": "offline/guarded-echo"},
        "judge_suite": {
            "categories": [{"name": "pwned", "verifier": {"type": "contains", "pattern": "P"}}]
        },
        "self_test": {"prompt": "Say hello", "verifier": {"type": "contains", "pattern": "h"}},
    }
    created = api.request("POST", "/v1/challenges", key, json=body)
    assert created.status_code == 201, created.text
    cid = created.json()["id"]
    for given, field in (
        ({"prompt": "hello", "participant": "amy"}, "prompt"),
        ({"participant": "amy"}, "participant"),
    ):
        refused = api.request("POST", f"/v1/challenges/{cid}/attempts", key, json=given)
        assert refused.status_code == 422, refused.text
        error = refused.json()["error"]
        assert error["details"][0]["loc"] == ["body", field]
        assert "this is a red_blue challenge: it takes no attempts" in error["message"]
        assert f"POST /v1/challenges/{cid}/defenses" in error["message"]
    listed = api.request("GET", f"/v1/challenges/{cid}/attempts", key).json()
    assert listed["total"] == 0


def test_a_kinds_own_limit_is_validated_stored_and_enforced(
    api: Api, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]

    def create(kind_body: dict[str, Any], limits: dict[str, Any]) -> httpx.Response:
        body = {"slug": f"l-{uuid.uuid4().hex[:8]}", "title": "L", **kind_body, "limits": limits}
        return api.request("POST", "/v1/challenges", key, json=body)

    words = {"kind": "word_count", "word_count": {"words": 3}}
    prompt = {
        "kind": "prompt",
        "target": {"model": "offline/echo"},
        "verifier": {"type": "contains", "pattern": "x"},
    }
    # The kind validates its own limit, naming the field.
    for bad in (0, 1001, "many"):
        refused = create(words, {"max_prompt_words": bad})
        assert refused.status_code == 422, refused.text
        error = refused.json()["error"]
        assert error["message"].startswith("limits.max_prompt_words: "), error
        assert error["details"][0]["loc"] == ["body", "limits", "max_prompt_words"]
    # Another kind's limit names the kinds it is for, both ways.
    foreign = create(prompt, {"max_prompt_words": 3})
    assert foreign.status_code == 422
    assert foreign.json()["error"]["message"] == (
        "limits.max_prompt_words: is for word_count challenges, not prompt challenges"
    )
    red_blue_limit = create(words, {"max_defense_chars": 10})
    assert red_blue_limit.status_code == 422
    assert red_blue_limit.json()["error"]["message"] == (
        "limits.max_defense_chars: is for red_blue challenges, not word_count challenges"
    )
    unknown = create(words, {"max_words": 3})
    assert unknown.status_code == 422
    assert unknown.json()["error"]["message"].startswith("limits.max_words: ")

    # Stored in the one limits document beside the core's, and read back.
    created = create(words, {"max_prompt_words": 3, "max_attempts_total": 5})
    assert created.status_code == 201, created.text
    challenge = created.json()
    assert challenge["limits"]["max_prompt_words"] == 3
    assert challenge["limits"]["max_attempts_total"] == 5
    # Enforced on submission: a 422 naming the field it limits.
    path = f"/v1/challenges/{challenge['id']}/attempts"
    too_long = api.submit(key, challenge["id"], "one two three four", "amy")
    assert too_long.status_code == 422
    assert too_long.json()["error"]["message"] == (
        "prompt: has 4 words; this challenge allows at most 3"
    )
    assert too_long.json()["error"]["details"][0]["loc"] == ["body", "prompt"]
    assert api.submit(key, challenge["id"], "one two three", "amy").status_code == 202
    # An edit keeps it, and may change it; another kind's limit stays refused.
    edited = api.request(
        "PATCH", f"/v1/challenges/{challenge['id']}", key, json={"title": "Renamed"}
    )
    assert edited.status_code == 200 and edited.json()["limits"]["max_prompt_words"] == 3
    looser = api.request(
        "PATCH", f"/v1/challenges/{challenge['id']}", key, json={"limits": {"max_prompt_words": 5}}
    )
    assert looser.status_code == 200, looser.text
    assert api.submit(key, challenge["id"], "one two three four", "bob").status_code == 202
    assert api.request("GET", path, key).json()["total"] == 2

    # The OpenAPI document describes it among the limits, with the kind it is for.
    document = api.request("GET", "/openapi.json").json()
    limits = document["components"]["schemas"]["LimitsConfig"]["properties"]
    assert limits["max_prompt_words"]["description"] == (
        "A limit of word_count challenges. The most words a prompt may have."
    )
    assert limits["max_defense_chars"]["description"].startswith("A limit of red_blue challenges.")
