"""Red-blue board recompute at 10,000, 100,000 and 1,000,000 matches per challenge: what one
recompute costs when 100 new matches land on an existing board, what an interval refresh
costs, and the share of a worker process the recomputes take at a constant arrival rate.

In a scratch PostgreSQL database: one red_blue challenge, --reds red and --blues blue
participants (each red one with attacks, each blue one with an active defense), its matches
bulk-loaded (COPY) up to each size with outcomes drawn from hidden strengths (Bradley-Terry),
one landing per load. At each size, in this process, with the worker's own functions
(`app.kinds.red_blue.worker`; no broker: the tasks a landing or a recompute would send are
recorded and run here when their countdown is up):

  (a) first recompute of the board by a process that kept nothing (a recount of every match,
      the fit from the stored ratings, the bootstrap, every row written);
  (b) --rounds incremental recomputes, each after 100 matches landed as a worker lands them
      (claimed, then completed in one transaction), intervals not due: the landings read,
      the fit from the previous solution, the rows rewritten; best and median, with phases;
  (c) an interval refresh (recount of every match + bootstrap) with the board kept;
  (d) --seconds of matches arriving at --rate per second (a landing every 0.2 s), the
      recompute tasks run when due as a worker would: the recomputes' CPU seconds over the
      wall seconds (the share of one worker process they take), how many ran, and how long
      a landed match waited to be rated.
  (e) with --before: one recompute as the code before this change did every time (every
      completed match read, `compute_ratings`, every row rewritten), for comparison.

Usage: .venv/bin/python bench/redblue_recompute.py [--sizes 10000,100000,1000000]
       [--reds 5000] [--blues 5000] [--rounds 7] [--rate 45] [--seconds 60] [--before]
"""

from __future__ import annotations

import argparse
import io
import math
import random
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common
from bench.leaderboard_read import use_database


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--reds", type=int, default=5_000)
    parser.add_argument("--blues", type=int, default=5_000)
    parser.add_argument("--rounds", type=int, default=7, help="incremental recomputes per size")
    parser.add_argument("--landing", type=int, default=100, help="matches per landing in (b)")
    parser.add_argument("--rate", type=float, default=45.0, help="matches per second in (d)")
    parser.add_argument("--seconds", type=float, default=60.0, help="length of (d) per size")
    parser.add_argument("--before", action="store_true", help="also time the old recompute")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep-db", action="store_true")
    return parser.parse_args()


# Timing of the recompute's phases -------------------------------------------------------------


