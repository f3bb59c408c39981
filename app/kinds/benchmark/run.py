"""A benchmark attempt on a worker: the evaluation engine's benchmark runner, with the
attempt's tables as its store (`app.attempt.run_store`), so a takeover continues where the
dead worker stopped without repeating a finished call."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from app.attempt.attempt_kind import RunContext
from app.evaluation.benchmark import Benchmark, DataFileNotFound, confined_data_files
from app.evaluation.runner import (
    RunAborted,
    RunConfigMismatch,
    RunResult,
    continuing_prompt_style,
    run_benchmark,
    select_tasks,
)
from app.evaluation.types import InfrastructureError
from app.kinds.benchmark.config import BenchmarkConfig, ModelSubmission
from app.scoring.measures import AttemptMetrics


def _sum_usage(summary: dict[str, Any], role: str, field: str) -> int:
    models = (summary.get("usage") or {}).get(role) or {}
    return sum(int(figures.get(field) or 0) for figures in models.values())


def attempt_metrics(result: RunResult, tasks_total: int, k: int) -> AttemptMetrics:
    """The attempt's metrics from the run summary. Tasks that never ran (the cost budget ran
    out) count as unsolved, so a cheaper partial run cannot outrank a complete one."""
    summary = result.summary
    curves = summary.get("curves") or {}
    key = "seq_at" if curves.get("metric") == "seq@k" else "pass_at"
    complete = int(curves.get("tasks_complete") or 0)
    share = complete / tasks_total if tasks_total else 0.0
    # With no task complete (a budget spent during the first tries) the curve has no values:
    # every task counts as unsolved.
    curve = [float(value or 0.0) * share for value in curves.get(key) or []]
    metric_at_k = curve[k - 1] if len(curve) >= k else None
    return AttemptMetrics(
        succeeded=bool(metric_at_k and metric_at_k > 0),
        tokens_total=_sum_usage(summary, "actor", "input_tokens")
        + _sum_usage(summary, "actor", "output_tokens"),
        elapsed_ms=_sum_usage(summary, "actor", "elapsed_ms"),
        rating=None,
        cost_usd=summary.get("cost_usd"),
        trials=int(summary.get("attempts") or 0),
        metric_at=curve,
        metric_at_k=metric_at_k,
        tasks_total=tasks_total,
        tasks_solved=int(curves.get("tasks_solved") or 0),
        run_status=result.status,
    )


async def run(context: RunContext, config: BenchmarkConfig) -> AttemptMetrics:
    """Runs (or continues) the attempt's benchmark; returns its metrics, or raises
    InfrastructureError when the run could not finish (the trials so far are kept)."""
    job = context.job
    if job.model_spec is None:
        raise InfrastructureError("the challenge has no runnable configuration")
    submission = ModelSubmission.model_validate(job.model_spec)
    run_config = config.run_config(submission, context.settings)
    if not job.purpose.scored:
        # A practice or test run: one task, the one named or the first the challenge runs.
        chosen = (job.kind_fields or {}).get("task_index")
        indices = (int(chosen),) if chosen else run_config.task_indices
        run_config = replace(run_config, task_indices=indices, max_tasks=1)
    benchmark = Benchmark.load(run_config.benchmark)
    try:
        # A tenant's options name data files only inside the operator's data folder.
        with confined_data_files(context.settings.benchmark_data_dir):
            tasks_total = sum(
                1
                for _ in select_tasks(
                    benchmark.iter_tasks(run_config.options),
                    task_indices=run_config.task_indices,
                    max_tasks=run_config.max_tasks,
                )
            )
            store = context.run_store()
            # An attempt begun before the prompt wording changed ends in the wording it began with.
            run_config = continuing_prompt_style(run_config, await store.load_config())
            result = await run_benchmark(benchmark, run_config, store, context.llm)
    except DataFileNotFound as exc:
        raise InfrastructureError(f"the benchmark's data is gone: {exc}") from exc
    except RunConfigMismatch as exc:
        raise InfrastructureError(
            "the challenge's settings changed since this attempt started: "
            + "; ".join(exc.differences)
        ) from exc
    except RunAborted as exc:
        raise InfrastructureError(f"benchmark run aborted: {exc}") from exc
    if result.status == "incomplete":
        message = (
            f"{result.tasks_errored} task(s) failed on infrastructure errors; "
            "re-run the attempt to continue where it stopped"
        )
        raise InfrastructureError(
            message, detail="; ".join([message, *result.error_details])[:4000]
        )
    return attempt_metrics(result, tasks_total, run_config.k)
