"""A red-blue board's ratings and standings, recomputed on a worker: the matches landed since
the last recompute rated on top of what this process kept of the board, both boards and the
standings written in one transaction, the intervals bootstrapped again at a bounded rate.

A module of its own because it is the one part of the kind that needs numpy and scipy
(~0.6 s to import): the recompute task imports it when it first runs, so a worker that
never rates a board never loads them.
"""

from __future__ import annotations

import math
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import numpy as np

from app.kinds.api import Settings, UnitOfWork, get_settings, unit_of_work
from app.kinds.api.services import redblue_recomputed
from app.kinds.api.storage import session_scope, utcnow
from app.kinds.red_blue import cross_tenant
from app.kinds.red_blue.cross_tenant import RatingRow
from app.kinds.red_blue.dispatch import INTERVALS_ONLY, recompute_in
from app.kinds.red_blue.models import Side
from app.kinds.red_blue.rules.ratings import (
    FloatArray,
    Tally,
    bootstrap_bounds,
    fit_strengths,
    interval_ranks,
    provisional_bounds,
    to_rating,
    to_strength,
)

# Ratings and standings ------------------------------------------------------------------------
#
# A worker process keeps what it knows of the boards it recomputed (`_BoardState`), so its next
# recompute of one reads only the matches landed since (by landing number), refines the
# previous strengths (a few Newton steps) and rewrites only the rows that changed. The
# intervals are bootstrapped again at a bounded rate, from a recount of every match of the
# board; in between, each participant's interval keeps its width around its moved rating
# (app.kinds.red_blue.rules.ratings.provisional_bounds). After a recompute that took t
# seconds the next waits t · (1 - share) / share (`GAUNTLET_REDBLUE_RECOMPUTE_SHARE`), after
# an interval refresh likewise (`GAUNTLET_REDBLUE_INTERVALS_SHARE`), so neither takes more than
# its share of a worker process however large the board grows.

# Boards a process keeps, least recently recomputed dropped first (a board of a million
# matches takes some 50 MB); a dropped one is recounted at its next recompute.
_KEPT_BOARDS = 8


