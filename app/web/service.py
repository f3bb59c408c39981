"""What the web pages show, assembled from the domains' services: accounts, challenge cards,
attempt cards and trials (always the participant's redacted view), leaderboard panels."""

from __future__ import annotations

import json
import logging
import math
import uuid
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import lru_cache
from typing import Any

from pydantic import TypeAdapter, ValidationError
from sqlalchemy.orm import Session

from app.attempt import service as attempt_service
from app.attempt.metrics import AttemptMetrics
from app.attempt.models import Attempt, Trial
from app.attempt.schemas import AttemptCreate, AttemptRead, RunRow, TrialRead
from app.attempt.service import to_view, trial_view
from app.auth import sessions
from app.auth.rate_limits import Refusal
from app.auth.subjects import Audience
from app.challenge.config import Visibility
from app.challenge.models import Challenge
from app.challenge.schemas import ChallengePublic
from app.challenge.service import challenge_status, newest_challenges, to_public_view
from app.config import get_settings
from app.errors import AppError, Conflict
from app.evaluation.patterns import linear
from app.leaderboard import service as leaderboards
from app.leaderboard.schemas import Leaderboard, LeaderboardItem
from app.leaderboard.service import item_of, read_leaderboard
from app.schemas import Handle
from app.storable import encodable
from app.tenant import service as tenants
from app.tenant.models import Participant
from app.web import auth, charts

log = logging.getLogger(__name__)


class FormError(AppError):
    """A form the page shows again with this message; `field` names the input at fault."""

    status_code = 422
    code = "validation_error"

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        status_code: int = 422,
        headers: dict[str, str] | None = None,
    ):
        super().__init__(message, headers=headers)
        self.field = field
        self.status_code = status_code


# Accounts -------------------------------------------------------------------------------------

_HANDLE: TypeAdapter[str] = TypeAdapter(Handle)
HANDLE_RULES = "1 to 64 characters: letters, digits, '.', '_' or '-'"


def clean_handle(raw: str) -> str:
    try:
        return _HANDLE.validate_python(raw)
    except ValidationError as exc:
        raise FormError(f"Your handle must be {HANDLE_RULES}.", field="handle") from exc


def sign_up(session: Session, tenant_id: uuid.UUID, handle: str, password: str) -> Participant:
    """Creates a participant with a password.

    A handle already in use is refused, even one an API key created without a password:
    claiming it would take over that player's results. So is one differing only in case from a
    handle in use ('Alice' next to 'alice'), which would pass for the same player on a
    leaderboard.
    """
    handle = clean_handle(handle)
    problem = auth.password_problem(password, handle)
    if problem:
        raise FormError(problem, field="password")
    try:
        return tenants.register_participant(
            session, tenant_id, handle, auth.hash_password(password)
        )
    except Conflict as exc:
        raise FormError(exc.message, field="handle", status_code=409) from exc


def _refuse_if_limited(refusal: Refusal | None) -> None:
    if refusal is not None:
        raise FormError(
            refusal.message,
            status_code=429,
            headers={"Retry-After": str(refusal.retry_after_seconds)},
        )


def check_sign_up_allowed(address: str) -> None:
    _refuse_if_limited(auth.limits.check_sign_up(address))


def sign_in(
    session: Session, tenant_id: uuid.UUID, handle: str, password: str, address: str
) -> Participant:
    handle = handle.strip()
    _refuse_if_limited(auth.limits.check_sign_in(tenant_id, handle, address))
    participant = tenants.participant_by_handle(session, tenant_id, handle) if handle else None
    password_hash = participant.password_hash if participant is not None else None
    if participant is None or not auth.verify_password(password_hash, password):
        auth.limits.sign_in_failed(tenant_id, handle, address)
        raise FormError("Wrong handle or password.", status_code=401)
    auth.limits.sign_in_succeeded(tenant_id, handle, address)
    if password_hash is not None and auth.needs_rehash(password_hash):
        participant.password_hash = auth.hash_password(password)
        session.flush()
    return participant


def change_password(
    session: Session,
    tenant_id: uuid.UUID,
    participant: Participant,
    current_password: str,
    new_password: str,
    address: str,
) -> None:
    """Sets a new password after checking the current one (a stolen session alone must not
    change it) and ends every session of the participant; the caller starts a new one for
    this browser. Wrong current passwords count as failed sign-ins (lockout included)."""
    _refuse_if_limited(auth.limits.check_sign_in(tenant_id, participant.handle, address))
    if not auth.verify_password(participant.password_hash, current_password):
        auth.limits.sign_in_failed(tenant_id, participant.handle, address)
        raise FormError(
            "Your current password is not right.", field="current_password", status_code=401
        )
    problem = auth.password_problem(new_password, participant.handle)
    if problem:
        raise FormError(problem, field="new_password")
    if new_password == current_password:
        raise FormError("Your new password must differ from the current one.", field="new_password")
    participant.password_hash = auth.hash_password(new_password)
    session.flush()
    sessions.end_participant_sessions(session, tenant_id, participant.id)


