"""A red-blue challenge's final round through REST and a real worker: at the close, every
participant's newest active defense meets every other participant's newest attack it has not
met, exactly once, before the final ratings; a freeze is kept until the boards are final;
a worker killed while making or playing the round duplicates nothing; without the setting
nothing more is played."""

from __future__ import annotations

import csv
import io
import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.conftest import Api, Worker
from tests.fixtures.fake_openai import Behaviour, FakeOpenAIServer
from tests.integration.leaderboard.test_board_freeze import _close_now, _freeze_now, _iso, _public
from tests.integration.red_blue.test_redblue import (
    OVERRIDE,
    PLAIN,
    STRONG,
    WEAK,
    all_matches,
    attack,
    create,
    defend,
    provider,  # noqa: F401  (the fake OpenAI-compatible server, a fixture)
    until,
)

pytestmark = pytest.mark.integration

Pair = tuple[str, str]  # (attack id, defense id)


def _standings(api: Api, key: str, challenge_id: str) -> Any:
    response = api.request("GET", f"/v1/challenges/{challenge_id}/standings", key)
    assert response.status_code == 200, response.text
    return response.json()


def _final(api: Api, key: str, challenge_id: str, timeout: float = 90) -> dict[str, Any]:
    """The standings once the final round made the boards final."""

    def final() -> dict[str, Any] | None:
        body = _standings(api, key, challenge_id)
        return body if body["final_round"]["phase"] == "final" else None

    return dict(until("the boards are final", final, timeout=timeout))


def _expected_pairs(defenses: dict[str, str], attacks: dict[str, str]) -> set[Pair]:
    """Each participant's newest defense against every other participant's newest attack."""
    return {
        (attack_id, defense_id)
        for defender, defense_id in defenses.items()
        for attacker, attack_id in attacks.items()
        if attacker != defender
    }


def _pairs(matches: list[dict[str, Any]]) -> Counter[Pair]:
    return Counter((m["attack_id"], m["defense_id"]) for m in matches)


def _submit(api: Api, key: str, challenge_id: str, side: str, body: dict[str, Any]) -> Any:
    return api.request("POST", f"/v1/challenges/{challenge_id}/{side}", key, json=body)


