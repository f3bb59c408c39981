"""A red-blue board's ratings recompute (app/kinds/red_blue/board_recompute.py): it reads only
the matches landed since the last one and refits from the previous solution, yet writes the
board a recount of every match gives; its interval refresh comes at a bounded rate, and a board left
with older intervals gets one; two recomputes running at once never take a board back nor
count a match twice; a match of a chunk is written as soon as it is played.

Each test has a PostgreSQL database of its own and calls the worker's functions in this
process (the `worker` fixture's process, if one runs, shares only the broker: a recompute it
receives finds no such board in its database and does nothing)."""

from __future__ import annotations

import math
import os
import random
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select, update

from tests.conftest import Stack, _reset_caches
from tests.fixtures.fake_openai import Behaviour, FakeOpenAIServer
from tests.integration.red_blue.test_redblue import WEAK, red_blue_body

pytestmark = pytest.mark.integration


@pytest.fixture
def own_database(stack: Stack) -> Iterator[str]:
    """This process's database for the test: a new one, migrated, dropped afterwards."""
    from app.cli import migrate
    from app.kinds.red_blue import board_recompute
    from app.kit.db import get_engine
    from tests.services import scratch_database

    previous = os.environ["GAUNTLET_DATABASE_URL"]
    with scratch_database(stack.admin_url) as url:
        os.environ["GAUNTLET_DATABASE_URL"] = url
        _reset_caches()
        board_recompute.forget_boards()
        try:
            migrate()
            yield url
        finally:
            get_engine().dispose()
            os.environ["GAUNTLET_DATABASE_URL"] = previous
            _reset_caches()
            board_recompute.forget_boards()


@dataclass
class Competition:
    """A red_blue challenge with participants on both sides, an active defense per blue
    participant and attacks of every red one, to make matches of."""

    tenant_id: uuid.UUID
    challenge_id: uuid.UUID
    defenses: dict[uuid.UUID, uuid.UUID] = field(default_factory=dict)  # blue → defense
    attacks: dict[uuid.UUID, list[uuid.UUID]] = field(default_factory=dict)  # red → attacks
    strength: dict[uuid.UUID, float] = field(default_factory=dict)
    used: set[tuple[uuid.UUID, uuid.UUID]] = field(default_factory=set)

    def join(self, side: str, handle: str, strength: float, entries: int = 30) -> uuid.UUID:
        from app.kinds.red_blue.models import Attack, Defense, DefenseStatus
        from app.kit.db import session_scope, utcnow
        from app.tenant.service import participant_for_handle

        now = utcnow()
        with session_scope() as session:
            participant, _ = participant_for_handle(session, self.tenant_id, handle)
            common = {
                "tenant_id": self.tenant_id,
                "challenge_id": self.challenge_id,
                "participant_id": participant,
                "created_at": now,
                "enqueued_at": now,
                "paired_at": now,
            }
            if side == "blue":
                defense = Defense(
                    id=uuid.uuid4(), system_prompt=WEAK, status=DefenseStatus.ACTIVE, **common
                )
                session.add(defense)
                self.defenses[participant] = defense.id
            else:
                attacks = [Attack(id=uuid.uuid4(), prompt="x", **common) for _ in range(entries)]
                session.add_all(attacks)
                self.attacks[participant] = [a.id for a in attacks]
        self.strength[participant] = strength
        return participant

    def queue(self, count: int, draw: random.Random) -> list[tuple[uuid.UUID, bool]]:
        """`count` new queued matches between random participants; each with the outcome
        the participants' strengths make likely."""
        from app.kinds.red_blue import cross_tenant
        from app.kit.db import session_scope, utcnow

        now = utcnow()
        matches: list[cross_tenant.NewMatch] = []
        outcomes: list[tuple[uuid.UUID, bool]] = []
        while len(matches) < count:
            red = draw.choice(sorted(self.attacks))
            blue = draw.choice(sorted(self.defenses))
            attack = draw.choice(self.attacks[red])
            if (attack, self.defenses[blue]) in self.used:
                continue
            self.used.add((attack, self.defenses[blue]))
            match = cross_tenant.NewMatch(
                tenant_id=self.tenant_id,
                challenge_id=self.challenge_id,
                attack_id=attack,
                defense_id=self.defenses[blue],
                red_participant_id=red,
                blue_participant_id=blue,
                created_at=now,
            )
            matches.append(match)
            chance = 1 / (1 + 10 ** ((self.strength[blue] - self.strength[red]) / 400))
            outcomes.append((match.id, draw.random() < chance))
        with session_scope() as session:
            cross_tenant.insert_matches(session, matches)
        return outcomes

    def land(self, count: int, draw: random.Random) -> None:
        """`count` matches played and written as a worker writes them (claimed with a lease,
        then completed by one transaction that lands them on the board)."""
        from app.kinds.red_blue import cross_tenant, worker
        from app.kinds.red_blue.match_result import JudgedCategory, JudgedMatch, MatchResult
        from app.kinds.red_blue.rules.judging import CategoryVerdict
        from app.kit.config import get_settings
        from app.kit.db import session_scope, utcnow

        outcomes = self.queue(count, draw)
        token = uuid.uuid4()
        with session_scope() as session:
            claimed = cross_tenant.claim_matches(
                session,
                [match_id for match_id, _ in outcomes],
                token,
                utcnow(),
                utcnow() + timedelta(seconds=get_settings().attempt_lease_seconds),
            )
        assert len(claimed) == count
        ended: dict[uuid.UUID, MatchResult] = {
            match_id: JudgedMatch(
                output="PWNED" if won else "[redacted]",
                categories=(
                    JudgedCategory(
                        CategoryVerdict("pwned", won, None, 1 if won else 0, 0 if won else 2), ""
                    ),
                ),
                red_points=1 if won else 0,
                blue_points=0 if won else 2,
                tokens_total=3,
                elapsed_ms=1,
                cost_usd=0.0,
            )
            for match_id, won in outcomes
        }
        assert worker._end_matches(token, ended) == set(ended)