@dataclass
class _BoardState:
    """A board as this process last recomputed it: every match rated (a tally, up to landing
    `seq`), each player's strength and its interval ends' offsets from it (logits; NaN: not
    bootstrapped yet), from the bootstrap of landing `intervals_seq`, each participant's points
    and handle, and the rows it last wrote (under the board marker `written[0]`)."""

    tenant_id: uuid.UUID
    seq: int
    # Participants by their ids.
    tally: Tally[uuid.UUID]
    strength: FloatArray
    low_offset: FloatArray
    high_offset: FloatArray
    intervals_seq: int
    red_points: dict[uuid.UUID, int]
    blue_points: dict[uuid.UUID, int]
    handles: dict[uuid.UUID, str]
    written: tuple[tuple[int, int], list[RatingRow]] | None = None
    # Each side's baseline players (read again by every recompute): marked, ranked where they
    # would place, counted in no one's rank nor in the team standings.
    baselines: dict[Side, set[uuid.UUID]] = field(default_factory=dict)
    # The prior's precision last fitted to the board's matches (None: not yet in this
    # process), where the next recompute's search of it starts.
    prior_precision: float | None = None

    def team_points(self, side: Side) -> int:
        """The side's points in the team standings: its participants', no baseline's."""
        points = self.red_points if side is Side.RED else self.blue_points
        left_out = self.baselines.get(side, set())
        return sum(value for participant, value in points.items() if participant not in left_out)

    @classmethod
    def recounted(cls, tenant_id: uuid.UUID, seq: int, landed: cross_tenant.Landed) -> _BoardState:
        nothing = np.zeros(0)
        tally: Tally[uuid.UUID] = Tally()
        state = cls(tenant_id, 0, tally, nothing, nothing, nothing, 0, {}, {}, {})
        state.add(landed, seq)
        return state

    def add(self, landed: cross_tenant.Landed, seq: int) -> None:
        """Adds the matches landed after `self.seq` up to `seq`; the per-player arrays grow
        with the participants they bring (strength 0, no interval yet)."""
        reds, blues = self.tally.reds, self.tally.blues
        self.tally.add_columns(
            landed.reds, landed.blues, landed.red, landed.blue, landed.matches, landed.red_wins
        )
        for participants, index, points, total in (
            (landed.reds, landed.red, landed.red_points, self.red_points),
            (landed.blues, landed.blue, landed.blue_points, self.blue_points),
        ):
            summed = np.bincount(index, points, len(participants)).astype(np.int64).tolist()
            for participant, value in zip(participants, summed, strict=True):
                total[participant] = total.get(participant, 0) + value
        self.strength = self._grown(self.strength, reds, blues, 0.0)
        self.low_offset = self._grown(self.low_offset, reds, blues, math.nan)
        self.high_offset = self._grown(self.high_offset, reds, blues, math.nan)
        self.seq = seq

    def _grown(self, values: FloatArray, reds: int, blues: int, fill: float) -> FloatArray:
        more_reds, more_blues = self.tally.reds - reds, self.tally.blues - blues
        if not more_reds and not more_blues:
            return values
        return np.concatenate(
            [values[:reds], np.full(more_reds, fill), values[reds:], np.full(more_blues, fill)]
        )

    def player(self, side: Side, participant: uuid.UUID) -> int | None:
        if side is Side.RED:
            return self.tally.red_number(participant)
        number = self.tally.blue_number(participant)
        return None if number is None else self.tally.reds + number

    def start_from_stored(self, stored: list[RatingRow], *, strengths: bool) -> None:
        """Takes the board as stored: its intervals as offsets (the last bootstrap's, whoever
        wrote it; an open end, null, as an infinite one) and, with `strengths`, its ratings as
        the fit's start."""
        for row in stored:
            player = self.player(row.side, row.participant_id)
            if player is None:
                continue
            strength, low, high = to_strength(
                np.array(
                    [
                        row.rating,
                        -math.inf if row.rating_low is None else row.rating_low,
                        math.inf if row.rating_high is None else row.rating_high,
                    ]
                )
            )
            if strengths:
                self.strength[player] = strength
            self.low_offset[player] = low - strength
            self.high_offset[player] = high - strength

    def start_from_kept(self, kept: _BoardState) -> None:
        """Takes what this process kept of the board: strengths, interval offsets, handles."""
        order = [
            *((Side.RED, participant) for participant in kept.tally.red_names),
            *((Side.BLUE, participant) for participant in kept.tally.blue_names),
        ]
        for kept_player, (side, participant) in enumerate(order):
            player = self.player(side, participant)
            if player is not None:
                self.strength[player] = kept.strength[kept_player]
                self.low_offset[player] = kept.low_offset[kept_player]
                self.high_offset[player] = kept.high_offset[kept_player]
        self.intervals_seq = kept.intervals_seq
        self.handles = kept.handles
        self.written = kept.written
        self.prior_precision = kept.prior_precision


_board_states: OrderedDict[uuid.UUID, _BoardState] = OrderedDict()
_board_states_lock = threading.Lock()


def _take_state(challenge_id: uuid.UUID) -> _BoardState | None:
    """This process's state of the board, taken out while a recompute works on it (another
    thread recomputing the same board meanwhile recounts instead)."""
    with _board_states_lock:
        return _board_states.pop(challenge_id, None)


def _keep_state(challenge_id: uuid.UUID, state: _BoardState) -> None:
    with _board_states_lock:
        kept = _board_states.get(challenge_id)
        if kept is None or kept.seq <= state.seq:
            _board_states[challenge_id] = state
            _board_states.move_to_end(challenge_id)
        while len(_board_states) > _KEPT_BOARDS:
            _board_states.popitem(last=False)


