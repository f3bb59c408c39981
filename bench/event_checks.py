"""What the event bench checks once the load has stopped and the backlog has drained: the
invariants, read from the layout's database and from the bench's own record of every request.

Nothing here imports locust (so pytest may import it); the database is read with the models
and the ranking rules of the checkout the bench runs from (app/), on PostgreSQL or SQLite.
"""

from __future__ import annotations

import math
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine, text

# The work the bench waits for after the load: nothing queued, running, pending or dirty.
BACKLOG_QUERIES = {
    "attempts queued": "SELECT count(*) FROM attempts WHERE status = 'queued'",
    "attempts running": "SELECT count(*) FROM attempts WHERE status = 'running'",
    "defenses pending": "SELECT count(*) FROM redblue_defenses WHERE status = 'pending'",
    "attacks unpaired": "SELECT count(*) FROM redblue_attacks WHERE paired_at IS NULL",
    "matches queued": "SELECT count(*) FROM redblue_matches WHERE status = 'queued'",
    "matches running": "SELECT count(*) FROM redblue_matches WHERE status = 'running'",
    "boards dirty": "SELECT count(*) FROM redblue_boards WHERE dirty",
}


def backlog(engine: Engine) -> dict[str, int] | None:
    """The unfinished work of every kind, or None when the database did not answer (a
    SQLite file locked by a writer, say)."""
    try:
        with engine.connect() as connection:
            return {
                name: int(connection.execute(text(query)).scalar_one())
                for name, query in BACKLOG_QUERIES.items()
            }
    except Exception:
        return None


def wait_drained(engine: Engine, timeout: float) -> tuple[bool, float, dict[str, int] | None]:
    """Waits (at most `timeout` s) until no work is left; (drained, seconds waited, last
    backlog)."""
    started = time.monotonic()
    last = None
    while True:
        last = backlog(engine)
        if last is not None and not any(last.values()):
            return True, time.monotonic() - started, last
        if time.monotonic() - started > timeout:
            return False, time.monotonic() - started, last
        time.sleep(1)


@dataclass
class Invariant:
    name: str
    held: bool
    detail: str = ""


# Requests -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Request:
    """One HTTP request the crowd made."""

    kind: str  # attempt, defense, attack, poll, board-public, board-keyed, hostile
    variant: str  # the route or the hostile request's kind
    started: float  # time.time()
    ended: float
    status: int  # 0: no answer (connection refused, reset, timed out)
    retry: bool = False  # a write sent again with its Idempotency-Key
    error: str = ""  # the client's error, when there was no answer

    @property
    def hostile(self) -> bool:
        return self.kind == "hostile"


def within(windows: Sequence[tuple[float, float]], request: Request, grace: float) -> bool:
    """Whether the request overlapped a window (a killed API's down time, `grace` seconds
    wider on both sides: a request sent just before the kill is answered by no one)."""
    return any(
        request.started <= end + grace and request.ended >= start - grace for start, end in windows
    )


@dataclass
class HttpVerdict:
    hostile: int = 0
    hostile_not_4xx: list[Request] = field(default_factory=list)
    failures_outside: list[Request] = field(default_factory=list)  # 5xx or no answer
    failures_inside: int = 0
    unexpected_4xx: list[Request] = field(default_factory=list)
    limited: int = 0


# A participant's own limits (per day, in total) answer these: the request was understood and
# refused by a rule the participant can read, not by a failure.
LIMIT_STATUSES = (409, 429)


