"""Evaluation types a kind's configuration and results are made of: model specs, verifiers
and judges, feedback modes, benchmarks and their variants, model-id checks. Light to import
(no engine, no litellm); the engine itself is `app.kinds.api.runs`."""

from __future__ import annotations

from app.evaluation.commands.variant import CliError, Variant, load_yaml, parse_variant
from app.evaluation.engine.benchmark import (
    Benchmark,
    BenchmarkError,
    DataFileNotFound,
    confined_data_files,
    installed_benchmarks,
    select_tasks,
)
from app.evaluation.engine.feedback import (
    CRITIC_FEEDBACK_MODES,
    FEEDBACK_MODE_WORDS,
    FEEDBACK_MODES,
)
from app.evaluation.engine.llm import CompletionClient, LLMClient
from app.evaluation.engine.model_ids import base_url_problem, model_id_problem
from app.evaluation.engine.offline import OFFLINE_MODELS, PROVIDER
from app.evaluation.engine.types import (
    CallRecord,
    InfrastructureError,
    JudgeSection,
    ModelSpec,
    TrialRecord,
    VerifierResult,
)
from app.evaluation.engine.verifiers import LLMJudgeConfig, VerifierConfig, build_verifier

__all__ = [
    "CRITIC_FEEDBACK_MODES",
    "FEEDBACK_MODES",
    "FEEDBACK_MODE_WORDS",
    "OFFLINE_MODELS",
    "PROVIDER",
    "Benchmark",
    "BenchmarkError",
    "CallRecord",
    "CliError",
    "CompletionClient",
    "DataFileNotFound",
    "InfrastructureError",
    "JudgeSection",
    "LLMClient",
    "LLMJudgeConfig",
    "ModelSpec",
    "TrialRecord",
    "Variant",
    "VerifierConfig",
    "VerifierResult",
    "base_url_problem",
    "build_verifier",
    "confined_data_files",
    "installed_benchmarks",
    "load_yaml",
    "model_id_problem",
    "parse_variant",
    "select_tasks",
]
