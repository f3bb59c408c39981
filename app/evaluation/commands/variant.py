"""Benchmark variants: the YAML a `gauntlet eval run` names, validated and turned into a run.

A variant's keys are checked here (every problem reported at once, each naming its key path),
price overrides are read from the variant or a `--prices` file, and `run_config_from_variant`
builds the engine's `RunConfig`. The checks are a table of plain functions rather than pydantic
models: importing pydantic and building the models took ~0.1 s of every run's start-up, a
tenth of a one-second run against a fast server. Only PyYAML is imported here; the engine's
modules are imported by the functions that need them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from app.evaluation.engine.runner import RunConfig
    from app.evaluation.engine.types import ModelSpec
    from app.outbound.prices import Price

DEFAULT_CHAR_LIMIT = 1000
DEFAULT_CONCURRENCY = 50


class CliError(Exception):
    """A problem the user can fix (a bad variant, a missing folder); printed without a trace."""


def load_yaml(path: Path) -> Any:
    # PyYAML loads when a variant is read, not with every `gauntlet` command's parser.
    import yaml

    try:
        with path.open(encoding="utf-8") as handle:
            return yaml.safe_load(handle)
    except FileNotFoundError:
        raise CliError(f"no such file: {path}") from None
    except yaml.YAMLError as error:
        raise CliError(f"{path} is not valid YAML: {error}") from None


def load_prices(source: Any, *, base: Path | None = None) -> dict[str, Price]:
    """Price overrides from a YAML file path or an inline mapping (a variant's `prices`)."""
    # The engine loads when a variant is read, not with every `gauntlet` command's parser.
    from app.evaluation.engine.metrics import parse_prices

    if source is None:
        return {}
    if isinstance(source, str | Path):
        path = Path(source)
        if base is not None and not path.is_absolute() and not path.exists():
            path = base / path
        data = load_yaml(path)
        label = str(path)
    else:
        data, label = source, "prices"
    try:
        return parse_prices(data, source=label)
    except ValueError as error:
        raise CliError(str(error)) from None


class _Invalid(Exception):
    """One key's problem; `path` is filled in as it travels up to the variant."""

    def __init__(self, message: str, path: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.path = path


Check = Callable[[Any], Any]


def _text(*, pattern: str | None = None) -> Check:
    compiled = re.compile(pattern) if pattern else None

    def check(value: Any) -> Any:
        if not isinstance(value, str) or not value:
            raise _Invalid("a non-empty string is needed")
        if compiled is not None and not compiled.fullmatch(value):
            raise _Invalid(f"must match {pattern}")
        return value

    return check


def _integer(*, low: int, high: int | None = None) -> Check:
    def check(value: Any) -> Any:
        if not isinstance(value, int) or isinstance(value, bool):
            raise _Invalid("an integer is needed")
        if value < low or (high is not None and value > high):
            span = f"at least {low}" if high is None else f"between {low} and {high}"
            raise _Invalid(f"must be {span}")
        return value

    return check


def _number(*, low: float, high: float | None = None, above: bool = False) -> Check:
    def check(value: Any) -> Any:
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise _Invalid("a number is needed")
        number = float(value)
        too_low = number <= low if above else number < low
        if not math.isfinite(number) or too_low or (high is not None and number > high):
            bound = f"above {low:g}" if above else f"at least {low:g}"
            span = bound if high is None else f"{bound} and at most {high:g}"
            raise _Invalid(f"must be a finite number {span}")
        return number

    return check


def _any_text(value: Any) -> str | None:
    """A string, empty or not, or nothing."""
    if value is not None and not isinstance(value, str):
        raise _Invalid("a string is needed")
    return value


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise _Invalid("true or false is needed")
    return value


def _mapping(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _Invalid("a mapping is needed")
    return value


def _optional(check: Check) -> Check:
    """`check`, or nothing (null)."""
    return lambda value: None if value is None else check(value)


def _one_of(*checks: Check, expected: str) -> Check:
    """The first check that accepts the value; `expected` names them all otherwise."""

    def check(value: Any) -> Any:
        for candidate in checks:
            try:
                return candidate(value)
            except _Invalid:
                continue
        raise _Invalid(f"{expected} is needed")

    return check


def _indices(value: Any) -> Any:
    if value is None:
        return None
    if not isinstance(value, list):
        raise _Invalid("a list of task indices is needed")
    whole = _integer(low=0)
    for position, item in enumerate(value):
        try:
            whole(item)
        except _Invalid as problem:
            raise _Invalid(problem.message, (str(position),)) from None
    return value


def _fields(
    data: dict[Any, Any], checks: Mapping[str, Check], required: set[str]
) -> dict[str, Any]:
    """`data`'s keys (a mapping) checked; every problem raised at once (an ExceptionGroup of
    _Invalid)."""
    values: dict[str, Any] = {}
    problems = []
    for key, value in data.items():
        check = checks.get(key) if isinstance(key, str) else None
        if check is None:
            problems.append(_Invalid("unknown key", (str(key),)))
            continue
        try:
            values[key] = check(value)
        except _Invalid as problem:
            problems.append(_Invalid(problem.message, (key, *problem.path)))
        except ExceptionGroup as group:
            problems.extend(
                _Invalid(inner.message, (key, *inner.path))
                for inner in group.exceptions
                if isinstance(inner, _Invalid)
            )
    problems.extend(_Invalid("required", (key,)) for key in sorted(required - set(data)))
    if problems:
        raise ExceptionGroup("keys", problems)
    return values


_MODEL_CHECKS: dict[str, Check] = {
    "model": _text(),
    "temperature": _optional(_number(low=0.0, high=2.0)),
    "max_tokens": _optional(_integer(low=1)),
    "system_prompt": _any_text,
    "api_base": _optional(_text()),
    "timeout_s": _number(low=0.0, above=True),
}


def _model_setting(value: Any) -> ModelSpec:
    """A model given as a mapping (`{model, temperature, max_tokens, ...}`)."""
    # The engine loads when a variant is read, not with every `gauntlet` command's parser.
    from app.evaluation.engine.types import ModelSpec

    return ModelSpec(**_fields(value, _MODEL_CHECKS, {"model"}))


def _model_or_mapping(value: Any) -> str | ModelSpec:
    """A model id, or a mapping whose own problems are reported key by key."""
    if isinstance(value, dict):
        return _model_setting(value)
    if not isinstance(value, str) or not value:
        raise _Invalid("a model id or a mapping with `model` is needed")
    return value


@dataclass
class Concurrency:
    """`concurrency` as a mapping: the global cap (`global`), per model, tasks in flight."""

    global_: int = DEFAULT_CONCURRENCY
    per_model: int | None = None
    tasks_in_flight: int | None = None


_CONCURRENCY_CHECKS: dict[str, Check] = {
    "global": _integer(low=1),
    "per_model": _optional(_integer(low=1)),
    "tasks_in_flight": _optional(_integer(low=1)),
}


def _concurrency(value: Any) -> int | Concurrency:
    if isinstance(value, dict):
        values = _fields(value, _CONCURRENCY_CHECKS, set())
        if "global" in values:
            values["global_"] = values.pop("global")
        return Concurrency(**values)
    cap: int = _integer(low=1)(value)
    return cap


@dataclass
class Variant:
    """A variant's keys, checked (`parse_variant`)."""

    metric: Literal["pass@k", "seq@k"]
    k: int
    model: str | ModelSpec
    description: str | None = None
    benchmark: str | None = None
    feedback_mode: str = "binary"
    # The seq@k prompt's wording (app.evaluation.engine.prompts): seq_k's unless named.
    prompt_style: str | None = None
    temperature: float | None = None
    judge_model: str | ModelSpec | None = None
    critic_model: str | ModelSpec | None = None
    task_indices: list[int] | None = None
    max_tasks: int | None = None
    continue_: bool = False
    s3_sync: bool | str | dict[str, Any] | None = None
    console_char_limit: int = DEFAULT_CHAR_LIMIT
    concurrency: int | Concurrency = DEFAULT_CONCURRENCY
    options: dict[str, Any] = field(default_factory=dict)
    prices: str | dict[str, Any] | None = None
    cost_budget_usd: float | None = None


_VARIANT_CHECKS: dict[str, Check] = {
    "description": _any_text,
    "benchmark": _optional(_text()),
    "metric": _text(pattern=r"(pass|seq)@k"),
    "k": _integer(low=1, high=10_000),
    "feedback_mode": _text(),
    "prompt_style": _optional(_text()),
    "model": _model_or_mapping,
    "temperature": _optional(_number(low=0.0, high=2.0)),
    "judge_model": _optional(_model_or_mapping),
    "critic_model": _optional(_model_or_mapping),
    "task_indices": _indices,
    "max_tasks": _optional(_integer(low=1)),
    "continue": _flag,
    "s3_sync": _optional(_one_of(_flag, _text(), _mapping, expected="true, a string or a mapping")),
    "console_char_limit": _integer(low=0),
    "concurrency": _concurrency,
    "options": _mapping,
    "prices": _optional(_one_of(_text(), _mapping, expected="a file path or a mapping")),
    "cost_budget_usd": _optional(_number(low=0.0)),
}


def parse_variant(data: Any, *, source: str) -> Variant:
    """The variant's keys checked; errors name the key path (`model.timeout_s: ...`)."""
    if not isinstance(data, dict):
        raise CliError(f"{source}: a variant is a YAML mapping of keys")
    try:
        values = _fields(data, _VARIANT_CHECKS, {"metric", "k", "model"})
    except ExceptionGroup as group:
        problems = "; ".join(
            f"{'.'.join(problem.path) or '(top)'}: {problem.message}"
            for problem in group.exceptions
            if isinstance(problem, _Invalid)
        )
        raise CliError(f"{source}: {problems}") from None
    if "continue" in values:
        values["continue_"] = values.pop("continue")
    return Variant(**values)


def _model_spec(value: str | ModelSpec, *, key: str, temperature: float | None = None) -> ModelSpec:
    """A variant's model as the engine's `ModelSpec`, with the top-level `temperature` (which
    a mapping's own temperature must not contradict)."""
    # The engine loads when a variant is read, not with every `gauntlet` command's parser.
    from app.evaluation.engine.types import ModelSpec

    if isinstance(value, str):
        return ModelSpec(model=value, temperature=temperature)
    if temperature is None:
        return value
    if value.temperature is not None and value.temperature != temperature:
        raise CliError(
            f"{key}: two temperatures given ({value.temperature} and the "
            f"top-level temperature {temperature})"
        )
    return replace(value, temperature=temperature)


def benchmark_name_for(variant_path: Path, declared: str | None) -> str:
    """The `benchmark:` key, else the folder of `benchmarks/<name>/variants/<file>.yaml`."""
    if declared:
        return declared
    parent = variant_path.resolve().parent
    if parent.name == "variants":
        return parent.parent.name
    raise CliError(
        f"{variant_path}: not in a benchmarks/<name>/variants/ folder; "
        "name the benchmark with a `benchmark:` key"
    )


def run_config_from_variant(
    variant: Variant, *, benchmark: str, prices: Mapping[str, Price], allow_continue: bool
) -> RunConfig:
    # The engine loads when a variant is read, not with every `gauntlet` command's parser.
    from app.evaluation.engine.prompts import DEFAULT_PROMPT_STYLE
    from app.evaluation.engine.runner import RunConfig
    from app.evaluation.engine.types import ModelSpec

    concurrency = variant.concurrency
    tasks_in_flight = None if isinstance(concurrency, int) else concurrency.tasks_in_flight
    actor = _model_spec(variant.model, key="model", temperature=variant.temperature)
    # The research harness's defaults: the judge is the actor's model (reached the same way,
    # at the judge's own temperature), the critic is the judge.
    judge = (
        _model_spec(variant.judge_model, key="judge_model")
        if variant.judge_model is not None
        else ModelSpec(model=actor.model, api_base=actor.api_base, timeout_s=actor.timeout_s)
    )
    critic = (
        _model_spec(variant.critic_model, key="critic_model")
        if variant.critic_model is not None
        else judge
    )
    return RunConfig(
        benchmark=benchmark,
        metric=variant.metric,
        k=variant.k,
        feedback_mode=variant.feedback_mode,
        actor=actor,
        judge=judge,
        critic=critic,
        options=variant.options,
        prompt_style=variant.prompt_style or DEFAULT_PROMPT_STYLE,
        task_indices=tuple(variant.task_indices) if variant.task_indices is not None else None,
        max_tasks=variant.max_tasks,
        allow_continue=allow_continue or variant.continue_,
        tasks_in_flight=tasks_in_flight,
        cost_budget_usd=variant.cost_budget_usd,
        prices=dict(prices),
    )