def start_session(
    session: Session, web: auth.WebSession, tenant_id: uuid.UUID, participant_id: uuid.UUID
) -> str:
    """A new server-side session for the participant, ending the browser's previous one;
    returns its token. The caller commits, then signs the cookie in with it."""
    return sessions.start_participant_session(session, tenant_id, participant_id, web.server_token)


def end_session(session: Session, web: auth.WebSession) -> None:
    token = web.server_token
    if token is not None:
        sessions.end_session(session, token)


def signed_in_participant(
    session: Session, web: auth.WebSession, tenant_id: uuid.UUID
) -> Participant | None:
    """The participant this browser's live session of this tenant is for, if still a web
    account."""
    token = web.server_token
    if token is None:
        return None
    return tenants.signed_in_participant(session, tenant_id, token)


# Challenges -----------------------------------------------------------------------------------


def visible_visibilities(participant: Participant | None) -> tuple[Visibility, ...]:
    """Public challenges are for everyone; unlisted ones for the tenant's signed-in participants;
    private ones never appear in the web UI (tenant admins manage them through the API)."""
    if participant is None:
        return (Visibility.PUBLIC,)
    return (Visibility.PUBLIC, Visibility.UNLISTED)


@dataclass(frozen=True)
class Strategy:
    key: str
    label: str
    column: str
    explanation: str


def strategy_of(challenge: Challenge) -> Strategy:
    key = str(challenge.strategy)
    if key == "first":
        return Strategy(key, "First to succeed", "Solved at", "The earliest success ranks first.")
    if key == "fastest":
        return Strategy(key, "Fastest", "Time", "Successful attempts rank by model time.")
    if key == "fewest_tokens":
        return Strategy(
            key, "Fewest tokens", "Tokens", "Successful attempts rank by tokens used, fewest first."
        )
    if key == "highest_rating":
        return Strategy(
            key, "Highest rating", "Rating", "Successful attempts rank by the judge's rating."
        )
    if key == "metric_at_k":
        metric, k = evaluation_of(challenge)
        name = charts.metric_name_at(metric, str(k))
        tries = "1 try" if k == 1 else f"{k} tries"
        if metric == "seq@k":
            meaning = (
                f"tasks solved within {tries} in sequence, each try seeing the feedback on the "
                "earlier ones"
            )
        elif k == 1:
            meaning = "the chance that a try solves a task"
        else:
            meaning = f"the chance that one of {k} independent tries solves a task"
        return Strategy(
            key,
            f"Best {name}",
            name,
            f"Models rank by {name}: {meaning}, averaged over the tasks. Higher first; among "
            "equals, the cheaper run.",
        )
    plugin = challenge.scoring.plugin_id or "a scorer plugin"
    return Strategy(key, "Custom score", "Score", f"Attempts rank by the score of {plugin}.")


def evaluation_of(challenge: Challenge | ChallengePublic) -> tuple[str, int]:
    """The challenge's metric ("pass@k" or "seq@k") and k."""
    evaluation = challenge.evaluation or {}
    metric = "seq@k" if evaluation.get("metric") == "seq@k" else "pass@k"
    k = evaluation.get("k")
    return metric, k if isinstance(k, int) and not isinstance(k, bool) and k >= 1 else 1


def format_duration(milliseconds: int | float | None) -> str:
    if milliseconds is None:
        return "—"
    if milliseconds < 1000:
        return f"{milliseconds:.0f} ms"
    seconds = milliseconds / 1000
    if seconds < 60:
        return f"{seconds:.1f} s"
    return f"{int(seconds // 60)} min {int(seconds % 60)} s"


def format_when(value: datetime | None) -> str:
    return "—" if value is None else f"{value:%Y-%m-%d %H:%M} UTC"


def format_number(value: float | None) -> str:
    if value is None:
        return "—"
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.2f}"


def format_cost(value: float | None) -> str:
    """US dollars; small amounts keep their significant digits ("$0.0042")."""
    if value is None or not math.isfinite(value):
        return "—"
    if value == 0:
        return "$0.00"
    if abs(value) < 0.01:
        return f"${value:.4f}"
    return f"${value:,.2f}"