def forget_boards() -> None:
    """Drops every board this process keeps: each one's next recompute recounts it."""
    with _board_states_lock:
        _board_states.clear()


def pause_after(seconds: float, share: float) -> timedelta:
    """How long to wait after work that took `seconds` for such work to take at most `share`
    of the time."""
    return timedelta(seconds=seconds * (1.0 - share) / share)


def pacing(settings: Settings) -> cross_tenant.Pacing:
    """A claim's spacing of recomputes: the next starts no sooner than the last one's cost
    over the share after this one starts (so with this one's own cost, the same as waiting
    `pause_after` once it ends). A claimed interval refresh holds off others for longer than
    it should take (ten times the last one), at least a minute: a recompute that dies
    meanwhile delays the refresh by that much at most."""

    def next_recompute(last_seconds: float | None) -> timedelta:
        return timedelta(seconds=(last_seconds or 0.0) / settings.redblue_recompute_share)

    def refresh_hold(last_seconds: float | None) -> timedelta:
        return max(timedelta(minutes=1), timedelta(seconds=10 * (last_seconds or 0.0)))

    return cross_tenant.Pacing(next_recompute, refresh_hold)


def recompute(challenge_id: uuid.UUID, *, intervals_only: bool = False) -> str:
    """Rates the judged matches of the challenge (those landed since this process last did,
    added to what it kept) and writes both boards and the standings in one transaction;
    nothing to do when the board is clean and its intervals are not due (`intervals_only`:
    a follow-up for the intervals, which leaves landings to the recompute they sent). A
    failure leaves the board dirty."""
    settings = get_settings()
    with session_scope() as session:
        claim = cross_tenant.claim_board(
            session, challenge_id, utcnow(), pacing(settings), intervals_only=intervals_only
        )
    if claim is None:
        return "skipped: up to date"
    try:
        return _recompute(challenge_id, claim, settings)
    except Exception:
        with session_scope() as session:
            cross_tenant.mark_board_dirty_again(session, challenge_id, utcnow())
        raise