class Phases:
    """Seconds spent in named functions of the worker and its statements, while recording."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.notes: dict[str, Any] = {}

    def reset(self) -> None:
        self.seconds.clear()
        self.notes.clear()

    def wrap(self, owner: Any, name: str, label: str) -> None:
        original = getattr(owner, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                result = original(*args, **kwargs)
            finally:
                self.seconds[label] = self.seconds.get(label, 0.0) + (time.perf_counter() - started)
            if label == "fit":
                self.notes["passes"] = result.passes
                self.notes["steps"] = result.newton_steps
            if label == "write" and result is not None:
                self.notes["rows written"] = result.changed
            if label == "read landings":
                read = self.notes.get("matches read", 0) + int(result.matches.sum())
                self.notes["matches read"] = read
            return result

        setattr(owner, name, timed)

    def line(self) -> str:
        parts = [f"{label} {seconds * 1000:.0f} ms" for label, seconds in self.seconds.items()]
        parts += [f"{key} {value}" for key, value in self.notes.items()]
        return ", ".join(parts)


def instrument() -> Phases:
    # The recompute calls its statements through their package (cross_tenant), and the rating
    # functions by the names it imported: each is wrapped where the recompute looks it up.
    from app.kinds.red_blue import board_recompute, cross_tenant

    phases = Phases()
    phases.wrap(cross_tenant, "landed_matches", "read landings")
    phases.wrap(cross_tenant, "stored_ratings", "read stored rows")
    phases.wrap(board_recompute, "fit_strengths", "fit")
    phases.wrap(board_recompute, "bootstrap_bounds", "bootstrap")
    phases.wrap(board_recompute, "_rows", "rank rows")
    phases.wrap(cross_tenant, "write_board", "write")
    return phases


# The competition ------------------------------------------------------------------------------

# A completed match's breached, red_points, blue_points and attack_won columns, as COPY reads
# them (red wins: one breach, a point for red; else a hold, a point for blue).
_WON = '["pwned"]\t1\t0\tt'
_HELD = "[]\t0\t1\tf"


class Competition:
    def __init__(self, reds: int, blues: int, seed: int) -> None:
        self.draw = random.Random(seed)
        self.reds, self.blues = reds, blues
        self.red_ids = [uuid.uuid4() for _ in range(reds)]
        self.blue_ids = [uuid.uuid4() for _ in range(blues)]
        self.defense_of = {blue: uuid.uuid4() for blue in self.blue_ids}
        self.strength = {p: self.draw.gauss(0.0, 1.0) for p in self.red_ids + self.blue_ids}
        self.matches = 0
        # (due on the perf_counter clock, task, arguments) of the tasks the service sent
        self.sent: list[tuple[float, str, tuple[str, ...]]] = []

    def create(self) -> None:
        from sqlalchemy import insert

        from app.challenge.schemas import ChallengeCreate
        from app.challenge.service import create_challenge
        from app.kinds.red_blue.models import Defense, DefenseStatus
        from app.kit.db import session_scope, utcnow
        from app.seed import DEMO_RED_BLUE
        from app.tenant.models import Participant
        from app.tenant.service import create_tenant

        now = utcnow()
        with session_scope() as session:
            tenant, _row, _key = create_tenant(session, "bench-rb", "bench red-blue recompute")
            challenge = create_challenge(
                session, tenant.id, ChallengeCreate.model_validate(DEMO_RED_BLUE)
            )
            self.tenant_id, self.challenge_id = tenant.id, challenge.id
            session.execute(
                insert(Participant),
                [
                    {"id": p, "tenant_id": tenant.id, "handle": f"p-{i:05d}", "created_at": now}
                    for i, p in enumerate(self.red_ids + self.blue_ids)
                ],
            )
            session.execute(
                insert(Defense),
                [
                    {
                        "id": self.defense_of[blue],
                        "tenant_id": tenant.id,
                        "challenge_id": challenge.id,
                        "participant_id": blue,
                        "system_prompt": "Never say: PWNED",
                        "status": DefenseStatus.ACTIVE,
                        "created_at": now,
                        "enqueued_at": now,
                        "paired_at": now,
                    }
                    for blue in self.blue_ids
                ],
            )

    def _attack_rows(self, count: int) -> list[tuple[uuid.UUID, uuid.UUID]]:
        return [(uuid.uuid4(), self.draw.choice(self.red_ids)) for _ in range(count)]

    def _won(self, red: uuid.UUID, blue: uuid.UUID) -> bool:
        chance = 1.0 / (1.0 + math.exp(self.strength[blue] - self.strength[red]))
        return self.draw.random() < chance

    def bulk_load(self, dsn: str, count: int) -> None:
        """`count` completed matches by COPY (each attack meets 50 defenses), landed on the
        board as one landing."""
        import psycopg

        from app.kinds.red_blue import cross_tenant
        from app.kit.db import session_scope, utcnow

        now = utcnow().isoformat()
        per_attack = min(50, self.blues)
        attacks = self._attack_rows(math.ceil(count / per_attack))
        with session_scope() as session:
            landing = cross_tenant.land_matches(
                session, self.tenant_id, self.challenge_id, [], utcnow()
            )
        seq = landing.seq
        with psycopg.connect(dsn) as conn:
            with conn.cursor().copy(
                "COPY redblue_attacks (id, tenant_id, challenge_id, participant_id, prompt, "
                "created_at, enqueued_at, paired_at) FROM STDIN"
            ) as copy:
                for attack, red in attacks:
                    copy.write(
                        f"{attack}\t{self.tenant_id}\t{self.challenge_id}\t{red}\tx\t"
                        f"{now}\t{now}\t{now}\n"
                    )
            written = 0
            with conn.cursor().copy(
                "COPY redblue_matches (id, tenant_id, challenge_id, attack_id, defense_id, "
                "red_participant_id, blue_participant_id, status, breached, red_points, "
                "blue_points, attack_won, created_at, enqueued_at, finished_at, run_count, "
                "spent_usd, board_seq) FROM STDIN"
            ) as copy:
                buffer = io.StringIO()
                for attack, red in attacks:
                    for blue in self.draw.sample(self.blue_ids, per_attack):
                        if written == count:
                            break
                        won = self._won(red, blue)
                        outcome = _WON if won else _HELD
                        buffer.write(
                            f"{uuid.uuid4()}\t{self.tenant_id}\t{self.challenge_id}\t{attack}\t"
                            f"{self.defense_of[blue]}\t{red}\t{blue}\tcompleted\t{outcome}\t"
                            f"{now}\t{now}\t{now}\t1\t0\t{seq}\n"
                        )
                        written += 1
                    if buffer.tell() > 1 << 22:
                        copy.write(buffer.getvalue())
                        buffer = io.StringIO()
                copy.write(buffer.getvalue())
            conn.commit()
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("VACUUM ANALYZE redblue_matches")
            conn.execute("VACUUM ANALYZE redblue_attacks")
        self.matches += written

    def land(self, count: int) -> None:
        """`count` matches as a worker lands them: a new attack paired with defenses (queued
        rows), claimed with a lease, completed in one transaction."""
        from app.kinds.red_blue import cross_tenant, worker
        from app.kinds.red_blue.match_result import JudgedCategory, JudgedMatch
        from app.kinds.red_blue.models import Attack
        from app.kinds.red_blue.rules.judging import CategoryVerdict
        from app.kit.db import session_scope, utcnow

        now = utcnow()
        rows, outcomes = [], {}
        with session_scope() as session:
            left = count
            while left:
                attack_id, red = self._attack_rows(1)[0]
                session.add(
                    Attack(
                        id=attack_id,
                        tenant_id=self.tenant_id,
                        challenge_id=self.challenge_id,
                        participant_id=red,
                        prompt="x",
                        created_at=now,
                        enqueued_at=now,
                        paired_at=now,
                    )
                )
                for blue in self.draw.sample(self.blue_ids, min(left, 50, self.blues)):
                    match_id = uuid.uuid4()
                    outcomes[match_id] = self._won(red, blue)
                    rows.append(
                        cross_tenant.NewMatch(
                            id=match_id,
                            tenant_id=self.tenant_id,
                            challenge_id=self.challenge_id,
                            attack_id=attack_id,
                            defense_id=self.defense_of[blue],
                            red_participant_id=red,
                            blue_participant_id=blue,
                            created_at=now,
                        )
                    )
                    left -= 1
            session.flush()
            cross_tenant.insert_matches(session, rows)
        token = uuid.uuid4()
        with session_scope() as session:
            cross_tenant.claim_matches(
                session, list(outcomes), token, now, now + timedelta(minutes=5)
            )
        worker._end_matches(
            token,
            {
                match_id: JudgedMatch(
                    output="x",
                    categories=(
                        JudgedCategory(
                            CategoryVerdict("pwned", won, None, int(won), 1 - int(won)), ""
                        ),
                    ),
                    red_points=int(won),
                    blue_points=1 - int(won),
                    tokens_total=2,
                    elapsed_ms=1,
                    cost_usd=0.0,
                )
                for match_id, won in outcomes.items()
            },
        )
        self.matches += count

    def set_intervals_due(self, due: bool) -> None:
        from sqlalchemy import update

        from app.kinds.red_blue.models import Board
        from app.kit.db import session_scope, utcnow

        when = utcnow() + (timedelta(seconds=-1) if due else timedelta(days=1))
        with session_scope() as session:
            session.execute(
                update(Board)
                .where(Board.challenge_id == self.challenge_id)
                .values(intervals_due_at=when)
            )


@contextmanager
def recording_sends(game: Competition) -> Iterator[None]:
    """Tasks the unit of work would send are recorded with when they are due instead."""
    import app.kit.unit_of_work as unit_of_work

    original = unit_of_work.send_tasks

    def record(messages: list[Any]) -> int:
        now = time.perf_counter()
        for message in messages:
            game.sent.append(
                (now + (message.task.countdown or 0.0), message.task.name, message.args)
            )
        return len(messages)

    unit_of_work.send_tasks = record
    try:
        yield
    finally:
        unit_of_work.send_tasks = original


def timed(call: Callable[[], Any]) -> tuple[float, float, Any]:
    """Wall and CPU seconds of a call, and its result."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = call()
    return time.perf_counter() - wall, time.process_time() - cpu, result