format_percent = charts.percent


def ranked_value(strategy: str, item: LeaderboardItem) -> str:
    """The value the strategy ranks this row by, as shown in its column."""
    if strategy == "first":
        return f"{item.created_at:%Y-%m-%d %H:%M:%S} UTC"
    if strategy == "fastest":
        return format_duration(item.elapsed_ms)
    if strategy == "fewest_tokens":
        return format_number(item.tokens_total)
    if strategy == "highest_rating":
        return "—" if item.rating is None else f"{item.rating:g} / 10"
    if strategy == "metric_at_k":
        return format_percent(item.score)
    return format_number(item.score)


@dataclass(frozen=True)
class BestResult:
    rank: int
    value: str
    attempt_id: uuid.UUID


@dataclass(frozen=True)
class ChallengeCard:
    challenge: ChallengePublic
    strategy: Strategy
    best: BestResult | None
    attempts: int


def challenge_cards(
    session: Session,
    tenant_id: uuid.UUID,
    participant: Participant | None,
    visibilities: Collection[Visibility],
    *,
    limit: int = 200,
) -> dict[str, list[ChallengeCard]]:
    """The visible challenges by status (open, upcoming, closed), each with the participant's
    best result so far."""
    challenges = newest_challenges(session, tenant_id, visibilities=visibilities, limit=limit)
    ids = [c.id for c in challenges]
    standings: dict[uuid.UUID, leaderboards.Standing] = {}
    counts: dict[uuid.UUID, int] = {}
    if participant is not None:
        standings = leaderboards.standings(session, tenant_id, participant.id, ids)
        counts = attempt_service.attempt_counts(session, tenant_id, participant.id, ids)
    groups: dict[str, list[ChallengeCard]] = {"open": [], "upcoming": [], "closed": []}
    for challenge in challenges:
        strategy = strategy_of(challenge)
        best = None
        standing = standings.get(challenge.id)
        if standing is not None and participant is not None:
            entry = standing.entry
            best = BestResult(
                rank=standing.rank,
                value=ranked_value(strategy.key, item_of(entry, participant.handle, rank=0)),
                attempt_id=entry.attempt_id,
            )
        groups[challenge_status(challenge)].append(
            ChallengeCard(to_public_view(challenge), strategy, best, counts.get(challenge.id, 0))
        )
    return groups


def prompt_limit(challenge: Challenge) -> int:
    """The longest prompt the service accepts for this challenge (the same rule it enforces)."""
    return challenge.limits.prompt_limit(get_settings().max_prompt_chars)


# Model specs (benchmark challenges) ------------------------------------------------------------


def _max_length(field_name: str) -> int:
    for rule in AttemptCreate.model_fields[field_name].metadata:
        limit = getattr(rule, "max_length", None)
        if isinstance(limit, int):
            return limit
    raise LookupError(f"AttemptCreate.{field_name} has no length limit")


SYSTEM_PROMPT_LIMIT = _max_length("system_prompt")  # the API's limit, as the counter shows it
MODEL_SPEC_FIELDS = {
    "model": "Model",
    "temperature": "Temperature",
    "system_prompt": "System prompt",
}


@dataclass(frozen=True)
class ModelSpecForm:
    """The model-spec form as typed, kept when a submission is refused."""

    model: str = ""
    temperature: str = ""
    system_prompt: str = ""
    error_field: str | None = None


def _temperature(raw: str) -> float | None:
    text = raw.strip().replace(",", ".")
    if not text:
        return None
    problem = FormError(
        "Temperature must be a number from 0 to 2, or blank for the model's default.",
        field="temperature",
    )
    try:
        value = float(text)
    except ValueError as exc:
        raise problem from exc
    if not math.isfinite(value) or not 0 <= value <= 2:
        raise problem
    return value


