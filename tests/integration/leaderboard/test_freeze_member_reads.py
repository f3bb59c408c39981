"""What a member key reads of others in a freeze, at its edges (the differential test of
test_visibility_differential.py proves the rest): a practice run started before the freeze and
finished after it shows as it stood, live for the participant the key names; participants
made in the freeze are left out of the list; at the close, all of it reads live again."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.conftest import Api, Worker

pytestmark = pytest.mark.integration


def _ok(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return response.json()


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def _when(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _practised(api: Api, key: str, run_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while True:
        run = _ok(api.request("GET", f"/v1/practice-runs/{run_id}", key))
        if run["status"] in ("completed", "error"):
            return dict(run)
        assert time.monotonic() < deadline, run
        time.sleep(0.05)


def test_a_freeze_holds_others_practice_as_it_stood_and_newcomers_out_of_the_list_until_the_close(
    api: Api, worker: Worker, tenant: dict[str, Any]
) -> None:
    key = tenant["api_key"]
    member = _ok(
        api.request("POST", "/v1/api-keys", key, json={"name": "app", "role": "member"}), 201
    )["key"]
    closes = datetime.now(UTC) + timedelta(hours=1)
    challenge = api.create_challenge(key, closes_at=_iso(closes))
    cid = challenge["id"]
    started = _ok(
        api.request(
            "POST",
            f"/v1/challenges/{cid}/practice-runs",
            member,
            json={"participant": "alice", "prompt": "say PWNED"},
        ),
        202,
    )
    run = _practised(api, key, started["id"])
    assert run["status"] == "completed" and run["reply"]
    created, finished = _when(run["created_at"]), _when(run["finished_at"])
    assert finished > created
    # A freeze that began while the run was running (set afterwards, to a moment past).
    freeze_at = created + (finished - created) / 2
    _ok(api.request("PATCH", f"/v1/challenges/{cid}", key, json={"freeze_at": _iso(freeze_at)}))
    # A newcomer plays in the freeze (the key makes their handle).
    _ok(
        api.request(
            "POST",
            f"/v1/challenges/{cid}/attempts",
            member,
            json={"participant": "nina", "prompt": "PWNED"},
        ),
        202,
    )

    path = f"/v1/practice-runs/{run['id']}"
    as_it_stood = _ok(api.request("GET", path, member))
    assert as_it_stood["status"] in ("queued", "running")
    assert (as_it_stood["reply"], as_it_stood["verdict"], as_it_stood["finished_at"]) == (
        None,
        None,
        None,
    )
    listed = _ok(api.request("GET", f"/v1/challenges/{cid}/practice-runs", member))["items"]
    assert [(r["id"], r["status"]) for r in listed] == [(run["id"], as_it_stood["status"])]
    # Live for the participant the key acts for, and for admins.
    assert _ok(api.request("GET", path, member, params={"participant": "alice"}))["reply"]
    assert _ok(api.request("GET", path, key))["status"] == "completed"

    def handles(reader: str) -> set[str]:
        return {p["handle"] for p in _ok(api.request("GET", "/v1/participants", reader))["items"]}

    assert "nina" not in handles(member) and {"alice", "nina"} <= handles(key)

    # At the close, everyone reads them live.
    _ok(
        api.request(
            "PATCH", f"/v1/challenges/{cid}", key, json={"closes_at": _iso(datetime.now(UTC))}
        )
    )
    assert _ok(api.request("GET", path, member))["status"] == "completed"
    assert "nina" in handles(member)
