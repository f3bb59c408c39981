"""Runs the trials of one attempt on one task: pass@k or seq@k (DESIGN.md).

pass@k draws all k independent samples at once and never stops early. seq@k runs attempts one
after another, each seeing the earlier outputs and their feedback, and stops at the first
success; a failed seq@k trial always gets its feedback, even the last, so a later run with a
larger k can continue from it. Both resume from trials already made (`existing`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from app.evaluation.feedback import render_feedback, validate_feedback_mode
from app.evaluation.llm import CompletionClient
from app.evaluation.prompts import build_actor_messages
from app.evaluation.types import (
    ActorSection,
    CriticSection,
    JudgeSection,
    Metric,
    ModelSpec,
    TrialCallback,
    TrialRecord,
    Verifier,
    VerifierResult,
)

METRICS: frozenset[str] = frozenset({"pass@k", "seq@k"})


def _judge_model(verifier: Verifier) -> str | None:
    # Only model-backed verifiers carry a `model`; the Verifier protocol does not require one.
    model = getattr(verifier, "model", None)
    return model if isinstance(model, str) else None


async def _run_trial(
    *,
    attempt_index: int,
    task_prompt: str,
    actor: ModelSpec,
    verifier: Verifier,
    metric: Metric,
    k: int,
    history: Sequence[TrialRecord],
    llm: CompletionClient,
) -> tuple[TrialRecord, VerifierResult]:
    messages = build_actor_messages(
        task_prompt, metric=metric, attempt_index=attempt_index, k=k, history=history
    )
    call = await llm.complete(actor, messages)
    result = await verifier.verify(call.output)
    trial = TrialRecord(
        attempt_index=attempt_index,
        actor=ActorSection(**call.to_dict()),
        judge=JudgeSection(
            model=_judge_model(verifier),
            success=result.success,
            score=result.score,
            raw_eval_output=result.raw_eval_output,
            details=result.details,
            rating=result.rating,
            calls=[record.to_dict() for record in result.calls],
        ),
    )
    return trial, result


def _first_leaf(group: BaseExceptionGroup[BaseException]) -> BaseException:
    for error in group.exceptions:
        if isinstance(error, BaseExceptionGroup):
            return _first_leaf(error)
        return error
    return group


def _check_existing(existing: Sequence[TrialRecord], metric: Metric, k: int) -> list[TrialRecord]:
    ordered = sorted(existing, key=lambda trial: trial.attempt_index)
    indices = [trial.attempt_index for trial in ordered]
    if len(set(indices)) != len(indices):
        raise ValueError(f"existing trials repeat an attempt index: {indices}")
    if any(index < 1 for index in indices):
        raise ValueError(f"attempt indices are 1-based: {indices}")
    if metric == "seq@k" and indices != list(range(1, len(indices) + 1)):
        raise ValueError(f"existing seq@k trials must be attempts 1..n without gaps: {indices}")
    return ordered


async def run_trials(
    *,
    task_prompt: str,
    actor: ModelSpec,
    verifier: Verifier,
    metric: Metric,
    k: int,
    feedback_mode: str,
    llm: CompletionClient,
    existing: Sequence[TrialRecord] = (),
    on_trial: TrialCallback | None = None,
) -> list[TrialRecord]:
    """All trials of the attempt, `existing` and new, ordered by attempt index.

    Each new trial goes to `on_trial` as soon as it is finished (for seq@k, before the next
    attempt starts). `InfrastructureError` propagates; trials reported before it stay reported.
    """
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; expected one of: {sorted(METRICS)}")
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    validate_feedback_mode(feedback_mode)
    trials = _check_existing(existing, metric, k)

    async def finish(trial: TrialRecord) -> TrialRecord:
        if on_trial is not None:
            await on_trial(trial)
        return trial

    if metric == "pass@k":
        done = {trial.attempt_index for trial in trials}

        async def sample(attempt_index: int) -> TrialRecord:
            trial, _ = await _run_trial(
                attempt_index=attempt_index,
                task_prompt=task_prompt,
                actor=actor,
                verifier=verifier,
                metric=metric,
                k=k,
                history=(),
                llm=llm,
            )
            return await finish(trial)

        try:
            # A TaskGroup, unlike gather, cancels the other samples when one fails, so none
            # keeps running (and reporting) after the attempt has already ended in error.
            async with asyncio.TaskGroup() as group:
                tasks = [
                    group.create_task(sample(index))
                    for index in range(1, k + 1)
                    if index not in done
                ]
        except BaseExceptionGroup as failure:
            raise _first_leaf(failure) from None
        trials.extend(task.result() for task in tasks)
        return sorted(trials, key=lambda trial: trial.attempt_index)

    if any(trial.success for trial in trials):
        return trials
    for attempt_index in range(len(trials) + 1, k + 1):
        trial, result = await _run_trial(
            attempt_index=attempt_index,
            task_prompt=task_prompt,
            actor=actor,
            verifier=verifier,
            metric=metric,
            k=k,
            history=trials,
            llm=llm,
        )
        if not trial.success:
            trial.critic = CriticSection(feedback=render_feedback(feedback_mode, result))
        trials.append(await finish(trial))
        if trial.success:
            break
    return trials


@dataclass
class AttemptTotals:
    """Figures over all trials of an attempt, as AttemptMetrics needs them (DESIGN.md)."""

    succeeded: bool
    tokens_total: int
    elapsed_ms: int
    rating: float | None
    cost_usd: float | None
    trials: int


def attempt_totals(trials: Sequence[TrialRecord]) -> AttemptTotals:
    """Tokens and time count the actor only; cost counts every call whose price is known."""
    ratings = [trial.judge.rating for trial in trials if trial.judge.rating is not None]
    costs: list[float] = []
    for trial in trials:
        if trial.actor.cost_usd is not None:
            costs.append(trial.actor.cost_usd)
        for call in [*trial.judge.calls, *trial.critic.calls]:
            cost = call.get("cost_usd")
            if isinstance(cost, int | float) and not isinstance(cost, bool):
                costs.append(float(cost))
    return AttemptTotals(
        succeeded=any(trial.success for trial in trials),
        tokens_total=sum(trial.actor.input_tokens + trial.actor.output_tokens for trial in trials),
        elapsed_ms=sum(trial.actor.elapsed_ms for trial in trials),
        rating=max(ratings) if ratings else None,
        cost_usd=sum(costs) if costs else None,
        trials=len(trials),
    )