def judge_requests(
    requests: Iterable[Request], api_down: Sequence[tuple[float, float]], grace: float = 1.0
) -> HttpVerdict:
    """Sorts every request: hostile ones must get a 4xx (unless the API was down); no 5xx and
    no unanswered request outside the API's down time; legitimate requests get no 4xx but a
    participant limit's."""
    verdict = HttpVerdict()
    for request in requests:
        failed = request.status == 0 or request.status >= 500
        if failed:
            if within(api_down, request, grace):
                verdict.failures_inside += 1
                continue
            verdict.failures_outside.append(request)
        if request.hostile:
            verdict.hostile += 1
            if not 400 <= request.status < 500:
                verdict.hostile_not_4xx.append(request)
        elif 400 <= request.status < 500:
            if request.status in LIMIT_STATUSES:
                verdict.limited += 1
            else:
                verdict.unexpected_4xx.append(request)
    return verdict


def _examples(requests: Sequence[Request], count: int = 5) -> str:
    return "; ".join(
        f"{r.kind}/{r.variant} → {r.status or 'no answer'} "
        f"at {time.strftime('%H:%M:%S', time.localtime(r.started))}"
        + (f" ({r.error})" if r.error else "")
        for r in requests[:count]
    )


def http_invariants(verdict: HttpVerdict) -> list[Invariant]:
    return [
        Invariant(
            "every hostile request answered 4xx",
            not verdict.hostile_not_4xx and verdict.hostile > 0,
            f"{verdict.hostile} hostile, {len(verdict.hostile_not_4xx)} not 4xx"
            + (f": {_examples(verdict.hostile_not_4xx)}" if verdict.hostile_not_4xx else ""),
        ),
        Invariant(
            "no 5xx and no unanswered request outside a killed API's down time",
            not verdict.failures_outside,
            f"{len(verdict.failures_outside)} outside, {verdict.failures_inside} inside"
            + (f": {_examples(verdict.failures_outside)}" if verdict.failures_outside else ""),
        ),
        Invariant(
            "legitimate requests refused only by participant limits",
            not verdict.unexpected_4xx,
            f"{len(verdict.unexpected_4xx)} other 4xx, {verdict.limited} limit answers"
            + (f": {_examples(verdict.unexpected_4xx)}" if verdict.unexpected_4xx else ""),
        ),
    ]


# The database -------------------------------------------------------------------------------


@dataclass
class Accepted:
    """What the crowd was told was accepted: Idempotency-Key → id, per table; and every key
    a legitimate write sent (accepted or not)."""

    ids: dict[str, dict[str, str]]  # table → {key: id}
    sent_keys: dict[str, set[str]]  # table → keys


WRITE_TABLES = {"attempt": "attempts", "defense": "redblue_defenses", "attack": "redblue_attacks"}


def _count(connection: Any, query: str, **parameters: Any) -> int:
    return int(connection.execute(text(query), parameters).scalar_one())


