"""The pairs of a final round, over plain data.

At the close of a challenge with a final round, every participant's newest active defense
meets every other participant's newest attack it has not met yet, so the final boards do not
depend on who submitted when. The caller gives the active defenses, the attacks and the
(attack id, defense id) pairs that already have a match; `final_pairs` answers the pairs to
play, in a fixed order.

- Of a participant's entries only the newest of each side plays (by creation time, then id,
  as pairing takes a participant's newest active defense).
- Never a participant against themself.
- Never a pair that already has a match: asking again (a redelivered task, a second close
  after the challenge was opened again) adds only what is missing.
- No policy and no cap per submission: the round is there to complete the table of the
  newest entries, whatever the pairing policy left out.
- Baselines are entries like any other here: they play, as they do in regular pairing (their
  matches count for their opponents' ratings; boards leave them out of ranks and standings).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Final, Generic, TypeVar

# An entry's and a participant's id as the caller gives them (the service's UUIDs; names in
# the tests): hashed, compared for equality and ordered by their text, never converted.
EntryId = TypeVar("EntryId", bound=Hashable)
ParticipantId = TypeVar("ParticipantId", bound=Hashable)


class Phase(StrEnum):
    """Where a challenge with a final round stands.

    `upcoming`: not closed yet. `starting`: closed, its round not made yet (it waits for the
    self-tests still running, so the round sees every defense that becomes active). `playing`:
    the round's matches are being played. `rating`: all played, the final ratings (and their
    intervals) are being computed. `final`: the boards are final."""

    UPCOMING = "upcoming"
    STARTING = "starting"
    PLAYING = "playing"
    RATING = "rating"
    FINAL = "final"


# From the close until the boards are final, a freeze that had begun is kept: the boards are
# revealed once, final, not while the round's matches land.
HOLDS_FREEZE: Final = frozenset({Phase.STARTING, Phase.PLAYING, Phase.RATING})


def phase_of(*, closed: bool, made: bool, played: bool, rated_all: bool) -> Phase:
    """`made`: the round of this close is made; `played`: all its matches finished;
    `rated_all`: the board's ratings and intervals count every match landed on it."""
    if not closed:
        return Phase.UPCOMING
    if not made:
        return Phase.STARTING
    if not played:
        return Phase.PLAYING
    return Phase.FINAL if rated_all else Phase.RATING


@dataclass(frozen=True)
class RoundEntry(Generic[EntryId, ParticipantId]):
    """An active defense or an attack."""

    id: EntryId
    participant: ParticipantId
    created_at: datetime


Entries = Iterable[RoundEntry[EntryId, ParticipantId]]


def _order(entry: RoundEntry[EntryId, ParticipantId]) -> tuple[datetime, str]:
    # SQLite gives naive datetimes back; they are UTC, like every time the service stores.
    moment = entry.created_at
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment, str(entry.id))


def newest_of_each(
    entries: Entries[EntryId, ParticipantId],
) -> dict[ParticipantId, RoundEntry[EntryId, ParticipantId]]:
    """Each participant's newest entry."""
    newest: dict[ParticipantId, RoundEntry[EntryId, ParticipantId]] = {}
    for entry in entries:
        kept = newest.get(entry.participant)
        if kept is None or _order(entry) > _order(kept):
            newest[entry.participant] = entry
    return newest


def final_pairs(
    defenses: Entries[EntryId, ParticipantId],
    attacks: Entries[EntryId, ParticipantId],
    matched_pairs: AbstractSet[tuple[EntryId, EntryId]],
) -> list[tuple[RoundEntry[EntryId, ParticipantId], RoundEntry[EntryId, ParticipantId]]]:
    """The (attack, defense) pairs the round plays: each participant's newest defense against
    every other participant's newest attack, those with a match already left out; ordered by
    defender, then attacker (by their ids' text)."""
    blue = newest_of_each(defenses)
    red = newest_of_each(attacks)
    pairs = []
    for defender in sorted(blue, key=str):
        defense = blue[defender]
        for attacker in sorted(red, key=str):
            attack = red[attacker]
            if attacker != defender and (attack.id, defense.id) not in matched_pairs:
                pairs.append((attack, defense))
    return pairs
