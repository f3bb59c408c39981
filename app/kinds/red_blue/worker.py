"""The red_blue kind's work on a worker: a defense's self-test, the pairing of a new attack or
a newly active defense, a match's run, the debounced recompute of ratings and standings, and
the sweep that re-sends what was lost. Every step is safe to repeat (redelivered tasks, a
worker that died), as attempts' are:

- a self-test or a match is a leased job (app/lease/): claimed by a conditional update taking
  a lease; only the holder of the current run token finishes it; one short transaction
  claims, one completes;
- pairing never makes a pair twice (UNIQUE(attack_id, defense_id), inserts that ignore a
  conflict) and counts the matches a submission already has (`app.kinds.red_blue.rules.pairing`);
- a transaction that completes matches numbers them with their board's next landing and
  marks the board dirty; only the transaction that turned it dirty sends the recompute; a
  recompute writes ratings and standings in one transaction, only if they are newer than
  what is written, and reads only what landed since the board this process kept.

The engine's modules (litellm) and the numeric ones (numpy, scipy) load only inside the run
paths.
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
import time
import uuid
from collections import OrderedDict, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from celery.exceptions import SoftTimeLimitExceeded
from sqlalchemy.orm import Session

from app.challenge.service import config_of
from app.config import Settings, get_settings
from app.db import session_scope, utcnow
from app.errors import ValidationFailed
from app.evaluation.verifiers import build_verifier
from app.kinds.red_blue import repository
from app.kinds.red_blue.config import RedBlueSections, sections_of
from app.kinds.red_blue.dispatch import (
    INTERVALS_ONLY,
    PAIR_ATTACK,
    RECOMPUTE,
    RUN_MATCHES,
    SELF_TEST,
    chunks,
)
from app.kinds.red_blue.models import (
    MATCH_LEASES,
    SELF_TEST_LEASES,
    Attack,
    Defense,
    DefenseStatus,
    Match,
    MatchStatus,
    Side,
)
from app.kinds.red_blue.repository import Entry, RatingRow
from app.kinds.red_blue.rules.judging import judge_match, verify_categories
from app.kinds.red_blue.rules.pairing import Opponent, Submission, choose_opponents
from app.lease.budget import CostBudget, RowSpend
from app.lease.heartbeat import Heartbeat
from app.lease.model_client import model_client
from app.lease.run import Failure, LeasedRun, failure_of, run_leased, run_on_process_loop
from app.lease.service import lease_until, renewer
from app.observability import metrics as telemetry
from app.tenant.service import DaySpend
from app.unit_of_work import UnitOfWork, WorkerTask, unit_of_work

if TYPE_CHECKING:
    from app.kinds.red_blue.rules.ratings import FloatArray, Tally

log = logging.getLogger(__name__)

SWEEP_BATCH = 500


def _budget(match_id: uuid.UUID | None, tenant_id: uuid.UUID, settings: Settings) -> CostBudget:
    """The cost budgets of a match's (or a self-test's) calls: the match's own spend (a
    self-test keeps none) and the tenant's of the day, as an attempt's."""
    return CostBudget(
        own=RowSpend(Match, match_id) if match_id is not None else None,
        tenant_day=DaySpend(tenant_id),
        attempt_budget_usd=settings.attempt_cost_budget_usd,
        tenant_daily_budget_usd=settings.tenant_daily_cost_budget_usd,
        unpriced_usd_per_million_tokens=settings.unpriced_usd_per_million_tokens,
    )


def _sections(session: Any, challenge_id: uuid.UUID) -> tuple[RedBlueSections, str, Any] | None:
    """The challenge's sections, goal and row; None when it is gone or does not load."""
    challenge = repository.get_challenge(session, challenge_id)
    if challenge is None:
        return None
    try:
        return sections_of(config_of(challenge)), challenge.goal, challenge
    except (ValidationFailed, TypeError):
        log.exception("red_blue challenge %s: its configuration does not load", challenge_id)
        return None


# Self-tests -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SelfTestJob:
    defense_id: uuid.UUID
    tenant_id: uuid.UUID
    challenge_id: uuid.UUID
    system_prompt: str
    goal: str
    sections: RedBlueSections


@dataclass(frozen=True)
class SelfTestResult:
    passed: bool
    output: str
    verdict: dict[str, Any]


