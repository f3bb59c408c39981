"""The red_blue kind's work on a worker: a defense's self-test, the pairing of a new attack or
a newly active defense, a match's run, and the sweep that re-sends what was lost (the
debounced recompute of ratings and standings is `board_recompute.py`'s). Every step is safe
to repeat (redelivered tasks, a worker that died), as attempts' are:

- a self-test or a match is a leased job (app/kit/lease/): claimed by a conditional update taking
  a lease; only the holder of the current run token finishes it; one short transaction
  claims, one completes;
- pairing never makes a pair twice (UNIQUE(attack_id, defense_id), inserts that ignore a
  conflict) and counts the matches a submission already has (`app.kinds.red_blue.rules.pairing`);
- a transaction that completes matches numbers them with their board's next landing and
  marks the board dirty; only the transaction that turned it dirty sends the recompute; a
  recompute writes ratings and standings in one transaction, only if they are newer than
  what is written, and reads only what landed since the board this process kept.

litellm loads only with a model call (the model client's); numpy and scipy only with the
recompute (`board_recompute.py`, imported by its task).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from sqlalchemy.orm import Session

from app.kinds.api import Settings, UnitOfWork, ValidationFailed, get_settings, unit_of_work
from app.kinds.api.evaluation import build_verifier
from app.kinds.api.leases import (
    TRANSIENT_ERRORS,
    CostBudget,
    DaySpend,
    Failure,
    Heartbeat,
    LeasedRun,
    RowSpend,
    failure_of,
    given_back_on_transient_error,
    lease_until,
    model_client,
    renewer,
    run_leased,
    run_on_process_loop,
)
from app.kinds.api.services import config_of
from app.kinds.api.storage import session_scope, utcnow
from app.kinds.red_blue import cross_tenant, final_round_runs
from app.kinds.red_blue.config import RedBlueSections, sections_of
from app.kinds.red_blue.cross_tenant import Entry
from app.kinds.red_blue.dispatch import (
    PAIR_ATTACK,
    RECOMPUTE,
    RUN_MATCHES,
    SELF_TEST,
    chunks,
    recompute_in,
)
from app.kinds.red_blue.match_result import JudgedMatch, MatchResult, judged
from app.kinds.red_blue.models import (
    MATCH_LEASES,
    SELF_TEST_LEASES,
    Attack,
    Defense,
    DefenseStatus,
    Match,
    Side,
)
from app.kinds.red_blue.repository import RedBlueRepository
from app.kinds.red_blue.rules.judging import judge_match, verify_categories
from app.kinds.red_blue.rules.pairing import NewEntry, Opponent, choose_opponents

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
    challenge = cross_tenant.get_challenge(session, challenge_id)
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
        return cross_tenant.claim_defense(session, row_id, token, now, until)

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
            defense = cross_tenant.defense_if_held(work.session, job.defense_id, token)
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
            defense = cross_tenant.defense_if_held(session, row_id, token)
            if defense is None:
                return
            defense.status = DefenseStatus.ERROR
            defense.reason = failure.reason
            defense.error_detail = failure.detail
            defense.finished_at = utcnow()
            defense.end_lease()


SELF_TEST_RUN = SelfTestRun()


# Pairing --------------------------------------------------------------------------------------


# Entries and participants by their ids, as pairing sees them.
EntryOpponent = Opponent[uuid.UUID, uuid.UUID]


def _opponents(entries: list[Entry], ratings: dict[uuid.UUID, float]) -> list[EntryOpponent]:
    return [
        Opponent(e.id, e.participant_id, e.created_at, ratings.get(e.participant_id))
        for e in entries
    ]


def _make_matches(
    work: UnitOfWork,
    entry: Attack | Defense,
    opponents: list[EntryOpponent],
    by_id: dict[uuid.UUID, Entry],
) -> int:
    """Inserts the chosen matches (a pair that already has one is skipped) and sends the new
    ones to workers after the commit, in chunks (`RUN_MATCHES`); how many were new."""
    now = utcnow()
    matches = []
    for opponent in opponents:
        other = by_id[opponent.id]
        attack, defense = (entry, other) if isinstance(entry, Attack) else (other, entry)
        matches.append(
            cross_tenant.NewMatch(
                tenant_id=entry.tenant_id,
                challenge_id=entry.challenge_id,
                attack_id=attack.id,
                defense_id=defense.id,
                red_participant_id=attack.participant_id,
                blue_participant_id=defense.participant_id,
                created_at=now,
            )
        )
    inserted = cross_tenant.insert_matches(work.session, matches)
    for chunk in chunks([str(match_id) for match_id in inserted]):
        work.send_after_commit(RUN_MATCHES, *chunk)
    return len(inserted)


def pair_attack(attack_id: uuid.UUID) -> str:
    """Matches a new attack with defenses by the challenge's policy (idempotent)."""

    with unit_of_work() as work:
        session = work.session
        attack = cross_tenant.lock_attack(session, attack_id)
        if attack is None:
            return "skipped: no such attack"
        loaded = _sections(session, attack.challenge_id)
        if loaded is None:
            return "skipped: the challenge does not load"
        sections = loaded[0]
        defenses = cross_tenant.active_defenses(session, attack.challenge_id)
        ratings = (
            cross_tenant.ratings_of(session, attack.challenge_id, Side.BLUE)
            if sections.pairing.policy == "latest_best"
            else {}
        )
        chosen = choose_opponents(
            NewEntry(attack.id, "attack", attack.participant_id),
            _opponents(defenses, ratings),
            sections.pairing,
            cross_tenant.pairs_of(session, Match.attack_id, attack.id),
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
    newest = RedBlueRepository(session, defense.tenant_id).newest_active_defense(
        defense.challenge_id, defense.participant_id
    )
    if newest != defense.id:
        return 0
    attacks = cross_tenant.attacks_of(session, defense.challenge_id)
    ratings = (
        cross_tenant.ratings_of(session, defense.challenge_id, Side.RED)
        if sections.pairing.policy == "latest_best"
        else {}
    )
    chosen = choose_opponents(
        NewEntry(defense.id, "defense", defense.participant_id),
        _opponents(attacks, ratings),
        sections.pairing,
        cross_tenant.pairs_of(session, Match.defense_id, defense.id),
    )
    return _make_matches(work, defense, chosen, {a.id: a for a in attacks})


def _pair_active_defense(work: UnitOfWork, defense_id: uuid.UUID) -> bool:
    defense = cross_tenant.lock_defense(work.session, defense_id)
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
    """What a match's run takes, read in the claim's transaction so no session stays open
    during model calls: the claimed texts of the call and the challenge's rules. Its inputs,
    not its result (`MatchResult`): a separate type from the claim's row
    (`cross_tenant.ClaimedMatch`) because only a playable match (its challenge loads, its texts
    are there, its runs are not spent) becomes one."""

    match_id: uuid.UUID
    tenant_id: uuid.UUID
    challenge_id: uuid.UUID
    system_prompt: str
    user_message: str
    goal: str
    sections: RedBlueSections


async def _play(job: MatchJob, settings: Settings) -> JudgedMatch:
    """The target call and every category's verdict."""

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
    return judged(judgement, results, record)


async def _play_or_error(job: MatchJob, settings: Settings, gate: asyncio.Semaphore) -> MatchResult:
    """One match of a chunk: judged, or failed (it counts for no one). The soft time limit
    and a transient database error are not caught here: they end the whole chunk (the
    latter's retry plays again what was not written)."""
    async with gate:
        try:
            return await _play(job, settings)
        except SoftTimeLimitExceeded:
            raise
        except TRANSIENT_ERRORS:
            raise
        except Exception as exc:
            return failure_of(exc, settings, f"match {job.match_id}")


async def _play_all(
    jobs: list[MatchJob],
    settings: Settings,
    land: Callable[[dict[uuid.UUID, MatchResult]], None],
) -> None:
    """Plays the chunk's matches concurrently on this process's loop, at most
    `model_per_model_concurrency` target calls at a time, and hands them to `land` as they
    finish: those finished while the previous batch was being written go together, so a
    match's result waits for no slower match of its chunk. `land` writes in a thread, so the
    calls still running go on meanwhile."""
    gate = asyncio.Semaphore(settings.model_per_model_concurrency)

    async def play(job: MatchJob) -> tuple[uuid.UUID, MatchResult]:
        return job.match_id, await _play_or_error(job, settings, gate)

    pending: set[asyncio.Task[tuple[uuid.UUID, MatchResult]]] = {
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
    version = cross_tenant.challenge_version(session, challenge_id)
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
    unplayable: dict[uuid.UUID, MatchResult] = {}
    labels: dict[uuid.UUID, str] = {}
    jobs: list[MatchJob] = []
    with session_scope() as session:
        claimed = cross_tenant.claim_matches(
            session, match_ids, token, utcnow(), lease_until(settings)
        )
        rules: dict[uuid.UUID, tuple[RedBlueSections, str] | None] = {}
        for match in claimed:
            if match.run_count > settings.max_attempt_runs:
                gave_up = f"gave up after {settings.max_attempt_runs} runs"
                unplayable[match.id] = Failure.of(gave_up)
                labels[match.id] = "error: too many runs"
                continue
            if match.challenge_id not in rules:
                rules[match.challenge_id] = _challenge_rules(session, match.challenge_id)
            loaded = rules[match.challenge_id]
            if loaded is None or match.system_prompt is None or match.user_message is None:
                unplayable[match.id] = Failure.of("the match's challenge or entries do not load")
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

    def land(ended: dict[uuid.UUID, MatchResult]) -> None:
        written = _end_matches(token, ended)
        for match_id, result in ended.items():
            if match_id not in written:
                outcomes[match_id] = "stopped: lease taken over"
            elif isinstance(result, JudgedMatch):
                outcomes[match_id] = "completed"
            else:
                outcomes[match_id] = labels.get(match_id, "error")

    claimed_ids = [*unplayable, *(job.match_id for job in jobs)]
    # A transient database error gives back the matches not yet written: the chunk's retry
    # takes them at once.
    with given_back_on_transient_error(MATCH_LEASES, claimed_ids, token):
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
                timed_out = failure_of(exc, settings, "a match chunk")
                land({job.match_id: timed_out for job in jobs if job.match_id not in outcomes})
    return outcomes


def _end_matches(token: uuid.UUID, ended: dict[uuid.UUID, MatchResult]) -> set[uuid.UUID]:
    """Completes (or ends in error) the matches still held by this token, in one transaction
    that also numbers the judged ones with their board's next landing and marks the board
    dirty; the recompute is sent after the commit only by the transaction that turned the
    board dirty, with a countdown to when the board's pacing allows it. Answers the matches
    written."""
    now = utcnow()
    written: set[uuid.UUID] = set()
    judged: dict[tuple[uuid.UUID, uuid.UUID], list[uuid.UUID]] = defaultdict(list)
    with unit_of_work() as work:
        for match_id, result in ended.items():
            held = cross_tenant.finish_match(work.session, match_id, token, result, now)
            if held is None:
                continue
            written.add(match_id)
            if isinstance(result, JudgedMatch):
                tenant_id, challenge_id = held
                judged[(challenge_id, tenant_id)].append(match_id)
        # Boards in one order, so two transactions landing on the same two boards never wait
        # for each other in a cycle.
        for (challenge_id, tenant_id), landed in sorted(judged.items()):
            landing = cross_tenant.land_matches(work.session, tenant_id, challenge_id, landed, now)
            if landing.turned_dirty:
                due = landing.recompute_due_at
                wait = 0.0 if due is None else (due - now).total_seconds()
                work.send_after_commit(recompute_in(wait), str(challenge_id))
    return written


# The sweep ------------------------------------------------------------------------------------


def sweep() -> dict[str, int]:
    """Re-sends what was lost: queued matches and running ones whose lease ran out, pending
    self-tests nobody holds and active defenses never paired, attacks never paired, and
    boards left dirty (a recompute message lost, or a recompute that failed); and sees to the
    final rounds (`final_round_runs.sweep`)."""

    settings = get_settings()
    now = utcnow()
    before = now - timedelta(seconds=settings.queued_requeue_seconds)
    with unit_of_work() as work:
        session = work.session
        matches = cross_tenant.stuck_matches(session, now, before, SWEEP_BATCH)
        defenses = cross_tenant.stuck_defenses(session, now, before, SWEEP_BATCH)
        attacks = cross_tenant.stuck_attacks(session, before, SWEEP_BATCH)
        boards = cross_tenant.stuck_boards(session, before, SWEEP_BATCH)
        cross_tenant.mark_resent(session, Match, matches, now)
        cross_tenant.mark_resent(session, Defense, defenses, now)
        cross_tenant.mark_resent(session, Attack, attacks, now)
        cross_tenant.mark_boards_resent(session, boards, now)
        for chunk in chunks([str(match_id) for match_id in matches]):
            work.send_after_commit(RUN_MATCHES, *chunk)
        for task, ids in (
            (SELF_TEST, defenses),
            (PAIR_ATTACK, attacks),
            (RECOMPUTE, boards),
        ):
            for entry_id in ids:
                work.send_after_commit(task, str(entry_id))
        rounds = final_round_runs.sweep(work, now)
    found = {
        "matches": len(matches),
        "defenses": len(defenses),
        "attacks": len(attacks),
        "boards": len(boards),
        **rounds,
    }
    if any(found.values()):
        log.info("red_blue sweep re-sent %s", found)
    return found
