"""Pairing policies over plain data: who a new attack or defense meets."""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from app.kinds.red_blue.rules.config import PairingConfig
from app.kinds.red_blue.rules.pairing import (
    UNRATED_PAIRING_RATING,
    NewEntry,
    Opponent,
    choose_opponents,
)

START = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)


def _at(minutes: int) -> datetime:
    return START + timedelta(minutes=minutes)


def _ids(opponents: list[Opponent[str, str]]) -> list[str]:
    return [opponent.id for opponent in opponents]


ROUND_ROBIN = PairingConfig(policy="round_robin", max_matches_per_submission=50)

# Active defenses: bob has an older and a newer one; carol one; the attacker alice one too.
DEFENSES = [
    Opponent("d-bob-old", "bob", _at(1), rating=1300.0),
    Opponent("d-carol", "carol", _at(2), rating=900.0),
    Opponent("d-alice", "alice", _at(3), rating=1500.0),
    Opponent("d-bob-new", "bob", _at(4), rating=1100.0),
    Opponent("d-dave", "dave", _at(5)),
]
ATTACK = NewEntry("a-new", "attack", "alice")


def test_round_robin_attack_meets_each_others_newest_defense_newest_first() -> None:
    chosen = choose_opponents(ATTACK, DEFENSES, ROUND_ROBIN, frozenset())
    assert _ids(chosen) == ["d-dave", "d-bob-new", "d-carol"]


def test_round_robin_is_capped() -> None:
    capped = PairingConfig(policy="round_robin", max_matches_per_submission=2)
    assert _ids(choose_opponents(ATTACK, DEFENSES, capped, frozenset())) == [
        "d-dave",
        "d-bob-new",
    ]


def test_round_robin_defense_meets_every_attack_of_others() -> None:
    attacks = [
        Opponent("a-bob-1", "bob", _at(1)),
        Opponent("a-bob-2", "bob", _at(2)),
        Opponent("a-carol", "carol", _at(3)),
        Opponent("a-erin", "erin", _at(4)),
    ]
    defense = NewEntry("d-erin", "defense", "erin")
    chosen = choose_opponents(defense, attacks, ROUND_ROBIN, frozenset())
    assert _ids(chosen) == ["a-carol", "a-bob-2", "a-bob-1"]


def test_an_existing_pair_is_never_made_again_and_counts_against_the_cap() -> None:
    capped = PairingConfig(policy="round_robin", max_matches_per_submission=2)
    matched = {("a-new", "d-dave")}
    # One match exists already: one more, the next in order, and never d-dave again.
    assert _ids(choose_opponents(ATTACK, DEFENSES, capped, matched)) == ["d-bob-new"]
    everything = {("a-new", "d-dave"), ("a-new", "d-bob-new")}
    assert choose_opponents(ATTACK, DEFENSES, capped, everything) == []


def test_asking_again_after_the_matches_exist_adds_nothing() -> None:
    for policy in ("round_robin", "latest_best", "random_active"):
        pairing = PairingConfig(policy=policy, max_matches_per_submission=2)
        first = choose_opponents(ATTACK, DEFENSES, pairing, frozenset())
        made = {(ATTACK.id, opponent.id) for opponent in first}
        assert len(first) == 2, policy
        assert choose_opponents(ATTACK, DEFENSES, pairing, made) == [], policy
        # A crash after the first match: asking again makes exactly the missing one.
        partial = {(ATTACK.id, first[0].id)}
        assert choose_opponents(ATTACK, DEFENSES, pairing, partial) == first[1:], policy


def test_an_older_defense_never_stands_in_for_a_matched_newer_one() -> None:
    matched = {("a-new", "d-bob-new")}
    chosen = choose_opponents(ATTACK, DEFENSES, ROUND_ROBIN, matched)
    assert "d-bob-old" not in _ids(chosen)
    assert _ids(chosen) == ["d-dave", "d-carol"]