def test_the_final_round_plays_each_newest_defense_against_each_other_newest_attack_once(
    api: Api, worker: Worker, tenant: dict[str, Any]
) -> None:
    from app.challenge.service import close_now
    from app.kinds.red_blue import final_round_runs
    from app.kinds.red_blue.dispatch import FINAL_ROUND_TASK
    from app.kit.config import get_settings
    from app.kit.unit_of_work import unit_of_work
    from workers.celery_app import celery_app

    key = tenant["api_key"]
    # One opponent per submission: pairing alone leaves most pairs unplayed, and which ones
    # depends on who submitted when.
    cid = create(
        api,
        key,
        final_round=True,
        pairing={"policy": "round_robin", "max_matches_per_submission": 1},
    )["id"]
    assert api.request("GET", f"/v1/challenges/{cid}", key).json()["final_round"] is True
    assert _standings(api, key, cid)["final_round"]["phase"] == "upcoming"

    first_bob_defense = defend(api, key, cid, "bob", WEAK)["id"]
    first_oscar_attack = attack(api, key, cid, "oscar", OVERRIDE)["id"]
    carol = defend(api, key, cid, "carol", STRONG)["id"]
    bob_attack = attack(api, key, cid, "bob", PLAIN)["id"]
    oscar = attack(api, key, cid, "oscar", PLAIN)["id"]
    bob = defend(api, key, cid, "bob", STRONG)["id"]
    dave = attack(api, key, cid, "dave", OVERRIDE)["id"]
    # A baseline (an admin's reference defense) plays in the round as in pairing.
    response = _submit(
        api,
        key,
        cid,
        "defenses",
        {"participant": "ref", "system_prompt": STRONG, "baseline": True},
    )
    assert response.status_code == 202, response.text
    reference = response.json()["id"]
    until(
        "the baseline is active",
        lambda: api.request("GET", f"/v1/defenses/{reference}", key).json()["status"] == "active",
    )
    newest_defenses = {"bob": bob, "carol": carol, "ref": reference}
    newest_attacks = {"oscar": oscar, "bob": bob_attack, "dave": dave}
    expected = _expected_pairs(newest_defenses, newest_attacks)
    assert len(expected) == 8
    before = _pairs(all_matches(api, key, cid))
    assert len(expected - set(before)) == 3  # pairing alone leaves these out

    with unit_of_work() as work:
        close_now(work, uuid.UUID(tenant["id"]), uuid.UUID(cid))
    late = _submit(api, key, cid, "attacks", {"participant": "eve", "prompt": PLAIN})
    assert late.status_code == 409, late.text

    standings = _final(api, key, cid)
    matches = all_matches(api, key, cid)
    played = _pairs(matches)
    assert set(played.values()) == {1}  # no pair twice
    assert expected <= set(played)
    made = {(m["attack_id"], m["defense_id"]) for m in matches if m["final_round"]}
    assert made == expected - set(before)
    # Older entries did not play in the round; never a participant against themself.
    assert all(first_bob_defense not in pair and first_oscar_attack not in pair for pair in made)
    assert all(m["red_participant"] != m["blue_participant"] for m in matches)
    assert {m["status"] for m in matches} == {"completed"}
    round_state = standings["final_round"]
    assert round_state["matches_played"] == round_state["matches_total"] == len(made)
    assert round_state["played_at"] is not None
    assert standings["matches"] == len(matches) and not standings["pending"]
    red = api.request("GET", f"/v1/challenges/{cid}/leaderboard?side=red", key).json()
    assert red["final_round"] == round_state
    assert sum(item["matches"] for item in red["items"]) == len(matches)

    # Asked again (a redelivered task, a worker's sweep, in this process): nothing more.
    celery_app.send_task(FINAL_ROUND_TASK, args=[cid], queue=get_settings().queue)
    assert final_round_runs.make(uuid.UUID(cid)) == "skipped: made already"
    assert _pairs(all_matches(api, key, cid)) == played

    # The export says which matches the round made.
    export = api.request("GET", f"/v1/challenges/{cid}/exports/matches?format=csv", key)
    assert export.status_code == 200, export.text
    rows = list(csv.DictReader(io.StringIO(export.text)))
    flagged = {(r["attack_id"], r["defense_id"]) for r in rows if r["final_round"] == "true"}
    assert flagged == made and len(rows) == len(matches)

    # The page says the boards are final.
    slug = api.request("GET", f"/v1/challenges/{cid}", key).json()["slug"]
    page = api.request("GET", f"/t/{tenant['slug']}/challenges/{slug}/boards?side=red")
    assert page.status_code == 200 and 'data-phase="final"' in page.text

    # Opened again and closed later: a round for that close, adding only what is missing.
    reopened = api.request("PATCH", f"/v1/challenges/{cid}", key, json={"closes_at": None})
    assert reopened.status_code == 200, reopened.text
    assert _standings(api, key, cid)["final_round"]["phase"] == "upcoming"
    eve = attack(api, key, cid, "eve", OVERRIDE)["id"]
    _close_now(api, key, cid)
    again = _final(api, key, cid)
    matches = all_matches(api, key, cid)
    played = _pairs(matches)
    assert set(played.values()) == {1}
    assert _expected_pairs(newest_defenses, {**newest_attacks, "eve": eve}) <= set(played)
    made_again = {(m["attack_id"], m["defense_id"]) for m in matches if m["final_round"]}
    paired_by_policy = {
        (m["attack_id"], m["defense_id"])
        for m in matches
        if m["attack_id"] == eve and not m["final_round"]
    }
    assert len(paired_by_policy) == 1
    eve_meets = {(eve, defense) for defense in newest_defenses.values()}
    assert made_again - made == eve_meets - paired_by_policy
    assert again["final_round"]["matches_total"] == len(made_again) == len(made) + 2


def test_without_the_setting_the_close_plays_nothing_more(
    api: Api, worker: Worker, tenant: dict[str, Any]
) -> None:
    from app.kinds.red_blue import cross_tenant, final_round_runs
    from app.kit.db import session_scope, utcnow

    key = tenant["api_key"]
    cid = create(api, key, pairing={"policy": "round_robin", "max_matches_per_submission": 1})["id"]
    defend(api, key, cid, "bob", WEAK)
    defend(api, key, cid, "carol", STRONG)
    attack(api, key, cid, "oscar", OVERRIDE)
    attack(api, key, cid, "dave", PLAIN)
    before = _pairs(all_matches(api, key, cid))
    assert len(before) == 2  # of the four pairs
    _close_now(api, key, cid)

    assert final_round_runs.make(uuid.UUID(cid)) == "skipped: no final round"
    with session_scope() as session:
        assert uuid.UUID(cid) not in cross_tenant.final_rounds_due(session, utcnow(), 1000)
    standings = _standings(api, key, cid)
    assert standings["final_round"] is None
    assert _pairs(all_matches(api, key, cid)) == before


