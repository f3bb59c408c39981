"""Running a benchmark attempt on a worker: the evaluation engine's runner with the database
as its store.

Trials land in the `trials` table as they finish (unique per attempt, task and index), task
summaries in `attempt_tasks`, the run record and the latest summary on the attempt. A worker
that takes over a dead worker's attempt runs the same configuration against the same store, so
the runner skips finished tasks and continues partial ones without repeating a finished call.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from typing import Any

from app.attempt import repository
from app.attempt.lease import LeaseLost, hold
from app.attempt.metrics import AttemptMetrics
from app.config import Settings
from app.db import session_scope
from app.evaluation.benchmark import Benchmark, DataFileNotFound, Task, confined_data_files
from app.evaluation.llm import LLMClient
from app.evaluation.runner import (
    RunAborted,
    RunConfig,
    RunConfigMismatch,
    RunResult,
    run_benchmark,
    select_tasks,
)
from app.evaluation.types import InfrastructureError, ModelSpec, TrialRecord


@dataclass(frozen=True)
class BenchmarkJob:
    attempt_id: uuid.UUID
    tenant_id: uuid.UUID
    benchmark: dict[str, Any]
    evaluation: dict[str, Any]
    model_spec: dict[str, Any]


class DatabaseRunStore:
    """The engine's `RunStore` for one attempt. Every write checks the lease first."""

    def __init__(self, job: BenchmarkJob, token: uuid.UUID, settings: Settings) -> None:
        self.job, self.token, self.settings = job, token, settings

    def _held(self, session: Any) -> None:
        hold(session, self.job.attempt_id, self.token, self.settings)

    def _load_config(self) -> dict[str, Any] | None:
        with session_scope() as session:
            row = repository.get(session, self.job.attempt_id)
            return None if row is None else row.run_config

    def _write_attempt(self, **values: Any) -> None:
        with session_scope() as session:
            if not repository.set_run_record(session, self.job.attempt_id, self.token, **values):
                raise LeaseLost()

    def _load_trials(self, task: Task) -> list[TrialRecord]:
        with session_scope() as session:
            rows = repository.task_trials(session, self.job.attempt_id, task.canonical_index)
            return [repository.trial_record(row) for row in rows]

    def _save_trial(self, task: Task, trial: TrialRecord) -> None:
        with session_scope() as session:
            self._held(session)
            repository.insert_trial(
                session,
                tenant_id=self.job.tenant_id,
                attempt_id=self.job.attempt_id,
                trial=trial,
                task_index=task.canonical_index,
                task_id=task.task_id,
            )

    def _save_task(self, task: Task, field: str, value: dict[str, Any]) -> None:
        with session_scope() as session:
            self._held(session)
            repository.upsert_attempt_task(
                session,
                {
                    "attempt_id": self.job.attempt_id,
                    "task_index": task.canonical_index,
                    "tenant_id": self.job.tenant_id,
                    "task_id": task.task_id[:200],
                    field: value,
                },
                [field],
            )

    async def load_config(self) -> dict[str, Any] | None:
        return await asyncio.to_thread(self._load_config)

    async def save_config(self, config: dict[str, Any]) -> None:
        await asyncio.to_thread(self._write_attempt, run_config=config)

    async def load_trials(self, task: Task) -> list[TrialRecord]:
        return await asyncio.to_thread(self._load_trials, task)

    async def save_trial(self, task: Task, trial: TrialRecord) -> None:
        await asyncio.to_thread(self._save_trial, task, trial)

    async def save_task_meta(self, task: Task, meta: dict[str, Any]) -> None:
        await asyncio.to_thread(self._save_task, task, "meta", meta)

    async def save_task_summary(self, task: Task, summary: dict[str, Any]) -> None:
        await asyncio.to_thread(self._save_task, task, "summary", summary)

    async def save_run_summary(self, summary: dict[str, Any]) -> None:
        # The per-task list stays in attempt_tasks; the attempt keeps the run-level figures.
        progress = {key: value for key, value in summary.items() if key != "tasks"}
        await asyncio.to_thread(self._write_attempt, progress=progress)


def run_config(job: BenchmarkJob, settings: Settings) -> RunConfig:
    spec = job.benchmark
    timeout = settings.model_timeout_seconds

    def role(model: str | None) -> ModelSpec | None:
        return ModelSpec(model=model, timeout_s=timeout) if model else None

    return RunConfig(
        benchmark=spec["name"],
        metric=job.evaluation.get("metric", "pass@k"),
        k=int(job.evaluation.get("k", 1)),
        feedback_mode=job.evaluation.get("feedback_mode", "binary"),
        actor=ModelSpec(
            model=job.model_spec["model"],
            temperature=job.model_spec.get("temperature"),
            system_prompt=job.model_spec.get("system_prompt"),
            api_base=spec.get("actor_api_base"),
            timeout_s=timeout,
        ),
        judge=role(spec.get("judge_model")),
        critic=role(spec.get("critic_model")),
        options=dict(spec.get("options") or {}),
        task_indices=tuple(spec["task_indices"]) if spec.get("task_indices") else None,
        max_tasks=spec.get("max_tasks"),
        cost_budget_usd=attempt_cost_budget(job.benchmark, settings),
    )


def attempt_cost_budget(benchmark: dict[str, Any] | None, settings: Settings) -> float:
    """The server's per-attempt budget, or the challenge's when it is lower (never higher)."""
    budget = settings.attempt_cost_budget_usd
    own = (benchmark or {}).get("cost_budget_usd")
    if isinstance(own, int | float) and not isinstance(own, bool) and 0 < own < budget:
        return float(own)
    return budget


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


async def run_benchmark_attempt(
    job: BenchmarkJob, token: uuid.UUID, settings: Settings, llm: LLMClient
) -> AttemptMetrics:
    """Runs (or continues) the attempt's benchmark; returns its metrics, or raises
    InfrastructureError when the run could not finish (the trials so far are kept)."""
    config = run_config(job, settings)
    benchmark = Benchmark.load(config.benchmark)
    try:
        # A tenant's options name data files only inside the operator's data folder.
        with confined_data_files(settings.benchmark_data_dir):
            tasks_total = sum(
                1
                for _ in select_tasks(
                    benchmark.iter_tasks(config.options),
                    task_indices=config.task_indices,
                    max_tasks=config.max_tasks,
                )
            )
            result = await run_benchmark(
                benchmark, config, DatabaseRunStore(job, token, settings), llm
            )
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
    return attempt_metrics(result, tasks_total, config.k)