def database_invariants(
    engine: Engine, accepted: Accepted, trials_per_attempt: int
) -> list[Invariant]:
    found: list[Invariant] = []
    with engine.connect() as connection:
        unfinished = _count(
            connection, "SELECT count(*) FROM attempts WHERE status NOT IN ('completed', 'error')"
        )
        silent = _count(
            connection,
            "SELECT count(*) FROM attempts WHERE status = 'error' "
            "AND (error IS NULL OR error = '')",
        )
        found.append(
            Invariant(
                "every accepted attempt ended (completed, or error with a reason)",
                unfinished == 0 and silent == 0,
                f"{unfinished} unfinished, {silent} errors without a reason",
            )
        )
        pending = _count(
            connection, "SELECT count(*) FROM redblue_defenses WHERE status = 'pending'"
        )
        unexplained = _count(
            connection,
            "SELECT count(*) FROM redblue_defenses WHERE status IN ('rejected', 'error') "
            "AND (reason IS NULL OR reason = '')",
        )
        unpaired = _count(
            connection, "SELECT count(*) FROM redblue_attacks WHERE paired_at IS NULL"
        )
        open_matches = _count(
            connection,
            "SELECT count(*) FROM redblue_matches WHERE status NOT IN ('completed', 'error')",
        )
        silent_matches = _count(
            connection,
            "SELECT count(*) FROM redblue_matches WHERE status = 'error' "
            "AND (error IS NULL OR error = '')",
        )
        found.append(
            Invariant(
                "every defense settled, attack paired and match ended (errors with a reason)",
                not (pending or unexplained or unpaired or open_matches or silent_matches),
                f"{pending} defenses pending, {unexplained} refused without a reason, "
                f"{unpaired} attacks unpaired, {open_matches} matches unfinished, "
                f"{silent_matches} match errors without a reason",
            )
        )
        for kind, table in WRITE_TABLES.items():
            # SQLite gives ids back as 32 hex digits: both sides in one spelling.
            rows = {
                str(key): str(uuid.UUID(str(row_id)))
                for key, row_id in connection.execute(
                    text(f"SELECT idempotency_key, id FROM {table}")
                ).tuples()
            }
            told = accepted.ids.get(kind, {})
            lost = [key for key, row_id in told.items() if rows.get(key) != str(uuid.UUID(row_id))]
            phantom = [key for key in rows if key not in accepted.sent_keys.get(kind, set())]
            found.append(
                Invariant(
                    f"{table}: every 202 stored once, nothing stored that no request sent",
                    not lost and not phantom,
                    f"{len(told)} accepted, {len(rows)} stored, {len(lost)} lost or different, "
                    f"{len(phantom)} without a request",
                )
            )
        wrong_trials = _count(
            connection,
            "SELECT count(*) FROM (SELECT a.id FROM attempts a LEFT JOIN trials t "
            "ON t.attempt_id = a.id GROUP BY a.id, a.status "
            "HAVING count(t.id) > :k OR (a.status = 'completed' AND count(t.id) <> :k)) wrong",
            k=trials_per_attempt,
        )
        duplicate_trials = _count(
            connection,
            "SELECT count(*) FROM (SELECT attempt_id FROM trials "
            "GROUP BY attempt_id, task_index, trial_index HAVING count(*) > 1) twice",
        )
        found.append(
            Invariant(
                f"trials unique: {trials_per_attempt} per completed attempt, none twice",
                wrong_trials == 0 and duplicate_trials == 0,
                f"{wrong_trials} attempts with a wrong count, {duplicate_trials} duplicated",
            )
        )
        twice = _count(
            connection,
            "SELECT count(*) FROM (SELECT attack_id FROM redblue_matches "
            "GROUP BY attack_id, defense_id HAVING count(*) > 1) twice",
        )
        themselves = _count(
            connection,
            "SELECT count(*) FROM redblue_matches WHERE red_participant_id = blue_participant_id",
        )
        found.append(
            Invariant(
                "no (attack, defense) pair twice, no participant against themself",
                twice == 0 and themselves == 0,
                f"{twice} pairs twice, {themselves} against themselves",
            )
        )
    found += leaderboard_invariants(engine)
    found += red_blue_invariants(engine)
    return found


def leaderboard_invariants(engine: Engine) -> list[Invariant]:
    """Every prompt challenge's leaderboard equals a recomputation from its attempts by the
    service's own ranking rules (the rebuild a rescore does)."""
    from sqlalchemy import select
    from sqlalchemy.orm import Session

    from app.attempt.models import Attempt, AttemptStatus
    from app.attempt.ranked import as_ranked
    from app.challenge.models import Challenge
    from app.leaderboard.models import LeaderboardEntry
    from app.leaderboard.ranking import placed

    found = []
    with Session(engine) as session:
        challenges = session.scalars(select(Challenge).where(Challenge.kind == "prompt")).all()
        tenants = _tenant_slugs(engine)
        for challenge in challenges:
            best: dict[uuid.UUID, Any] = {}
            attempts = session.scalars(
                select(Attempt).where(
                    Attempt.challenge_id == challenge.id,
                    Attempt.status == AttemptStatus.COMPLETED,
                )
            )
            for attempt in attempts:
                entry = placed(challenge.strategy, as_ranked(attempt))
                if entry is None:
                    continue
                # The participant the board ranks it for (`as_ranked`: a test run has none).
                participant = entry.attempt.participant_id
                kept = best.get(participant)
                if kept is None or entry.place() < kept.place():
                    best[participant] = entry
            expected = {
                participant: (entry.attempt.attempt_id, entry.key.rank_key, entry.key.rank_tiebreak)
                for participant, entry in best.items()
            }
            rows = session.scalars(
                select(LeaderboardEntry).where(LeaderboardEntry.challenge_id == challenge.id)
            ).all()
            board = {
                row.participant_id: (row.attempt_id, row.rank_key, row.rank_tiebreak)
                for row in rows
            }
            differ = {p for p in expected.keys() | board.keys() if expected.get(p) != board.get(p)}
            found.append(
                Invariant(
                    f"leaderboard of {tenants.get(str(challenge.tenant_id), '?')}/{challenge.slug} "
                    "equals a recomputation from its attempts",
                    not differ and len(rows) == len(board),
                    f"{len(board)} rows, {len(expected)} expected, {len(differ)} differ",
                )
            )
    return found


