"""Benchmark variants: the YAML a `gauntlet eval run` names, validated and turned into a run.

A variant's keys are checked with pydantic (errors name the key path), price overrides are read
from the variant or a `--prices` file, and `run_config_from_variant` builds the engine's
`RunConfig`. Only pydantic and PyYAML are imported here; the engine's modules are imported by
the functions that need them.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from app.evaluation.runner import RunConfig
    from app.outbound.prices import Price

DEFAULT_CHAR_LIMIT = 1000
DEFAULT_CONCURRENCY = 50


class CliError(Exception):
    """A problem the user can fix (a bad variant, a missing folder); printed without a trace."""


def load_yaml(path: Path) -> Any:
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
    from app.evaluation.metrics import parse_prices

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


def _model_spec(value: Any, *, key: str, temperature: float | None = None) -> Any:
    from app.evaluation.types import ModelSpec

    if value is None:
        return None
    if isinstance(value, str):
        return ModelSpec(model=value, temperature=temperature)
    settings = value.model_dump()
    if temperature is not None:
        if settings["temperature"] is not None and settings["temperature"] != temperature:
            raise CliError(
                f"{key}: two temperatures given ({settings['temperature']} and the "
                f"top-level temperature {temperature})"
            )
        settings["temperature"] = temperature
    return ModelSpec(**settings)


def parse_variant(data: Any, *, source: str) -> Any:
    """The variant's keys validated; errors name the key path."""
    from pydantic import BaseModel, ConfigDict, Field, ValidationError

    class ModelSetting(BaseModel):
        model_config = ConfigDict(extra="forbid")
        model: str = Field(min_length=1)
        temperature: float | None = Field(default=None, ge=0.0, le=2.0)
        max_tokens: int | None = Field(default=None, ge=1)
        system_prompt: str | None = None
        api_base: str | None = None
        timeout_s: float = Field(default=60.0, gt=0)

    class Concurrency(BaseModel):
        model_config = ConfigDict(extra="forbid", populate_by_name=True)
        global_: int = Field(default=DEFAULT_CONCURRENCY, ge=1, alias="global")
        per_model: int | None = Field(default=None, ge=1)
        tasks_in_flight: int | None = Field(default=None, ge=1)

    class Variant(BaseModel):
        model_config = ConfigDict(extra="forbid", populate_by_name=True)
        description: str | None = None
        benchmark: str | None = None
        metric: str = Field(pattern=r"^(pass|seq)@k$")
        k: int = Field(ge=1, le=10_000)
        feedback_mode: str = "binary"
        model: str | ModelSetting
        temperature: float | None = Field(default=None, ge=0.0, le=2.0)
        judge_model: str | ModelSetting | None = None
        critic_model: str | ModelSetting | None = None
        task_indices: list[int] | None = None
        max_tasks: int | None = Field(default=None, ge=1)
        continue_: bool = Field(default=False, alias="continue")
        s3_sync: bool | str | dict[str, Any] | None = None
        console_char_limit: int = Field(default=DEFAULT_CHAR_LIMIT, ge=0)
        concurrency: int | Concurrency = DEFAULT_CONCURRENCY
        options: dict[str, Any] = Field(default_factory=dict)
        prices: str | dict[str, Any] | None = None
        cost_budget_usd: float | None = Field(default=None, ge=0)

    if not isinstance(data, dict):
        raise CliError(f"{source}: a variant is a YAML mapping of keys")
    try:
        return Variant.model_validate(data)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in item['loc']) or '(top)'}: {item['msg']}"
            for item in error.errors()
        )
        raise CliError(f"{source}: {problems}") from None


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
    variant: Any, *, benchmark: str, prices: Mapping[str, Price], allow_continue: bool
) -> RunConfig:
    from app.evaluation.runner import RunConfig
    from app.evaluation.types import ModelSpec

    concurrency = variant.concurrency
    tasks_in_flight = None if isinstance(concurrency, int) else concurrency.tasks_in_flight
    actor = _model_spec(variant.model, key="model", temperature=variant.temperature)
    # The research harness's defaults: the judge is the actor's model (reached the same way,
    # at the judge's own temperature), the critic is the judge.
    judge = _model_spec(variant.judge_model, key="judge_model") or ModelSpec(
        model=actor.model, api_base=actor.api_base, timeout_s=actor.timeout_s
    )
    critic = _model_spec(variant.critic_model, key="critic_model") or judge
    return RunConfig(
        benchmark=benchmark,
        metric=variant.metric,
        k=variant.k,
        feedback_mode=variant.feedback_mode,
        actor=actor,
        judge=judge,
        critic=critic,
        options=variant.options,
        task_indices=tuple(variant.task_indices) if variant.task_indices is not None else None,
        max_tasks=variant.max_tasks,
        allow_continue=allow_continue or variant.continue_,
        tasks_in_flight=tasks_in_flight,
        cost_budget_usd=variant.cost_budget_usd,
        prices=dict(prices),
    )