# The measures ---------------------------------------------------------------------------------


def first_recompute(game: Competition, phases: Phases) -> None:
    from app.kinds.red_blue import board_recompute

    board_recompute.forget_boards()
    game.set_intervals_due(True)
    phases.reset()
    wall, cpu, result = timed(lambda: board_recompute.recompute(game.challenge_id))
    print(f"   (a) first recompute, nothing kept: {wall:.2f} s wall, {cpu:.2f} s CPU ({result})")
    print(f"       {phases.line()}")


def incremental(game: Competition, phases: Phases, rounds: int, landing: int) -> None:
    from app.kinds.red_blue import board_recompute

    game.set_intervals_due(False)
    walls, cpus, lines = [], [], []
    for _ in range(rounds):
        game.land(landing)
        phases.reset()
        wall, cpu, _ = timed(lambda: board_recompute.recompute(game.challenge_id))
        walls.append(wall)
        cpus.append(cpu)
        lines.append((wall, phases.line()))
    game.sent.clear()
    median_line = sorted(lines)[len(lines) // 2][1]
    print(
        f"   (b) {landing} new matches, incremental recompute: best {min(walls) * 1000:.0f} ms, "
        f"median {statistics.median(walls) * 1000:.0f} ms wall; median "
        f"{statistics.median(cpus) * 1000:.0f} ms CPU"
    )
    print(f"       median run: {median_line}")


def refresh(game: Competition, phases: Phases) -> float:
    from app.kinds.red_blue import board_recompute

    game.set_intervals_due(True)
    phases.reset()
    wall, cpu, result = timed(lambda: board_recompute.recompute(game.challenge_id))
    print(f"   (c) interval refresh, board kept: {wall:.2f} s wall, {cpu:.2f} s CPU ({result})")
    print(f"       {phases.line()}")
    return wall


def constant_rate(game: Competition, rate: float, seconds: float) -> None:
    """Matches arrive at `rate` a second (a landing every 0.2 s); the recompute tasks the
    landings and recomputes send run when their countdown is up, one at a time, as a worker
    process would run them."""
    from app.kinds.red_blue import board_recompute
    from app.kinds.red_blue.dispatch import INTERVALS_ONLY, RECOMPUTE_TASK

    game.sent.clear()
    tick = 0.2
    started = time.perf_counter()
    landed_due = started
    owed = 0.0
    recompute_cpu = recompute_wall = 0.0
    runs = refreshes = 0
    waits: list[float] = []
    unrated: list[float] = []  # when each landing not yet rated landed
    while (now := time.perf_counter()) - started < seconds:
        due = sorted(s for s in game.sent if s[1] == RECOMPUTE_TASK and s[0] <= now)
        if now >= landed_due:
            # Every landing owed by now at once: on a machine so loaded that a landing takes
            # longer than a tick, landing one per tick would never let a recompute run.
            ticks = int((now - landed_due) / tick) + 1
            owed += rate * tick * ticks
            count = int(owed)
            owed -= count
            if count:
                game.land(count)
                unrated.append(time.perf_counter())
            landed_due += tick * ticks
        if due:
            game.sent.remove(due[0])
            intervals_only = INTERVALS_ONLY in due[0][2]
            taken = time.perf_counter()
            wall, cpu, result = timed(
                partial(board_recompute.recompute, game.challenge_id, intervals_only=intervals_only)
            )
            recompute_wall += wall
            recompute_cpu += cpu
            if result.startswith("rated"):
                runs += 1
                refreshes += "intervals" in result
                waits += [taken + wall - landed for landed in unrated if landed <= taken]
                unrated = [landed for landed in unrated if landed > taken]
        else:
            pending = [t for t, _, _ in game.sent]
            time.sleep(max(0.0, min([landed_due, *pending]) - time.perf_counter()))
    elapsed = time.perf_counter() - started
    waits.sort()
    median_wait = statistics.median(waits) if waits else float("nan")
    worst_wait = waits[-1] if waits else float("nan")
    print(
        f"   (d) {rate:g} matches/s for {elapsed:.0f} s: {runs} recomputes ({refreshes} with "
        f"an interval refresh), {recompute_cpu:.2f} s CPU, {recompute_wall:.2f} s wall: "
        f"{100 * recompute_cpu / elapsed:.1f} % of a worker process's CPU "
        f"({100 * recompute_wall / elapsed:.1f} % of its time); a landed match rated after "
        f"{median_wait:.1f} s (median), {worst_wait:.1f} s (worst)"
    )
    game.sent.clear()


def before(game: Competition) -> None:
    """One recompute as before this change: every completed match read, every rating computed
    from scratch with the bootstrap, every row deleted and inserted again."""
    from sqlalchemy import delete, insert, select

    from app.kinds.red_blue.models import Match, MatchStatus, Rating
    from app.kinds.red_blue.rules.ratings import MatchOutcome, compute_ratings
    from app.kit.db import session_scope

    def old() -> int:
        with session_scope() as session:
            played = session.execute(
                select(
                    Match.red_participant_id,
                    Match.blue_participant_id,
                    Match.attack_won,
                    Match.red_points,
                    Match.blue_points,
                ).where(
                    Match.challenge_id == game.challenge_id, Match.status == MatchStatus.COMPLETED
                )
            ).all()
        ratings = compute_ratings(MatchOutcome(str(r), str(b), bool(w)) for r, b, w, _, _ in played)
        with session_scope() as session:
            session.execute(delete(Rating).where(Rating.challenge_id == game.challenge_id))
            session.execute(
                insert(Rating),
                [
                    {
                        "challenge_id": game.challenge_id,
                        "tenant_id": game.tenant_id,
                        "participant_id": uuid.UUID(row.participant),
                        "side": row.side,
                        "position": position,
                        "rank": row.rank,
                        "rating": row.rating,
                        "rating_low": row.rating_low,
                        "rating_high": row.rating_high,
                        "points": 0,
                        "matches": row.matches,
                        "wins": row.wins,
                    }
                    for rows in (ratings.red, ratings.blue)
                    for position, row in enumerate(rows, start=1)
                ],
            )
            session.rollback()  # the board stays as the new code wrote it
        return len(played)

    wall, cpu, count = timed(old)
    print(
        f"   (e) the recompute before this change (all {count:,} matches read, rated from "
        f"scratch, every row rewritten): {wall:.2f} s wall, {cpu:.2f} s CPU"
    )


def main() -> None:
    args = parse_args()
    common.exit_on_sigterm()
    sizes = [int(size) for size in args.sizes.split(",")]
    common.print_machine_info("red-blue board recompute")
    with common.scratch_database(keep=args.keep_db) as database:
        use_database(database.url)
        phases = instrument()
        game = Competition(args.reds, args.blues, args.seed)
        game.create()
        with recording_sends(game):
            for size in sizes:
                loading = time.perf_counter()
                game.bulk_load(database.dsn, size - game.matches)
                print(
                    f"== {size:,} matches ({game.reds:,} red x {game.blues:,} blue "
                    f"participants; loaded in {time.perf_counter() - loading:.0f} s)",
                    flush=True,
                )
                first_recompute(game, phases)
                incremental(game, phases, args.rounds, args.landing)
                refresh(game, phases)
                constant_rate(game, args.rate, args.seconds)
                if args.before:
                    before(game)
                common.print_end_load()
                sys.stdout.flush()


if __name__ == "__main__":
    main()