async def _self_test(job: SelfTestJob, settings: Settings) -> SelfTestResult:
    llm = model_client(settings, _budget(None, job.tenant_id, settings))
    try:
        test = job.sections.self_test
        spec = job.sections.target.model_spec(job.system_prompt, settings.model_timeout_seconds)
        record = await llm.complete(spec, [{"role": "user", "content": test.prompt}])
        verifier = build_verifier(test.verifier, goal=job.goal, llm=llm)
        result = await verifier.verify(record.output)
        verdict = {"success": result.success, "raw_eval_output": result.raw_eval_output}
        return SelfTestResult(result.success, record.output, verdict)
    finally:
        await llm.aclose()


def run_self_test(defense_id: uuid.UUID) -> str:
    """Runs the defense's self-test if it is this worker's to run; an active defense that was
    never paired (its task was lost after activation) is paired instead."""
    return run_leased(SELF_TEST_RUN, defense_id)


class SelfTestRun(LeasedRun[Defense, SelfTestJob, SelfTestResult]):
    table = SELF_TEST_LEASES

    def claim(
        self,
        session: Session,
        row_id: uuid.UUID,
        token: uuid.UUID,
        now: datetime,
        until: datetime,
    ) -> Defense | None:
        return repository.claim_defense(session, row_id, token, now, until)

    def runs(self, claimed: Defense) -> int:
        return claimed.run_count

    def load(self, session: Session, claimed: Defense) -> SelfTestJob | None:
        loaded = _sections(session, claimed.challenge_id)
        if loaded is None:
            return None
        sections, goal, _ = loaded
        return SelfTestJob(
            claimed.id,
            claimed.tenant_id,
            claimed.challenge_id,
            claimed.system_prompt,
            goal,
            sections,
        )

    def name(self, row_id: uuid.UUID) -> str:
        return f"self-test of defense {row_id}"

    def unclaimed(self, row_id: uuid.UUID) -> str:
        with unit_of_work() as work:
            paired = _pair_active_defense(work, row_id)
        return "paired" if paired else "skipped: finished or held by another worker"

    async def execute(
        self, job: SelfTestJob, token: uuid.UUID, settings: Settings
    ) -> SelfTestResult:
        return await _self_test(job, settings)

    def complete(self, job: SelfTestJob, token: uuid.UUID, result: SelfTestResult) -> str:
        with unit_of_work() as work:
            defense = repository.defense_if_held(work.session, job.defense_id, token)
            if defense is None:
                return "stopped: lease taken over"
            defense.self_test_output = result.output
            defense.self_test_verdict = result.verdict
            defense.finished_at = utcnow()
            defense.end_lease()
            if not result.passed:
                defense.status = DefenseStatus.REJECTED
                defense.reason = (
                    "self-test failed: the target's answer to the self-test prompt, with this "
                    "defense as system prompt, did not pass the self-test's check "
                    f"({result.verdict['raw_eval_output']})"
                )
                return "rejected"
            defense.status = DefenseStatus.ACTIVE
            work.session.flush()
            _pair_defense(work, defense, job.sections)
        return "active"

    def fail(self, row_id: uuid.UUID, token: uuid.UUID, failure: Failure) -> None:
        with session_scope() as session:
            defense = repository.defense_if_held(session, row_id, token)
            if defense is None:
                return
            defense.status = DefenseStatus.ERROR
            defense.reason = failure.reason
            defense.error_detail = failure.detail
            defense.finished_at = utcnow()
            defense.end_lease()


SELF_TEST_RUN = SelfTestRun()


# Pairing --------------------------------------------------------------------------------------


def _opponents(entries: list[Entry], ratings: dict[uuid.UUID, float]) -> list[Any]:
    return [
        Opponent(e.id, str(e.participant_id), e.created_at, ratings.get(e.participant_id))
        for e in entries
    ]


def _make_matches(
    work: UnitOfWork,
    entry: Attack | Defense,
    opponents: list[Any],
    by_id: dict[uuid.UUID, Entry],
) -> int:
    """Inserts the chosen matches (a pair that already has one is skipped) and sends the new
    ones to workers after the commit, in chunks (`RUN_MATCHES`); how many were new."""
    now = utcnow()
    rows = []
    for opponent in opponents:
        other = by_id[opponent.id]
        attack, defense = (entry, other) if isinstance(entry, Attack) else (other, entry)
        rows.append(
            {
                "id": uuid.uuid4(),
                "tenant_id": entry.tenant_id,
                "challenge_id": entry.challenge_id,
                "attack_id": attack.id,
                "defense_id": defense.id,
                "red_participant_id": attack.participant_id,
                "blue_participant_id": defense.participant_id,
                "status": MatchStatus.QUEUED.value,
                "created_at": now,
                "enqueued_at": now,
                "run_count": 0,
                "spent_usd": 0.0,
            }
        )
    inserted = repository.insert_matches(work.session, rows)
    for chunk in chunks([str(match_id) for match_id in inserted]):
        work.send_after_commit(RUN_MATCHES, *chunk)
    return len(inserted)