def competition(reds: int = 8, blues: int = 7, **overrides: Any) -> Competition:
    from app.challenge.schemas import ChallengeCreate
    from app.challenge.service import create_challenge
    from app.kit.db import session_scope
    from app.tenant.service import create_tenant

    with session_scope() as session:
        slug = f"t-{uuid.uuid4().hex[:10]}"
        tenant, _row, _key = create_tenant(session, slug, slug)
        body = ChallengeCreate.model_validate(red_blue_body(**overrides))
        challenge = create_challenge(session, tenant.id, body)
        found = Competition(tenant.id, challenge.id)
    for index in range(reds):
        found.join("red", f"red-{index}", 1000 + 60 * index)
    for index in range(blues):
        found.join("blue", f"blue-{index}", 1180 - 50 * index)
    return found


def board(challenge_id: uuid.UUID) -> Any:
    from app.kinds.red_blue.models import Board
    from app.kit.db import session_scope

    with session_scope() as session:
        row = session.get(Board, challenge_id)
        assert row is not None
        session.expunge(row)
        return row


def stored(challenge_id: uuid.UUID) -> dict[tuple[str, str], Any]:
    from app.kinds.red_blue import cross_tenant
    from app.kit.db import session_scope

    with session_scope() as session:
        return {
            (row.side.value, str(row.participant_id)): row
            for row in cross_tenant.stored_ratings(session, challenge_id)
        }


def recounted(challenge_id: uuid.UUID) -> dict[tuple[str, str], Any]:
    """The ratings of every completed match, computed from scratch (the pure rules)."""
    from app.kinds.red_blue.models import Match, MatchStatus
    from app.kinds.red_blue.rules.ratings import MatchOutcome, compute_ratings
    from app.kit.db import session_scope

    with session_scope() as session:
        rows = session.execute(
            select(Match.red_participant_id, Match.blue_participant_id, Match.attack_won).where(
                Match.challenge_id == challenge_id, Match.status == MatchStatus.COMPLETED
            )
        ).all()
    ratings = compute_ratings(MatchOutcome(str(r), str(b), bool(w)) for r, b, w in rows)
    return {(row.side, row.participant): row for row in (*ratings.red, *ratings.blue)}


def points_and_count(challenge_id: uuid.UUID) -> tuple[dict[tuple[str, str], int], int]:
    from app.kinds.red_blue.models import Match, MatchStatus
    from app.kit.db import session_scope

    with session_scope() as session:
        rows = session.execute(
            select(
                Match.red_participant_id,
                Match.blue_participant_id,
                Match.red_points,
                Match.blue_points,
            ).where(Match.challenge_id == challenge_id, Match.status == MatchStatus.COMPLETED)
        ).all()
    points: dict[tuple[str, str], int] = {}
    for red, blue, red_points, blue_points in rows:
        points[("red", str(red))] = points.get(("red", str(red)), 0) + (red_points or 0)
        points[("blue", str(blue))] = points.get(("blue", str(blue)), 0) + (blue_points or 0)
    return points, len(rows)


