"""The benchmark contract: what a package `benchmarks/<name>/` provides, and how models are called.

A benchmark is a plain Python package (the same contract the pass@k/seq@k research harness uses;
docs/engine.md, "Benchmarks"). Module-level names:

- `VERIFIER: str` (required): how it verifies, `"llm"` (needs a judge model), `"deterministic"`
  (rules alone: a 0/1 score, partial credit kept in `details`), or any short name. It names the
  run folder's verifier level of a benchmark that grades without a judge model.
- `USES_JUDGE_MODEL: bool` (optional; default: `VERIFIER == "llm"`): whether `verify` may call
  the judge model (a rubric with an LLM fallback, say). Only then is the judge model given to
  `verify`, part of the run's fingerprint and the run folder's verifier level; a benchmark that
  never calls one gets `judge_model=None`, so a judge named by a variant cannot change its runs.
- `load_tasks(**options) -> Iterable[Task]` (required): the tasks, each with a 1-based,
  stable `canonical_index` (a task keeps its index across runs and releases, since run folders
  and stored trials are keyed by it). A generator is welcome: the runner iterates lazily, so a
  benchmark of 10,000 tasks never has all its prompts in memory at once. A task's `metadata`
  is public; its optional `figures` (name to number) are measurements other than the grade,
  averaged in the run summary beside the curves (memory_qa's retrieval recall).
- `verify(task, attempt, *, judge_model) -> VerifierResult` (required): `attempt` is an
  `AttemptView` (the actor's output, its attempt index and the exact prompt it saw);
  `judge_model` is the configured judge model id or None. `raw_eval_output` is public (it may
  become feedback to the actor); `details` are private. Sync or `async def`.
- `slice_name(options) -> str` (optional; default: the benchmark name): which slice of the
  benchmark `options` select; the first level of a run folder.
- `FEEDBACK_MODES: set[str]` (optional): benchmark-specific feedback modes, in addition to the
  generic ones (`binary`, `raw`, `compact`, `judge`, and with a critic model `socratic`,
  `directive`; see app.evaluation.engine.feedback and app.evaluation.engine.critic).
- `LLM_CRITIC_MODES: set[str]` (optional): those of its modes that call a critic model. They
  need `critic_model` and name the run folder's feedback level after it.
- `feedback(task, attempt, result, mode, *, critic_model) -> str` (required when the
  benchmark has modes of its own): the feedback text of a failed attempt under one of its own
  modes. It must never reveal `task.answer` or `result.details`. Sync or `async def`.
- `PATH_OPTIONS: set[str]` (optional): the options that name data files or folders. The
  benchmark resolves them with `resolve_data_path`, which the service confines to the
  operator's data folder (setting GAUNTLET_BENCHMARK_DATA_DIR) and the benchmark's bundled
  data; the service refuses file paths in every other option.
- `run_attempt(task, messages, *, actor) -> str | CallRecord` (optional, agentic benchmarks):
  replaces the single actor call. It calls the actor (and tools) itself through `complete`; the
  engine records those calls as the attempt's actor usage. Returning a `CallRecord` takes it as
  the actor record as is.
- `variants/*.yaml`: the runnable configurations (`gauntlet eval run VARIANT.yaml`).

Model calls inside a benchmark (an LLM judge in `verify`, a critic in `feedback`, the actor in
`run_attempt`) go through `complete(model, messages)`, never through litellm directly: it uses
the run's `LLMClient` (so the run's concurrency caps, retries and accounting hold) and the role's
`ModelSpec` (temperature, timeout, API base), and the call is recorded into the trial's
`judge.calls` / `critic.calls`. `run_model_client` offers the same as a `CompletionClient`, for
code such as `LLMJudgeVerifier` that takes one. `verify` and `feedback` that call models must be
`async def`: a sync one runs inline on the event loop and must be quick and pure (no I/O, no
model calls).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import pkgutil
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from types import ModuleType
from typing import Any

from app.evaluation.engine.feedback import CRITIC_FEEDBACK_MODES, known_feedback_modes
from app.evaluation.engine.llm import CompletionClient
from app.evaluation.engine.types import CallRecord, Message, ModelSpec, VerifierResult

BENCHMARKS_PACKAGE = "benchmarks"
_BENCHMARK_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass
class Task:
    """One task of a benchmark. `answer` is the answer key: the actor never sees it."""

    task_id: str
    canonical_index: int  # 1-based, stable across runs
    prompt: str
    answer: Any = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if (
            isinstance(self.canonical_index, bool)
            or not isinstance(self.canonical_index, int)
            or self.canonical_index < 1
        ):
            raise ValueError(
                f"task {self.task_id!r}: canonical_index must be an int of at least 1, "
                f"got {self.canonical_index!r}"
            )


@dataclass(frozen=True)
class AttemptView:
    """What `verify` and `feedback` see of one attempt: the actor's output and its prompt."""

    output: str
    attempt_index: int  # 1-based
    prompt: list[Message]