def pair_attack(attack_id: uuid.UUID) -> str:
    """Matches a new attack with defenses by the challenge's policy (idempotent)."""

    with unit_of_work() as work:
        session = work.session
        attack = repository.lock_attack(session, attack_id)
        if attack is None:
            return "skipped: no such attack"
        loaded = _sections(session, attack.challenge_id)
        if loaded is None:
            return "skipped: the challenge does not load"
        sections = loaded[0]
        defenses = repository.active_defenses(session, attack.challenge_id)
        ratings = (
            repository.ratings_of(session, attack.challenge_id, Side.BLUE)
            if sections.pairing.policy == "latest_best"
            else {}
        )
        chosen = choose_opponents(
            Submission(attack.id, "attack", str(attack.participant_id)),
            _opponents(defenses, ratings),
            sections.pairing,
            repository.pairs_of(session, Match.attack_id, attack.id),
        )
        made = _make_matches(work, attack, chosen, {d.id: d for d in defenses})
        if attack.paired_at is None:
            attack.paired_at = utcnow()
    return f"paired: {made} new matches"


def _pair_defense(work: UnitOfWork, defense: Defense, sections: RedBlueSections) -> int:
    """Pairs a defense that has just become active, if it is its participant's newest active
    defense (an older one finishing its self-test late is not paired); marks it paired."""

    session = work.session
    defense.paired_at = utcnow()
    newest = repository.newest_active_defense(session, defense.challenge_id, defense.participant_id)
    if newest != defense.id:
        return 0
    attacks = repository.attacks_of(session, defense.challenge_id)
    ratings = (
        repository.ratings_of(session, defense.challenge_id, Side.RED)
        if sections.pairing.policy == "latest_best"
        else {}
    )
    chosen = choose_opponents(
        Submission(defense.id, "defense", str(defense.participant_id)),
        _opponents(attacks, ratings),
        sections.pairing,
        repository.pairs_of(session, Match.defense_id, defense.id),
    )
    return _make_matches(work, defense, chosen, {a.id: a for a in attacks})


def _pair_active_defense(work: UnitOfWork, defense_id: uuid.UUID) -> bool:
    defense = repository.lock_defense(work.session, defense_id)
    if defense is None or defense.status is not DefenseStatus.ACTIVE or defense.paired_at:
        return False
    loaded = _sections(work.session, defense.challenge_id)
    if loaded is None:
        return False
    _pair_defense(work, defense, loaded[0])
    return True


# Matches --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MatchJob:
    match_id: uuid.UUID
    tenant_id: uuid.UUID
    challenge_id: uuid.UUID
    system_prompt: str
    user_message: str
    goal: str
    sections: RedBlueSections


async def _play(job: MatchJob, settings: Settings) -> dict[str, Any]:
    """The target call and every category's verdict; the values that complete the match."""

    llm = model_client(settings, _budget(job.match_id, job.tenant_id, settings))
    try:
        spec = job.sections.target.model_spec(job.system_prompt, settings.model_timeout_seconds)
        record = await llm.complete(spec, [{"role": "user", "content": job.user_message}])
        results = await verify_categories(
            job.sections.judge_suite, record.output, goal=job.goal, llm=llm
        )
    finally:
        await llm.aclose()
    judgement = judge_match(job.sections.judge_suite, job.sections.points, results)
    verdicts = [
        {
            "category": v.category,
            "breached": v.breached,
            "rating": v.rating,
            "red_points": v.red_points,
            "blue_points": v.blue_points,
            "raw_eval_output": results[v.category].raw_eval_output,
        }
        for v in judgement.verdicts
    ]
    return {
        "status": MatchStatus.COMPLETED,
        "output": record.output,
        "verdicts": verdicts,
        "breached": list(judgement.breached),
        "red_points": judgement.red_points,
        "blue_points": judgement.blue_points,
        "attack_won": judgement.attack_won,
        "tokens_total": record.input_tokens + record.output_tokens,
        "elapsed_ms": record.elapsed_ms,
        "cost_usd": record.cost_usd,
    }