def _tenant_slugs(engine: Engine) -> dict[str, str]:
    """Tenant id (as a UUID's text) → slug."""
    with engine.connect() as connection:
        rows = connection.execute(text("SELECT id, slug FROM tenants")).tuples()
        return {str(uuid.UUID(str(tenant_id))): str(slug) for tenant_id, slug in rows}


# Ratings may come from a refit that starts at the previous solution; they must agree with a
# fit from scratch to within this many rating points.
RATING_TOLERANCE = 1.0


def red_blue_invariants(engine: Engine) -> list[Invariant]:
    """Each red-blue challenge's standings and both boards' points, matches and wins equal
    the sums over its judged matches; its ratings equal a fit from scratch."""
    from app.kinds.red_blue.rules.ratings import MatchOutcome, compute_ratings

    found = []
    with engine.connect() as connection:
        challenges = connection.execute(
            text(
                "SELECT c.id, t.slug || '/' || c.slug FROM challenges c "
                "JOIN tenants t ON t.id = c.tenant_id WHERE c.kind = 'red_blue'"
            )
        ).tuples()
        for challenge_id, slug in list(challenges):
            played = connection.execute(
                text(
                    "SELECT red_participant_id, blue_participant_id, attack_won, red_points, "
                    "blue_points FROM redblue_matches WHERE challenge_id = :c "
                    "AND status = 'completed'"
                ),
                {"c": challenge_id},
            ).tuples()
            outcomes = [
                (str(r), str(b), bool(w), int(rp or 0), int(bp or 0)) for r, b, w, rp, bp in played
            ]
            board = connection.execute(
                text(
                    "SELECT red_points, blue_points, matches, dirty FROM redblue_boards "
                    "WHERE challenge_id = :c"
                ),
                {"c": challenge_id},
            ).first()
            sums = (sum(o[3] for o in outcomes), sum(o[4] for o in outcomes), len(outcomes))
            stored = (0, 0, 0) if board is None else (int(board[0]), int(board[1]), int(board[2]))
            found.append(
                Invariant(
                    f"standings of {slug} equal the sums of its judged matches",
                    stored == sums and not (board is not None and board[3]),
                    f"stored (red, blue, matches) {stored}, summed {sums}",
                )
            )
            expected: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0])
            for red, blue, won, red_points, blue_points in outcomes:
                for side, who, points, win in (
                    ("red", red, red_points, won),
                    ("blue", blue, blue_points, not won),
                ):
                    row = expected[(side, who)]
                    row[0] += points
                    row[1] += 1
                    row[2] += int(win)
            rated = {
                (str(side), str(participant)): (
                    [int(points), int(matches), int(wins)],
                    float(rating),
                )
                for side, participant, points, matches, wins, rating in connection.execute(
                    text(
                        "SELECT side, participant_id, points, matches, wins, rating "
                        "FROM redblue_ratings WHERE challenge_id = :c"
                    ),
                    {"c": challenge_id},
                ).tuples()
            }
            differ = [
                key
                for key in expected.keys() | rated.keys()
                if key not in rated or expected.get(key) != rated[key][0]
            ]
            found.append(
                Invariant(
                    f"boards of {slug}: points, matches and wins equal the sums of its matches",
                    not differ,
                    f"{len(rated)} rows, {len(expected)} expected, {len(differ)} differ",
                )
            )
            fit = compute_ratings(MatchOutcome(o[0], o[1], o[2]) for o in outcomes)
            from_scratch = {(r.side, r.participant): r.rating for r in (*fit.red, *fit.blue)}
            deviation = max(
                (
                    abs(rating - from_scratch[key])
                    for key, (_sums, rating) in rated.items()
                    if key in from_scratch
                ),
                default=0.0,
            )
            found.append(
                Invariant(
                    f"ratings of {slug} equal a fit from scratch (±{RATING_TOLERANCE:g})",
                    deviation <= RATING_TOLERANCE and not math.isnan(deviation),
                    f"largest difference {deviation:.4f} rating points over {len(rated)} rows",
                )
            )
    return found