def assert_equals_a_recount(challenge_id: uuid.UUID, *, intervals: bool) -> None:
    """The stored board is the one a computation from scratch gives: the same participants,
    matches, wins, points and standings; ratings within the stored rounding (0.1 points) and
    the fit's tolerance; with `intervals`, the same intervals and ranks too (else every
    interval still holds its rating)."""
    expected = recounted(challenge_id)
    points, count = points_and_count(challenge_id)
    got = stored(challenge_id)
    assert got.keys() == expected.keys()
    for key, want in expected.items():
        row = got[key]
        assert (row.matches, row.wins, row.points) == (want.matches, want.wins, points[key]), key
        assert abs(row.rating - want.rating) <= 0.06, (key, row.rating, want.rating)
        # Stored open ends are null; the pure rules' are infinite.
        low = -math.inf if row.rating_low is None else row.rating_low
        high = math.inf if row.rating_high is None else row.rating_high
        assert low <= row.rating <= high, key
        # Open exactly where the participant won (or lost) every match, whatever the refresh.
        assert (row.rating_high is None) == (row.wins == row.matches), key
        assert (row.rating_low is None) == (row.wins == 0), key
        if intervals:
            assert (low == want.rating_low) or abs(low - want.rating_low) <= 0.06, key
            assert (high == want.rating_high) or abs(high - want.rating_high) <= 0.06, key
            assert row.rank == want.rank, key
    for side in ("red", "blue"):
        positions = sorted(row.position for (s, _), row in got.items() if s == side)
        assert positions == list(range(1, len(positions) + 1))
    state = board(challenge_id)
    assert state.matches == count
    assert state.red_points == sum(p for (s, _), p in points.items() if s == "red")
    assert state.blue_points == sum(p for (s, _), p in points.items() if s == "blue")
    assert state.rated_seq == state.landed_seq and not state.dirty


def intervals_not_due(challenge_id: uuid.UUID) -> None:
    from app.kinds.red_blue.models import Board
    from app.kit.db import session_scope, utcnow

    with session_scope() as session:
        session.execute(
            update(Board)
            .where(Board.challenge_id == challenge_id)
            .values(intervals_due_at=utcnow() + timedelta(hours=1))
        )


def intervals_due(challenge_id: uuid.UUID) -> None:
    from app.kinds.red_blue.models import Board
    from app.kit.db import session_scope, utcnow

    with session_scope() as session:
        session.execute(
            update(Board)
            .where(Board.challenge_id == challenge_id)
            .values(intervals_due_at=utcnow() - timedelta(seconds=1))
        )


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int | None, int, int]]:
    """Every read of landed matches a recompute makes: (after, up to, matches read)."""
    from app.kinds.red_blue import cross_tenant

    seen: list[tuple[int | None, int, int]] = []
    read = cross_tenant.landed_matches

    def recording(session: Any, challenge_id: uuid.UUID, after: int | None, upto: int) -> Any:
        found = read(session, challenge_id, after, upto)
        seen.append((after, upto, int(found.matches.sum())))
        return found

    monkeypatch.setattr(cross_tenant, "landed_matches", recording)
    return seen