async def _play_or_error(job: MatchJob, settings: Settings, gate: asyncio.Semaphore) -> Any:
    """One match of a chunk: its values, or those of an error (it counts for no one). The
    soft time limit is not caught here: it ends the whole chunk."""
    async with gate:
        try:
            return await _play(job, settings)
        except SoftTimeLimitExceeded:
            raise
        except Exception as exc:
            return _error(failure_of(exc, settings, f"match {job.match_id}"))


async def _play_all(
    jobs: list[MatchJob],
    settings: Settings,
    land: Callable[[dict[uuid.UUID, dict[str, Any]]], None],
) -> None:
    """Plays the chunk's matches concurrently on this process's loop, at most
    `model_per_model_concurrency` target calls at a time, and hands them to `land` as they
    finish: those finished while the previous batch was being written go together, so a
    match's result waits for no slower match of its chunk. `land` writes in a thread, so the
    calls still running go on meanwhile."""
    gate = asyncio.Semaphore(settings.model_per_model_concurrency)

    async def play(job: MatchJob) -> tuple[uuid.UUID, dict[str, Any]]:
        return job.match_id, await _play_or_error(job, settings, gate)

    pending: set[asyncio.Task[tuple[uuid.UUID, dict[str, Any]]]] = {
        asyncio.ensure_future(play(job)) for job in jobs
    }
    try:
        while pending:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            # A task's exception (the soft time limit) is raised here and ends the chunk.
            await asyncio.to_thread(land, dict(task.result() for task in done))
    finally:
        for task in pending:
            task.cancel()


# The parsed configuration of the challenges this process ran matches of, by id, while the
# challenge's updated_at stays the same: a chunk reads one timestamp instead of parsing the
# challenge's sections again.
_loaded_challenges: dict[uuid.UUID, tuple[Any, tuple[RedBlueSections, str] | None]] = {}


def _challenge_rules(session: Any, challenge_id: uuid.UUID) -> tuple[RedBlueSections, str] | None:
    """The challenge's sections and goal (None when it is gone or does not load)."""
    version = repository.challenge_version(session, challenge_id)
    if version is None:
        _loaded_challenges.pop(challenge_id, None)
        return None
    cached = _loaded_challenges.get(challenge_id)
    if cached is not None and cached[0] == version:
        return cached[1]
    loaded = _sections(session, challenge_id)
    rules = None if loaded is None else (loaded[0], loaded[1])
    _loaded_challenges[challenge_id] = (version, rules)
    return rules


def run_match(match_id: uuid.UUID) -> str:
    """Runs the match if it is this worker's to run (`run_matches` of one match)."""
    return run_matches([match_id]).get(match_id, "skipped: finished or held by another worker")


def run_matches(match_ids: list[uuid.UUID]) -> dict[uuid.UUID, str]:
    """Runs those of the matches that are this worker's to run (a chunk of one pairing): one
    statement claims them all with one lease, each makes its one target call and has every
    verdict and its points, and each is written as soon as it is played (with those played
    meanwhile): completed, or ended in error (counting for no one), its board marked dirty. A
    match already finished or held by another worker is skipped, so a redelivered chunk runs
    nothing twice; a match whose lease was taken over meanwhile is not written. Answers each
    claimed match's outcome."""
    settings = get_settings()
    token = uuid.uuid4()
    outcomes: dict[uuid.UUID, str] = {}
    unplayable: dict[uuid.UUID, dict[str, Any]] = {}
    labels: dict[uuid.UUID, str] = {}
    jobs: list[MatchJob] = []
    with session_scope() as session:
        claimed = repository.claim_matches(
            session, match_ids, token, utcnow(), lease_until(settings)
        )
        rules: dict[uuid.UUID, tuple[RedBlueSections, str] | None] = {}
        for match in claimed:
            if match.run_count > settings.max_attempt_runs:
                gave_up = f"gave up after {settings.max_attempt_runs} runs"
                unplayable[match.id] = _error(Failure.of(gave_up))
                labels[match.id] = "error: too many runs"
                continue
            if match.challenge_id not in rules:
                rules[match.challenge_id] = _challenge_rules(session, match.challenge_id)
            loaded = rules[match.challenge_id]
            if loaded is None or match.system_prompt is None or match.user_message is None:
                unplayable[match.id] = _error(
                    Failure.of("the match's challenge or entries do not load")
                )
                labels[match.id] = "error: not runnable"
                continue
            sections, goal = loaded
            jobs.append(
                MatchJob(
                    match.id,
                    match.tenant_id,
                    match.challenge_id,
                    match.system_prompt,
                    match.user_message,
                    goal,
                    sections,
                )
            )

    def land(ended: dict[uuid.UUID, dict[str, Any]]) -> None:
        written = _end_matches(token, ended)
        for match_id, values in ended.items():
            if match_id not in written:
                outcomes[match_id] = "stopped: lease taken over"
            elif values["status"] is MatchStatus.COMPLETED:
                outcomes[match_id] = "completed"
            else:
                outcomes[match_id] = labels.get(match_id, "error")

    if unplayable:
        land(unplayable)
    if jobs:
        held = [job.match_id for job in jobs]
        try:
            # A call with its retries, or a slow judge, may outlast one lease.
            renew = renewer(MATCH_LEASES, held, token, settings)
            with Heartbeat(renew, settings, "a match chunk"):
                run_on_process_loop(_play_all(jobs, settings, land))
        except SoftTimeLimitExceeded as exc:
            timed_out = _error(failure_of(exc, settings, "a match chunk"))
            land({job.match_id: timed_out for job in jobs if job.match_id not in outcomes})
    return outcomes


