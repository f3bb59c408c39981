"""A prompt attempt on a worker: the participant's prompt, sent to the target k times (pass@k)
or in sequence with feedback (seq@k), each answer judged by the verifier."""

from __future__ import annotations

from app.kinds.api import AttemptMetrics, RunContext, stored_fields, trial_metrics
from app.kinds.api.evaluation import TrialRecord, build_verifier
from app.kinds.api.runs import run_trials
from app.kinds.prompt.config import PromptConfig
from app.kinds.prompt.schemas import PromptSubmission


async def run(context: RunContext, config: PromptConfig) -> AttemptMetrics:
    """Runs the attempt's trials; its metrics count every trial it has, those an earlier run
    stored included (the same as reading them all back)."""
    job = context.job
    prompt = stored_fields(job.kind_fields, PromptSubmission).prompt
    verifier = build_verifier(config.verifier, goal=job.goal, llm=context.llm)

    async def on_trial(trial: TrialRecord) -> None:
        await context.save_trial(trial)

    trials = await run_trials(
        task_prompt=config.target.task_prompt(prompt),
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
    return trial_metrics(trials)