def test_a_recompute_reads_only_what_landed_since_and_writes_what_a_recount_gives(
    own_database: str, reads: list[tuple[int | None, int, int]]
) -> None:
    from app.kinds.red_blue import board_recompute

    draw = random.Random(3)
    game = competition()
    cid = game.challenge_id
    game.land(60, draw)
    game.land(40, draw)
    first = board(cid)
    assert first.dirty and first.landed_seq == 2 and first.rated_seq == 0
    # The first recompute recounts every match and bootstraps the intervals.
    assert board_recompute.recompute(cid).startswith("rated 100 matches")
    assert reads == [(None, 2, 100)]
    assert_equals_a_recount(cid, intervals=True)
    assert board(cid).intervals_seq == 2
    assert board_recompute.recompute(cid) == "skipped: up to date"

    # Intervals not due: the next recomputes read the new landings only, refit, and keep
    # each interval's width around its moved rating. A participant new on each side.
    intervals_not_due(cid)
    computed = board(cid).intervals_computed_at
    game.join("red", "late-red", 1250)
    game.join("blue", "late-blue", 900)
    for batch in (25, 35):
        reads.clear()
        before = board(cid).landed_seq
        game.land(batch, draw)
        game.land(5, draw)
        board_recompute.recompute(cid)
        # Exactly the matches of the two landings since, and nothing else.
        assert reads == [(before, before + 2, batch + 5)], reads
        assert_equals_a_recount(cid, intervals=False)
        state = board(cid)
        assert state.intervals_seq == 2 < state.rated_seq
        assert state.intervals_computed_at == computed

    # A process that kept nothing of the board (a restarted worker) recounts it.
    board_recompute.forget_boards()
    reads.clear()
    game.land(10, draw)
    board_recompute.recompute(cid)
    assert [after for after, _, _ in reads] == [None]
    assert_equals_a_recount(cid, intervals=False)

    # Once due, the intervals are bootstrapped again (a recount) though no match landed.
    intervals_due(cid)
    reads.clear()
    assert "intervals bootstrapped" in board_recompute.recompute(cid)
    assert [after for after, _, _ in reads] == [None]
    assert_equals_a_recount(cid, intervals=True)
    state = board(cid)
    assert state.intervals_seq == state.rated_seq
    assert state.intervals_computed_at is not None and state.intervals_computed_at > computed
    assert board_recompute.recompute(cid) == "skipped: up to date"