def _error(failure: Failure) -> dict[str, Any]:
    return {
        "status": MatchStatus.ERROR,
        "error": failure.reason,
        "error_detail": failure.detail,
        # An error counts for no one.
        "red_points": None,
        "blue_points": None,
        "attack_won": None,
        "breached": None,
        "verdicts": None,
    }


def _end_matches(token: uuid.UUID, ended: dict[uuid.UUID, dict[str, Any]]) -> set[uuid.UUID]:
    """Completes (or ends in error) the matches still held by this token, in one transaction
    that also numbers the judged ones with their board's next landing and marks the board
    dirty; the recompute is sent after the commit only by the transaction that turned the
    board dirty, with a countdown to when the board's pacing allows it. Answers the matches
    written."""
    now = utcnow()
    written: set[uuid.UUID] = set()
    judged: dict[tuple[uuid.UUID, uuid.UUID], list[uuid.UUID]] = defaultdict(list)
    with unit_of_work() as work:
        for match_id, values in ended.items():
            held = repository.finish_match(
                work.session, match_id, token, {**values, "finished_at": now}
            )
            if held is None:
                continue
            written.add(match_id)
            if values["status"] is MatchStatus.COMPLETED:
                tenant_id, challenge_id = held
                judged[(challenge_id, tenant_id)].append(match_id)
        # Boards in one order, so two transactions landing on the same two boards never wait
        # for each other in a cycle.
        for (challenge_id, tenant_id), landed in sorted(judged.items()):
            landing = repository.land_matches(work.session, tenant_id, challenge_id, landed, now)
            if landing.turned_dirty:
                due = landing.recompute_due_at
                wait = 0.0 if due is None else (due - now).total_seconds()
                work.send_after_commit(_recompute_in(wait), str(challenge_id))
    return written


