"""A benchmark attempt on a worker: the evaluation engine's benchmark runner, with the
attempt's tables as its store (`app.attempt.run_store`), so a takeover continues where the
dead worker stopped without repeating a finished call."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from app.kinds.api import AttemptMetrics, RunContext, stored_fields
from app.kinds.api.evaluation import (
    Benchmark,
    DataFileNotFound,
    InfrastructureError,
    LLMClient,
    confined_data_files,
    select_tasks,
)
from app.kinds.api.runs import (
    RunAborted,
    RunConfig,
    RunConfigMismatch,
    RunResult,
    RunStore,
    continuing_prompt_style,
    run_benchmark,
)
from app.kinds.benchmark.config import BenchmarkConfig, StoredFields
from app.kinds.benchmark.split import part_measures, parts_of


def _sum_usage(summary: dict[str, Any], role: str, field: str) -> int:
    models = (summary.get("usage") or {}).get(role) or {}
    return sum(int(figures.get(field) or 0) for figures in models.values())


def attempt_metrics(result: RunResult, tasks_total: int, k: int) -> AttemptMetrics:
    """A run's metrics from its summary: the curve over its `tasks_total` tasks, and its
    spend (on a split challenge, each part is a run of its own: the attempt's metrics are its
    public part's, the private part's are its `kind_metrics.sealed`)."""
    summary = result.summary
    measures = part_measures(summary.get("curves") or {}, tasks_total, k)
    metric_at_k = measures.metric_at_k
    return AttemptMetrics(
        succeeded=bool(metric_at_k and metric_at_k > 0),
        tokens_total=_sum_usage(summary, "actor", "input_tokens")
        + _sum_usage(summary, "actor", "output_tokens"),
        elapsed_ms=_sum_usage(summary, "actor", "elapsed_ms"),
        rating=None,
        cost_usd=summary.get("cost_usd"),
        trials=int(summary.get("attempts") or 0),
        metric_at=measures.metric_at,
        metric_at_k=metric_at_k,
        tasks_total=tasks_total,
        tasks_solved=measures.tasks_solved,
        run_status=result.status,
    )


async def run_tasks(
    run_config: RunConfig, store: RunStore, llm: LLMClient, data_dir: Path | None
) -> tuple[RunResult, int]:
    """Runs (or continues) the tasks `run_config` selects into `store`; returns the result and
    how many tasks it selects. Raises InfrastructureError when the run could not finish (the
    trials so far are kept)."""
    benchmark = Benchmark.load(run_config.benchmark)
    try:
        # A tenant's options name data files only inside the operator's data folder.
        with confined_data_files(data_dir):
            tasks_total = sum(
                1
                for _ in select_tasks(
                    benchmark.iter_tasks(run_config.options),
                    task_indices=run_config.task_indices,
                    max_tasks=run_config.max_tasks,
                )
            )
            # A run begun before the prompt wording changed ends in the wording it began with.
            run_config = continuing_prompt_style(run_config, await store.load_config())
            result = await run_benchmark(benchmark, run_config, store, llm)
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
    return result, tasks_total


def part_config(run_config: RunConfig, indices: Iterable[int]) -> RunConfig:
    """The run of the challenge's tasks of these indices only (one part of a split)."""
    return replace(run_config, task_indices=tuple(indices), max_tasks=None)


async def run(context: RunContext, config: BenchmarkConfig) -> AttemptMetrics:
    """Runs (or continues) the attempt's benchmark; returns its metrics, or raises
    InfrastructureError when the run could not finish (the trials so far are kept)."""
    job = context.job
    submission = stored_fields(job.kind_fields, StoredFields)
    run_config = config.run_config(submission, context.settings)
    data_dir = context.settings.benchmark_data_dir
    if not job.purpose.scored:
        # A practice or test run: one task, the one named or the first the challenge runs.
        chosen = submission.task_index
        indices = (chosen,) if chosen else run_config.task_indices
        run_config = replace(run_config, task_indices=indices, max_tasks=1)
    elif config.split is not None:
        # A scored attempt of a split challenge runs its public part: everything a
        # participant sees of it (its status and times, its counts, its board row) is that
        # part's alone. Its private part runs once it has completed, in a run of its own
        # (app/kinds/benchmark/sealed.py), which nothing participants see waits for.
        parts = parts_of(config.benchmark, config.split, data_dir)
        run_config = part_config(run_config, parts.public_indices)
    result, tasks_total = await run_tasks(run_config, context.run_store(), context.llm, data_dir)
    return attempt_metrics(result, tasks_total, run_config.k)
