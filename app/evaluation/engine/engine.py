"""Runs the trials of one attempt on one task: pass@k or seq@k (docs/engine.md).

pass@k draws all k independent samples at once and never stops early. seq@k runs attempts one
after another, each seeing the earlier outputs and their feedback, and stops at the first
success; a failed seq@k trial always gets its feedback, even the last, so a later run with a
larger k can continue from it. Both resume from trials already made (`existing`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from app.evaluation.engine.critic import critic_feedback
from app.evaluation.engine.feedback import (
    CRITIC_FEEDBACK_MODES,
    render_feedback,
    validate_feedback_mode,
)
from app.evaluation.engine.llm import CompletionClient
from app.evaluation.engine.prompts import (
    DEFAULT_PROMPT_STYLE,
    build_actor_messages,
    check_prompt_style,
)
from app.evaluation.engine.types import (
    ActorSection,
    CriticSection,
    JudgeSection,
    Message,
    Metric,
    ModelSpec,
    TrialCallback,
    TrialRecord,
    Verifier,
    VerifierResult,
)

METRICS: frozenset[str] = frozenset({"pass@k", "seq@k"})

ActStep = Callable[[list[Message], int], Awaitable[ActorSection]]
"""The actor's answer to the messages of one attempt (its 1-based index given)."""
VerifyStep = Callable[[ActorSection, int], Awaitable[tuple[JudgeSection, VerifierResult]]]
"""The verdict on one actor answer: the stored section and the full result (for feedback)."""
FeedbackStep = Callable[[TrialRecord, VerifierResult], Awaitable[CriticSection]]
"""The feedback on a failed seq@k trial."""


@dataclass(frozen=True)
class TrialSteps:
    """How the trials of one task are made; the loop (`run_trial_loop`) is the same for all.

    Prompt challenges (`run_trials`) and benchmarks (app.evaluation.engine.runner) differ only here:
    which call answers, what verifies, what gives feedback.
    """

    act: ActStep
    verify: VerifyStep
    feedback: FeedbackStep


def _judge_model(verifier: Verifier) -> str | None:
    # Only model-backed verifiers carry a `model`; the Verifier protocol does not require one.
    model = getattr(verifier, "model", None)
    return model if isinstance(model, str) else None


def judge_section(result: VerifierResult, model: str | None) -> JudgeSection:
    """The stored form of a verdict, calls included."""
    return JudgeSection(
        model=model,
        success=result.success,
        score=result.score,
        raw_eval_output=result.raw_eval_output,
        details=result.details,
        rating=result.rating,
        calls=[record.to_dict() for record in result.calls],
    )


async def _run_trial(
    *,
    attempt_index: int,
    task_prompt: str,
    metric: Metric,
    k: int,
    history: Sequence[TrialRecord],
    steps: TrialSteps,
    prompt_style: str,
) -> tuple[TrialRecord, VerifierResult]:
    messages = build_actor_messages(
        task_prompt,
        metric=metric,
        attempt_index=attempt_index,
        k=k,
        history=history,
        prompt_style=prompt_style,
    )
    actor = await steps.act(messages, attempt_index)
    judge, result = await steps.verify(actor, attempt_index)
    return TrialRecord(attempt_index=attempt_index, actor=actor, judge=judge), result


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


def _check_run_arguments(metric: str, k: int) -> None:
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; expected one of: {sorted(METRICS)}")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be an int of at least 1, got {k!r}")


async def run_trial_loop(
    *,
    task_prompt: str,
    metric: Metric,
    k: int,
    steps: TrialSteps,
    existing: Sequence[TrialRecord] = (),
    on_trial: TrialCallback | None = None,
    prompt_style: str = DEFAULT_PROMPT_STYLE,
) -> list[TrialRecord]:
    """THE trial loop: all trials of one task, `existing` and new, ordered by attempt index.

    pass@k runs the missing samples of 1..k concurrently and never stops early; seq@k continues
    after the existing attempts, one at a time, and stops at the first success (an existing
    success means nothing runs). Each new trial goes to `on_trial` as soon as it is finished
    (for seq@k, with its feedback and before the next attempt starts). Errors propagate; trials
    reported before them stay reported.
    """
    _check_run_arguments(metric, k)
    check_prompt_style(prompt_style)
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
                metric=metric,
                k=k,
                history=(),
                steps=steps,
                prompt_style=prompt_style,
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
            metric=metric,
            k=k,
            history=trials,
            steps=steps,
            prompt_style=prompt_style,
        )
        if not trial.success:
            trial.critic = await steps.feedback(trial, result)
        trials.append(await finish(trial))
        if trial.success:
            break
    return trials


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
    critic: ModelSpec | None = None,
) -> list[TrialRecord]:
    """All trials of the attempt, `existing` and new, ordered by attempt index.

    Each new trial goes to `on_trial` as soon as it is finished (for seq@k, before the next
    attempt starts). `InfrastructureError` propagates; trials reported before it stay reported.
    The LLM-critic feedback modes (`socratic`, `directive`) need `critic`.
    """
    _check_run_arguments(metric, k)
    validate_feedback_mode(feedback_mode, critic_model=critic.model if critic else None)

    async def act(messages: list[Message], attempt_index: int) -> ActorSection:
        return await llm.complete(actor, messages)

    async def verify(
        answer: ActorSection, attempt_index: int
    ) -> tuple[JudgeSection, VerifierResult]:
        result = await verifier.verify(answer.output)
        return judge_section(result, _judge_model(verifier)), result

    async def feedback(trial: TrialRecord, result: VerifierResult) -> CriticSection:
        if feedback_mode in CRITIC_FEEDBACK_MODES and critic is not None:
            text, calls = await critic_feedback(
                feedback_mode,
                llm=llm,
                critic=critic,
                task_prompt=task_prompt,
                output=trial.actor.output,
                result=result,
            )
            return CriticSection(
                model=critic.model, feedback=text, calls=[call.to_dict() for call in calls]
            )
        return CriticSection(feedback=render_feedback(feedback_mode, result))

    return await run_trial_loop(
        task_prompt=task_prompt,
        metric=metric,
        k=k,
        steps=TrialSteps(act=act, verify=verify, feedback=feedback),
        existing=existing,
        on_trial=on_trial,
    )