def _recompute(challenge_id: uuid.UUID, claim: cross_tenant.BoardClaim, settings: Settings) -> str:
    started = time.perf_counter()
    kept = _take_state(challenge_id)
    if kept is not None and kept.seq > claim.landed_seq:
        # This process already rated later landings, for a later claim: this claim's result
        # would not be written.
        _keep_state(challenge_id, kept)
        return "skipped: a later recompute is ahead"
    with session_scope() as session:
        tenant_id = kept.tenant_id if kept is not None else _tenant_of(session, challenge_id)
        if tenant_id is None:
            return "skipped: no such challenge"
        state, recount_seconds = _load(session, challenge_id, claim, kept, tenant_id)
    # The prior is fitted to the matches at every recompute, so the ratings are what a recount
    # gives; from the last one fitted (kept with the strengths), the search is one fit and
    # one linear solve, or two.
    fit = fit_strengths(state.tally, state.strength, prior_start=state.prior_precision)
    state.strength, state.prior_precision = fit.strength, fit.prior_precision
    bootstrap_seconds = 0.0
    if claim.refresh_intervals:
        bootstrapping = time.perf_counter()
        low, high = bootstrap_bounds(state.tally, fit.strength, prior_precision=fit.prior_precision)
        state.low_offset, state.high_offset = low - fit.strength, high - fit.strength
        state.intervals_seq = claim.landed_seq
        bootstrap_seconds = time.perf_counter() - bootstrapping
    else:
        won_all, lost_all = state.tally.unbeaten()
        low, high = provisional_bounds(
            fit.strength,
            fit.curvature,
            state.low_offset,
            state.high_offset,
            prior_precision=fit.prior_precision,
            won_all=won_all,
            lost_all=lost_all,
        )
    rows = _rows(state, low, high)
    refresh_seconds = recount_seconds + bootstrap_seconds if claim.refresh_intervals else 0.0
    now = utcnow()
    board = cross_tenant.BoardWrite(
        rows=rows,
        red_points=state.team_points(Side.RED),
        blue_points=state.team_points(Side.BLUE),
        matches=state.tally.matches,
        rated_seq=claim.landed_seq,
        intervals_seq=state.intervals_seq,
        intervals_computed_at=now if claim.refresh_intervals else None,
    )
    with unit_of_work() as work:
        written = cross_tenant.write_board(
            work.session, tenant_id, challenge_id, claim.generation, board, now, state.written
        )
        if written is not None:
            state.written = (written.marker, rows)
        elif claim.refresh_intervals:
            # A later recompute wrote first, with older intervals than these: the next one
            # bootstraps without waiting.
            cross_tenant.release_interval_refresh(
                work.session, challenge_id, state.intervals_seq, now
            )
    _keep_state(challenge_id, state)
    # What this recompute took, its write included, paces the next: the recount and bootstrap
    # count against the intervals' share, the rest against the ratings' (all of it, for a
    # recompute of the intervals only, which the landings' pacing does not wait for).
    elapsed = time.perf_counter() - started
    ratings_seconds = elapsed - refresh_seconds if claim.took_landings else 0.0
    refresh_seconds = elapsed - ratings_seconds if claim.refresh_intervals else 0.0
    with unit_of_work() as work:
        if written is not None:
            finished = utcnow()
            cross_tenant.pace_board(
                work.session,
                challenge_id,
                claim.generation,
                ratings=(
                    cross_tenant.Pace(
                        ratings_seconds,
                        finished + pause_after(ratings_seconds, settings.redblue_recompute_share),
                    )
                    if claim.took_landings
                    else None
                ),
                intervals=(
                    cross_tenant.Pace(
                        refresh_seconds,
                        finished + pause_after(refresh_seconds, settings.redblue_intervals_share),
                    )
                    if claim.refresh_intervals
                    else None
                ),
            )
        _follow_up(work, challenge_id, utcnow())
    if claim.took_landings:
        redblue_recomputed("ratings", ratings_seconds)
    if claim.refresh_intervals:
        redblue_recomputed("intervals", refresh_seconds)
    if written is None:
        return "skipped: a later recompute wrote"
    refreshed = ", intervals bootstrapped" if claim.refresh_intervals else ""
    return f"rated {state.tally.matches} matches ({written.changed} rows written{refreshed})"


def _tenant_of(session: Any, challenge_id: uuid.UUID) -> uuid.UUID | None:
    challenge = cross_tenant.get_challenge(session, challenge_id)
    return None if challenge is None else challenge.tenant_id


def _load(
    session: Any,
    challenge_id: uuid.UUID,
    claim: cross_tenant.BoardClaim,
    kept: _BoardState | None,
    tenant_id: uuid.UUID,
) -> tuple[_BoardState, float]:
    """The board's state at the claim's landing, and the seconds a recount took (0: none).

    An interval refresh, or a process that kept nothing of the board, recounts every match;
    otherwise only the landings since the kept state are read. The fit starts from the kept
    strengths (or the stored ratings); intervals come from the kept offsets, or from the stored
    rows when another process bootstrapped since."""
    recounting = time.perf_counter()
    stored: list[RatingRow] | None = None
    if kept is None or claim.refresh_intervals:
        landed = cross_tenant.landed_matches(session, challenge_id, None, claim.landed_seq)
        state = _BoardState.recounted(tenant_id, claim.landed_seq, landed)
        if kept is not None:
            state.start_from_kept(kept)
        else:
            stored = cross_tenant.stored_ratings(session, challenge_id)
            state.start_from_stored(stored, strengths=True)
            state.intervals_seq = claim.intervals_seq
        recount_seconds = time.perf_counter() - recounting
    else:
        state, recount_seconds = kept, 0.0
        if state.seq < claim.landed_seq:
            state.add(
                cross_tenant.landed_matches(session, challenge_id, state.seq, claim.landed_seq),
                claim.landed_seq,
            )
    if state.intervals_seq < claim.intervals_seq:
        # Another process bootstrapped since: its intervals are the latest.
        if stored is None:
            stored = cross_tenant.stored_ratings(session, challenge_id)
        state.start_from_stored(stored, strengths=False)
        state.intervals_seq = claim.intervals_seq
    state.baselines = cross_tenant.baseline_players(session, challenge_id)
    unnamed = [
        participant
        for participant in (*state.tally.red_names, *state.tally.blue_names)
        if participant not in state.handles
    ]
    if unnamed:
        state.handles.update(cross_tenant.handles_of(session, unnamed))
    return state, recount_seconds


