"""The attempt pages: a participant's attempt cards (on the challenge page too), an attempt's
trials, and the tasks of an attempt whose kind runs the engine's benchmark runner. Always the
participant's redacted view: no system prompt, no verifier details, never an answer key."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.orm import Session

from app.attempt import service as attempt_service
from app.attempt.models import Attempt
from app.attempt.schemas import AttemptRead, TrialRead
from app.auth.subjects import Audience
from app.challenge.models import Challenge
from app.challenge.registry import kind_as
from app.challenge.service import config_of, find_challenge, sealed_shown
from app.evaluation.engine.patterns import linear
from app.evaluation.engine.storable import encodable
from app.scoring.strategies import scoring_strategy
from app.team.service import player_id
from app.tenant.models import Participant, Tenant
from app.tenant.service import entry_names
from app.web.formatting import detail_text, float_or_none, int_or_none
from app.web.visitors import visible_visibilities
from app.web.web_kind import WebKind

ATTEMPTS_PAGE_SIZE = 10
TASKS_PAGE_SIZE = 25
MAX_TRIALS_PER_TASK = 100  # k is at most 20


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


def trial_view_of(trial: TrialRead) -> TrialView:
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
class AttemptCard:
    """An attempt as its card shows it: its view, its trials (for kinds whose cards list
    them), what its kind adds (`extra`, the kind's `card_extras`), and the kind's fragments
    (`macros`)."""

    view: AttemptRead
    trials: list[TrialView]
    score_details: list[tuple[str, str]] = field(default_factory=list)
    extra: Any = None
    show_score: bool = True  # not when the score only repeats the measure ranked by
    macros: str = "kind_default.html"
    extra_version: str = ""

    @property
    def finished(self) -> bool:
        return self.view.status.finished

    @property
    def version(self) -> str:
        """Changes whenever what the card shows changes (the live view swaps it then)."""
        if not self.extra_version:
            return self.view.status
        return f"{self.view.status}:{self.extra_version}"

    @property
    def deciding_trial(self) -> TrialView | None:
        """The trial that decided the attempt: the first success, else the last trial."""
        if not self.trials:
            return None
        return next((t for t in self.trials if t.success), self.trials[-1])

    @property
    def feedback(self) -> list[str]:
        """The public verdict and feedback of the deciding trial (the success, else the last)."""
        deciding = self.deciding_trial
        if deciding is None:
            return []
        lines = [deciding.verdict_text] if deciding.verdict_text else []
        if deciding.critic_feedback:
            lines.append(deciding.critic_feedback)
        return lines


def attempt_cards(
    session: Session,
    tenant_id: uuid.UUID,
    challenge: Challenge,
    attempts: Sequence[Attempt],
    handle: str,
) -> list[AttemptCard]:
    """Cards of one challenge's attempts, with what the challenge's kind adds to them. Kinds
    whose attempts have many trials (tasks times k) keep them in the database: their cards
    show a summary, their attempt page pages through tasks."""
    kind = kind_as(challenge.kind, WebKind)
    config = config_of(challenge)
    sealed = sealed_shown(challenge.closes_at, Audience.PARTICIPANT)
    trials = (
        attempt_service.trials_by_attempt(
            session, tenant_id, [a.id for a in attempts], with_sealed=sealed
        )
        if kind.cards_show_trials
        else {}
    )
    # A team's cards say which member submitted each (every member sees them all).
    names = entry_names(session, tenant_id, [(a.entrant_id, a.submitted_by_id) for a in attempts])
    views = [
        attempt_service.to_view(
            a,
            challenge.kind,
            handle,
            trials.get(a.id, []),
            Audience.PARTICIPANT,
            sealed=sealed,
            submitted_by=names.submitter(a.submitted_by_id),
        )
        for a in attempts
    ]
    extras = kind.card_extras(session, challenge, config, views)
    # A score that only repeats the ranked metric is not shown twice.
    show_score = not scoring_strategy(challenge.strategy).score_repeats_measure
    cards = []
    for view in views:
        extra = extras.get(view.id)
        cards.append(
            AttemptCard(
                view=view,
                trials=[trial_view_of(t) for t in view.trials or []],
                score_details=[
                    (str(k), detail_text(v)) for k, v in (view.score_details or {}).items()
                ],
                extra=extra,
                show_score=show_score,
                macros=kind.macros,
                extra_version=kind.card_version(extra) if extra is not None else "",
            )
        )
    return cards


def own_attempt(
    session: Session, tenant: Tenant, participant: Participant | None, attempt_id: uuid.UUID
) -> tuple[Attempt, Challenge] | None:
    """The signed-in participant's attempt and its (visible) challenge; None for anyone else."""
    if participant is None:
        return None
    attempt = attempt_service.find_attempt(session, tenant.id, attempt_id)
    if attempt is None:
        return None
    # A team's attempts are each member's own.
    if attempt.participant_id != player_id(
        session, tenant.id, attempt.challenge_id, participant.id
    ):
        return None
    challenge = find_challenge(session, tenant.id, attempt.challenge_id)
    if challenge is None or challenge.visibility not in visible_visibilities(participant):
        return None
    return attempt, challenge


# Tasks of an engine run ------------------------------------------------------------------------


def actor_tokens(progress: Mapping[str, Any]) -> int | None:
    """The actor's input and output tokens in a run summary's usage (by model)."""
    usage = progress.get("usage")
    if not isinstance(usage, dict) or not isinstance(usage.get("actor"), dict):
        return None
    total = 0
    for figures in usage["actor"].values():
        if isinstance(figures, dict):
            total += (int_or_none(figures.get("input_tokens")) or 0) + (
                int_or_none(figures.get("output_tokens")) or 0
            )
    return total


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
    listed = summary.get("attempts")
    tries: list[Any] = listed if isinstance(listed, list) else []
    scores = [
        score
        for item in tries
        if isinstance(item, dict) and (score := float_or_none(item.get("score"))) is not None
    ]
    usage = summary.get("usage")
    tokens = actor_tokens({"usage": usage}) if isinstance(usage, dict) else None
    error = summary.get("error")
    return TaskRow(
        task_index=task_index,
        task_id=task_id,
        status=str(summary.get("status") or "pending"),
        solved=bool(summary.get("success")),
        first_success=int_or_none(summary.get("first_success")),
        tries=len(tries),
        best_score=max(scores) if scores else None,
        tokens=tokens or 0,
        cost_usd=float_or_none(summary.get("cost_usd")),
        error=error if isinstance(error, str) else None,
    )


def task_rows(
    session: Session, challenge: Challenge, attempt_id: uuid.UUID, *, limit: int, offset: int
) -> tuple[list[TaskRow], int]:
    """A page of an attempt's tasks, as its participant sees them (a private part's tasks
    once the challenge has closed)."""
    rows, total = attempt_service.tasks_page(
        session,
        challenge.tenant_id,
        attempt_id,
        limit=limit,
        offset=offset,
        with_sealed=sealed_shown(challenge.closes_at, Audience.PARTICIPANT),
    )
    return [_task_row(index, task_id, summary) for index, task_id, summary in rows], total


def task_trials(
    session: Session, challenge: Challenge, attempt_id: uuid.UUID, task_index: int
) -> tuple[TaskRow, list[TrialView]] | None:
    """One task of an attempt with its trials, in the participant's redacted view (no system
    prompt, no verifier details: never the answer key); None if the attempt has no such task,
    or it is of the challenge's private part and the challenge has not closed."""
    tenant_id = challenge.tenant_id
    sealed = sealed_shown(challenge.closes_at, Audience.PARTICIPANT)
    found = attempt_service.task(session, tenant_id, attempt_id, task_index, with_sealed=sealed)
    if found is None:
        return None
    task_id, summary = found
    trials = attempt_service.task_trials(
        session, tenant_id, attempt_id, task_index, limit=MAX_TRIALS_PER_TASK, with_sealed=sealed
    )
    views = [trial_view_of(attempt_service.trial_view(t, Audience.PARTICIPANT)) for t in trials]
    return _task_row(task_index, task_id, summary), views
