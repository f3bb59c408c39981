"""The red_blue kind's work on a worker: a defense's self-test, the pairing of a new attack or
a newly active defense, a match's run, the debounced recompute of ratings and standings, and
the sweep that re-sends what was lost. Every step is safe to repeat (redelivered tasks, a
worker that died), as attempts' are (app/attempt/runner.py):

- a self-test or a match is claimed by a conditional update taking a lease; only the holder
  of the current run token finishes it; one short transaction claims, one completes;
- pairing never makes a pair twice (UNIQUE(attack_id, defense_id), inserts that ignore a
  conflict) and counts the matches a submission already has (`app.redblue.pairing`);
- a landing match marks its board dirty with one conditional statement, and only the
  statement that turned it dirty sends the recompute; a recompute writes ratings and
  standings in one transaction, unless a later recompute already wrote them.

The engine's modules (litellm) load only inside the run paths.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded

from app.attempt.budget import AttemptBudget
from app.attempt.lease import Heartbeat, lease_until
from app.attempt.runner import run_on_process_loop
from app.challenge.service import config_of
from app.config import Settings, get_settings
from app.db import session_scope, utcnow
from app.errors import ValidationFailed
from app.evaluation.types import InfrastructureError, RetryPolicy
from app.kinds.red_blue import repository
from app.kinds.red_blue.config import RedBlueSections, sections_of
from app.kinds.red_blue.dispatch import PAIR_ATTACK, RECOMPUTE, RUN_MATCHES, SELF_TEST, chunks
from app.kinds.red_blue.models import Attack, Defense, DefenseStatus, MatchStatus, Side
from app.kinds.red_blue.repository import Entry, RatingRow
from app.observability import metrics as telemetry
from app.tenant import repository as tenants
from app.unit_of_work import UnitOfWork, unit_of_work

log = logging.getLogger(__name__)

SWEEP_BATCH = 500


class MatchBudget(AttemptBudget):
    """The cost budgets of a match's (or a self-test's) calls: the match's own spend (on its
    row; a self-test has none) and the tenant's of the day, as an attempt's."""

    def __init__(self, *, match_id: uuid.UUID | None, tenant_id: uuid.UUID, settings: Settings):
        super().__init__(
            attempt_id=match_id or uuid.UUID(int=0),
            tenant_id=tenant_id,
            attempt_budget_usd=settings.attempt_cost_budget_usd,
            tenant_daily_budget_usd=settings.tenant_daily_cost_budget_usd,
            unpriced_usd_per_million_tokens=settings.unpriced_usd_per_million_tokens,
        )
        self.match_id = match_id

    def _spent(self) -> tuple[float, float]:
        today = utcnow().date()
        with session_scope() as session:
            own = repository.match_spend(session, self.match_id) if self.match_id else 0.0
            return own, tenants.spend_on(session, self.tenant_id, today)

    def _charge(self, amount_usd: float) -> None:
        with session_scope() as session:
            if self.match_id is not None:
                repository.add_match_spend(session, self.match_id, amount_usd)
            tenants.add_spend(session, self.tenant_id, utcnow().date(), amount_usd)


def _client(settings: Settings, budget: MatchBudget) -> Any:
    from app.evaluation.llm import LLMClient

    return LLMClient(
        on_call=telemetry.observe_model_call,
        global_concurrency=settings.model_global_concurrency,
        per_model_concurrency=settings.model_per_model_concurrency,
        retry=RetryPolicy(
            max_attempts=settings.model_max_tries,
            base_delay_s=settings.model_retry_base_delay_seconds,
        ),
        outbound=settings.outbound_policy(),
        budget=budget,
        max_output_chars=settings.max_output_chars,
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
    from app.evaluation.verifiers import build_verifier

    llm = _client(settings, MatchBudget(match_id=None, tenant_id=job.tenant_id, settings=settings))
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
    settings = get_settings()
    token = uuid.uuid4()
    with session_scope() as session:
        run_number = repository.claim_defense(
            session, defense_id, token, utcnow(), lease_until(settings)
        )
        job = None
        if run_number is not None and run_number <= settings.max_attempt_runs:
            job = _self_test_job(session, defense_id)
    if run_number is None:
        with unit_of_work() as work:
            paired = _pair_active_defense(work, defense_id)
        return "paired" if paired else "skipped: finished or held by another worker"
    if run_number > settings.max_attempt_runs:
        _end_self_test_in_error(
            defense_id, token, f"gave up after {settings.max_attempt_runs} runs without finishing"
        )
        return "error: too many runs"
    if job is None:
        _end_self_test_in_error(defense_id, token, "the challenge has no runnable configuration")
        return "error: not runnable"
    try:
        with Heartbeat(_defense_renewer(defense_id, token, settings), settings, "a self-test"):
            result = run_on_process_loop(_self_test(job, settings))
    except InfrastructureError as exc:
        _end_self_test_in_error(defense_id, token, str(exc), detail=exc.detail)
        return "error"
    except SoftTimeLimitExceeded:
        _end_self_test_in_error(defense_id, token, "time limit exceeded")
        return "error: time limit"
    except Exception as exc:
        log.exception("self-test of defense %s failed unexpectedly", defense_id)
        _end_self_test_in_error(defense_id, token, f"internal error: {type(exc).__name__}")
        return "error: internal"
    with unit_of_work() as work:
        defense = repository.defense_if_held(work.session, defense_id, token)
        if defense is None:
            return "stopped: lease taken over"
        defense.self_test_output = result.output
        defense.self_test_verdict = result.verdict
        defense.finished_at = utcnow()
        defense.lease_expires_at = None
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


def _self_test_job(session: Any, defense_id: uuid.UUID) -> SelfTestJob | None:
    defense = repository.get_defense(session, defense_id)
    if defense is None:
        return None
    loaded = _sections(session, defense.challenge_id)
    if loaded is None:
        return None
    sections, goal, _ = loaded
    return SelfTestJob(
        defense.id, defense.tenant_id, defense.challenge_id, defense.system_prompt, goal, sections
    )


def _end_self_test_in_error(
    defense_id: uuid.UUID, token: uuid.UUID, reason: str, *, detail: str | None = None
) -> None:
    with session_scope() as session:
        defense = repository.defense_if_held(session, defense_id, token)
        if defense is None:
            return
        defense.status = DefenseStatus.ERROR
        defense.reason = reason[:2000]
        defense.error_detail = detail[:4000] if detail and detail != reason else None
        defense.finished_at = utcnow()
        defense.lease_expires_at = None


# Pairing --------------------------------------------------------------------------------------


def _opponents(entries: list[Entry], ratings: dict[uuid.UUID, float]) -> list[Any]:
    from app.redblue.pairing import Opponent

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
    from app.kinds.red_blue.models import Match
    from app.redblue.pairing import Submission, choose_opponents

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
    from app.kinds.red_blue.models import Match
    from app.redblue.pairing import Submission, choose_opponents

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
    from app.redblue.judging import judge_match, verify_categories

    budget = MatchBudget(match_id=job.match_id, tenant_id=job.tenant_id, settings=settings)
    llm = _client(settings, budget)
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
        except InfrastructureError as exc:
            if exc.detail != str(exc):
                log.warning("match %s ended in error: %s", job.match_id, exc.detail)
            return _error(str(exc), exc.detail)
        except SoftTimeLimitExceeded:
            raise
        except Exception as exc:
            log.exception("match %s failed unexpectedly", job.match_id)
            return _error(f"internal error: {type(exc).__name__}")


async def _play_all(jobs: list[MatchJob], settings: Settings) -> list[dict[str, Any]]:
    """The chunk's matches, concurrently on this process's loop, at most
    `model_per_model_concurrency` target calls at a time."""
    gate = asyncio.Semaphore(settings.model_per_model_concurrency)
    return list(await asyncio.gather(*(_play_or_error(job, settings, gate) for job in jobs)))


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
    verdict and its points, then one transaction completes them (or ends them in error,
    counting for no one) and marks their board dirty once. A match already finished or held
    by another worker is skipped, so a redelivered chunk runs nothing twice; a match whose
    lease was taken over meanwhile is not written. Answers each claimed match's outcome."""
    settings = get_settings()
    token = uuid.uuid4()
    outcomes: dict[uuid.UUID, str] = {}
    ended: dict[uuid.UUID, dict[str, Any]] = {}
    jobs: list[MatchJob] = []
    with session_scope() as session:
        claimed = repository.claim_matches(
            session, match_ids, token, utcnow(), lease_until(settings)
        )
        rules: dict[uuid.UUID, tuple[RedBlueSections, str] | None] = {}
        for match in claimed:
            if match.run_count > settings.max_attempt_runs:
                ended[match.id] = _error(f"gave up after {settings.max_attempt_runs} runs")
                outcomes[match.id] = "error: too many runs"
                continue
            if match.challenge_id not in rules:
                rules[match.challenge_id] = _challenge_rules(session, match.challenge_id)
            loaded = rules[match.challenge_id]
            if loaded is None or match.system_prompt is None or match.user_message is None:
                ended[match.id] = _error("the match's challenge or entries do not load")
                outcomes[match.id] = "error: not runnable"
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
    if jobs:
        held = [job.match_id for job in jobs]
        try:
            with Heartbeat(_matches_renewer(held, token, settings), settings, "a match chunk"):
                played = run_on_process_loop(_play_all(jobs, settings))
        except SoftTimeLimitExceeded:
            played = [_error("time limit exceeded") for _ in jobs]
        for job, values in zip(jobs, played, strict=True):
            ended[job.match_id] = values
            outcomes[job.match_id] = (
                "completed" if values["status"] is MatchStatus.COMPLETED else "error"
            )
    if ended:
        kept = _end_matches(token, ended)
        for match_id in ended:
            if match_id not in kept:
                outcomes[match_id] = "stopped: lease taken over"
    return outcomes