def model_spec_attempt(form: ModelSpecForm, handle: str) -> AttemptCreate:
    """The attempt a model-spec form asks for, checked as the API checks it."""
    model = form.model.strip()
    if not model:
        raise FormError("Name a model first: a model id such as offline/solver-sim.", field="model")
    temperature = _temperature(form.temperature)
    system_prompt = form.system_prompt if form.system_prompt.strip() else None
    if system_prompt is not None and len(system_prompt) > SYSTEM_PROMPT_LIMIT:
        raise FormError(
            f"The system prompt is {len(system_prompt):,} characters; at most "
            f"{SYSTEM_PROMPT_LIMIT:,} are allowed.",
            field="system_prompt",
        )
    try:
        return AttemptCreate(
            model=model,
            temperature=temperature,
            system_prompt=system_prompt,
            participant=handle,
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        name = str(first["loc"][0]) if first.get("loc") else "model"
        message = str(first.get("msg", "is not valid")).removeprefix("Value error, ")
        label = MODEL_SPEC_FIELDS.get(name, name)
        raise FormError(
            f"{label}: {message}.", field=name if name in MODEL_SPEC_FIELDS else None
        ) from exc


def error_field(exc: AppError) -> str | None:
    """The form field a service error is about (its details name the field path), if any."""
    details = exc.details
    if isinstance(details, list) and details and isinstance(details[0], dict):
        location = details[0].get("loc")
        if isinstance(location, list) and location:
            name = str(location[-1])
            if name in MODEL_SPEC_FIELDS or name == "prompt":
                return name
    return None


# Attempts -------------------------------------------------------------------------------------

# Model output: on RE2, since with Python's `re` many unclosed `<think>`s take quadratic time.
_THINK_BLOCK = linear(r"<think>(.*?)</think>", ignore_case=True, dot_matches_newline=True)
_THINK_OPEN = linear(r"<think>", ignore_case=True)
_THINK_CLOSE = linear(r"</think>", ignore_case=True)


def split_reasoning(text: str) -> tuple[str, list[str]]:
    """The answer without its `<think>…</think>` reasoning, and the reasoning parts.

    An opening tag never closed (output cut off mid-thought) makes the rest reasoning; a closing
    tag with no opening one (templates that open the block in the prompt) makes what comes
    before it reasoning.
    """
    text = encodable(text)
    reasoning = [part.strip() for part in _THINK_BLOCK.findall(text)]
    answer = _THINK_BLOCK.sub("", text)
    dangling_close = _THINK_CLOSE.search(answer)
    if dangling_close is not None:
        reasoning.insert(0, answer[: dangling_close.start()].strip())
        answer = answer[dangling_close.end() :]
    dangling_open = _THINK_OPEN.search(answer)
    if dangling_open is not None:
        reasoning.append(answer[dangling_open.end() :].strip())
        answer = answer[: dangling_open.start()]
    return answer.strip(), [part for part in reasoning if part]


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        )
    return "" if content is None else str(content)


@dataclass(frozen=True)
class Message:
    role: str
    content: str


@dataclass(frozen=True)
class TrialView:
    task_index: int
    index: int
    success: bool
    score: float
    model: str
    messages: list[Message]
    output: str
    reasoning: list[str]
    verdict_text: str
    rating: float | None
    critic_feedback: str | None
    input_tokens: int
    output_tokens: int
    thinking_tokens: int
    elapsed_ms: int


def _trial_view(trial: TrialRead) -> TrialView:
    """From the redacted `TrialRead` (system prompt, verifier details and calls removed)."""
    actor = trial.actor
    judge = trial.judge
    critic = trial.critic
    output, reasoning = split_reasoning(str(actor.get("output") or ""))
    messages = [
        Message(str(m.get("role") or ""), _content_text(m.get("content")))
        for m in actor.get("prompt") or []
        if isinstance(m, dict)
    ]
    rating = judge.get("rating")
    return TrialView(
        task_index=trial.task_index,
        index=trial.index,
        success=trial.success,
        score=trial.score,
        model=str(actor.get("model") or ""),
        messages=messages,
        output=output,
        reasoning=reasoning,
        verdict_text=str(judge.get("raw_eval_output") or ""),
        rating=float(rating) if isinstance(rating, int | float) else None,
        critic_feedback=critic.get("feedback") or None,
        input_tokens=int(actor.get("input_tokens") or 0),
        output_tokens=int(actor.get("output_tokens") or 0),
        thinking_tokens=int(actor.get("thinking_tokens") or 0),
        elapsed_ms=int(actor.get("elapsed_ms") or 0),
    )


@dataclass(frozen=True)
class BenchmarkProgress:
    """A benchmark attempt's model spec, and how far it got: tasks done of the total, the
    curve so far (over the tasks complete), then its final metrics."""

    model: str
    temperature: float | None
    system_prompt: str | None
    metric: str
    k: int
    tasks_done: int
    tasks_total: int | None
    curve: list[float]
    metric_at_k: float | None
    tasks_solved: int | None
    tokens_total: int | None
    cost_usd: float | None
    elapsed_ms: int | None
    trials: int | None

    @property
    def metric_at_k_name(self) -> str:
        return charts.metric_name_at(self.metric, str(self.k))

    @property
    def curve_points(self) -> list[tuple[str, str]]:
        """("pass@1", "33.3%"), … for t = 1..len(curve)."""
        return [
            (charts.metric_name_at(self.metric, str(t)), format_percent(value))
            for t, value in enumerate(self.curve, start=1)
        ]

    @property
    def percent_done(self) -> int | None:
        if not self.tasks_total:
            return None
        return min(100, round(100 * self.tasks_done / self.tasks_total))

    @property
    def version(self) -> str:
        """Changes whenever what the card shows changes (the live view swaps it then)."""
        curve = ",".join(f"{value:.4f}" for value in self.curve)
        return f"{self.tasks_done}/{self.tasks_total}/{self.trials}/{curve}"


