"""Choosing the opponents of a new submission, over plain data.

A new attack meets defenses; a defense that has just become active meets attacks. The caller
gives the submission, the opponent side's active entries (every attack that can be matched;
every active defense), the challenge's pairing settings and the (attack id, defense id) pairs
that already have a match; `choose_opponents` answers the opponents to match now, in order.

Rules every policy keeps:

- never a participant against themself;
- of a participant's active defenses only the newest (by creation time, then id) is an
  opponent: older ones keep their history but are not paired again;
- never a pair that already has a match, and never more than the policy's number of
  opponents per submission counting the matches it already has, so asking again (a
  redelivered task) adds nothing, and asking after a crash adds only what is missing;
- the same inputs give the same answer, whatever order the entries come in.

Policies: `round_robin` (every opponent, newest first), `latest_best` (the best-rated opponent
participants), `random_active` (opponent participants drawn at random, seeded). The sampling
policies spread a submission over different participants: each opponent participant stands
for its newest eligible entry.
"""

from __future__ import annotations

import random
from collections.abc import Hashable, Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final, Generic, Literal, TypeVar

from app.kinds.red_blue.rules.config import PairingConfig

Side = Literal["attack", "defense"]
# An entry's and a participant's id as the caller gives them (the service's UUIDs; names in
# the tests): only hashed and compared for equality, never converted.
EntryId = TypeVar("EntryId", bound=Hashable)
ParticipantId = TypeVar("ParticipantId", bound=Hashable)
# Where an unrated opponent stands for latest_best: the centre of the rating scale, as a new
# participant is taken to be average until its matches say otherwise (`ratings`).
UNRATED_PAIRING_RATING: Final = 1000.0


@dataclass(frozen=True)
class NewEntry(Generic[EntryId, ParticipantId]):
    """The entry being paired: a new attack, or a defense that has just become active."""

    id: EntryId
    side: Side
    participant: ParticipantId


@dataclass(frozen=True)
class Opponent(Generic[EntryId, ParticipantId]):
    """An active entry of the other side."""

    id: EntryId
    participant: ParticipantId
    created_at: datetime
    # The participant's current rating on its side; None while unrated.
    rating: float | None = None


def _moment(created_at: datetime) -> datetime:
    # SQLite gives naive datetimes back; they are UTC, like every time the service stores.
    return created_at if created_at.tzinfo is not None else created_at.replace(tzinfo=UTC)


def _newest_first(entry: Opponent[EntryId, ParticipantId]) -> tuple[datetime, str]:
    return (_moment(entry.created_at), str(entry.id))


def _pair(
    new_entry: NewEntry[EntryId, ParticipantId], opponent: Opponent[EntryId, ParticipantId]
) -> tuple[EntryId, EntryId]:
    """The (attack id, defense id) of a match between them."""
    if new_entry.side == "attack":
        return (new_entry.id, opponent.id)
    return (opponent.id, new_entry.id)


def _newest_per_participant(
    entries: Iterable[Opponent[EntryId, ParticipantId]],
) -> list[Opponent[EntryId, ParticipantId]]:
    newest: dict[ParticipantId, Opponent[EntryId, ParticipantId]] = {}
    for entry in entries:
        kept = newest.get(entry.participant)
        if kept is None or _newest_first(entry) > _newest_first(kept):
            newest[entry.participant] = entry
    return list(newest.values())


def _by_rating(entry: Opponent[EntryId, ParticipantId]) -> tuple[float, datetime, str]:
    rating = entry.rating if entry.rating is not None else UNRATED_PAIRING_RATING
    return (rating, *_newest_first(entry))


def candidate_order(
    new_entry: NewEntry[EntryId, ParticipantId],
    opponents: Sequence[Opponent[EntryId, ParticipantId]],
    pairing: PairingConfig,
) -> list[Opponent[EntryId, ParticipantId]]:
    """Every eligible opponent, in the order the policy takes them (already matched ones
    included, so that asking again walks the same order)."""
    others = [entry for entry in opponents if entry.participant != new_entry.participant]
    if new_entry.side == "attack" or pairing.policy != "round_robin":
        # Defenses always; attacks too for the sampling policies (one per participant).
        others = _newest_per_participant(others)
    if pairing.policy == "latest_best":
        return sorted(others, key=_by_rating, reverse=True)
    newest_first = sorted(others, key=_newest_first, reverse=True)
    if pairing.policy == "round_robin":
        return newest_first
    # The draw depends on the challenge's seed and on this entry only; sorting first
    # makes it independent of the order the entries came in.
    draw = random.Random(f"{pairing.draw_seed}:{new_entry.side}:{new_entry.id}")
    draw.shuffle(newest_first)
    return newest_first


def choose_opponents(
    new_entry: NewEntry[EntryId, ParticipantId],
    opponents: Sequence[Opponent[EntryId, ParticipantId]],
    pairing: PairingConfig,
    matched_pairs: AbstractSet[tuple[EntryId, EntryId]],
) -> list[Opponent[EntryId, ParticipantId]]:
    """The opponents `new_entry` meets now, in the policy's order.

    `matched_pairs` holds the (attack id, defense id) of matches that already exist (at least
    those involving the entry); they are never made again, and count against the
    policy's number of opponents per entry (`opponents_per_submission`).
    """
    already = sum(
        1
        for attack_id, defense_id in matched_pairs
        if (attack_id if new_entry.side == "attack" else defense_id) == new_entry.id
    )
    room = pairing.opponents_per_submission - already
    chosen: list[Opponent[EntryId, ParticipantId]] = []
    for opponent in candidate_order(new_entry, opponents, pairing):
        if room <= len(chosen):
            break
        if _pair(new_entry, opponent) not in matched_pairs:
            chosen.append(opponent)
    return chosen