# Model calls from inside a benchmark


@dataclass(frozen=True)
class _RunModels:
    llm: CompletionClient
    specs: Mapping[str, ModelSpec]  # model id -> the role's spec


_run_models: ContextVar[_RunModels | None] = ContextVar("gauntlet_run_models", default=None)
_call_recorder: ContextVar[list[CallRecord] | None] = ContextVar(
    "gauntlet_call_recorder", default=None
)


@contextlib.contextmanager
def use_models(llm: CompletionClient, *specs: ModelSpec | None) -> Iterator[None]:
    """Within the block (and tasks created in it), `complete` calls models through `llm`.

    `specs` are the run's role specs (judge, critic, actor): a call naming one of their models
    uses that spec's temperature, timeout and API base.
    """
    by_model: dict[str, ModelSpec] = {}
    for spec in specs:
        if spec is not None:
            by_model.setdefault(spec.model, spec)
    token = _run_models.set(_RunModels(llm=llm, specs=by_model))
    try:
        yield
    finally:
        _run_models.reset(token)


@contextlib.contextmanager
def recording_calls() -> Iterator[list[CallRecord]]:
    """Collects every `complete` call made within the block, in the order they finish."""
    calls: list[CallRecord] = []
    token = _call_recorder.set(calls)
    try:
        yield calls
    finally:
        _call_recorder.reset(token)


def resolve_spec(model: str | ModelSpec, *, temperature: float | None = None) -> ModelSpec:
    """The spec a call to `model` uses under the current run.

    A model that a role of the run names uses the role's spec; the caller's temperature applies
    only where the role's spec sets none (the variant's choice wins). Any other model gets a
    plain spec.
    """
    context = _run_models.get()
    requested = model if isinstance(model, ModelSpec) else ModelSpec(model=model)
    wanted_temperature = temperature if temperature is not None else requested.temperature
    role = context.specs.get(requested.model) if context is not None else None
    if role is None:
        return replace(requested, temperature=wanted_temperature)
    if role.temperature is None and wanted_temperature is not None:
        return replace(role, temperature=wanted_temperature)
    return role


async def complete(
    model: str | ModelSpec, messages: list[Message], *, temperature: float | None = None
) -> CallRecord:
    """One model call through the run's client, recorded into the current trial's calls."""
    context = _run_models.get()
    if context is None:
        raise RuntimeError(
            "benchmark.complete() called outside a run: benchmarks call models only from "
            "verify/feedback/run_attempt while the engine runs them"
        )
    record = await context.llm.complete(resolve_spec(model, temperature=temperature), messages)
    calls = _call_recorder.get()
    if calls is not None:
        calls.append(record)
    return record


class RunModelClient:
    """A `CompletionClient` that calls through `complete`, for code that takes a client."""

    async def complete(self, spec: ModelSpec, messages: list[Message]) -> CallRecord:
        return await complete(spec, messages)


run_model_client = RunModelClient()


# Data files named by options


class DataFileNotFound(ValueError):
    """An option names no data file the benchmark may read. The message is the same whether
    the name is missing, outside the allowed folders or of the wrong kind, so the service's
    files cannot be probed through it."""

    def __init__(self, option: str, name: str) -> None:
        super().__init__(f"no data file {name!r} in this server's benchmark data folder")
        self.option = option


_data_root: ContextVar[tuple[Path | None] | None] = ContextVar("gauntlet_data_root", default=None)


@contextlib.contextmanager
def confined_data_files(root: Path | None) -> Iterator[None]:
    """Within the block (and tasks created in it), benchmarks read data files named by options
    only from `root` (the operator's data folder; None: none) and from their bundled data.
    The service runs tenant benchmarks this way; the CLI (the operator's own runs) does not."""
    token = _data_root.set((root,))
    try:
        yield
    finally:
        _data_root.reset(token)


