"""Benchmark challenges: participants submit a model spec; the evaluation engine runs it on a
benchmark's tasks with pass@k or seq@k, and it ranks by the curve at k."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, ClassVar

from fastapi import APIRouter
from sqlalchemy.orm import Session

from app.kinds.api import (
    SEALED_MEASURES,
    AttemptJob,
    AttemptMetrics,
    ChallengeTemplate,
    Conflict,
    Kind,
    KindConfig,
    KindMetrics,
    KindSubmission,
    NamedModel,
    RunContext,
    RunPurpose,
    RunsAttempts,
    Settings,
    ShownFields,
    Strategy,
    SubmissionTarget,
    Submitted,
    UnitOfWork,
    UnscoredRequest,
    ValidationFailed,
    checked_api_base,
    fields_as,
    get_settings,
    refuse_unreachable,
)
from app.kinds.api.error_codes import SPLIT_FROZEN
from app.kinds.api.evaluation import (
    Benchmark,
    BenchmarkError,
    DataFileNotFound,
    confined_data_files,
)
from app.kinds.api.services import config_of
from app.kinds.api.storage import Challenge
from app.kinds.benchmark import private_part, web
from app.kinds.benchmark.challenge_templates import benchmark_templates
from app.kinds.benchmark.config import (
    BenchmarkConfig,
    BenchmarkSpec,
    SplitConfig,
    StoredFields,
    shown_fields,
)
from app.kinds.benchmark.dispatch import SWEEP_TASK
from app.kinds.benchmark.models import SealedRunStatus
from app.kinds.benchmark.repository import BenchmarkRepository
from app.kinds.benchmark.schemas import (
    BenchmarkMeasures,
    BenchmarkSubmission,
    BenchmarkTrialRun,
    SealedMeasures,
)
from app.kinds.benchmark.split import SplitTooSmall, parts_of


def _config(config: KindConfig) -> BenchmarkConfig:
    if not isinstance(config, BenchmarkConfig):
        raise TypeError(f"a benchmark challenge's configuration, not {type(config).__name__}")
    return config


def _check_benchmark(config: BenchmarkConfig) -> None:
    """The benchmark exists, its options load tasks, and it knows the feedback mode."""
    spec = config.benchmark
    try:
        benchmark = Benchmark.load(spec.name)
    except BenchmarkError as exc:
        raise ValidationFailed.at(["benchmark", "name"], str(exc)) from exc
    for key, value in spec.options.items():
        if key in benchmark.path_options:
            continue  # resolved inside the data folders only, with one answer for all misses
        # Workers run with the service's files; a tenant must not point a benchmark at them.
        if isinstance(value, str) and (
            "/" in value or "\\" in value or value.startswith((".", "~"))
        ):
            raise ValidationFailed.at(
                ["benchmark", "options", key],
                "file paths are not accepted here; name a file bundled with the benchmark",
            )
    try:
        with confined_data_files(get_settings().benchmark_data_dir):
            first = next(iter(benchmark.iter_tasks(spec.options)), None)
    except DataFileNotFound as exc:
        raise ValidationFailed.at(["benchmark", "options", exc.option], str(exc)) from exc
    except Exception as exc:
        raise ValidationFailed.at(
            ["benchmark", "options"], f"the benchmark cannot load tasks: {exc}"
        ) from exc
    if first is None:
        raise ValidationFailed.at(["benchmark", "options"], "these options select no task")
    if config.evaluation.metric == "seq@k":
        mode = config.evaluation.feedback_mode
        known = benchmark.known_feedback_modes(critic_model=spec.critic_model)
        if mode not in known:
            raise ValidationFailed.at(
                ["evaluation", "feedback_mode"],
                f"'{mode}' is not a feedback mode of '{spec.name}' with these models; "
                f"known: {', '.join(sorted(known))}",
            )
    if benchmark.verifier_name == "llm" and spec.judge_model is None:
        raise ValidationFailed.at(["benchmark", "judge_model"], "this benchmark needs a judge")


def _check_task(config: BenchmarkConfig, task_index: int) -> None:
    """The task is one the challenge runs (a 422 naming `task_index` otherwise)."""
    spec = config.benchmark
    if spec.task_indices and task_index not in spec.task_indices:
        raise ValidationFailed.at(["task_index"], "this challenge does not run that task")
    with confined_data_files(get_settings().benchmark_data_dir):
        tasks = Benchmark.load(spec.name).iter_tasks(spec.options)
        if not any(task.canonical_index == task_index for task in tasks):
            raise ValidationFailed.at(["task_index"], "the benchmark has no task of that index")


def _check_split(spec: BenchmarkSpec, split: SplitConfig) -> None:
    """A split has a task in each part (a 422 naming `split` otherwise)."""
    try:
        parts_of(spec, split, get_settings().benchmark_data_dir)
    except SplitTooSmall as exc:
        raise ValidationFailed.at(
            ["split"], "a split needs at least two tasks: this challenge runs one"
        ) from exc


def _split_change(before: SplitConfig | None, after: SplitConfig | None) -> list[str] | None:
    """The path of what an edit changes of the split that decides which tasks are sealed
    (None: nothing). `final_submissions` is not such a part: no stored result depends on it."""
    if before is None and after is None:
        return None
    if before is None or after is None:
        return ["split"]
    for name in ("public_fraction", "seed"):
        if getattr(before, name) != getattr(after, name):
            return ["split", name]
    return None


def _check_split_edit(
    session: Session, challenge: Challenge, before: BenchmarkConfig, after: BenchmarkConfig
) -> None:
    """A split stays as it is once the challenge has submissions: theirs were stored sealed
    by it (tasks, trials, the private part's measures), and a new split would apply to new
    runs only, leaving the private board ranking two splits at once (409 naming the field)."""
    path = _split_change(before.split, after.split)
    if path is None:
        return
    entries = BenchmarkRepository(session, challenge.tenant_id).entry_count(challenge.id)
    if entries == 0:
        return
    where = ".".join(path)
    message = (
        f"{where}: cannot change once the challenge has submissions ({entries}): their "
        "private-part results were sealed by the split they ran under, and the private board "
        "would mix two splits. Only split.final_submissions may still change; duplicate the "
        "challenge to run another split."
    )
    raise Conflict(
        message,
        code=SPLIT_FROZEN,
        details=[{"loc": ["body", *path], "msg": message, "type": "conflict"}],
    )


class BenchmarkKind(web.BenchmarkPages, RunsAttempts, Kind):
    name: ClassVar[str] = "benchmark"
    title: ClassVar[str] = "Benchmark"
    description: ClassVar[str] = "Participants submit a model; it runs on a benchmark's tasks."
    config_model: ClassVar[type[KindConfig]] = BenchmarkConfig
    model_modules: ClassVar[tuple[str, ...]] = ("app.kinds.benchmark.models",)
    # A split challenge's private parts run as tasks of their own, re-sent by a sweep.
    task_modules: ClassVar[tuple[str, ...]] = ("app.kinds.benchmark.tasks",)
    periodic_tasks: ClassVar[Mapping[str, tuple[str, float]]] = {
        "sweep": (SWEEP_TASK, get_settings().sweep_interval_seconds)
    }
    strategies: ClassVar[tuple[Strategy, ...]] = (Strategy.METRIC_AT_K, Strategy.CUSTOM)
    default_strategy: ClassVar[Strategy] = Strategy.METRIC_AT_K
    reads_show_trials: ClassVar[bool] = False
    submission_model: ClassVar[type[KindSubmission]] = BenchmarkSubmission
    # Practice and test runs: the model on one task (the first, or the one named).
    unscored_model: ClassVar[type[KindSubmission] | None] = BenchmarkTrialRun

    # Configuration ------------------------------------------------------------------------

    def templates(self) -> Sequence[ChallengeTemplate]:
        return benchmark_templates()

    def prepare(self, config: KindConfig) -> KindConfig:
        benchmark = _config(config)
        api_base = checked_api_base(
            benchmark.benchmark.actor_api_base, ["benchmark", "actor_api_base"]
        )
        _check_benchmark(benchmark)
        spec = benchmark.benchmark.model_copy(update={"actor_api_base": api_base})
        if benchmark.split is not None:
            _check_split(spec, benchmark.split)
        return benchmark.model_copy(update={"benchmark": spec})

    def check_edit(
        self, session: Session, challenge: Challenge, before: KindConfig, after: KindConfig
    ) -> None:
        _check_split_edit(session, challenge, _config(before), _config(after))

    def named_models(self, config: KindConfig) -> Sequence[NamedModel]:
        spec = _config(config).benchmark
        models = [
            NamedModel(("benchmark", role), model)
            for role, model in (
                ("judge_model", spec.judge_model),
                ("critic_model", spec.critic_model),
            )
            if model is not None
        ]
        models.extend(
            NamedModel(("benchmark", "allowed_models", position), pattern, pattern=True)
            for position, pattern in enumerate(spec.allowed_models or ())
        )
        return models

    def public_sections(self, config: KindConfig) -> dict[str, Any]:
        # The server the models are called at is the operator's and the admin's business, as
        # a prompt challenge's target.api_base is.
        sections = _config(config).model_dump(mode="json")
        sections["benchmark"].pop("actor_api_base", None)
        if sections.get("split"):
            # Which tasks are private is the organizer's to know.
            sections["split"].pop("seed", None)
        return sections

    def private_board_revealed(self, session: Session, challenge: Challenge, now: datetime) -> bool:
        # A split challenge's private board is revealed at the close.
        closed = challenge.closes_at is not None and challenge.closes_at <= now
        return closed and _config(config_of(challenge)).split is not None

    def api_routers(self) -> Sequence[APIRouter]:
        # Final submissions and the private board load with the API's routes, not the worker.
        from app.kinds.benchmark.router import router

        return (router,)

    # Submissions and runs -----------------------------------------------------------------

    def submission(
        self,
        target: SubmissionTarget,
        fields: KindSubmission,
        config: Callable[[], KindConfig],
    ) -> Submitted:
        submitted = fields_as(fields, BenchmarkSubmission)
        model = submitted.model
        spec = _config(config()).benchmark
        actor_base = "the challenge's actor_api_base"
        refuse_unreachable(
            [NamedModel(("model",), model, api_base=spec.actor_api_base, base_field=actor_base)]
        )
        if not spec.allows_model(model):
            patterns = ", ".join(spec.allowed_models or [])
            raise ValidationFailed.at(
                ["model"], f"this challenge accepts only models matching: {patterns}"
            )
        stored = StoredFields(
            model=model, temperature=submitted.temperature, system_prompt=submitted.system_prompt
        )
        return Submitted(kind_fields=stored.model_dump(mode="json", exclude_none=True))

    def unscored(self, request: UnscoredRequest) -> Submitted:
        fields = fields_as(request.fields, BenchmarkTrialRun)
        # Its model spec is checked as a submission's (a BenchmarkSubmission with one more field).
        submitted = self.submission(request.target, fields, request.config)
        task_index = fields.task_index
        if task_index is not None:
            _check_task(_config(request.config()), task_index)
        config = _config(request.config())
        if request.purpose is RunPurpose.PRACTICE and config.split is not None:
            # Practice shows the exact reply and verdict: never on the private part's tasks.
            parts = parts_of(config.benchmark, config.split, get_settings().benchmark_data_dir)
            if task_index is None:
                task_index = parts.first_public_index
            elif task_index in parts.private_indices:
                raise ValidationFailed.at(
                    ["task_index"],
                    "this task is in the challenge's private part: practise on a public one",
                )
        stored = dict(submitted.kind_fields or {})
        if task_index:
            stored["task_index"] = task_index
        return Submitted(kind_fields=stored)

    def shown(self, kind_fields: dict[str, Any] | None) -> ShownFields:
        return shown_fields(kind_fields)

    def cost_budget_usd(self, config: KindConfig, settings: Settings) -> float:
        return _config(config).benchmark.cost_budget(settings)

    async def run(self, context: RunContext) -> AttemptMetrics:
        # The engine's runner is the worker's: the API loads the kind, never the run.
        from app.kinds.benchmark import run

        return await run.run(context, _config(context.job.config))

    def measure_own(
        self, session: Session, job: AttemptJob, metrics: AttemptMetrics
    ) -> KindMetrics | None:
        """On a split challenge, the attempt's private part: queued, to run once the attempt
        has completed (`after_completion`); its results, once a private run wrote them,
        are kept."""
        config = _config(job.config)
        if config.split is None or not job.purpose.scored:
            return None
        own = BenchmarkRepository(session, job.tenant_id).own_measures(job.attempt_id)
        stored = (own or {}).get(SEALED_MEASURES)
        if isinstance(stored, dict) and stored.get("status", "completed") == "completed":
            return BenchmarkMeasures(sealed=SealedMeasures.model_validate(stored))
        return BenchmarkMeasures(sealed=SealedMeasures(status=SealedRunStatus.QUEUED))

    def after_completion(self, work: UnitOfWork, job: AttemptJob) -> None:
        """A split challenge's scored attempt has run its public part: its private part runs
        now, as a run of its own (app/kinds/benchmark/sealed.py)."""
        config = _config(job.config)
        if config.split is None or not job.purpose.scored:
            return
        private_part.start(work, job.attempt_id, job.tenant_id, job.challenge_id)


KIND = BenchmarkKind()