def test_a_round_survives_workers_killed_while_making_and_playing_it_and_the_freeze_waits(
    api: Api,
    worker: Worker,
    tenant: dict[str, Any],
    provider: FakeOpenAIServer,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from app.kinds.red_blue import cross_tenant, final_round_runs
    from app.kinds.red_blue.models import FinalRound, Match
    from app.kit.db import session_scope

    key = tenant["api_key"]
    # Every answer is "hello": self-tests pass, no attack breaches.
    challenge = create(
        api,
        key,
        final_round=True,
        closes_at=_iso(datetime.now(UTC) + timedelta(hours=1)),
        target={"model": "openai/fake-model", "api_base": provider.base_url},
        pairing={"policy": "round_robin", "max_matches_per_submission": 1},
    )
    cid = challenge["id"]
    public = f"/v1/public/{tenant['slug']}/challenges/{challenge['slug']}"
    defenses = {who: defend(api, key, cid, who, WEAK)["id"] for who in ("bob", "carol")}
    attacks = {who: attack(api, key, cid, who, PLAIN)["id"] for who in ("oscar", "dave", "bob")}
    expected = _expected_pairs(defenses, attacks)
    before = _pairs(all_matches(api, key, cid))

    def rated_before() -> bool:
        body = _standings(api, key, cid)
        return body["matches"] == len(before) and not body["pending"]

    until("the pairing's matches are rated", rated_before)
    frozen_at = _freeze_now(api, key, cid)
    seen_at_freeze = _public(api, f"{public}/standings")
    assert (seen_at_freeze["frozen"], seen_at_freeze["matches"]) == (True, len(before))

    # The worker dies; the challenge closes meanwhile. A worker killed while making the
    # round (here: in this process, after its matches were inserted) leaves nothing.
    worker.kill()
    _close_now(api, key, cid)
    after_close = _public(api, f"{public}/standings")
    assert after_close["frozen"] is True and after_close["frozen_at"] == frozen_at
    assert after_close["final_round"]["phase"] == "starting"

    def dies(*args: Any) -> None:
        raise SystemExit("the worker died before its commit")

    monkeypatch.setattr(cross_tenant, "set_final_round_matches", dies)
    with pytest.raises(SystemExit):
        final_round_runs.make(uuid.UUID(cid))
    monkeypatch.undo()
    with session_scope() as session:
        assert session.get(FinalRound, uuid.UUID(cid)) is None
        made_then = session.query(Match).filter_by(challenge_id=uuid.UUID(cid), final_round=True)
        assert made_then.count() == 0

    # A worker again: its sweep makes the round; its calls hang until that worker is killed.
    provider.default = Behaviour.slow(60, "hello")
    calls_before = provider.request_count
    worker.start()
    until("a round match is being played", lambda: provider.request_count > calls_before)
    playing = _public(api, f"{public}/standings")
    # Its count of matches is the admins' only: which pairs it plays depends on entries made
    # after the freeze.
    assert playing["final_round"]["phase"] == "playing"
    counts = (playing["final_round"]["matches_played"], playing["final_round"]["matches_total"])
    assert counts == (None, None)
    # The freeze is kept past the close while the round plays (admins see the live board),
    # on the matches too: the round's, made since, are not there for anyone else.
    assert (playing["frozen"], playing["matches"]) == (True, len(before))
    listed = _public(api, f"{public}/matches?limit=200")
    assert listed["total"] == len(before) and not any(m["final_round"] for m in listed["items"])
    admins = _standings(api, key, cid)
    assert admins["frozen"] is False and admins["frozen_at"] == frozen_at
    assert admins["final_round"]["phase"] == "playing"
    assert admins["final_round"]["matches_total"] == len(expected - set(before))
    assert admins["final_round"]["matches_played"] < admins["final_round"]["matches_total"]
    exports = api.request("GET", f"/v1/challenges/{cid}/exports", key).json()
    assert exports["frozen_at"] == frozen_at
    slug = challenge["slug"]
    page = api.request("GET", f"/t/{tenant['slug']}/challenges/{slug}/boards?side=red")
    assert "Frozen" in page.text and "its matches are being played" in page.text
    worker.kill()

    # Another worker finishes the round (the sweep re-sends the matches whose lease ran out).
    provider.default = Behaviour.ok("hello")
    worker.start()
    standings = _final(api, key, cid)
    matches = all_matches(api, key, cid)
    played = _pairs(matches)
    assert set(played.values()) == {1}
    assert expected <= set(played)
    assert {m["status"] for m in matches} == {"completed"}
    made = [m for m in matches if m["final_round"]]
    assert {(m["attack_id"], m["defense_id"]) for m in made} == expected - set(before)
    assert standings["final_round"]["matches_played"] == len(made)
    with session_scope() as session:
        rounds = session.query(FinalRound).filter_by(challenge_id=uuid.UUID(cid)).all()
        assert [r.matches for r in rounds] == [len(made)]
    # Final: everyone sees the live board again, with every match.
    revealed = _public(api, f"{public}/standings")
    assert (revealed["frozen"], revealed["frozen_at"]) == (False, None)
    assert revealed["matches"] == len(matches)
    assert api.request("GET", f"/v1/challenges/{cid}/exports", key).json()["frozen_at"] is None