def _inside(root: Path, name: str, kind: str) -> Path | None:
    if not name or name.startswith(("/", "~")) or "\\" in name or "\x00" in name:
        return None
    if ".." in PurePosixPath(name).parts:
        return None
    base = root.resolve()
    candidate = (base / name).resolve()  # symlinks followed: the target must stay inside
    if not candidate.is_relative_to(base):
        return None
    if not (candidate.is_file() if kind == "file" else candidate.is_dir()):
        return None
    return candidate


def resolve_data_path(option: str, name: str | Path, *, bundled: Path, kind: str = "file") -> Path:
    """The file (`kind` "file") or folder ("dir") that `options[option]` names.

    Confined (the service, see `confined_data_files`): a relative name inside the operator's
    data folder or the benchmark's `bundled` folder, nothing else; anything else raises
    DataFileNotFound. Otherwise (the CLI): an absolute path as it is, a relative one in the
    working directory, then in `bundled` (the caller reports a missing one)."""
    confinement = _data_root.get()
    if confinement is None:
        candidate = Path(name).expanduser()
        if candidate.is_absolute() or candidate.exists():
            return candidate
        in_bundle = bundled / candidate
        return in_bundle if in_bundle.exists() else candidate
    text = str(name)
    for root in (*confinement, bundled):
        if root is not None:
            found = _inside(root, text, kind)
            if found is not None:
                return found
    raise DataFileNotFound(option, text)


# Loading a benchmark package


class BenchmarkError(Exception):
    """A benchmark package that cannot be loaded or does not follow the contract."""


async def _maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value


def _string_set(module: ModuleType, name: str) -> frozenset[str]:
    value = getattr(module, name, ())
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise BenchmarkError(f"{module.__name__}.{name} must be a set of mode names")
    modes = frozenset(value)
    if not all(isinstance(mode, str) and mode for mode in modes):
        raise BenchmarkError(f"{module.__name__}.{name} must hold non-empty strings")
    return modes


def installed_benchmarks() -> list[str]:
    """The names of the benchmark packages installed (`benchmarks/<name>/`), sorted; each is
    one `Benchmark.load` takes. Found on the package's path, never by importing them all."""
    spec = importlib.util.find_spec(BENCHMARKS_PACKAGE)
    locations = spec.submodule_search_locations if spec is not None else None
    return sorted(
        module.name
        for module in pkgutil.iter_modules(list(locations or []))
        if module.ispkg and _BENCHMARK_NAME.match(module.name)
    )