def _recompute_in(seconds: float) -> WorkerTask:
    """The recompute task, run no sooner than `seconds` from now (and never before RECOMPUTE's
    own countdown, which lets the matches landing meanwhile join it)."""
    return replace(RECOMPUTE, countdown=max(RECOMPUTE.countdown or 0.0, seconds))


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
    tally: Tally
    strength: FloatArray
    low_offset: FloatArray
    high_offset: FloatArray
    intervals_seq: int
    red_points: dict[str, int]
    blue_points: dict[str, int]
    handles: dict[str, str]
    written: tuple[tuple[int, int], list[RatingRow]] | None = None
    ids: dict[str, uuid.UUID] = field(default_factory=dict)

    @classmethod
    def recounted(cls, tenant_id: uuid.UUID, seq: int, landed: repository.Landed) -> _BoardState:
        # numpy and scipy (~0.6 s) load with the first ratings recompute, not with every worker.
        import numpy as np

        from app.kinds.red_blue.rules.ratings import Tally

        nothing = np.zeros(0)
        state = cls(tenant_id, 0, Tally(), nothing, nothing, nothing, 0, {}, {}, {})
        state.add(landed, seq)
        return state

    def add(self, landed: repository.Landed, seq: int) -> None:
        """Adds the matches landed after `self.seq` up to `seq`; the per-player arrays grow
        with the participants they bring (strength 0, no interval yet)."""
        # numpy (~0.15 s) loads with the first ratings recompute, not with every worker.
        import numpy as np

        reds, blues = self.tally.reds, self.tally.blues
        red_names = [str(participant) for participant in landed.reds]
        blue_names = [str(participant) for participant in landed.blues]
        self.ids.update(zip(red_names, landed.reds, strict=True))
        self.ids.update(zip(blue_names, landed.blues, strict=True))
        self.tally.add_columns(
            red_names, blue_names, landed.red, landed.blue, landed.matches, landed.red_wins
        )
        for names, index, points, total in (
            (red_names, landed.red, landed.red_points, self.red_points),
            (blue_names, landed.blue, landed.blue_points, self.blue_points),
        ):
            summed = np.bincount(index, points, len(names)).astype(np.int64).tolist()
            for name, value in zip(names, summed, strict=True):
                total[name] = total.get(name, 0) + value
        self.strength = self._grown(self.strength, reds, blues, 0.0)
        self.low_offset = self._grown(self.low_offset, reds, blues, math.nan)
        self.high_offset = self._grown(self.high_offset, reds, blues, math.nan)
        self.seq = seq

    def _grown(self, values: FloatArray, reds: int, blues: int, fill: float) -> FloatArray:
        # numpy (~0.15 s) loads with the first ratings recompute, not with every worker.
        import numpy as np

        more_reds, more_blues = self.tally.reds - reds, self.tally.blues - blues
        if not more_reds and not more_blues:
            return values
        return np.concatenate(
            [values[:reds], np.full(more_reds, fill), values[reds:], np.full(more_blues, fill)]
        )

    def participant_id(self, name: str) -> uuid.UUID:
        found = self.ids.get(name)
        if found is None:
            found = self.ids[name] = uuid.UUID(name)
        return found

    def player(self, side: Side, participant: str) -> int | None:
        if side is Side.RED:
            return self.tally.red_number(participant)
        number = self.tally.blue_number(participant)
        return None if number is None else self.tally.reds + number

    def start_from_stored(self, stored: list[RatingRow], *, strengths: bool) -> None:
        """Takes the board as stored: its intervals as offsets (the last bootstrap's, whoever
        wrote it) and, with `strengths`, its ratings as the fit's start."""
        # numpy and scipy (~0.6 s) load with the first ratings recompute, not with every worker.
        import numpy as np

        from app.kinds.red_blue.rules.ratings import to_strength

        for row in stored:
            player = self.player(row.side, str(row.participant_id))
            if player is None:
                continue
            strength, low, high = to_strength(
                np.array([row.rating, row.rating_low, row.rating_high])
            )
            if strengths:
                self.strength[player] = strength
            self.low_offset[player] = low - strength
            self.high_offset[player] = high - strength

    def start_from_kept(self, kept: _BoardState) -> None:
        """Takes what this process kept of the board: strengths, interval offsets, handles."""
        order = [
            *((Side.RED, name) for name in kept.tally.red_names),
            *((Side.BLUE, name) for name in kept.tally.blue_names),
        ]
        for kept_player, (side, name) in enumerate(order):
            player = self.player(side, name)
            if player is not None:
                self.strength[player] = kept.strength[kept_player]
                self.low_offset[player] = kept.low_offset[kept_player]
                self.high_offset[player] = kept.high_offset[kept_player]
        self.intervals_seq = kept.intervals_seq
        self.handles = kept.handles
        self.ids = {**kept.ids, **self.ids}
        self.written = kept.written


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


def pacing(settings: Settings) -> repository.Pacing:
    """A claim's spacing of recomputes: the next starts no sooner than the last one's cost
    over the share after this one starts (so with this one's own cost, the same as waiting
    `pause_after` once it ends). A claimed interval refresh holds off others for longer than
    it should take (ten times the last one), at least a minute: a recompute that dies
    meanwhile delays the refresh by that much at most."""

    def next_recompute(last_seconds: float | None) -> timedelta:
        return timedelta(seconds=(last_seconds or 0.0) / settings.redblue_recompute_share)

    def refresh_hold(last_seconds: float | None) -> timedelta:
        return max(timedelta(minutes=1), timedelta(seconds=10 * (last_seconds or 0.0)))

    return repository.Pacing(next_recompute, refresh_hold)


def recompute(challenge_id: uuid.UUID, *, intervals_only: bool = False) -> str:
    """Rates the judged matches of the challenge (those landed since this process last did,
    added to what it kept) and writes both boards and the standings in one transaction;
    nothing to do when the board is clean and its intervals are not due (`intervals_only`:
    a follow-up for the intervals, which leaves landings to the recompute they sent). A
    failure leaves the board dirty."""
    settings = get_settings()
    with session_scope() as session:
        claim = repository.claim_board(
            session, challenge_id, utcnow(), pacing(settings), intervals_only=intervals_only
        )
    if claim is None:
        return "skipped: up to date"
    try:
        return _recompute(challenge_id, claim, settings)
    except Exception:
        with session_scope() as session:
            repository.mark_board_dirty_again(session, challenge_id, utcnow())
        raise


