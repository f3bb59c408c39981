"""The benchmark kind's challenge templates: one per variant of each installed benchmark
(`benchmarks/<name>/variants/*.yaml`, read as `gauntlet eval run` reads them) whose models
are all offline, so that each works as it is; its test run is the variant's own model."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from app.kinds.api import ChallengeTemplate, EvaluationConfig
from app.kinds.api.evaluation import (
    PROVIDER,
    Benchmark,
    BenchmarkError,
    CliError,
    ModelSpec,
    Variant,
    installed_benchmarks,
    load_yaml,
    parse_variant,
)

_MAX_K = next(
    bound.le for bound in EvaluationConfig.model_fields["k"].metadata if hasattr(bound, "le")
)


def _model(value: str | ModelSpec | None) -> str | None:
    return value.model if isinstance(value, ModelSpec) else value


def _offline(model: str | None) -> bool:
    return model is None or model.startswith(f"{PROVIDER}/")


def _template(benchmark: str, path: Path, variant: Variant) -> ChallengeTemplate | None:
    actor, judge, critic = (
        _model(variant.model),
        _model(variant.judge_model),
        _model(variant.critic_model),
    )
    if not all(_offline(model) for model in (actor, judge, critic)) or variant.k > _MAX_K:
        return None
    spec: dict[str, Any] = {"name": benchmark, "options": dict(variant.options)}
    for field, value in (
        ("judge_model", judge),
        ("critic_model", critic),
        ("task_indices", variant.task_indices),
        ("max_tasks", variant.max_tasks),
    ):
        if value is not None:
            spec[field] = value
    described = variant.description or f"{benchmark}, {path.stem}"
    tries = f"{variant.k} {'try' if variant.k == 1 else 'tries'} a task ({variant.metric})"
    shown_by = (
        "offline/solver-sim, a simulated solver told the answers"
        if actor == "offline/solver-sim"
        else actor
    )
    test_run: dict[str, Any] = {"model": actor}
    if variant.temperature is not None:
        test_run["temperature"] = variant.temperature
    return ChallengeTemplate(
        name=f"benchmark-{benchmark}-{path.stem}".replace("_", "-"),
        kind="benchmark",
        title=f"Benchmark: {described}",
        description=f"Every task of {benchmark}, {tries}. Its test run: {shown_by}.",
        body={
            "kind": "benchmark",
            "goal": f"Submit a model (its id and a temperature): it runs on every task of the "
            f"benchmark, {tries}. The board ranks by the share of tasks solved.",
            "benchmark": spec,
            "evaluation": {
                "metric": variant.metric,
                "k": variant.k,
                "feedback_mode": variant.feedback_mode,
            },
            "scoring": {"strategy": "metric_at_k"},
            "limits": {"max_attempts_per_day": 5},
            "visibility": "public",
        },
        test_run=test_run,
    )


@lru_cache(maxsize=1)
def benchmark_templates() -> tuple[ChallengeTemplate, ...]:
    """Every installed benchmark's offline variants as templates, benchmarks and variants in
    name order; a benchmark or variant that does not load is left out (the CLI says why)."""
    found: list[ChallengeTemplate] = []
    for name in installed_benchmarks():
        try:
            variants = Benchmark.load(name).variants()
        except BenchmarkError:
            continue
        for path in variants:
            try:
                variant = parse_variant(load_yaml(path), source=str(path))
            except CliError:
                continue
            template = _template(name, path, variant)
            if template is not None:
                found.append(template)
    return tuple(found)