@dataclass(frozen=True)
class AttemptCard:
    view: AttemptRead
    trials: list[TrialView]
    score_details: list[tuple[str, str]] = field(default_factory=list)
    benchmark: BenchmarkProgress | None = None
    show_score: bool = True  # not when the score only repeats the metric (strategy metric_at_k)

    @property
    def finished(self) -> bool:
        return self.view.status.finished

    @property
    def version(self) -> str:
        if self.benchmark is None:
            return self.view.status
        return f"{self.view.status}:{self.benchmark.version}"

    @property
    def feedback(self) -> list[str]:
        """The public verdict and feedback of the deciding trial (the success, else the last)."""
        if not self.trials:
            return []
        deciding = next((t for t in self.trials if t.success), self.trials[-1])
        lines = [deciding.verdict_text] if deciding.verdict_text else []
        if deciding.critic_feedback:
            lines.append(deciding.critic_feedback)
        return lines


def _detail_text(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        return format_number(value)
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def attempt_cards(
    session: Session,
    tenant_id: uuid.UUID,
    challenge: Challenge,
    attempts: Sequence[Attempt],
    handle: str,
) -> list[AttemptCard]:
    """Cards of one challenge's attempts. A benchmark attempt's trials (tasks times k of them)
    stay in the database: its card shows the run's summary, its page pages through tasks."""
    prompt_ids = [a.id for a in attempts if a.model_spec is None]
    trials = attempt_service.trials_by_attempt(session, tenant_id, prompt_ids)
    context = benchmark_context(challenge) if challenge.kind == "benchmark" else None
    show_score = strategy_of(challenge).key != "metric_at_k"
    return [
        attempt_card(a, handle, trials.get(a.id, []), context, show_score=show_score)
        for a in attempts
    ]


def attempt_card(
    attempt: Attempt,
    handle: str,
    trials: list[Trial],
    context: BenchmarkContext | None = None,
    *,
    show_score: bool = True,
) -> AttemptCard:
    view = to_view(attempt, handle, trials, Audience.PARTICIPANT)
    details = [(str(k), _detail_text(v)) for k, v in (view.score_details or {}).items()]
    progress = None
    if attempt.model_spec is not None:
        progress = benchmark_progress(view, context)
    return AttemptCard(
        view, [_trial_view(t) for t in view.trials or []], details, progress, show_score
    )


# Benchmarks -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class BenchmarkOutline:
    """What loading the benchmark tells: its slice name and how many tasks the challenge
    selects. Either is None when the benchmark cannot be loaded here."""

    slice_name: str | None
    tasks: int | None


@lru_cache(maxsize=256)
def _outline(spec_json: str) -> BenchmarkOutline:
    # Imported here: only benchmark pages need the engine's benchmark loader.
    from app.evaluation.benchmark import Benchmark
    from app.evaluation.runner import select_tasks

    spec = json.loads(spec_json)
    try:
        benchmark = Benchmark.load(str(spec.get("name")))
        options = dict(spec.get("options") or {})
        slice_name = benchmark.slice_name(options)
        indices = spec.get("task_indices")
        tasks = sum(
            1
            for _ in select_tasks(
                benchmark.iter_tasks(options),
                task_indices=tuple(indices) if indices else None,
                max_tasks=spec.get("max_tasks"),
            )
        )
    except Exception:
        log.warning("cannot outline benchmark %s", spec.get("name"), exc_info=True)
        return BenchmarkOutline(None, None)
    return BenchmarkOutline(slice_name, tasks)


def benchmark_outline(spec: Mapping[str, Any] | None) -> BenchmarkOutline:
    """The benchmark's slice and task count, computed once per distinct benchmark spec (the
    web pages show them; a run counts its tasks itself)."""
    if not spec:
        return BenchmarkOutline(None, None)
    keys = ("name", "options", "task_indices", "max_tasks")
    try:
        canonical = json.dumps({key: spec.get(key) for key in keys}, sort_keys=True)
    except (TypeError, ValueError):
        return BenchmarkOutline(None, None)
    return _outline(canonical)


@dataclass(frozen=True)
class BenchmarkContext:
    metric: str
    k: int
    tasks_total: int | None


def benchmark_context(challenge: Challenge) -> BenchmarkContext:
    metric, k = evaluation_of(challenge)
    return BenchmarkContext(metric, k, benchmark_outline(challenge.benchmark).tasks)


def _int_or_none(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return int(value)


def _float_or_none(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _floats(values: Any) -> list[float]:
    if not isinstance(values, list):
        return []
    return [_float_or_none(value) or 0.0 for value in values]


def _actor_tokens(progress: Mapping[str, Any]) -> int | None:
    usage = progress.get("usage")
    if not isinstance(usage, dict) or not isinstance(usage.get("actor"), dict):
        return None
    total = 0
    for figures in usage["actor"].values():
        if isinstance(figures, dict):
            total += (_int_or_none(figures.get("input_tokens")) or 0) + (
                _int_or_none(figures.get("output_tokens")) or 0
            )
    return total


def benchmark_progress(view: AttemptRead, context: BenchmarkContext | None) -> BenchmarkProgress:
    """From the attempt's stored progress (the run summary, refreshed as tasks finish) while it
    runs, and from its metrics once it has completed."""
    spec = view.model_spec or {}
    progress = view.progress or {}
    curves = progress.get("curves") if isinstance(progress.get("curves"), dict) else {}
    assert isinstance(curves, dict)
    metric = str(progress.get("metric") or (context.metric if context else "pass@k"))
    metric = "seq@k" if metric == "seq@k" else "pass@k"
    k = _int_or_none(progress.get("k")) or (context.k if context else 1)
    key = "seq_at" if metric == "seq@k" else "pass_at"
    done = _int_or_none(curves.get("tasks_complete")) or 0
    total = context.tasks_total if context else None
    curve = _floats(curves.get(key))
    metric_at_k = curve[k - 1] if len(curve) >= k else None
    solved = _int_or_none(curves.get("tasks_solved"))
    tokens = _actor_tokens(progress)
    cost = _float_or_none(progress.get("cost_usd"))
    elapsed = None
    trials = _int_or_none(progress.get("attempts"))
    metrics = view.metrics
    if metrics is not None and metrics.metric_at is not None:
        # Final: tasks that never ran (a spent cost budget) count as unsolved here.
        total = metrics.tasks_total if metrics.tasks_total is not None else total
        curve = _floats(metrics.metric_at)
        metric_at_k = metrics.metric_at_k
        solved = metrics.tasks_solved
        tokens = metrics.tokens_total
        cost = metrics.cost_usd
        elapsed = metrics.elapsed_ms
        trials = metrics.trials
    if total is not None:
        done = min(done, total)
    temperature = _float_or_none(spec.get("temperature"))
    system_prompt = spec.get("system_prompt")
    return BenchmarkProgress(
        model=str(spec.get("model") or ""),
        temperature=temperature,
        system_prompt=system_prompt if isinstance(system_prompt, str) else None,
        metric=metric,
        k=k,
        tasks_done=done,
        tasks_total=total,
        curve=curve,
        metric_at_k=metric_at_k,
        tasks_solved=solved,
        tokens_total=tokens,
        cost_usd=cost,
        elapsed_ms=elapsed,
        trials=trials,
    )


@dataclass(frozen=True)
class BenchmarkFacts:
    """What the challenge page says about its benchmark (nothing hidden: no answer keys and
    no server addresses)."""

    name: str
    slice_name: str | None
    options: list[tuple[str, str]]
    selection: str  # which tasks, and how many
    tasks: int | None
    metric: str
    k: int
    metric_at_k: str
    feedback_mode: str | None  # None under pass@k, which gives no feedback
    judge_model: str | None
    critic_model: str | None
    cost_budget_usd: float | None
    custom_server: bool


def _selection_text(spec: Mapping[str, Any], tasks: int | None) -> str:
    """Which tasks an attempt runs: "The first 3 tasks", "Every task · 10 tasks", …"""
    indices = spec.get("task_indices")
    max_tasks = spec.get("max_tasks")
    count = f"{tasks:,} task{'s' if tasks != 1 else ''}" if tasks is not None else None
    if isinstance(indices, list) and indices:
        shown = ", ".join(str(i) for i in indices[:12])
        more = f" and {len(indices) - 12} more" if len(indices) > 12 else ""
        text = f"Task{'s' if len(indices) != 1 else ''} {shown}{more}"
        if isinstance(max_tasks, int) and max_tasks < len(indices):
            text += f" (the first {max_tasks})"
    elif isinstance(max_tasks, int):
        text = f"The first {max_tasks} task{'s' if max_tasks != 1 else ''}"
        if tasks == max_tasks:
            return text
    else:
        text = "Every task"
    return f"{text} · {count}" if count else text


def benchmark_facts(challenge: Challenge | ChallengePublic) -> BenchmarkFacts:
    spec = challenge.benchmark or {}
    metric, k = evaluation_of(challenge)
    outline = benchmark_outline(spec)
    options = spec.get("options") if isinstance(spec.get("options"), dict) else {}
    assert isinstance(options, dict)
    shown_options = [
        (str(name), _detail_text(value)[:120]) for name, value in sorted(options.items())
    ][:12]
    budget = _float_or_none(spec.get("cost_budget_usd"))
    feedback = (challenge.evaluation or {}).get("feedback_mode") or "binary"
    return BenchmarkFacts(
        name=str(spec.get("name") or "—"),
        slice_name=outline.slice_name,
        options=shown_options,
        selection=_selection_text(spec, outline.tasks),
        tasks=outline.tasks,
        metric=metric,
        k=k,
        metric_at_k=charts.metric_name_at(metric, str(k)),
        feedback_mode=str(feedback) if metric == "seq@k" else None,
        judge_model=spec.get("judge_model") or None,
        critic_model=spec.get("critic_model") or None,
        cost_budget_usd=budget,
        custom_server=bool(spec.get("actor_api_base")),
    )


@dataclass(frozen=True)
class TaskRow:
    """One task of a benchmark attempt, from its summary (never its answer key)."""

    task_index: int
    task_id: str
    status: str
    solved: bool
    first_success: int | None
    tries: int
    best_score: float | None
    tokens: int
    cost_usd: float | None
    error: str | None


def _task_row(task_index: int, task_id: str, summary: Mapping[str, Any] | None) -> TaskRow:
    summary = summary or {}
    tries = summary.get("attempts") if isinstance(summary.get("attempts"), list) else []
    assert isinstance(tries, list)
    scores = [
        score
        for item in tries
        if isinstance(item, dict) and (score := _float_or_none(item.get("score"))) is not None
    ]
    usage = summary.get("usage")
    tokens = _actor_tokens({"usage": usage}) if isinstance(usage, dict) else None
    error = summary.get("error")
    return TaskRow(
        task_index=task_index,
        task_id=task_id,
        status=str(summary.get("status") or "pending"),
        solved=bool(summary.get("success")),
        first_success=_int_or_none(summary.get("first_success")),
        tries=len(tries),
        best_score=max(scores) if scores else None,
        tokens=tokens or 0,
        cost_usd=_float_or_none(summary.get("cost_usd")),
        error=error if isinstance(error, str) else None,
    )


def task_rows(
    session: Session, tenant_id: uuid.UUID, attempt_id: uuid.UUID, *, limit: int, offset: int
) -> tuple[list[TaskRow], int]:
    rows, total = attempt_service.tasks_page(
        session, tenant_id, attempt_id, limit=limit, offset=offset
    )
    return [_task_row(index, task_id, summary) for index, task_id, summary in rows], total


def task_trials(
    session: Session, tenant_id: uuid.UUID, attempt_id: uuid.UUID, task_index: int
) -> tuple[TaskRow, list[TrialView]] | None:
    """One task of an attempt with its trials, in the participant's redacted view (no system
    prompt, no verifier details: never the answer key); None if the attempt has no such task."""
    found = attempt_service.task(session, tenant_id, attempt_id, task_index)
    if found is None:
        return None
    task_id, summary = found
    trials = attempt_service.task_trials(
        session, tenant_id, attempt_id, task_index, limit=MAX_TRIALS_PER_TASK
    )
    views = [_trial_view(trial_view(t, Audience.PARTICIPANT)) for t in trials]
    return _task_row(task_index, task_id, summary), views


MAX_TRIALS_PER_TASK = 100  # k is at most 20


# Leaderboards ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunFacts:
    """The attempt behind a benchmark leaderboard row: the model it ran and how it did."""

    model: str
    temperature: float | None
    cost_usd: float | None
    metric_at: list[float]
    metric_at_k: float | None
    tasks_solved: int | None
    tasks_total: int | None


@dataclass(frozen=True)
class LeaderboardRow:
    item: LeaderboardItem
    value: str
    is_you: bool
    run: RunFacts | None = None  # benchmark challenges


@dataclass(frozen=True)
class LeaderboardView:
    strategy: Strategy
    rows: list[LeaderboardRow]
    total: int
    own: LeaderboardRow | None  # the participant's row, on this page or not
    own_on_page: bool
    benchmark: bool = False
    metric_at_k: str = ""  # "pass@2": the benchmark's measure, whatever the strategy

    @property
    def columns(self) -> int:
        return 6 if self.benchmark else 3


def _row(strategy: Strategy, item: LeaderboardItem, handle: str | None) -> LeaderboardRow:
    return LeaderboardRow(item, ranked_value(strategy.key, item), item.participant == handle)


def _run_facts(row: RunRow) -> RunFacts:
    spec = row.model_spec or {}
    metrics = row.metrics or AttemptMetrics()
    return RunFacts(
        model=str(spec.get("model") or "—"),
        temperature=_float_or_none(spec.get("temperature")),
        cost_usd=row.cost_usd if row.cost_usd is not None else metrics.cost_usd,
        metric_at=_floats(metrics.metric_at),
        metric_at_k=_float_or_none(metrics.metric_at_k),
        tasks_solved=metrics.tasks_solved,
        tasks_total=metrics.tasks_total,
    )


def leaderboard_view(
    session: Session,
    challenge: Challenge,
    participant: Participant | None,
    *,
    limit: int,
    offset: int,
) -> LeaderboardView:
    """A page of the leaderboard, and the participant's own row wherever it is; on benchmark
    challenges, each row with the model and figures of its attempt (one query for the page)."""
    strategy = strategy_of(challenge)
    board: Leaderboard = read_leaderboard(session, challenge, limit=limit, offset=offset)
    handle = participant.handle if participant is not None else None
    rows = [_row(strategy, item, handle) for item in board.items]
    own = next((row for row in rows if row.is_you), None)
    own_on_page = own is not None
    if participant is not None and own is None:
        standing = leaderboards.standings(
            session, challenge.tenant_id, participant.id, [challenge.id]
        ).get(challenge.id)
        if standing is not None:
            item = item_of(standing.entry, participant.handle, rank=standing.rank)
            own = _row(strategy, item, handle)
    if challenge.kind != "benchmark":
        return LeaderboardView(strategy, rows, board.total, own, own_on_page)
    wanted = [row.item.attempt_id for row in rows]
    if own is not None and not own_on_page:
        wanted.append(own.item.attempt_id)
    runs = {
        attempt_id: _run_facts(found_run)
        for attempt_id, found_run in attempt_service.runs(
            session, challenge.tenant_id, wanted
        ).items()
    }

    def with_run(row: LeaderboardRow) -> LeaderboardRow:
        return replace(row, run=runs.get(row.item.attempt_id))

    rows = [with_run(row) for row in rows]
    if own is not None:
        own = with_run(own)
    metric, k = evaluation_of(challenge)
    return LeaderboardView(
        strategy,
        rows,
        board.total,
        own,
        own_on_page,
        benchmark=True,
        metric_at_k=charts.metric_name_at(metric, str(k)),
    )


CHART_MODELS = 8  # the leaderboard's top N on the curve chart


def leaderboard_chart(
    challenge: Challenge, board: LeaderboardView, *, element_id: str = "curve-chart"
) -> charts.CurveChart:
    """The curves of the top-ranked models; `board` must be the leaderboard's first page."""
    metric, k = evaluation_of(challenge)
    curves = [
        charts.CurveInput(
            participant=row.item.participant,
            model=row.run.model,
            values=row.run.metric_at,
            rank=row.item.rank,
            is_you=row.is_you,
        )
        for row in board.rows[:CHART_MODELS]
        if row.run is not None and row.run.metric_at
    ]
    return charts.curve_chart(
        curves,
        metric=metric,
        k=k,
        element_id=element_id,
        heading=f"{charts.metric_name_at(metric, 't')} curves of the top models",
    )


def attempt_chart(challenge: Challenge, card: AttemptCard) -> charts.CurveChart | None:
    """The curve of one benchmark attempt (so far, while it runs)."""
    progress = card.benchmark
    if progress is None:
        return None
    _, k = evaluation_of(challenge)
    curves = []
    if progress.curve:
        curves.append(
            charts.CurveInput(
                participant=card.view.participant,
                model=progress.model,
                values=progress.curve,
                is_you=True,
            )
        )
    return charts.curve_chart(
        curves,
        metric=progress.metric,
        k=max(k, progress.k),
        element_id="attempt-curve",
        heading=f"{charts.metric_name_at(progress.metric, 't')} curve"
        + ("" if card.view.status.finished else " so far"),
        empty_text="No task is complete yet: the curve appears as tasks complete.",
    )
