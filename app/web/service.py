"""What the web pages show, assembled from the domains' services: accounts, challenge cards,
attempt cards and trials (always the participant's redacted view), leaderboard panels."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pydantic import TypeAdapter, ValidationError
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.attempt.models import Attempt, Trial
from app.attempt.schemas import AttemptRead, TrialRead
from app.attempt.service import to_view
from app.challenge.models import Challenge
from app.challenge.schemas import ChallengePublic
from app.challenge.service import challenge_status, to_public_view
from app.config import get_settings
from app.errors import AppError
from app.leaderboard.models import LeaderboardEntry
from app.leaderboard.schemas import Leaderboard, LeaderboardItem
from app.leaderboard.service import read_leaderboard
from app.schemas import Handle
from app.tenant.models import Participant
from app.tenant.repository import ParticipantRepository
from app.web import auth, queries


class FormError(AppError):
    """A form the page shows again with this message; `field` names the input at fault."""

    status_code = 422
    code = "validation_error"

    def __init__(self, message: str, *, field: str | None = None, status_code: int = 422):
        super().__init__(message)
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
    problem = auth.password_problem(password)
    if problem:
        raise FormError(problem, field="password")
    taken = FormError("This handle is taken. Choose another one.", field="handle", status_code=409)
    if queries.handle_in_use(session, tenant_id, handle):
        raise taken
    try:
        return queries.add_participant(session, tenant_id, handle, auth.hash_password(password))
    except IntegrityError as exc:
        raise taken from exc


def sign_in(
    session: Session, tenant_id: uuid.UUID, handle: str, password: str, client: str
) -> Participant:
    handle = handle.strip()
    refusal = auth.limits.check_sign_in(tenant_id, handle, client)
    if refusal is not None:
        raise FormError(refusal.message, status_code=429)
    participant = (
        ParticipantRepository(session, tenant_id).get_by_handle(handle) if handle else None
    )
    password_hash = participant.password_hash if participant is not None else None
    if participant is None or not auth.verify_password(password_hash, password):
        auth.limits.sign_in_failed(tenant_id, handle, client)
        raise FormError("Wrong handle or password.", status_code=401)
    auth.limits.sign_in_succeeded(tenant_id, handle)
    if password_hash is not None and auth.needs_rehash(password_hash):
        participant.password_hash = auth.hash_password(password)
        session.flush()
    return participant


def signed_in_participant(
    session: Session, web: auth.WebSession, tenant_id: uuid.UUID
) -> Participant | None:
    """The participant this session is signed in as, in this tenant, if still a web account."""
    if web.tenant_id != tenant_id or web.participant_id is None:
        return None
    participant = ParticipantRepository(session, tenant_id).get(web.participant_id)
    if participant is None or participant.password_hash is None:
        return None
    return participant


# Challenges -----------------------------------------------------------------------------------


def visible_visibilities(participant: Participant | None) -> tuple[str, ...]:
    """Public challenges are for everyone; unlisted ones for the tenant's signed-in participants;
    private ones never appear in the web UI (tenant admins manage them through the API)."""
    return ("public", "unlisted") if participant is not None else ("public",)


@dataclass(frozen=True)
class Strategy:
    key: str
    label: str
    column: str
    explanation: str


def strategy_of(challenge: Challenge | ChallengePublic) -> Strategy:
    scoring = challenge.scoring or {}
    key = str(scoring.get("strategy") or "first")
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
    plugin = scoring.get("plugin_id") or "a scorer plugin"
    return Strategy(key, "Custom score", "Score", f"Attempts rank by the score of {plugin}.")


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


def _item_of(entry: LeaderboardEntry, handle: str) -> LeaderboardItem:
    return LeaderboardItem(
        rank=0,
        participant=handle,
        attempt_id=entry.attempt_id,
        score=entry.score,
        succeeded=entry.succeeded,
        tokens_total=entry.tokens_total,
        elapsed_ms=entry.elapsed_ms,
        rating=entry.rating,
        created_at=datetime.fromtimestamp(entry.attempt_created_at_ms / 1000, UTC),
    )


def challenge_cards(
    session: Session,
    tenant_id: uuid.UUID,
    participant: Participant | None,
    visibilities: Collection[str],
    *,
    limit: int = 200,
) -> dict[str, list[ChallengeCard]]:
    """The visible challenges by status (open, upcoming, closed), each with the participant's
    best result so far."""
    challenges = queries.challenges_with_visibility(session, tenant_id, visibilities, limit=limit)
    ids = [c.id for c in challenges]
    entries: dict[uuid.UUID, LeaderboardEntry] = {}
    counts: dict[uuid.UUID, int] = {}
    if participant is not None:
        entries = queries.best_entries(session, tenant_id, participant.id, ids)
        counts = queries.attempt_counts_of_participant(session, tenant_id, participant.id, ids)
    groups: dict[str, list[ChallengeCard]] = {"open": [], "upcoming": [], "closed": []}
    for challenge in challenges:
        strategy = strategy_of(challenge)
        best = None
        entry = entries.get(challenge.id)
        if entry is not None and participant is not None:
            best = BestResult(
                rank=queries.rank_of(session, tenant_id, entry),
                value=ranked_value(strategy.key, _item_of(entry, participant.handle)),
                attempt_id=entry.attempt_id,
            )
        groups[challenge_status(challenge)].append(
            ChallengeCard(to_public_view(challenge), strategy, best, counts.get(challenge.id, 0))
        )
    return groups


def prompt_limit(challenge: Challenge) -> int:
    """The longest prompt the service accepts for this challenge (the same rule it enforces)."""
    server_cap = get_settings().max_prompt_chars
    return min(challenge.limits.get("max_prompt_chars") or server_cap, server_cap)


# Attempts -------------------------------------------------------------------------------------

_THINK_BLOCK = re.compile(r"<think>(.*?)</think>", re.DOTALL | re.IGNORECASE)
_THINK_OPEN = re.compile(r"<think>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE)


def split_reasoning(text: str) -> tuple[str, list[str]]:
    """The answer without its `<think>…</think>` reasoning, and the reasoning parts.

    An opening tag never closed (output cut off mid-thought) makes the rest reasoning; a closing
    tag with no opening one (templates that open the block in the prompt) makes what comes
    before it reasoning.
    """
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
class AttemptCard:
    view: AttemptRead
    trials: list[TrialView]
    score_details: list[tuple[str, str]] = field(default_factory=list)

    @property
    def finished(self) -> bool:
        return self.view.status in ("completed", "error")

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
    session: Session, tenant_id: uuid.UUID, attempts: Sequence[Attempt], handle: str
) -> list[AttemptCard]:
    trials = queries.trials_by_attempt(session, tenant_id, [a.id for a in attempts])
    return [attempt_card(a, handle, trials.get(a.id, [])) for a in attempts]


def attempt_card(attempt: Attempt, handle: str, trials: list[Trial]) -> AttemptCard:
    view = to_view(attempt, handle, trials, full=False)
    details = [(str(k), _detail_text(v)) for k, v in (view.score_details or {}).items()]
    return AttemptCard(view, [_trial_view(t) for t in view.trials or []], details)


# Leaderboards ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class LeaderboardRow:
    item: LeaderboardItem
    value: str
    is_you: bool


@dataclass(frozen=True)
class LeaderboardView:
    strategy: Strategy
    rows: list[LeaderboardRow]
    total: int
    own: LeaderboardRow | None  # the participant's row, on this page or not
    own_on_page: bool


def _row(strategy: Strategy, item: LeaderboardItem, handle: str | None) -> LeaderboardRow:
    return LeaderboardRow(item, ranked_value(strategy.key, item), item.participant == handle)


def leaderboard_view(
    session: Session,
    challenge: Challenge,
    participant: Participant | None,
    *,
    limit: int,
    offset: int,
) -> LeaderboardView:
    """A page of the leaderboard, and the participant's own row wherever it is."""
    strategy = strategy_of(challenge)
    board: Leaderboard = read_leaderboard(session, challenge, limit=limit, offset=offset)
    handle = participant.handle if participant is not None else None
    rows = [_row(strategy, item, handle) for item in board.items]
    own = next((row for row in rows if row.is_you), None)
    own_on_page = own is not None
    if participant is not None and own is None:
        entry = queries.best_entries(session, challenge.tenant_id, participant.id, [challenge.id])
        found = entry.get(challenge.id)
        if found is not None:
            item = _item_of(found, participant.handle).model_copy(
                update={"rank": queries.rank_of(session, challenge.tenant_id, found)}
            )
            own = _row(strategy, item, handle)
    return LeaderboardView(strategy, rows, board.total, own, own_on_page)
