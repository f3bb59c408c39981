"""The evaluation engine, for a kind's run on a worker: trials of a prompt (`run_trials`) and
runs of a benchmark (`run_benchmark`) with their stores and results. Heavy to import: only a
kind's run module imports it, when the run starts."""

from __future__ import annotations

from app.evaluation.engine.engine import run_trials
from app.evaluation.engine.runner import (
    RunAborted,
    RunConfig,
    RunConfigMismatch,
    RunResult,
    RunStore,
    continuing_prompt_style,
    run_benchmark,
)

__all__ = [
    "RunAborted",
    "RunConfig",
    "RunConfigMismatch",
    "RunResult",
    "RunStore",
    "continuing_prompt_style",
    "run_benchmark",
    "run_trials",
]