def test_pairs_of_other_submissions_do_not_count() -> None:
    matched = {("a-other", "d-dave"), ("a-other", "d-carol")}
    capped = PairingConfig(policy="round_robin", max_matches_per_submission=2)
    assert _ids(choose_opponents(ATTACK, DEFENSES, capped, matched)) == ["d-dave", "d-bob-new"]


def test_latest_best_takes_the_best_rated_newest_defenses() -> None:
    pairing = PairingConfig(policy="latest_best", n=2)
    # bob counts with his newest defense (1100), not the older one rated 1300; dave is
    # unrated and stands at the centre of the scale (1000); alice is the attacker.
    assert _ids(choose_opponents(ATTACK, DEFENSES, pairing, frozenset())) == [
        "d-bob-new",
        "d-dave",
    ]
    assert UNRATED_PAIRING_RATING == 1000.0
    three = PairingConfig(policy="latest_best", n=3)
    assert _ids(choose_opponents(ATTACK, DEFENSES, three, frozenset()))[2] == "d-carol"


def test_latest_best_ties_go_to_the_newest() -> None:
    tied = [
        Opponent("d-1", "p1", _at(1), rating=1200.0),
        Opponent("d-2", "p2", _at(2), rating=1200.0),
        Opponent("d-3", "p3", _at(3), rating=1100.0),
    ]
    pairing = PairingConfig(policy="latest_best", n=2)
    assert _ids(choose_opponents(ATTACK, tied, pairing, frozenset())) == ["d-2", "d-1"]


def test_sampling_policies_spread_a_defense_over_attacking_participants() -> None:
    attacks = [
        Opponent("a-bob-1", "bob", _at(1), rating=1400.0),
        Opponent("a-bob-2", "bob", _at(2), rating=1400.0),
        Opponent("a-carol", "carol", _at(3), rating=1000.0),
    ]
    defense = NewEntry("d-erin", "defense", "erin")
    for policy in ("latest_best", "random_active"):
        pairing = PairingConfig(policy=policy, n=3)
        chosen = choose_opponents(defense, attacks, pairing, frozenset())
        # One per participant, the newest: bob's first attack is not an opponent.
        assert sorted(_ids(chosen)) == ["a-bob-2", "a-carol"], policy


def _pool(size: int) -> list[Opponent]:
    return [Opponent(f"d{index}", f"p{index}", _at(index)) for index in range(size)]


def test_random_active_is_reproducible_for_a_seed_and_submission() -> None:
    pool = _pool(40)
    pairing = PairingConfig(policy="random_active", n=5, seed=7)
    first = choose_opponents(ATTACK, pool, pairing, frozenset())
    assert len(first) == 5 and len(set(_ids(first))) == 5
    assert choose_opponents(ATTACK, pool, pairing, frozenset()) == first
    # Different submissions (or seeds) draw differently; with 40 choose 5 draws, the
    # chance that any of these coincide by accident is below one in 100,000.
    other_attack = NewEntry("a-other", "attack", "alice")
    assert choose_opponents(other_attack, pool, pairing, frozenset()) != first
    reseeded = PairingConfig(policy="random_active", n=5, seed=8)
    assert choose_opponents(ATTACK, pool, reseeded, frozenset()) != first


def test_random_active_draws_every_opponent_in_the_long_run() -> None:
    pool = _pool(10)
    pairing = PairingConfig(policy="random_active", n=2)
    seen: set[str] = set()
    for index in range(200):
        submission = NewEntry(f"a{index}", "attack", "alice")
        seen.update(_ids(choose_opponents(submission, pool, pairing, frozenset())))
    assert seen == {opponent.id for opponent in pool}