def _recompute(challenge_id: uuid.UUID, claim: repository.BoardClaim, settings: Settings) -> str:
    # scipy (~0.5 s) loads with the first ratings recompute, not with every worker.
    from app.kinds.red_blue.rules.ratings import bootstrap_bounds, fit_strengths, provisional_bounds

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
    fit = fit_strengths(state.tally, state.strength)
    state.strength = fit.strength
    bootstrap_seconds = 0.0
    if claim.refresh_intervals:
        bootstrapping = time.perf_counter()
        low, high = bootstrap_bounds(state.tally, fit.strength)
        state.low_offset, state.high_offset = low - fit.strength, high - fit.strength
        state.intervals_seq = claim.landed_seq
        bootstrap_seconds = time.perf_counter() - bootstrapping
    else:
        low, high = provisional_bounds(
            fit.strength, fit.curvature, state.low_offset, state.high_offset
        )
    rows = _rows(state, low, high)
    refresh_seconds = recount_seconds + bootstrap_seconds if claim.refresh_intervals else 0.0
    now = utcnow()
    board = repository.BoardWrite(
        rows=rows,
        red_points=sum(state.red_points.values()),
        blue_points=sum(state.blue_points.values()),
        matches=state.tally.matches,
        rated_seq=claim.landed_seq,
        intervals_seq=state.intervals_seq,
        intervals_computed_at=now if claim.refresh_intervals else None,
    )
    with unit_of_work() as work:
        written = repository.write_board(
            work.session, tenant_id, challenge_id, claim.generation, board, now, state.written
        )
        if written is not None:
            state.written = (written.marker, rows)
        elif claim.refresh_intervals:
            # A later recompute wrote first, with older intervals than these: the next one
            # bootstraps without waiting.
            repository.release_interval_refresh(
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
            repository.pace_board(
                work.session,
                challenge_id,
                claim.generation,
                ratings=(
                    repository.Pace(
                        ratings_seconds,
                        finished + pause_after(ratings_seconds, settings.redblue_recompute_share),
                    )
                    if claim.took_landings
                    else None
                ),
                intervals=(
                    repository.Pace(
                        refresh_seconds,
                        finished + pause_after(refresh_seconds, settings.redblue_intervals_share),
                    )
                    if claim.refresh_intervals
                    else None
                ),
            )
        _follow_up(work, challenge_id, utcnow())
    if claim.took_landings:
        telemetry.redblue_recomputed("ratings", ratings_seconds)
    if claim.refresh_intervals:
        telemetry.redblue_recomputed("intervals", refresh_seconds)
    if written is None:
        return "skipped: a later recompute wrote"
    refreshed = ", intervals bootstrapped" if claim.refresh_intervals else ""
    return f"rated {state.tally.matches} matches ({written.changed} rows written{refreshed})"


def _tenant_of(session: Any, challenge_id: uuid.UUID) -> uuid.UUID | None:
    challenge = repository.get_challenge(session, challenge_id)
    return None if challenge is None else challenge.tenant_id


def _load(
    session: Any,
    challenge_id: uuid.UUID,
    claim: repository.BoardClaim,
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
        landed = repository.landed_matches(session, challenge_id, None, claim.landed_seq)
        state = _BoardState.recounted(tenant_id, claim.landed_seq, landed)
        if kept is not None:
            state.start_from_kept(kept)
        else:
            stored = repository.stored_ratings(session, challenge_id)
            state.start_from_stored(stored, strengths=True)
            state.intervals_seq = claim.intervals_seq
        recount_seconds = time.perf_counter() - recounting
    else:
        state, recount_seconds = kept, 0.0
        if state.seq < claim.landed_seq:
            state.add(
                repository.landed_matches(session, challenge_id, state.seq, claim.landed_seq),
                claim.landed_seq,
            )
    if state.intervals_seq < claim.intervals_seq:
        # Another process bootstrapped since: its intervals are the latest.
        if stored is None:
            stored = repository.stored_ratings(session, challenge_id)
        state.start_from_stored(stored, strengths=False)
        state.intervals_seq = claim.intervals_seq
    unnamed = [
        uuid.UUID(name)
        for name in (*state.tally.red_names, *state.tally.blue_names)
        if name not in state.handles
    ]
    if unnamed:
        handles = repository.handles_of(session, unnamed)
        state.handles.update((str(key), handle) for key, handle in handles.items())
    return state, recount_seconds


def _rows(state: _BoardState, low: FloatArray, high: FloatArray) -> list[RatingRow]:
    """Both sides' rows in board order (rank, then rating, then handle), figures rounded to
    what readers see (0.1 points), so a row that did not change is not written again. With
    arrays, not a Python object per participant until the rows themselves: a board may have
    tens of thousands."""
    # numpy and scipy (~0.6 s) load with the first ratings recompute, not with every worker.
    import numpy as np

    from app.kinds.red_blue.rules.ratings import interval_ranks, to_rating

    tally = state.tally
    rating = to_rating(state.strength)
    rating_low, rating_high = to_rating(low), to_rating(high)
    played, wins = tally.played(), tally.wins()
    rows: list[RatingRow] = []
    for side, names, first, points in (
        (Side.RED, tally.red_names, 0, state.red_points),
        (Side.BLUE, tally.blue_names, tally.reds, state.blue_points),
    ):
        members = slice(first, first + len(names))
        ranks = interval_ranks(rating_low[members], rating_high[members])
        by_handle = np.argsort(
            np.array([state.handles.get(name, "").lower() for name in names], dtype=object),
            kind="stable",
        )
        handle_order = np.empty(len(names), np.int64)
        handle_order[by_handle] = np.arange(len(names))
        # Sorted by rank, then rating (highest first), then handle: lexsort's last key leads.
        order = np.lexsort((handle_order, -rating[members], ranks))
        side_rating = np.round(rating[members], 1).tolist()
        side_low = np.round(rating_low[members], 1).tolist()
        side_high = np.round(rating_high[members], 1).tolist()
        side_played = np.rint(played[members]).astype(np.int64).tolist()
        side_wins = np.rint(wins[members]).astype(np.int64).tolist()
        side_ranks = ranks.tolist()
        rows.extend(
            RatingRow(
                participant_id=state.participant_id(names[index]),
                side=side,
                position=position,
                rank=side_ranks[index],
                rating=side_rating[index],
                rating_low=side_low[index],
                rating_high=side_high[index],
                points=points.get(names[index], 0),
                matches=side_played[index],
                wins=side_wins[index],
            )
            for position, index in enumerate(order.tolist(), start=1)
        )
    return rows


def _follow_up(work: UnitOfWork, challenge_id: uuid.UUID, now: Any) -> None:
    """A board left clean with intervals older than its ratings gets one more recompute, of
    the intervals only, when their refresh is due (a landing meanwhile sends its own)."""
    dirty, stale, due = repository.board_after_write(work.session, challenge_id)
    if not dirty and stale:
        wait = 0.0 if due is None else (due - now).total_seconds()
        work.send_after_commit(_recompute_in(wait), str(challenge_id), INTERVALS_ONLY)


# The sweep ------------------------------------------------------------------------------------


def sweep() -> dict[str, int]:
    """Re-sends what was lost: queued matches and running ones whose lease ran out, pending
    self-tests nobody holds and active defenses never paired, attacks never paired, and
    boards left dirty (a recompute message lost, or a recompute that failed)."""

    settings = get_settings()
    now = utcnow()
    before = now - timedelta(seconds=settings.queued_requeue_seconds)
    with unit_of_work() as work:
        session = work.session
        matches = repository.stuck_matches(session, now, before, SWEEP_BATCH)
        defenses = repository.stuck_defenses(session, now, before, SWEEP_BATCH)
        attacks = repository.stuck_attacks(session, before, SWEEP_BATCH)
        boards = repository.stuck_boards(session, before, SWEEP_BATCH)
        repository.mark_resent(session, Match, matches, now)
        repository.mark_resent(session, Defense, defenses, now)
        repository.mark_resent(session, Attack, attacks, now)
        repository.mark_boards_resent(session, boards, now)
        for chunk in chunks([str(match_id) for match_id in matches]):
            work.send_after_commit(RUN_MATCHES, *chunk)
        for task, ids in (
            (SELF_TEST, defenses),
            (PAIR_ATTACK, attacks),
            (RECOMPUTE, boards),
        ):
            for entry_id in ids:
                work.send_after_commit(task, str(entry_id))
    found = {
        "matches": len(matches),
        "defenses": len(defenses),
        "attacks": len(attacks),
        "boards": len(boards),
    }
    if any(found.values()):
        log.info("red_blue sweep re-sent %s", found)
    return found