def _matches_renewer(
    match_ids: list[uuid.UUID], token: uuid.UUID, settings: Settings
) -> Callable[[], bool]:
    """Renews the chunk's leases while its calls run (a call with its retries, or a slow
    judge, may outlast one lease); False once none is held any more."""

    def renew() -> bool:
        with session_scope() as session:
            return (
                repository.renew_match_leases(session, match_ids, token, lease_until(settings)) > 0
            )

    return renew


def _defense_renewer(
    defense_id: uuid.UUID, token: uuid.UUID, settings: Settings
) -> Callable[[], bool]:
    def renew() -> bool:
        with session_scope() as session:
            return repository.renew_defense_lease(session, defense_id, token, lease_until(settings))

    return renew


def _error(reason: str, detail: str | None = None) -> dict[str, Any]:
    return {
        "status": MatchStatus.ERROR,
        "error": reason[:2000],
        "error_detail": detail[:4000] if detail and detail != reason else None,
        # An error counts for no one.
        "red_points": None,
        "blue_points": None,
        "attack_won": None,
        "breached": None,
        "verdicts": None,
    }


def _end_matches(token: uuid.UUID, ended: dict[uuid.UUID, dict[str, Any]]) -> set[uuid.UUID]:
    """Completes (or ends in error) the matches still held by this token, in one transaction
    that also marks the board of their challenge dirty when one of them was judged; the
    recompute is sent after the commit only by the transaction that turned the board dirty.
    Answers the matches written."""
    now = utcnow()
    written: set[uuid.UUID] = set()
    judged: dict[uuid.UUID, uuid.UUID] = {}
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
                judged[challenge_id] = tenant_id
        for challenge_id, tenant_id in judged.items():
            if repository.mark_board_dirty(work.session, tenant_id, challenge_id, now):
                work.send_after_commit(RECOMPUTE, str(challenge_id))
    return written