class Benchmark:
    """A loaded benchmark package, checked against the contract, with a uniform interface."""

    def __init__(self, module: ModuleType, name: str | None = None) -> None:
        self.module = module
        self.name = name or module.__name__.rsplit(".", 1)[-1]
        verifier = getattr(module, "VERIFIER", None)
        if not isinstance(verifier, str) or not verifier.strip():
            raise BenchmarkError(f"benchmark {self.name}: VERIFIER must be a non-empty string")
        self.verifier_name: str = verifier
        uses_judge = getattr(module, "USES_JUDGE_MODEL", verifier == "llm")
        if not isinstance(uses_judge, bool):
            raise BenchmarkError(f"benchmark {self.name}: USES_JUDGE_MODEL must be True or False")
        self.uses_judge_model: bool = uses_judge
        for required in ("load_tasks", "verify"):
            if not callable(getattr(module, required, None)):
                raise BenchmarkError(f"benchmark {self.name}: missing function {required}()")
        self.feedback_modes: frozenset[str] = _string_set(module, "FEEDBACK_MODES")
        self.llm_critic_modes: frozenset[str] = _string_set(module, "LLM_CRITIC_MODES")
        self.path_options: frozenset[str] = _string_set(module, "PATH_OPTIONS")
        own_modes = self.feedback_modes | self.llm_critic_modes
        if own_modes and not callable(getattr(module, "feedback", None)):
            raise BenchmarkError(
                f"benchmark {self.name}: declares feedback modes {sorted(own_modes)} "
                "but no feedback() function"
            )
        run_attempt = getattr(module, "run_attempt", None)
        self._run_attempt: Callable[..., Any] | None = (
            run_attempt if callable(run_attempt) else None
        )

    @classmethod
    def load(cls, name: str) -> Benchmark:
        """The package `benchmarks.<name>`."""
        if not _BENCHMARK_NAME.match(name):
            raise BenchmarkError(
                f"invalid benchmark name {name!r}: lowercase letters, digits and underscores"
            )
        try:
            module = importlib.import_module(f"{BENCHMARKS_PACKAGE}.{name}")
        except ModuleNotFoundError as error:
            if error.name in {f"{BENCHMARKS_PACKAGE}.{name}", BENCHMARKS_PACKAGE}:
                raise BenchmarkError(
                    f"no benchmark named {name!r} (package benchmarks/{name}/)"
                ) from None
            raise
        return cls(module, name)

    @property
    def folder(self) -> Path:
        origin = self.module.__file__
        if origin is None:
            raise BenchmarkError(f"benchmark {self.name} has no folder")
        return Path(origin).resolve().parent

    @property
    def variants_dir(self) -> Path:
        return self.folder / "variants"

    def variants(self) -> list[Path]:
        if not self.variants_dir.is_dir():
            return []
        return sorted(self.variants_dir.glob("*.yaml"))

    @property
    def has_run_attempt(self) -> bool:
        return self._run_attempt is not None

    def slice_name(self, options: Mapping[str, Any]) -> str:
        function = getattr(self.module, "slice_name", None)
        if not callable(function):
            return self.name
        name = function(dict(options))
        if not isinstance(name, str) or not name.strip():
            raise BenchmarkError(f"benchmark {self.name}: slice_name() must return a name")
        return name

    def iter_tasks(self, options: Mapping[str, Any]) -> Iterator[Task]:
        """The tasks, lazily when `load_tasks` is a generator; indices checked as they come."""
        seen: set[int] = set()
        for task in self.module.load_tasks(**dict(options)):
            if not isinstance(task, Task):
                raise BenchmarkError(
                    f"benchmark {self.name}: load_tasks() yielded {type(task).__name__}, not Task"
                )
            if task.canonical_index in seen:
                raise BenchmarkError(
                    f"benchmark {self.name}: canonical_index {task.canonical_index} repeats"
                )
            seen.add(task.canonical_index)
            yield task

    def load_tasks(self, options: Mapping[str, Any]) -> list[Task]:
        return list(self.iter_tasks(options))

    def is_llm_critic_mode(self, mode: str) -> bool:
        return mode in self.llm_critic_modes or mode in CRITIC_FEEDBACK_MODES

    def handles_feedback_mode(self, mode: str) -> bool:
        """Whether `mode` is one of the benchmark's own modes (not a generic one)."""
        return mode in self.feedback_modes or mode in self.llm_critic_modes

    def known_feedback_modes(self, *, critic_model: str | None) -> frozenset[str]:
        """Every mode this benchmark can run: generic, critic (with a critic model), its own."""

        own = self.feedback_modes | (self.llm_critic_modes if critic_model else frozenset())
        return known_feedback_modes(critic_model=critic_model) | own

    async def verify(
        self, task: Task, attempt: AttemptView, *, judge_model: str | None
    ) -> VerifierResult:
        result = await _maybe_await(self.module.verify(task, attempt, judge_model=judge_model))
        if not isinstance(result, VerifierResult):
            raise BenchmarkError(
                f"benchmark {self.name}: verify() returned {type(result).__name__}, "
                "not VerifierResult"
            )
        return result

    async def feedback(
        self,
        task: Task,
        attempt: AttemptView,
        result: VerifierResult,
        mode: str,
        *,
        critic_model: str | None,
    ) -> str:
        text = await _maybe_await(
            self.module.feedback(task, attempt, result, mode, critic_model=critic_model)
        )
        if not isinstance(text, str):
            raise BenchmarkError(
                f"benchmark {self.name}: feedback() returned {type(text).__name__}, not str"
            )
        return text

    async def run_attempt(
        self, task: Task, messages: list[Message], *, actor: ModelSpec
    ) -> str | CallRecord:
        if self._run_attempt is None:
            raise BenchmarkError(f"benchmark {self.name} has no run_attempt()")
        value = await _maybe_await(self._run_attempt(task, messages, actor=actor))
        if not isinstance(value, str | CallRecord):
            raise BenchmarkError(
                f"benchmark {self.name}: run_attempt() returned {type(value).__name__}, "
                "not str or CallRecord"
            )
        return value


def select_tasks(
    tasks: Iterable[Task], *, task_indices: Iterable[int] | None, max_tasks: int | None
) -> Iterator[Task]:
    """The tasks to run, lazily: those in `task_indices` (all when None), then the first
    `max_tasks` of them."""
    wanted = set(task_indices) if task_indices is not None else None
    if max_tasks is not None and max_tasks < 1:
        return
    taken = 0
    for task in tasks:
        if wanted is not None and task.canonical_index not in wanted:
            continue
        yield task
        taken += 1
        if max_tasks is not None and taken >= max_tasks:
            return
        if wanted is not None and taken >= len(wanted):
            return