@pytest.mark.parametrize("policy", ["round_robin", "latest_best", "random_active"])
def test_the_order_of_the_entries_does_not_matter(policy: str) -> None:
    pool = [
        Opponent(f"d{index}", f"p{index % 7}", _at(index % 5), rating=float(index % 3) * 100)
        for index in range(30)
    ]
    pairing = PairingConfig.model_validate(
        {"policy": policy, "max_matches_per_submission": 4}
        | ({} if policy == "round_robin" else {"n": 4})
    )
    expected = choose_opponents(ATTACK, pool, pairing, frozenset())
    shuffler = random.Random(3)
    for _ in range(5):
        shuffled = pool[:]
        shuffler.shuffle(shuffled)
        assert choose_opponents(ATTACK, shuffled, pairing, frozenset()) == expected


def test_naive_times_are_taken_as_utc() -> None:
    mixed = [
        Opponent("d-naive", "p1", datetime(2026, 11, 26, 12, 30)),
        Opponent("d-aware", "p2", _at(10)),
    ]
    assert _ids(choose_opponents(ATTACK, mixed, ROUND_ROBIN, frozenset())) == [
        "d-naive",
        "d-aware",
    ]


def test_nobody_to_meet() -> None:
    assert choose_opponents(ATTACK, [], ROUND_ROBIN, frozenset()) == []
    only_self = [Opponent("d-alice", "alice", _at(1))]
    assert choose_opponents(ATTACK, only_self, ROUND_ROBIN, frozenset()) == []


@pytest.mark.parametrize("policy", ["round_robin", "latest_best", "random_active"])
def test_invariants_on_random_competitions(policy: str) -> None:
    generator = random.Random(policy)
    for trial in range(200):
        participants = [f"p{index}" for index in range(generator.randint(1, 8))]
        defenses = [
            Opponent(
                f"d{index}",
                generator.choice(participants),
                _at(generator.randint(0, 20)),
                rating=generator.choice([None, generator.uniform(600, 1400)]),
            )
            for index in range(generator.randint(0, 15))
        ]
        submission = NewEntry(f"a{trial}", "attack", generator.choice(participants))
        matched = {(submission.id, defense.id) for defense in defenses if generator.random() < 0.2}
        cap = generator.randint(1, 6)
        settings: dict[str, object] = {"policy": policy, "max_matches_per_submission": cap}
        if policy != "round_robin":
            settings["n"] = generator.randint(1, cap)
        pairing = PairingConfig.model_validate(settings)
        chosen = choose_opponents(submission, defenses, pairing, matched)

        newest: dict[str, Opponent] = {}
        for defense in defenses:
            kept = newest.get(defense.participant)
            if kept is None or (defense.created_at, defense.id) > (kept.created_at, kept.id):
                newest[defense.participant] = defense
        eligible = [
            defense
            for participant, defense in newest.items()
            if participant != submission.participant and (submission.id, defense.id) not in matched
        ]
        assert all(opponent.participant != submission.participant for opponent in chosen)
        assert all((submission.id, opponent.id) not in matched for opponent in chosen)
        assert all(newest[opponent.participant] is opponent for opponent in chosen)
        assert len({opponent.participant for opponent in chosen}) == len(chosen)
        room = max(0, pairing.opponents_per_submission - len(matched))
        assert len(chosen) == min(room, len(eligible))


def test_ids_of_any_hashable_type_come_back_as_given() -> None:
    # The service pairs by UUIDs: an opponent is the one given, its participant compared as is.
    alice, bob, carol = (uuid.uuid4() for _ in range(3))
    defenses = [
        Opponent(uuid.uuid4(), bob, _at(1)),
        Opponent(uuid.uuid4(), alice, _at(2)),
        Opponent(uuid.uuid4(), carol, _at(3)),
    ]
    attack = NewEntry(uuid.uuid4(), "attack", alice)
    chosen = choose_opponents(attack, defenses, ROUND_ROBIN, frozenset())
    assert chosen == [defenses[2], defenses[0]]
    assert choose_opponents(attack, defenses, ROUND_ROBIN, {(attack.id, defenses[2].id)}) == [
        defenses[0]
    ]