def _rows(state: _BoardState, low: FloatArray, high: FloatArray) -> list[RatingRow]:
    """Both sides' rows in board order (rank, then rating, then handle), figures rounded to
    what readers see (0.1 points), so a row that did not change is not written again. With
    arrays, not a Python object per participant until the rows themselves: a board may have
    tens of thousands."""
    tally = state.tally
    rating = to_rating(state.strength)
    rating_low, rating_high = to_rating(low), to_rating(high)
    played, wins = tally.played(), tally.wins()
    rows: list[RatingRow] = []
    for side, participants, first, points in (
        (Side.RED, tally.red_names, 0, state.red_points),
        (Side.BLUE, tally.blue_names, tally.reds, state.blue_points),
    ):
        members = slice(first, first + len(participants))
        left_out = state.baselines.get(side, set())
        baseline = [participant in left_out for participant in participants]
        counted = ~np.array(baseline, dtype=bool) if left_out else None
        ranks = interval_ranks(rating_low[members], rating_high[members], counted)
        by_handle = np.argsort(
            np.array(
                [state.handles.get(participant, "").lower() for participant in participants],
                dtype=object,
            ),
            kind="stable",
        )
        handle_order = np.empty(len(participants), np.int64)
        handle_order[by_handle] = np.arange(len(participants))
        # Sorted by rank, then rating (highest first), then handle: lexsort's last key leads.
        order = np.lexsort((handle_order, -rating[members], ranks))
        side_rating = np.round(rating[members], 1).tolist()
        side_low = _ends(rating_low[members])
        side_high = _ends(rating_high[members])
        side_played = np.rint(played[members]).astype(np.int64).tolist()
        side_wins = np.rint(wins[members]).astype(np.int64).tolist()
        side_ranks = ranks.tolist()
        rows.extend(
            RatingRow(
                participant_id=participants[index],
                side=side,
                position=position,
                rank=side_ranks[index],
                rating=side_rating[index],
                rating_low=side_low[index],
                rating_high=side_high[index],
                points=points.get(participants[index], 0),
                matches=side_played[index],
                wins=side_wins[index],
                baseline=baseline[index],
            )
            for position, index in enumerate(order.tolist(), start=1)
        )
    return rows


def _ends(values: FloatArray) -> list[float | None]:
    """Interval ends as stored: rounded to 0.1 points, an open (infinite) end as None."""
    rounded: list[float] = np.round(values, 1).tolist()
    return [value if math.isfinite(value) else None for value in rounded]


def _follow_up(work: UnitOfWork, challenge_id: uuid.UUID, now: Any) -> None:
    """A board left clean with intervals older than its ratings gets one more recompute, of
    the intervals only, when their refresh is due (a landing meanwhile sends its own)."""
    dirty, stale, due = cross_tenant.board_after_write(work.session, challenge_id)
    if not dirty and stale:
        wait = 0.0 if due is None else (due - now).total_seconds()
        work.send_after_commit(recompute_in(wait), str(challenge_id), INTERVALS_ONLY)