def summarize_counts(engine: Engine) -> dict[str, int]:
    """The event's totals, from the database."""
    queries = {
        "attempts": "SELECT count(*) FROM attempts",
        "attempts completed": "SELECT count(*) FROM attempts WHERE status = 'completed'",
        "attempts errored": "SELECT count(*) FROM attempts WHERE status = 'error'",
        "attempts succeeded": "SELECT count(*) FROM attempts WHERE succeeded",
        "attempts run more than once": "SELECT count(*) FROM attempts WHERE run_count > 1",
        "trials": "SELECT count(*) FROM trials",
        "participants": "SELECT count(*) FROM participants",
        "defenses": "SELECT count(*) FROM redblue_defenses",
        "defenses active": "SELECT count(*) FROM redblue_defenses WHERE status = 'active'",
        "attacks": "SELECT count(*) FROM redblue_attacks",
        "matches": "SELECT count(*) FROM redblue_matches",
        "matches completed": "SELECT count(*) FROM redblue_matches WHERE status = 'completed'",
        "matches errored": "SELECT count(*) FROM redblue_matches WHERE status = 'error'",
        "leaderboard rows": "SELECT count(*) FROM leaderboard_entries",
    }
    with engine.connect() as connection:
        return {name: _count(connection, query) for name, query in queries.items()}


def errors_by_reason(engine: Engine) -> Counter[str]:
    with engine.connect() as connection:
        rows = connection.execute(
            text(
                "SELECT error, count(*) FROM attempts WHERE status = 'error' GROUP BY error "
                "UNION ALL SELECT error, count(*) FROM redblue_matches WHERE status = 'error' "
                "GROUP BY error"
            )
        ).tuples()
        return Counter({str(reason)[:120]: int(count) for reason, count in rows})


def finished_per_minute(engine: Engine, since: float) -> dict[int, tuple[int, int]]:
    """Attempts and matches finished in each minute after `since` (time.time())."""
    from datetime import UTC, datetime

    start = datetime.fromtimestamp(since, UTC)
    found: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    with engine.connect() as connection:
        for column, table in ((0, "attempts"), (1, "redblue_matches")):
            for (finished,) in connection.execute(
                text(f"SELECT finished_at FROM {table} WHERE finished_at IS NOT NULL")
            ).tuples():
                moment = (
                    finished
                    if isinstance(finished, datetime)
                    else datetime.fromisoformat(str(finished))
                )
                if moment.tzinfo is None:
                    moment = moment.replace(tzinfo=UTC)
                minute = int((moment - start).total_seconds() // 60)
                found[minute][column] += 1
    return {minute: (values[0], values[1]) for minute, values in sorted(found.items())}
