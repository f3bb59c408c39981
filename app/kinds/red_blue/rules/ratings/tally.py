"""The judged matches the ratings are fitted to, summed per distinct (red, blue) pair.

The data. Matches between the same red and blue participant are interchangeable, so the fit
and the bootstrap work on a `Tally`: per distinct (red, blue) pair, how many matches and how
many red won. A tally grows by batches (`Tally.add`), so a competition that keeps going is
never read again match by match.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, Generic, NamedTuple

import numpy as np
import numpy.typing as npt

from app.kinds.red_blue.rules.ratings.scale import (
    BoolArray,
    FloatArray,
    IntArray,
    Participant,
    _sum_by,
)

# Names of participants become indices; a pair's key is red index * _KEY_BASE + blue index.
_KEY_BASE: Final = 1 << 32


class MatchOutcome(NamedTuple, Generic[Participant]):
    """One judged match as the ratings count it: who attacked, who defended, and whether the
    attack won."""

    red: Participant
    blue: Participant
    red_won: bool


class PairResults(NamedTuple, Generic[Participant]):
    """Judged matches between one red and one blue participant: how many, and how many red won."""

    red: Participant
    blue: Participant
    matches: int
    red_wins: int


class Tally(Generic[Participant]):
    """Every judged match of a competition, summed per distinct (red, blue) pair.

    Participants are numbered in the order they first appear: red ones 0..reds-1, and as
    players of the fit (`players`), red ones first, then blue ones (reds..players-1). A batch
    of results adds to the pairs it names and appends the pairs and participants it brings;
    numbers already given never change, so arrays kept alongside (strengths, intervals) only
    grow at the end of each side."""

    def __init__(self) -> None:
        self.red_names: list[Participant] = []
        self.blue_names: list[Participant] = []
        self._red_index: dict[Participant, int] = {}
        self._blue_index: dict[Participant, int] = {}
        self.pair_red: IntArray = np.zeros(0, np.int64)
        self.pair_blue: IntArray = np.zeros(0, np.int64)  # a blue participant's number
        self.pair_matches: FloatArray = np.zeros(0)
        self.pair_wins: FloatArray = np.zeros(0)
        # The pairs' keys in increasing order, and each one's pair: a batch finds its pairs by
        # binary search.
        self._sorted_keys: IntArray = np.zeros(0, np.int64)
        self._sorted_pairs: IntArray = np.zeros(0, np.int64)

    @classmethod
    def of(cls, matches: Iterable[MatchOutcome[Participant]]) -> Tally[Participant]:
        """The tally of a list of matches, participants numbered in name order."""
        reds: dict[Participant, int] = {}
        blues: dict[Participant, int] = {}
        red: list[int] = []
        blue: list[int] = []
        won: list[bool] = []
        for red_name, blue_name, red_won in matches:
            red.append(reds.setdefault(red_name, len(reds)))
            blue.append(blues.setdefault(blue_name, len(blues)))
            won.append(bool(red_won))
        tally: Tally[Participant] = cls()
        tally.add_columns(
            list(reds),
            list(blues),
            np.asarray(red, np.int64),
            np.asarray(blue, np.int64),
            np.ones(len(red)),
            np.asarray(won, np.float64),
        )
        return tally.canonical()[0]

    @property
    def reds(self) -> int:
        return len(self.red_names)

    @property
    def blues(self) -> int:
        return len(self.blue_names)

    @property
    def players(self) -> int:
        return self.reds + self.blues

    @property
    def pairs(self) -> int:
        return len(self.pair_red)

    @property
    def matches(self) -> int:
        return round(float(self.pair_matches.sum()))

    def red_number(self, name: Participant) -> int | None:
        return self._red_index.get(name)

    def blue_number(self, name: Participant) -> int | None:
        return self._blue_index.get(name)

    def add(self, results: Iterable[PairResults[Participant]]) -> None:
        """Adds judged matches; a pair named twice (here or before) is summed."""
        reds: dict[Participant, int] = {}
        blues: dict[Participant, int] = {}
        red: list[int] = []
        blue: list[int] = []
        played: list[int] = []
        won: list[int] = []
        for result in results:
            red.append(reds.setdefault(result.red, len(reds)))
            blue.append(blues.setdefault(result.blue, len(blues)))
            played.append(result.matches)
            won.append(result.red_wins)
        self.add_columns(
            list(reds),
            list(blues),
            np.asarray(red, np.int64),
            np.asarray(blue, np.int64),
            np.asarray(played, np.float64),
            np.asarray(won, np.float64),
        )

    def add_columns(
        self,
        red_names: list[Participant],
        blue_names: list[Participant],
        red: IntArray,
        blue: IntArray,
        matches: npt.ArrayLike,
        red_wins: npt.ArrayLike,
    ) -> None:
        """Adds judged matches given as columns: per row (a match, or a pair's matches), the
        index of its red participant in `red_names` and of its blue one in `blue_names`, how
        many matches and how many red won. A pair named twice (here or before) is summed."""
        played = np.asarray(matches, np.float64)
        won = np.asarray(red_wins, np.float64)
        if not len(played):
            return
        if (played < 0).any() or (won < 0).any() or (won > played).any():
            bad = int(np.flatnonzero((played < 0) | (won < 0) | (won > played))[0])
            raise ValueError(
                f"impossible results for ({red_names[red[bad]]!r}, {blue_names[blue[bad]]!r}): "
                f"{won[bad]:g}/{played[bad]:g}"
            )
        red_numbers = np.fromiter(
            (self._number(self._red_index, self.red_names, n) for n in red_names),
            np.int64,
            len(red_names),
        )
        blue_numbers = np.fromiter(
            (self._number(self._blue_index, self.blue_names, n) for n in blue_names),
            np.int64,
            len(blue_names),
        )
        keys: IntArray = red_numbers[red] * _KEY_BASE + blue_numbers[blue]
        batch_keys, inverse = np.unique(keys, return_inverse=True)
        batch_matches = np.bincount(inverse, played, len(batch_keys)).astype(np.float64)
        batch_wins = np.bincount(inverse, won, len(batch_keys)).astype(np.float64)
        at: IntArray = np.searchsorted(self._sorted_keys, batch_keys)
        known: npt.NDArray[np.bool_] = at < len(self._sorted_keys)
        known[known] = self._sorted_keys[at[known]] == batch_keys[known]
        existing = self._sorted_pairs[at[known]]
        self.pair_matches[existing] += batch_matches[known]
        self.pair_wins[existing] += batch_wins[known]
        new_keys = batch_keys[~known]
        if len(new_keys):
            first = self.pairs
            self.pair_red = np.concatenate([self.pair_red, new_keys // _KEY_BASE])
            self.pair_blue = np.concatenate([self.pair_blue, new_keys % _KEY_BASE])
            self.pair_matches = np.concatenate([self.pair_matches, batch_matches[~known]])
            self.pair_wins = np.concatenate([self.pair_wins, batch_wins[~known]])
            slots = at[~known]
            self._sorted_keys = np.insert(self._sorted_keys, slots, new_keys)
            self._sorted_pairs = np.insert(
                self._sorted_pairs, slots, np.arange(first, first + len(new_keys))
            )

    @staticmethod
    def _number(index: dict[Participant, int], names: list[Participant], name: Participant) -> int:
        number = index.get(name)
        if number is None:
            number = index[name] = len(names)
            names.append(name)
        return number

    def player_pairs(self) -> tuple[IntArray, IntArray]:
        """Each pair's red and blue participant as players of the fit."""
        return self.pair_red, self.pair_blue + self.reds

    def played(self) -> FloatArray:
        """Matches per player (red ones, then blue ones)."""
        red, blue = self.player_pairs()
        players = self.players
        return _sum_by(red, self.pair_matches, players) + _sum_by(blue, self.pair_matches, players)

    def wins(self) -> FloatArray:
        """Wins per player: a red participant's breaches, a blue one's holds."""
        red, blue = self.player_pairs()
        players = self.players
        return _sum_by(red, self.pair_wins, players) + _sum_by(
            blue, self.pair_matches - self.pair_wins, players
        )

    def unbeaten(self) -> tuple[BoolArray, BoolArray]:
        """Per player, whether it won every match it played, and whether it lost every one:
        its matches bound its strength on one side only."""
        played, wins = self.played(), self.wins()
        return wins == played, wins == 0

    def canonical(self) -> tuple[Tally[Participant], IntArray]:
        """The same tally with participants numbered in name order and pairs in key order, and
        for each of its players the number of that player here (values[order] re-orders an
        array of this tally's players)."""
        red_order = np.asarray(sorted(range(self.reds), key=self.red_names.__getitem__), np.int64)
        blue_order = np.asarray(
            sorted(range(self.blues), key=self.blue_names.__getitem__), np.int64
        )
        red_rank = np.empty(self.reds, np.int64)
        red_rank[red_order] = np.arange(self.reds)
        blue_rank = np.empty(self.blues, np.int64)
        blue_rank[blue_order] = np.arange(self.blues)
        pair_red, pair_blue = red_rank[self.pair_red], blue_rank[self.pair_blue]
        keys = pair_red * _KEY_BASE + pair_blue
        pair_order = np.argsort(keys, kind="stable")
        result: Tally[Participant] = Tally()
        result.red_names = [self.red_names[i] for i in red_order]
        result.blue_names = [self.blue_names[i] for i in blue_order]
        result._red_index = {name: i for i, name in enumerate(result.red_names)}
        result._blue_index = {name: i for i, name in enumerate(result.blue_names)}
        result.pair_red = pair_red[pair_order]
        result.pair_blue = pair_blue[pair_order]
        result.pair_matches = self.pair_matches[pair_order]
        result.pair_wins = self.pair_wins[pair_order]
        result._sorted_keys = keys[pair_order]
        result._sorted_pairs = np.arange(self.pairs, dtype=np.int64)
        order = np.concatenate([red_order, self.reds + blue_order])
        return result, order
