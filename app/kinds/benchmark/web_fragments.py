"""The benchmark kind's fragments of the web pages: its facts, each attempt's progress and
curve, the model and figures of each leaderboard row, and the curve charts."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from app.kinds.api import AttemptMetrics, AttemptRead, RunRow, get_settings
from app.kinds.api.evaluation import Benchmark, confined_data_files, select_tasks
from app.kinds.api.web import (
    CurveChart,
    CurveInput,
    actor_tokens,
    curve_chart,
    detail_text,
    float_or_none,
    floats,
    format_percent,
    int_or_none,
    metric_name_at,
)
from app.kinds.benchmark.config import BenchmarkConfig, BenchmarkSpec, shown_fields
from app.kinds.benchmark.split import public_count

log = logging.getLogger(__name__)


# An attempt's progress --------------------------------------------------------------------------


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
        return metric_name_at(self.metric, str(self.k))

    @property
    def curve_points(self) -> list[tuple[str, str]]:
        """("pass@1", "33.3%"), … for t = 1..len(curve)."""
        return [
            (metric_name_at(self.metric, str(t)), format_percent(value))
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


# The benchmark ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class BenchmarkOutline:
    """What loading the benchmark tells: its slice name and how many tasks the challenge
    selects. Either is None when the benchmark cannot be loaded here."""

    slice_name: str | None
    tasks: int | None


@lru_cache(maxsize=256)
def _outline(spec_json: str) -> BenchmarkOutline:
    spec = json.loads(spec_json)
    try:
        benchmark = Benchmark.load(str(spec.get("name")))
        options = dict(spec.get("options") or {})
        slice_name = benchmark.slice_name(options)
        indices = spec.get("task_indices")
        # A tenant's options name data files in the operator's data folder, as a run reads them.
        with confined_data_files(get_settings().benchmark_data_dir):
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


def benchmark_outline(spec: BenchmarkSpec) -> BenchmarkOutline:
    """The benchmark's slice and task count, computed once per distinct benchmark spec (the
    web pages show them; a run counts its tasks itself)."""
    keys = {"name", "options", "task_indices", "max_tasks"}
    try:
        canonical = json.dumps(spec.model_dump(mode="json", include=keys), sort_keys=True)
    except (TypeError, ValueError):
        return BenchmarkOutline(None, None)
    return _outline(canonical)


@dataclass(frozen=True)
class BenchmarkContext:
    metric: str
    k: int
    tasks_total: int | None


def benchmark_context(config: BenchmarkConfig) -> BenchmarkContext:
    evaluation = config.evaluation
    tasks = benchmark_outline(config.benchmark).tasks
    if tasks is not None and tasks >= 2 and config.split is not None:
        # A split challenge's progress counts its public part's tasks.
        tasks = public_count(tasks, config.split.public_fraction)
    return BenchmarkContext(evaluation.metric, evaluation.k, tasks)


def benchmark_progress(view: AttemptRead, context: BenchmarkContext | None) -> BenchmarkProgress:
    """From the attempt's stored progress (the run summary, refreshed as tasks finish) while it
    runs, and from its metrics once it has completed."""
    spec = view.model_spec or {}
    progress = view.progress or {}
    curves = progress.get("curves") if isinstance(progress.get("curves"), dict) else {}
    assert isinstance(curves, dict)
    metric = str(progress.get("metric") or (context.metric if context else "pass@k"))
    metric = "seq@k" if metric == "seq@k" else "pass@k"
    k = int_or_none(progress.get("k")) or (context.k if context else 1)
    key = "seq_at" if metric == "seq@k" else "pass_at"
    done = int_or_none(curves.get("tasks_complete")) or 0
    total = context.tasks_total if context else None
    curve = floats(curves.get(key))
    metric_at_k = curve[k - 1] if len(curve) >= k else None
    solved = int_or_none(curves.get("tasks_solved"))
    tokens = actor_tokens(progress)
    cost = float_or_none(progress.get("cost_usd"))
    elapsed = None
    trials = int_or_none(progress.get("attempts"))
    metrics = view.metrics
    if metrics is not None and metrics.metric_at is not None:
        # Final: tasks that never ran (a spent cost budget) count as unsolved here.
        total = metrics.tasks_total if metrics.tasks_total is not None else total
        curve = floats(metrics.metric_at)
        metric_at_k = metrics.metric_at_k
        solved = metrics.tasks_solved
        tokens = metrics.tokens_total
        cost = metrics.cost_usd
        elapsed = metrics.elapsed_ms
        trials = metrics.trials
    if total is not None:
        done = min(done, total)
    temperature = float_or_none(spec.get("temperature"))
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
    # A split challenge: how many of its tasks are public ("5 of 10"), else None.
    public_part: str | None = None
    # Its private board's address, relative to the challenge page, once revealed.
    private_board: str | None = None


def _public_part(config: BenchmarkConfig, tasks: int | None) -> str | None:
    if config.split is None:
        return None
    if tasks is None or tasks < 2:
        return f"{config.split.public_fraction:.0%}"
    return f"{public_count(tasks, config.split.public_fraction):,} of {tasks:,}"


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


def benchmark_facts(config: BenchmarkConfig) -> BenchmarkFacts:
    spec = config.benchmark
    metric, k = config.evaluation.metric, config.evaluation.k
    outline = benchmark_outline(spec)
    shown_options = [
        (str(name), detail_text(value)[:120]) for name, value in sorted(spec.options.items())
    ][:12]
    return BenchmarkFacts(
        name=spec.name,
        slice_name=outline.slice_name,
        options=shown_options,
        selection=_selection_text(spec.model_dump(), outline.tasks),
        tasks=outline.tasks,
        metric=metric,
        k=k,
        metric_at_k=metric_name_at(metric, str(k)),
        feedback_mode=config.evaluation.feedback_mode if metric == "seq@k" else None,
        judge_model=spec.judge_model or None,
        critic_model=spec.critic_model or None,
        cost_budget_usd=spec.cost_budget_usd,
        custom_server=bool(spec.actor_api_base),
        public_part=_public_part(config, outline.tasks),
    )


# Leaderboard rows ------------------------------------------------------------------------------


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


def _run_facts(row: RunRow) -> RunFacts:
    spec = shown_fields(row.kind_fields).model_spec or {}
    metrics = row.metrics or AttemptMetrics()
    return RunFacts(
        model=str(spec.get("model") or "—"),
        temperature=float_or_none(spec.get("temperature")),
        cost_usd=row.cost_usd if row.cost_usd is not None else metrics.cost_usd,
        metric_at=floats(metrics.metric_at),
        metric_at_k=float_or_none(metrics.metric_at_k),
        tasks_solved=metrics.tasks_solved,
        tasks_total=metrics.tasks_total,
    )


# Charts ---------------------------------------------------------------------------------------

CHART_MODELS = 8  # the leaderboard's top N on the curve chart


def leaderboard_chart(
    config: BenchmarkConfig, rows: Sequence[Any], *, element_id: str = "curve-chart"
) -> CurveChart:
    """The curves of the top-ranked models; `rows` are the leaderboard's first page's."""
    metric, k = config.evaluation.metric, config.evaluation.k
    curves = [
        CurveInput(
            participant=row.item.participant,
            model=row.extra.model,
            values=row.extra.metric_at,
            rank=row.item.rank,
            is_you=row.is_you,
        )
        for row in rows[:CHART_MODELS]
        if isinstance(row.extra, RunFacts) and row.extra.metric_at
    ]
    return curve_chart(
        curves,
        metric=metric,
        k=k,
        element_id=element_id,
        heading=f"{metric_name_at(metric, 't')} curves of the top models",
    )


def attempt_chart(
    config: BenchmarkConfig, view: AttemptRead, progress: BenchmarkProgress
) -> CurveChart:
    """The curve of one benchmark attempt (so far, while it runs)."""
    curves = []
    if progress.curve:
        curves.append(
            CurveInput(
                participant=view.participant,
                model=progress.model,
                values=progress.curve,
                is_you=True,
            )
        )
    return curve_chart(
        curves,
        metric=progress.metric,
        k=max(config.evaluation.k, progress.k),
        element_id="attempt-curve",
        heading=f"{metric_name_at(progress.metric, 't')} curve"
        + ("" if view.status.finished else " so far"),
        empty_text="No task is complete yet: the curve appears as tasks complete.",
    )
