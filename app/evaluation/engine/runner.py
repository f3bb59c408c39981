"""Running a benchmark variant: every task through the one trial loop, concurrently, resumably.

`run_benchmark` streams the benchmark's tasks (never all prompts at once: at most
`tasks_in_flight` tasks are loaded and running), runs each through
`app.evaluation.engine.engine.run_trial_loop` (the loop prompt challenges use too) and hands every
finished trial to a `RunStore` at once. The CLI's store writes run folders
(app.evaluation.commands.folder); the service's store writes the database. The concurrency caps are
the `LLMClient`'s, shared by every task of the run and every role.

Resume: the store gives back the trials a task already has; a complete task is skipped, a
partial one continues (pass@k: the missing samples; seq@k: the next attempt, its history
rebuilt from the stored trials). The result-affecting settings are fingerprinted; a store that
holds a run made under other settings is refused, naming the differences, and a larger k
extends a run only with `allow_continue`.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import logging
import math
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

from app.evaluation.engine.benchmark import (
    AttemptView,
    Benchmark,
    Task,
    recording_calls,
    select_tasks,
    use_models,
)
from app.evaluation.engine.critic import critic_feedback
from app.evaluation.engine.engine import METRICS, TrialSteps, judge_section, run_trial_loop
from app.evaluation.engine.feedback import CRITIC_FEEDBACK_MODES, render_feedback
from app.evaluation.engine.llm import CompletionClient
from app.evaluation.engine.metrics import (
    TaskStats,
    price_map_info,
    run_summary,
    seq_k_run_fields,
    task_figures,
    trial_calls,
    trial_view,
)
from app.evaluation.engine.prompts import (
    DEFAULT_PROMPT_STYLE,
    PROMPT_STYLE_VERSIONS,
    prompt_style_of_version,
)
from app.evaluation.engine.types import (
    ActorSection,
    CallRecord,
    CostBudgetExhausted,
    CriticSection,
    JudgeSection,
    Message,
    Metric,
    ModelSpec,
    TrialRecord,
    VerifierResult,
)
from app.outbound.prices import Price

logger = logging.getLogger(__name__)

DETERMINISTIC = "deterministic"
# The run summary is rebuilt from every task's stats; with thousands of small tasks, doing so
# at each task end would cost more than the tasks. Task summaries are still written per trial.
SUMMARY_INTERVAL_S = 2.0
_ERROR_TEXT_LIMIT = 1000
_ERROR_DETAILS_KEPT = 5


@dataclass(frozen=True)
class RunConfig:
    """One run of a benchmark: what is measured (fingerprinted) and how it is run (not)."""

    benchmark: str
    metric: Metric
    k: int
    feedback_mode: str
    actor: ModelSpec
    judge: ModelSpec | None = None
    critic: ModelSpec | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    # The seq@k prompt's wording (app.evaluation.engine.prompts); fingerprinted as its version.
    prompt_style: str = DEFAULT_PROMPT_STYLE
    # Not fingerprinted: they choose which tasks run and how, not what a task's result is.
    task_indices: tuple[int, ...] | None = None
    max_tasks: int | None = None
    allow_continue: bool = False
    tasks_in_flight: int | None = None  # default: twice the client's global cap
    cost_budget_usd: float | None = None  # no new task starts once spent
    max_task_errors: int = 10  # more errored tasks than this abort the run
    prices: Mapping[str, Price] = field(default_factory=dict)


class RunConfigMismatch(Exception):
    """The store holds a run made under other settings; `differences` names each one."""

    def __init__(self, message: str, differences: list[str]) -> None:
        super().__init__(message)
        self.differences = differences


class RunAborted(Exception):
    """Too many tasks failed on infrastructure errors; finished trials are kept."""


RunStatus = Literal["complete", "incomplete", "stopped", "aborted", "budget_exhausted"]


class RunStore(Protocol):
    """Where a run's results go. Every method may be called many times (idempotent writes).

    `load_config`/`save_config`: the run's record (fingerprint, settings, k history, sessions);
    None when the store is new. `load_trials`: the trials a task already has, any order.
    `save_trial`: one finished trial (never overwrites another attempt index).
    `save_task_meta`: the task's public description, once per task.
    `save_task_summary` / `save_run_summary`: refreshed as trials land.
    """

    async def load_config(self) -> dict[str, Any] | None: ...

    async def save_config(self, config: dict[str, Any]) -> None: ...

    async def load_trials(self, task: Task) -> list[TrialRecord]: ...

    async def save_trial(self, task: Task, trial: TrialRecord) -> None: ...

    async def save_task_meta(self, task: Task, meta: dict[str, Any]) -> None: ...

    async def save_task_summary(self, task: Task, summary: dict[str, Any]) -> None: ...

    async def save_run_summary(self, summary: dict[str, Any]) -> None: ...


EventKind = Literal["task_started", "trial", "task_done", "task_skipped", "task_error"]


@dataclass(frozen=True)
class RunEvent:
    """What the runner tells its caller (the CLI's progress bar and prompt printer)."""

    kind: EventKind
    task: Task
    stats: TaskStats
    trial: TrialRecord | None = None
    error: str | None = None


EventCallback = Callable[[RunEvent], None]


@dataclass
class RunResult:
    status: RunStatus
    summary: dict[str, Any]
    tasks_seen: int
    tasks_run: int
    tasks_skipped: int
    tasks_errored: int
    # The full reasons of the first task errors (they may name addresses: operator only).
    error_details: list[str] = field(default_factory=list)


# Settings and fingerprint


def _model_settings(spec: ModelSpec | None) -> dict[str, Any] | None:
    # Timeout and API base choose how and where a model is reached, not what it answers.
    if spec is None:
        return None
    return {
        "model": spec.model,
        "temperature": spec.temperature,
        "max_tokens": spec.max_tokens,
        "system_prompt": spec.system_prompt,
    }


def _uses_critic(benchmark: Benchmark, config: RunConfig) -> bool:
    return config.metric == "seq@k" and benchmark.is_llm_critic_mode(config.feedback_mode)


def result_settings(benchmark: Benchmark, config: RunConfig) -> dict[str, Any]:
    """Every setting that can change a result; its hash is the run's fingerprint."""
    try:
        options = json.loads(json.dumps(dict(config.options), sort_keys=True))
    except (TypeError, ValueError) as error:
        raise ValueError(f"options must be plain JSON values: {error}") from error
    sequential = config.metric == "seq@k"
    return {
        "benchmark": config.benchmark,
        "options": options,
        "metric": config.metric,
        "k": config.k,
        # pass@k gives no feedback: its mode and critic cannot change a result.
        "feedback_mode": config.feedback_mode if sequential else None,
        "actor": _model_settings(config.actor),
        # A benchmark that never calls a judge gets none, so a judge named anyway changes nothing.
        "judge": _model_settings(config.judge) if benchmark.uses_judge_model else None,
        "critic": _model_settings(config.critic) if _uses_critic(benchmark, config) else None,
        "prompt_version": PROMPT_STYLE_VERSIONS[config.prompt_style],
    }


def fingerprint(settings: Mapping[str, Any]) -> str:
    canonical = json.dumps(settings, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    # An empty mapping adds no keys: "options: {} -> (absent)" would only repeat what the
    # keys inside say.
    if isinstance(value, Mapping):
        flat: dict[str, Any] = {}
        for key, item in value.items():
            flat.update(_flatten(item, f"{prefix}.{key}" if prefix else str(key)))
        return flat
    return {prefix: value}


def setting_differences(stored: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """`key: stored -> current` for every dotted setting key that differs."""
    before = _flatten(stored)
    after = _flatten(current)
    missing = object()
    lines = []
    for key in sorted(set(before) | set(after)):
        old, new = before.get(key, missing), after.get(key, missing)
        if old != new:
            shown_old = "(absent)" if old is missing else json.dumps(old)
            shown_new = "(absent)" if new is missing else json.dumps(new)
            lines.append(f"{key}: {shown_old} -> {shown_new}")
    return lines


def check_resume(
    stored: Mapping[str, Any] | None, settings: Mapping[str, Any], *, allow_continue: bool
) -> None:
    """Refuses, with the differences named, a store holding a run of other settings.

    Only k may grow, and only with `allow_continue`: the earlier trials stay valid trials of the
    longer run (a failed seq@k trial always has its feedback, so seq@k continues).
    """
    if stored is None:
        return
    previous = stored.get("settings")
    if not isinstance(previous, Mapping):
        raise RunConfigMismatch(
            "this run folder's config.json was not written by Gauntlet (it has no run "
            "settings), so nothing says its attempts match this run; refusing to add to it. "
            "Read it with `gauntlet eval metrics`, or run into another folder (--runs-root).",
            ["settings"],
        )
    if fingerprint(previous) == fingerprint(settings):
        return
    differences = setting_differences(
        {key: value for key, value in previous.items() if key != "k"},
        {key: value for key, value in settings.items() if key != "k"},
    )
    if differences:
        stored_style = prompt_style_of_version(previous.get("prompt_version"))
        hint = (
            f"\nIts seq@k prompts are worded in the {stored_style!r} prompt style: "
            f"`prompt_style: {stored_style}` in the variant continues it in that wording."
            if stored_style is not None
            and previous.get("prompt_version") != settings.get("prompt_version")
            else ""
        )
        raise RunConfigMismatch(
            "this run folder holds a run made with other settings; refusing to mix results. "
            "Differences (stored -> now):\n  "
            + "\n  ".join(differences)
            + "\nChange them back, or run into another folder (--runs-root)."
            + hint,
            differences,
        )
    old_k, new_k = previous.get("k"), settings.get("k")
    if not isinstance(old_k, int) or not isinstance(new_k, int) or new_k < old_k:
        raise RunConfigMismatch(
            f"this run folder holds a run with k={old_k}; it cannot be rerun with k={new_k}. "
            f"Read a smaller k from it with `gauntlet eval metrics PATH --k {new_k}`.",
            ["k"],
        )
    if not allow_continue:
        raise RunConfigMismatch(
            f"this run folder holds a run with k={old_k}; extending it to k={new_k} needs "
            "`continue: true` in the variant (or --continue). Its trials are kept and reused.",
            ["k"],
        )


def continuing_prompt_style(config: RunConfig, stored: Mapping[str, Any] | None) -> RunConfig:
    """`config` in the prompt style the stored run was begun with, when that is a known style:
    for a caller whose run is one measurement that must read the same to its end (a service
    attempt taken over after an upgrade), not a folder a user chose to continue."""
    settings = stored.get("settings") if stored is not None else None
    if not isinstance(settings, Mapping):
        return config
    style = prompt_style_of_version(settings.get("prompt_version"))
    if style is None or style == config.prompt_style:
        return config
    return replace(config, prompt_style=style)


# Task selection


def task_meta(task: Task) -> dict[str, Any]:
    """What a store keeps about a task: never its answer key (stores get uploaded and shown)."""
    return {
        "task_id": task.task_id,
        "task_index": task.canonical_index,
        "prompt": task.prompt,
        "metadata": task.metadata,
    }


def describe_error(error: BaseException) -> str:
    text = f"{type(error).__name__}: {' '.join(str(error).split())}"
    return text[:_ERROR_TEXT_LIMIT]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


# The run


class _Run:
    def __init__(
        self,
        benchmark: Benchmark,
        config: RunConfig,
        store: RunStore,
        llm: CompletionClient,
        on_event: EventCallback | None,
        slice_name: str,
    ) -> None:
        self.benchmark = benchmark
        self.config = config
        self.store = store
        self.llm = llm
        self.on_event = on_event
        self.slice_name = slice_name
        self.settings = result_settings(benchmark, config)
        self.fingerprint = fingerprint(self.settings)
        self.stats: dict[int, TaskStats] = {}
        self.spent_usd = 0.0
        self.tasks_seen = 0
        self.tasks_run = 0
        self.tasks_skipped = 0
        self.tasks_errored = 0
        self.started = time.perf_counter()
        self.started_at = _now()
        self.last_summary = 0.0
        self.status: RunStatus | Literal["running"] = "running"
        self.record: dict[str, Any] = {}
        # The first refusal of a cost budget (the client's `CallBudget`): no task starts after it.
        self.budget_stop: CostBudgetExhausted | None = None
        # The full reasons of task errors (InfrastructureError.detail), for the operator.
        self.error_details: list[str] = []

    # Events and summaries

    def emit(
        self,
        kind: EventKind,
        task: Task,
        stats: TaskStats,
        trial: TrialRecord | None = None,
        error: str | None = None,
    ) -> None:
        if self.on_event is None:
            return
        try:
            self.on_event(RunEvent(kind=kind, task=task, stats=stats, trial=trial, error=error))
        except Exception:
            # A broken progress display must not lose results.
            logger.exception("run event handler failed")

    @functools.cached_property
    def pricing(self) -> dict[str, Any]:
        """Which prices priced the run, for its summaries. Looked up at the first summary,
        not at the start: reading litellm's package metadata takes ~30 ms, which at the start
        would delay every first call and, once the calls are out, costs nothing but CPU the
        event loop has spare while it waits for them."""
        return {**price_map_info(), "price_overrides": sorted(self.config.prices)}

    def summary(self) -> dict[str, Any]:
        config = self.config
        document = run_summary(
            self.stats.values(),
            metric=config.metric,
            k=config.k,
            prices=config.prices,
        )
        calls_made = getattr(self.llm, "calls_made", None)
        max_in_flight = getattr(self.llm, "max_in_flight", None)
        pricing = dict(self.pricing)
        pricing_last_updated = pricing.pop("pricing_last_updated", None)
        return {
            **seq_k_run_fields(
                document,
                metric=config.metric,
                model=config.actor.model,
                feedback_mode=config.feedback_mode,
                pricing_last_updated=pricing_last_updated,
            ),
            **pricing,
            "benchmark": config.benchmark,
            "slice": self.slice_name,
            "actor": config.actor.model,
            "judge": config.judge.model if config.judge else None,
            "critic": config.critic.model if config.critic else None,
            "fingerprint": self.fingerprint,
            "status": self.status,
            "updated_at": _now(),
            "session": {
                "started_at": self.started_at,
                "wall_time_s": round(time.perf_counter() - self.started, 3),
                "tasks_seen": self.tasks_seen,
                "tasks_run": self.tasks_run,
                "tasks_skipped": self.tasks_skipped,
                "tasks_errored": self.tasks_errored,
                # Every try, retries included; `calls` above counts recorded calls.
                "calls_made": calls_made if isinstance(calls_made, int) else None,
                "max_in_flight": max_in_flight if isinstance(max_in_flight, int) else None,
            },
        }

    def task_summary(self, stats: TaskStats) -> dict[str, Any]:
        return stats.to_summary(
            self.config.metric,
            self.config.k,
            pricing_last_updated=self.pricing.get("pricing_last_updated"),
            prices=self.config.prices,
        )

    async def write_summary(self, *, force: bool = False) -> dict[str, Any] | None:
        now = time.perf_counter()
        if not force and now - self.last_summary < SUMMARY_INTERVAL_S:
            return None
        self.last_summary = now
        document = self.summary()
        await self.store.save_run_summary(document)
        return document

    # Start and end

    async def begin(self) -> None:
        stored = await self.store.load_config()
        check_resume(stored, self.settings, allow_continue=self.config.allow_continue)
        record = dict(stored or {})
        history = [value for value in record.get("k_history", []) if isinstance(value, int)]
        if not history or history[-1] != self.config.k:
            history.append(self.config.k)
        sessions = [item for item in record.get("sessions", []) if isinstance(item, dict)]
        sessions.append({"started_at": self.started_at, "status": "running"})
        seq_k_config = self.seq_k_config()
        record = {
            **seq_k_config,
            **{key: value for key, value in record.items() if key not in seq_k_config},
        }
        record.update(
            {
                "fingerprint": self.fingerprint,
                "settings": self.settings,
                "k_history": history,
                "slice": self.slice_name,
                "benchmark_verifier": self.benchmark.verifier_name,
                "created_at": record.get("created_at", self.started_at),
                "sessions": sessions,
            }
        )
        self.record = record
        await self.store.save_config(record)

    @functools.cached_property
    def critic_section_model(self) -> str | None:
        """The critic model an attempt's `critic` section names: the critic of an LLM-critic
        mode (seq_k's rule), else none."""
        config = self.config
        if config.critic is None or not self.benchmark.is_llm_critic_mode(config.feedback_mode):
            return None
        return config.critic.model

    def seq_k_config(self) -> dict[str, Any]:
        """The run's settings as seq_k's config.json freezes them (its `init_run`), first in
        the run record: the benchmark's module, the metric, k, the feedback mode (for pass@k
        too: its attempt files carry it), the actor, judge and critic models (the judge
        defaulting to the actor's, the critic to the judge's), the actor's temperature and the
        options as given."""
        config = self.config
        judge_model = config.judge.model if config.judge else config.actor.model
        return {
            "benchmark": self.benchmark.module.__name__,
            "metric": config.metric,
            "k": config.k,
            "feedback_mode": config.feedback_mode,
            "model": config.actor.model,
            "judge_model": judge_model,
            "critic_model": config.critic.model if config.critic else judge_model,
            "temperature": config.actor.temperature,
            "options": json.loads(json.dumps(dict(config.options))),
        }

    async def end(self, status: RunStatus) -> dict[str, Any]:
        self.status = status
        document = await self.write_summary(force=True)
        assert document is not None
        sessions = self.record.get("sessions") or [{}]
        sessions[-1].update(
            {
                "finished_at": _now(),
                "status": status,
                "wall_time_s": document["session"]["wall_time_s"],
                "tasks_run": self.tasks_run,
                "calls_made": document["session"]["calls_made"],
            }
        )
        await self.store.save_config(self.record)
        return document

    # One task

    def steps_for(self, task: Task) -> TrialSteps:
        benchmark, config, llm = self.benchmark, self.config, self.llm
        judge_model = config.judge.model if config.judge and benchmark.uses_judge_model else None
        critic_model = config.critic.model if config.critic else None
        mode = config.feedback_mode

        async def act(messages: list[Message], attempt_index: int) -> ActorSection:
            if not benchmark.has_run_attempt:
                return await llm.complete(config.actor, messages)
            with recording_calls() as calls:
                value = await benchmark.run_attempt(task, messages, actor=config.actor)
            if isinstance(value, CallRecord):
                return value
            costs = [call.cost_usd for call in calls]
            return ActorSection(
                model=config.actor.model,
                prompt=messages,
                output=value,
                input_tokens=sum(call.input_tokens for call in calls),
                cached_tokens=sum(call.cached_tokens for call in calls),
                thinking_tokens=sum(call.thinking_tokens for call in calls),
                output_tokens=sum(call.output_tokens for call in calls),
                cost_usd=None
                if any(cost is None for cost in costs)
                else math.fsum(cost for cost in costs if cost is not None),
                # The model calls' time only: the benchmark's own work (tools, environments)
                # is not the actor's, and must not rank one model behind another.
                elapsed_ms=sum(call.elapsed_ms for call in calls),
            )

        async def verify(
            actor: ActorSection, attempt_index: int
        ) -> tuple[JudgeSection, VerifierResult]:
            view = AttemptView(
                output=actor.output, attempt_index=attempt_index, prompt=actor.prompt
            )
            with recording_calls() as calls:
                result = await benchmark.verify(task, view, judge_model=judge_model)
            if benchmark.verifier_name == DETERMINISTIC and result.score not in (0.0, 1.0):
                # The run-folder contract: a deterministic verifier scores 0/1, and the
                # research harness's curves read that score; partial credit stays in details.
                result = replace(
                    result,
                    score=1.0 if result.success else 0.0,
                    details={**result.details, "partial_score": result.score},
                )
            # Calls made through `complete` are recorded; a verifier that also lists them in
            # its result (LLMJudgeVerifier does) must not count them twice.
            extra = [call for call in result.calls if not any(call is seen for seen in calls)]
            all_calls = [*calls, *extra]
            # seq_k names the judge model of an LLM verifier whether or not it was called;
            # another verifier is named by the model it called, if any (none: deterministic).
            model = (
                judge_model
                if benchmark.verifier_name == "llm"
                else (all_calls[0].model if all_calls else None)
            )
            return judge_section(replace(result, calls=all_calls), model), result

        async def feedback(trial: TrialRecord, result: VerifierResult) -> CriticSection:
            view = AttemptView(
                output=trial.actor.output,
                attempt_index=trial.attempt_index,
                prompt=trial.actor.prompt,
            )
            if benchmark.handles_feedback_mode(mode):
                with recording_calls() as calls:
                    text = await benchmark.feedback(
                        task, view, result, mode, critic_model=critic_model
                    )
                return CriticSection(
                    model=self.critic_section_model or (calls[0].model if calls else None),
                    feedback=text,
                    calls=[call.to_dict() for call in calls],
                )
            if mode in CRITIC_FEEDBACK_MODES and config.critic is not None:
                text, critic_calls = await critic_feedback(
                    mode,
                    llm=llm,
                    critic=config.critic,
                    task_prompt=task.prompt,
                    output=trial.actor.output,
                    result=result,
                )
                return CriticSection(
                    model=config.critic.model,
                    feedback=text,
                    calls=[call.to_dict() for call in critic_calls],
                )
            return CriticSection(feedback=render_feedback(mode, result))

        return TrialSteps(act=act, verify=verify, feedback=feedback)

    async def run_task(self, task: Task) -> None:
        config = self.config
        existing = await self.store.load_trials(task)
        stats = TaskStats.from_trials(
            task.canonical_index, task.task_id, (trial_view(trial) for trial in existing)
        )
        stats.figures = task_figures(task.metadata)
        self.stats[task.canonical_index] = stats
        self.spent_usd += _known_cost(stats)
        if stats.outcome.is_complete(config.metric, config.k):
            stats.status = "done"
            self.tasks_skipped += 1
            # Rewritten so a summary one trial behind (a crash between the two writes) heals.
            await self.store.save_task_summary(task, self.task_summary(stats))
            self.emit("task_skipped", task, stats)
            return

        self.tasks_run += 1
        if not existing:
            await self.store.save_task_meta(task, task_meta(task))
        self.emit("task_started", task, stats)

        async def on_trial(trial: TrialRecord) -> None:
            if trial.critic.model is None and self.critic_section_model is not None:
                # As seq_k: an LLM-critic mode's attempts name its critic, asked or not.
                trial.critic.model = self.critic_section_model
            await self.store.save_trial(task, trial)
            trial_data = trial_view(trial)
            stats.add_trial(trial_data)
            self.spent_usd += _trial_cost(trial_data)
            await self.store.save_task_summary(task, self.task_summary(stats))
            self.emit("trial", task, stats, trial=trial)

        try:
            await run_trial_loop(
                task_prompt=task.prompt,
                metric=config.metric,
                k=config.k,
                steps=self.steps_for(task),
                existing=existing,
                on_trial=on_trial,
                prompt_style=config.prompt_style,
            )
        except CostBudgetExhausted as stop:
            # Not the task's failure: a budget stops the run. What ran is kept; the task stays
            # unfinished (unsolved in the metrics) and a rerun continues it.
            self.budget_stop = self.budget_stop or stop
            stats.error = str(stop)
            await self.store.save_task_summary(task, self.task_summary(stats))
            return
        except Exception as error:
            # One task's failure (a provider down after retries, a benchmark bug on one row)
            # must not throw away the other tasks' work; a rerun retries this task.
            stats.status = "error"
            stats.error = describe_error(error)
            self.tasks_errored += 1
            if len(self.error_details) < _ERROR_DETAILS_KEPT:
                detail = getattr(error, "detail", None)
                self.error_details.append(
                    f"task {task.canonical_index}: "
                    + (detail if isinstance(detail, str) else stats.error)
                )
            await self.store.save_task_summary(task, self.task_summary(stats))
            self.emit("task_error", task, stats, error=stats.error)
            logger.warning("task %s failed: %s", task.canonical_index, stats.error)
            if self.tasks_errored > config.max_task_errors:
                raise RunAborted(
                    f"{self.tasks_errored} tasks failed (more than max_task_errors="
                    f"{config.max_task_errors}); last: {stats.error}"
                ) from error
            return
        stats.status = "done"
        stats.error = None
        await self.store.save_task_summary(task, self.task_summary(stats))
        self.emit("task_done", task, stats)
        await self.write_summary()

    def over_budget(self) -> bool:
        if self.budget_stop is not None:
            return True
        budget = self.config.cost_budget_usd
        return budget is not None and self.spent_usd >= budget

    async def run(self, tasks: Iterable[Task]) -> RunStatus:
        limit = self.config.tasks_in_flight
        if limit is None:
            global_cap = getattr(self.llm, "global_concurrency", None)
            # Twice the cap keeps the cap busy while some tasks verify or write.
            limit = 2 * global_cap if isinstance(global_cap, int) and global_cap > 0 else 100
        gate = asyncio.Semaphore(max(1, limit))
        status: RunStatus = "complete"

        async def guarded(task: Task) -> None:
            try:
                await self.run_task(task)
            finally:
                gate.release()

        try:
            async with asyncio.TaskGroup() as group:
                for task in tasks:
                    await gate.acquire()
                    if self.over_budget():
                        gate.release()
                        status = "budget_exhausted"
                        break
                    self.tasks_seen += 1
                    group.create_task(guarded(task))
                    # Lets the task start (and make its first call) before the next one is
                    # loaded: a call goes out while the later tasks are read, not after.
                    await asyncio.sleep(0)
        except BaseExceptionGroup as failure:
            # Task errors are caught inside run_task; what escapes is an abort or a store
            # failure (a full disk), raised as itself rather than wrapped.
            aborted = failure.subgroup(RunAborted)
            raise (aborted or failure).exceptions[0] from None
        if self.budget_stop is not None:
            if self.budget_stop.scope == "tenant":
                # The tenant's budget, not this run's: the run did not end, it was interrupted.
                raise self.budget_stop
            return "budget_exhausted"
        if status == "complete" and self.tasks_errored:
            return "incomplete"
        return status


def _trial_cost(trial: Mapping[str, Any]) -> float:
    total = 0.0
    for _, call in trial_calls(trial):
        cost = call.get("cost_usd")
        if isinstance(cost, int | float) and not isinstance(cost, bool) and math.isfinite(cost):
            total += cost
    return total


def _known_cost(stats: TaskStats) -> float:
    total = 0.0
    for models in stats.usage.values():
        for totals in models.values():
            if totals.cost_usd is not None:
                total += totals.cost_usd
    return total


def check_config(benchmark: Benchmark, config: RunConfig) -> None:
    """ValueError naming what is wrong with `config` for `benchmark`, before anything runs."""
    if config.metric not in METRICS:
        raise ValueError(f"metric must be one of {sorted(METRICS)}, got {config.metric!r}")
    if isinstance(config.k, bool) or not isinstance(config.k, int) or config.k < 1:
        raise ValueError(f"k must be an int of at least 1, got {config.k!r}")
    if config.prompt_style not in PROMPT_STYLE_VERSIONS:
        raise ValueError(
            f"unknown prompt style {config.prompt_style!r}; "
            f"known: {', '.join(sorted(PROMPT_STYLE_VERSIONS))}"
        )
    critic_model = config.critic.model if config.critic else None
    known = benchmark.known_feedback_modes(critic_model=critic_model)
    mode = config.feedback_mode
    if mode not in known:
        if benchmark.is_llm_critic_mode(mode) and critic_model is None:
            raise ValueError(f"feedback mode {mode!r} calls a critic model: set critic_model")
        raise ValueError(
            f"unknown feedback mode {mode!r} for benchmark {benchmark.name}; "
            f"known: {', '.join(sorted(known))}"
        )
    if benchmark.verifier_name == "llm" and config.judge is None:
        raise ValueError(f"benchmark {benchmark.name} verifies with an LLM: set judge_model")
    if config.max_tasks is not None and config.max_tasks < 1:
        raise ValueError(f"max_tasks must be at least 1, got {config.max_tasks}")


async def run_benchmark(
    benchmark: Benchmark,
    config: RunConfig,
    store: RunStore,
    llm: CompletionClient,
    *,
    tasks: Iterable[Task] | None = None,
    on_event: EventCallback | None = None,
) -> RunResult:
    """Runs the variant `config` of `benchmark` into `store`; see the module docstring.

    `tasks` overrides the selection (default: the benchmark's tasks filtered by the config's
    `task_indices` and `max_tasks`, streamed). Raises `RunConfigMismatch` before anything runs
    when the store holds another run, `RunAborted` after too many task errors. Cancelling
    (Ctrl-C) stops cleanly: finished trials are stored and the summary says "stopped".
    """
    check_config(benchmark, config)
    slice_name = benchmark.slice_name(config.options)
    run = _Run(benchmark, config, store, llm, on_event, slice_name)
    await run.begin()
    selected = (
        tasks
        if tasks is not None
        else select_tasks(
            benchmark.iter_tasks(config.options),
            task_indices=config.task_indices,
            max_tasks=config.max_tasks,
        )
    )
    status: RunStatus = "stopped"
    try:
        with use_models(llm, config.judge, config.critic, config.actor):
            status = await run.run(selected)
    except RunAborted:
        status = "aborted"
        raise
    finally:
        # Also on cancellation: the summary and the session record say where the run stopped.
        summary = await run.end(status)
    return RunResult(
        status=status,
        summary=summary,
        tasks_seen=run.tasks_seen,
        tasks_run=run.tasks_run,
        tasks_skipped=run.tasks_skipped,
        tasks_errored=run.tasks_errored,
        error_details=run.error_details,
    )


class MemoryRunStore:
    """A `RunStore` in memory: for tests, benchmarks and callers that keep results themselves."""

    def __init__(self) -> None:
        self.config: dict[str, Any] | None = None
        self.trials: dict[int, dict[int, TrialRecord]] = {}
        self.task_meta: dict[int, dict[str, Any]] = {}
        self.task_summaries: dict[int, dict[str, Any]] = {}
        self.run_summary: dict[str, Any] | None = None
        self.saved_trials = 0

    async def load_config(self) -> dict[str, Any] | None:
        return json.loads(json.dumps(self.config)) if self.config is not None else None

    async def save_config(self, config: dict[str, Any]) -> None:
        self.config = json.loads(json.dumps(config))

    async def load_trials(self, task: Task) -> list[TrialRecord]:
        return list(self.trials.get(task.canonical_index, {}).values())

    async def save_trial(self, task: Task, trial: TrialRecord) -> None:
        trials = self.trials.setdefault(task.canonical_index, {})
        if trial.attempt_index in trials:
            raise FileExistsError(
                f"task {task.canonical_index} already has attempt {trial.attempt_index}"
            )
        trials[trial.attempt_index] = trial
        self.saved_trials += 1

    async def save_task_meta(self, task: Task, meta: dict[str, Any]) -> None:
        self.task_meta[task.canonical_index] = meta

    async def save_task_summary(self, task: Task, summary: dict[str, Any]) -> None:
        self.task_summaries[task.canonical_index] = summary

    async def save_run_summary(self, summary: dict[str, Any]) -> None:
        self.run_summary = summary