def test_a_board_left_with_older_intervals_gets_its_refresh_when_due(
    own_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A recompute that leaves the intervals older than the ratings (not due yet) sends one
    more recompute for when they are; a lost one is sent again by the sweep."""
    from app.kinds.red_blue import board_recompute, worker
    from app.kinds.red_blue.dispatch import INTERVALS_ONLY, RECOMPUTE_TASK
    from app.kinds.red_blue.models import Board
    from app.kit.db import session_scope, utcnow

    sent: list[tuple[str, tuple[str, ...], float | None]] = []

    def capture(messages: list[Any]) -> int:
        sent.extend((m.task.name, m.args, m.task.countdown) for m in messages)
        return len(messages)

    monkeypatch.setattr("app.kit.unit_of_work.send_tasks", capture)
    draw = random.Random(4)
    game = competition(reds=4, blues=4)
    cid = game.challenge_id
    game.land(30, draw)
    # The landing that turned the board dirty sent one recompute (a second landing, none).
    game.land(10, draw)
    assert [(name, args) for name, args, _ in sent] == [(RECOMPUTE_TASK, (str(cid),))]
    board_recompute.recompute(cid)
    sent.clear()
    intervals_not_due(cid)
    game.land(10, draw)
    sent.clear()
    board_recompute.recompute(cid)
    # Clean, intervals older than the ratings: one follow-up, for the intervals only, with a
    # countdown to when they are due.
    ((name, args, countdown),) = sent
    assert (name, args) == (RECOMPUTE_TASK, (str(cid), INTERVALS_ONLY))
    assert countdown is not None and countdown > 3000
    # Such a follow-up leaves matches landed meanwhile to the recompute their landing sent.
    game.land(5, draw)
    assert board_recompute.recompute(cid, intervals_only=True) == "skipped: up to date"
    assert board(cid).dirty
    board_recompute.recompute(cid)
    # The follow-up lost: once it is overdue, the sweep sends it again.
    with session_scope() as session:
        overdue = utcnow() - timedelta(minutes=5)
        session.execute(
            update(Board).where(Board.challenge_id == cid).values(intervals_due_at=overdue)
        )
    sent.clear()
    assert worker.sweep()["boards"] == 1
    assert (RECOMPUTE_TASK, (str(cid),)) in [(name, args) for name, args, _ in sent]
    assert "intervals bootstrapped" in board_recompute.recompute(cid)
    assert_equals_a_recount(cid, intervals=True)


def test_a_landing_on_a_paced_board_sends_its_recompute_for_when_it_is_due(
    own_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a recompute that took t seconds, the next starts no sooner than t / share after
    it started (GAUNTLET_REDBLUE_RECOMPUTE_SHARE, 0.1 here): a landing that turns the board
    dirty sends its recompute with the countdown to then, a landing during a recompute
    included (the claim sets the next start from the last cost)."""
    from app.kinds.red_blue import board_recompute, worker
    from app.kinds.red_blue.models import Board
    from app.kit.config import get_settings
    from app.kit.db import session_scope, utcnow

    assert get_settings().redblue_recompute_share == 0.1
    assert board_recompute.pause_after(2.0, 0.1) == timedelta(seconds=18)
    sent: list[float | None] = []

    def capture(messages: list[Any]) -> int:
        sent.extend(m.task.countdown for m in messages)
        return len(messages)

    monkeypatch.setattr("app.kit.unit_of_work.send_tasks", capture)
    draw = random.Random(5)
    game = competition(reds=3, blues=3)
    cid = game.challenge_id
    game.land(5, draw)
    board_recompute.recompute(cid)
    state = board(cid)
    assert state.recompute_seconds is not None and state.computed_at is not None
    # Its whole cost (the write included, so measured once written) sets the next start.
    assert state.recompute_due_at >= state.computed_at + board_recompute.pause_after(
        state.recompute_seconds, 0.1
    )
    # As if that recompute had taken 20 s: the next one claimed may be followed 200 s after.
    with session_scope() as session:
        session.execute(update(Board).where(Board.challenge_id == cid).values(recompute_seconds=20))
    game.land(5, draw)
    running = claim(cid)
    sent.clear()
    game.land(5, draw)
    (countdown,) = sent
    assert countdown is not None and 190 < countdown <= 200
    # Dirty for long but paced to wait: not stuck, the sweep leaves it; once its recompute was
    # due long ago (its message lost), the sweep sends one.
    long_ago = utcnow() - timedelta(minutes=5)
    with session_scope() as session:
        session.execute(update(Board).where(Board.challenge_id == cid).values(dirty_since=long_ago))
    assert worker.sweep()["boards"] == 0
    with session_scope() as session:
        session.execute(
            update(Board).where(Board.challenge_id == cid).values(recompute_due_at=long_ago)
        )
    assert worker.sweep()["boards"] == 1
    assert board_recompute._recompute(cid, running, get_settings()).startswith("rated 10 matches")


@contextmanager
def process(states: OrderedDict[uuid.UUID, Any]) -> Iterator[None]:
    """Runs as one of several worker processes: with the boards that process keeps."""
    from app.kinds.red_blue import board_recompute

    saved = board_recompute._board_states
    board_recompute._board_states = states
    try:
        yield
    finally:
        board_recompute._board_states = saved


def claim(challenge_id: uuid.UUID) -> Any:
    from app.kinds.red_blue import board_recompute, cross_tenant
    from app.kit.config import get_settings
    from app.kit.db import session_scope, utcnow

    with session_scope() as session:
        pacing = board_recompute.pacing(get_settings())
        found = cross_tenant.claim_board(session, challenge_id, utcnow(), pacing)
    assert found is not None
    return found


def test_two_recomputes_at_once_never_take_the_board_back_nor_count_a_match_twice(
    own_database: str,
) -> None:
    from app.kinds.red_blue import board_recompute
    from app.kit.config import get_settings

    settings = get_settings()
    one: OrderedDict[uuid.UUID, Any] = OrderedDict()
    two: OrderedDict[uuid.UUID, Any] = OrderedDict()
    draw = random.Random(6)
    game = competition()
    cid = game.challenge_id
    game.land(50, draw)
    with process(one):
        board_recompute.recompute(cid)
    counts = [board(cid).matches]

    # The earlier claim finishes last, in another process: it writes nothing.
    game.land(20, draw)
    earlier = claim(cid)
    game.land(20, draw)
    later = claim(cid)
    assert later.landed_seq > earlier.landed_seq and later.generation > earlier.generation
    with process(two):
        assert board_recompute._recompute(cid, later, settings).startswith("rated 90 matches")
    counts.append(board(cid).matches)
    with process(one):
        assert (
            board_recompute._recompute(cid, earlier, settings) == "skipped: a later recompute wrote"
        )
    assert board(cid).rated_seq == later.landed_seq
    counts.append(board(cid).matches)
    assert_equals_a_recount(cid, intervals=False)
    # Process one kept the board at the earlier claim's landing: its next recompute adds what
    # landed after it (the later claim's matches included) once.
    game.land(10, draw)
    with process(one):
        assert board_recompute.recompute(cid).startswith("rated 100 matches")
    counts.append(board(cid).matches)
    assert_equals_a_recount(cid, intervals=False)

    # In order: the earlier claim writes, then the later one.
    game.land(15, draw)
    earlier = claim(cid)
    game.land(15, draw)
    later = claim(cid)
    with process(one):
        assert board_recompute._recompute(cid, earlier, settings).startswith("rated 115 matches")
    counts.append(board(cid).matches)
    with process(two):
        assert board_recompute._recompute(cid, later, settings).startswith("rated 130 matches")
    counts.append(board(cid).matches)
    assert_equals_a_recount(cid, intervals=False)

    # In one process, the later claim first: the earlier one sees the process is ahead.
    game.land(5, draw)
    earlier = claim(cid)
    game.land(5, draw)
    later = claim(cid)
    with process(two):
        assert board_recompute._recompute(cid, later, settings).startswith("rated 140 matches")
        assert (
            board_recompute._recompute(cid, earlier, settings)
            == "skipped: a later recompute is ahead"
        )
    counts.append(board(cid).matches)
    assert_equals_a_recount(cid, intervals=False)
    assert counts == sorted(counts) and counts[-1] == 140


def test_recomputes_racing_in_threads_end_on_the_recount(own_database: str) -> None:
    """Two threads land matches and recompute the same board at once, while a reader watches
    it: the standings never go back, and the last board is the recount's."""
    from app.kinds.red_blue import board_recompute

    game = competition()
    cid = game.challenge_id
    game.land(30, random.Random(7))
    board_recompute.recompute(cid)
    seen: list[int] = []
    failures: list[BaseException] = []
    stop = threading.Event()
    lock = threading.Lock()

    def play(seed: int) -> None:
        draw = random.Random(seed)
        try:
            for _ in range(6):
                # One landing at a time (the test's own bookkeeping of the pairs it used is not
                # thread-safe); the recomputes race each other and the landings.
                with lock:
                    game.land(8, draw)
                board_recompute.recompute(cid)
        except BaseException as exc:
            failures.append(exc)

    def watch() -> None:
        while not stop.is_set():
            seen.append(board(cid).matches)
            time.sleep(0.005)

    threads = [threading.Thread(target=play, args=(seed,)) for seed in (8, 9)]
    watcher = threading.Thread(target=watch)
    watcher.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stop.set()
    watcher.join()
    assert not failures, failures
    board_recompute.recompute(cid)
    intervals_due(cid)
    board_recompute.recompute(cid)
    assert_equals_a_recount(cid, intervals=True)
    assert board(cid).matches == 30 + 2 * 6 * 8
    assert seen == sorted(seen)


@pytest.fixture
def provider() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(default=Behaviour.ok("PWNED")) as server:
        yield server


def test_a_match_is_written_as_soon_as_it_is_played_not_with_its_chunk(
    own_database: str, provider: FakeOpenAIServer
) -> None:
    from app.evaluation.engine.llm import warm_up
    from app.kinds.red_blue import worker
    from app.kinds.red_blue.models import Match, MatchStatus
    from app.kit.db import session_scope

    # The engine loaded before a lease is taken (its first import outlasts the tests' lease).
    warm_up()
    game = competition(
        reds=1, blues=2, target={"model": "openai/fake-model", "api_base": provider.base_url}
    )
    ids = [match_id for match_id, _ in game.queue(2, random.Random(10))]
    # The first call answers late, the second at once.
    provider.enqueue(Behaviour.slow(8, "PWNED"))
    outcomes: dict[uuid.UUID, str] = {}
    chunk = threading.Thread(target=lambda: outcomes.update(worker.run_matches(ids)))
    chunk.start()

    def statuses() -> dict[uuid.UUID, MatchStatus]:
        with session_scope() as session:
            rows = session.execute(select(Match.id, Match.status).where(Match.id.in_(ids)))
            return {match_id: status for match_id, status in rows.all()}

    try:
        deadline = time.monotonic() + 60
        while MatchStatus.COMPLETED not in statuses().values():
            assert time.monotonic() < deadline, "no match of the chunk was written"
            assert chunk.is_alive(), "the chunk ended before either match was written"
            time.sleep(0.05)
        # One written, the other still being played: its result did not wait for the slow one.
        assert sorted(statuses().values()) == [MatchStatus.COMPLETED, MatchStatus.RUNNING]
    finally:
        chunk.join(timeout=60)
    assert outcomes == dict.fromkeys(ids, "completed")
    assert set(statuses().values()) == {MatchStatus.COMPLETED}
    assert board(game.challenge_id).landed_seq == 2