# Ratings and standings ------------------------------------------------------------------------


def recompute(challenge_id: uuid.UUID) -> str:
    """Rates every judged match of the challenge and writes both boards and the standings in
    one transaction; nothing to do when the board is clean. A failure leaves it dirty."""
    with session_scope() as session:
        generation = repository.claim_board(session, challenge_id)
    if generation is None:
        return "skipped: up to date"
    try:
        return _recompute(challenge_id, generation)
    except Exception:
        with session_scope() as session:
            repository.mark_board_dirty_again(session, challenge_id, utcnow())
        raise


def _recompute(challenge_id: uuid.UUID, generation: int) -> str:
    from app.redblue.ratings import MatchOutcome, compute_ratings

    with session_scope() as session:
        challenge = repository.get_challenge(session, challenge_id)
        if challenge is None:
            return "skipped: no such challenge"
        tenant_id = challenge.tenant_id
        played = repository.outcomes(session, challenge_id)
    ratings = compute_ratings(MatchOutcome(str(o.red), str(o.blue), o.attack_won) for o in played)
    points: dict[tuple[Side, str], int] = defaultdict(int)
    for o in played:
        points[(Side.RED, str(o.red))] += o.red_points
        points[(Side.BLUE, str(o.blue))] += o.blue_points
    ids = {uuid.UUID(r.participant) for r in (*ratings.red, *ratings.blue)}
    with session_scope() as session:
        named = repository.handles_of(session, list(ids))
    rows: list[RatingRow] = []
    for side, rated in ((Side.RED, ratings.red), (Side.BLUE, ratings.blue)):
        ordered = sorted(
            rated,
            key=lambda r: (r.rank, -r.rating, named.get(uuid.UUID(r.participant), "").lower()),
        )
        rows.extend(
            RatingRow(
                participant_id=uuid.UUID(r.participant),
                side=side,
                position=position,
                rank=r.rank,
                rating=r.rating,
                rating_low=r.rating_low,
                rating_high=r.rating_high,
                points=points[(side, r.participant)],
                matches=r.matches,
                wins=r.wins,
            )
            for position, r in enumerate(ordered, start=1)
        )
    with session_scope() as session:
        written = repository.write_board(
            session,
            tenant_id,
            challenge_id,
            generation,
            rows,
            red_points=sum(o.red_points for o in played),
            blue_points=sum(o.blue_points for o in played),
            matches=len(played),
            now=utcnow(),
        )
    return f"rated {len(played)} matches" if written else "skipped: a later recompute wrote"


# The sweep ------------------------------------------------------------------------------------


def sweep() -> dict[str, int]:
    """Re-sends what was lost: queued matches and running ones whose lease ran out, pending
    self-tests nobody holds and active defenses never paired, attacks never paired, and
    boards left dirty (a recompute message lost, or a recompute that failed)."""
    from app.kinds.red_blue.models import Match

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
