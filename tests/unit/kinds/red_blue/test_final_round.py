"""A red-blue final round's rules (app/kinds/red_blue/rules/final_round.py): which pairs it
plays, where a challenge stands, and its setting in the challenge body and the console form."""

from __future__ import annotations

import itertools
import random
from datetime import UTC, datetime, timedelta

from app.kinds.red_blue.rules.final_round import (
    HOLDS_FREEZE,
    Phase,
    RoundEntry,
    final_pairs,
    newest_of_each,
    phase_of,
)

T0 = datetime(2026, 11, 1, tzinfo=UTC)


def _entry(entry_id: str, who: str, minutes: int) -> RoundEntry:
    return RoundEntry(entry_id, who, T0 + timedelta(minutes=minutes))


def _ids(pairs: list[tuple[RoundEntry, RoundEntry]]) -> list[tuple[object, object]]:
    return [(attack.id, defense.id) for attack, defense in pairs]


def test_each_newest_defense_meets_each_other_participants_newest_attack() -> None:
    defenses = [_entry("d-amy-1", "amy", 0), _entry("d-amy-2", "amy", 5), _entry("d-bo", "bo", 1)]
    attacks = [
        _entry("a-amy", "amy", 2),
        _entry("a-cy-1", "cy", 3),
        _entry("a-cy-2", "cy", 9),
        _entry("a-bo", "bo", 4),
    ]
    assert _ids(final_pairs(defenses, attacks, set())) == [
        ("a-bo", "d-amy-2"),
        ("a-cy-2", "d-amy-2"),
        ("a-amy", "d-bo"),
        ("a-cy-2", "d-bo"),
    ]


def test_pairs_that_met_are_not_played_again() -> None:
    defenses = [_entry("d-amy", "amy", 0), _entry("d-bo", "bo", 0)]
    attacks = [_entry("a-amy", "amy", 0), _entry("a-bo", "bo", 0), _entry("a-cy", "cy", 0)]
    every = final_pairs(defenses, attacks, set())
    met = {("a-bo", "d-amy"), ("a-cy", "d-bo")}
    again = final_pairs(defenses, attacks, met)
    assert set(_ids(again)) == set(_ids(every)) - met
    # Asked once more with all of them met: nothing.
    assert final_pairs(defenses, attacks, set(_ids(every))) == []


def test_the_answer_does_not_depend_on_the_order_entries_come_in() -> None:
    defenses = [_entry(f"d{n}", f"p{n % 4}", n) for n in range(10)]
    attacks = [_entry(f"a{n}", f"p{n % 5}", 10 - n) for n in range(12)]
    expected = final_pairs(defenses, attacks, {("a3", "d9")})
    shuffle = random.Random(7)
    for _ in range(20):
        shuffle.shuffle(defenses)
        shuffle.shuffle(attacks)
        assert final_pairs(defenses, attacks, {("a3", "d9")}) == expected


def test_no_participant_meets_themself_and_empty_sides_play_nothing() -> None:
    solo = [_entry("d", "amy", 0)]
    assert final_pairs(solo, [_entry("a", "amy", 0)], set()) == []
    assert final_pairs([], [_entry("a", "amy", 0)], set()) == []
    assert final_pairs(solo, [], set()) == []


def test_newest_breaks_ties_by_id_and_takes_naive_times_as_utc() -> None:
    naive = T0.replace(tzinfo=None)
    entries = [RoundEntry("b", "amy", naive), RoundEntry("a", "amy", T0), _entry("z", "bo", -1)]
    newest = newest_of_each(entries)
    assert (newest["amy"].id, newest["bo"].id) == ("b", "z")


def test_unicode_handles_and_many_participants() -> None:
    who = ["ünï", "日本", "a b", "x" * 200]
    defenses = [_entry(f"d{n}", name, n) for n, name in enumerate(who)]
    attacks = [_entry(f"a{n}", name, n) for n, name in enumerate(who)]
    assert len(final_pairs(defenses, attacks, set())) == len(who) * (len(who) - 1)
    many = [_entry(f"e{n}", f"p{n}", n) for n in range(60)]
    assert len(final_pairs(many, many, set())) == 60 * 59


def test_the_phases_and_the_freeze_they_keep() -> None:
    seen = {
        (closed, made, played, rated): phase_of(
            closed=closed, made=made, played=played, rated_all=rated
        )
        for closed, made, played, rated in itertools.product((False, True), repeat=4)
    }
    assert {phase for key, phase in seen.items() if not key[0]} == {Phase.UPCOMING}
    assert seen[(True, False, False, True)] is Phase.STARTING
    assert seen[(True, True, False, True)] is Phase.PLAYING
    assert seen[(True, True, True, False)] is Phase.RATING
    assert seen[(True, True, True, True)] is Phase.FINAL
    assert {Phase.STARTING, Phase.PLAYING, Phase.RATING} == HOLDS_FREEZE


def test_the_setting_is_off_by_default_and_in_the_console_form() -> None:
    from app.kinds.red_blue.config import RedBlueSections
    from app.web.authoring.service import challenge_form
    from app.web.schema_form import FormField, Widget

    body = {
        "target": {"model": "offline/guarded-echo"},
        "judge_suite": {
            "categories": [{"name": "pwned", "verifier": {"type": "contains", "pattern": "P"}}]
        },
        "self_test": {"prompt": "Say hello", "verifier": {"type": "contains", "pattern": "h"}},
    }
    assert RedBlueSections.model_validate(body).final_round is False
    assert RedBlueSections.model_validate({**body, "final_round": True}).final_round is True
    fields = [item for item in challenge_form("red_blue").items if isinstance(item, FormField)]
    (setting,) = [field for field in fields if field.path == "final_round"]
    assert setting.widget is Widget.YES_NO and setting.default is False
