"""A prompt attempt on a worker: the participant's prompt, sent to the target k times (pass@k)
or in sequence with feedback (seq@k), each answer judged by the verifier."""

from __future__ import annotations

from collections.abc import Sequence

from app.attempt.attempt_kind import RunContext
from app.evaluation.engine import run_trials
from app.evaluation.types import TrialRecord
from app.evaluation.verifiers import build_verifier
from app.kinds.prompt.config import PromptConfig
from app.scoring.measures import AttemptMetrics


async def run(context: RunContext, config: PromptConfig) -> AttemptMetrics:
    """Runs the attempt's trials; its metrics count every trial it has, those an earlier run
    stored included (the same as reading them all back)."""
    job = context.job
    verifier = build_verifier(config.verifier, goal=job.goal, llm=context.llm)

    async def on_trial(trial: TrialRecord) -> None:
        await context.save_trial(trial)

    trials = await run_trials(
        task_prompt=config.target.task_prompt(job.prompt or ""),
        actor=config.target.model_spec(context.settings.model_timeout_seconds),
        verifier=verifier,
        metric=config.evaluation.metric,
        k=config.evaluation.k,
        feedback_mode=config.evaluation.feedback_mode,
        llm=context.llm,
        # A takeover continues after the trials an earlier run stored.
        existing=await context.stored_trials(),
        on_trial=on_trial,
    )
    return metrics_of(trials)


def metrics_of(trials: Sequence[TrialRecord]) -> AttemptMetrics:
    """The attempt's metrics from all its trials (a takeover's count with the first run's).
    Tokens and time count the actor only; cost counts every call whose price is known."""
    ratings = [trial.judge.rating for trial in trials if trial.judge.rating is not None]
    costs: list[float] = []
    for trial in trials:
        if trial.actor.cost_usd is not None:
            costs.append(trial.actor.cost_usd)
        for call in [*trial.judge.calls, *trial.critic.calls]:
            cost = call.get("cost_usd")
            if isinstance(cost, int | float) and not isinstance(cost, bool):
                costs.append(float(cost))
    return AttemptMetrics(
        succeeded=any(trial.success for trial in trials),
        tokens_total=sum(trial.actor.input_tokens + trial.actor.output_tokens for trial in trials),
        elapsed_ms=sum(trial.actor.elapsed_ms for trial in trials),
        rating=max(ratings) if ratings else None,
        cost_usd=sum(costs) if costs else None,
        trials=len(trials),
    )
