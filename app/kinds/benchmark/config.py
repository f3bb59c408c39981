"""A benchmark challenge's sections: which benchmark runs on which tasks, judged and
critiqued how, and pass@k or seq@k. Participants submit a model spec."""

from __future__ import annotations

import fnmatch
import secrets
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field, StringConstraints

from app.kinds.api import (
    NAME_PATTERN,
    EvaluationConfig,
    InputSchema,
    KindConfig,
    ModelId,
    Settings,
    ShownFields,
    pattern_words,
)
from app.kinds.api.evaluation import ModelSpec

if TYPE_CHECKING:
    from app.kinds.api.runs import RunConfig

# A glob over model ids: the characters of model ids and the glob's own `*?[]!`.
ModelPattern = Annotated[
    str,
    StringConstraints(
        min_length=1,
        max_length=200,
        pattern=pattern_words(
            r"^[A-Za-z0-9._:@+/*?\[\]!-]+$",
            "a model id, with * for any characters, ? for one and [...] for one of a set",
        ),
    ),
]


class BenchmarkSpec(InputSchema):
    """A benchmark challenge: which benchmark runs, on which tasks, judged and critiqued how."""

    name: str = Field(pattern=NAME_PATTERN, max_length=100, examples=["arcagi2"])
    options: dict[str, Any] = Field(default_factory=dict)
    task_indices: list[Annotated[int, Field(ge=1, le=10_000_000)]] | None = Field(
        default=None, max_length=10_000
    )
    max_tasks: int | None = Field(default=None, ge=1, le=100_000)
    judge_model: ModelId | None = None
    critic_model: ModelId | None = None
    cost_budget_usd: float | None = Field(
        default=None,
        gt=0,
        le=1_000_000,
        description="No new task starts once an attempt has spent this.",
    )
    actor_api_base: str | None = Field(
        default=None,
        max_length=500,
        description="An OpenAI-compatible server the participants' models are called at; must "
        "match an allowed base URL (setting GAUNTLET_ALLOWED_API_BASES, docs/outbound.md).",
    )
    allowed_models: list[ModelPattern] | None = Field(
        default=None,
        max_length=100,
        description="Glob patterns (`*`, `?`, `[...]`) the participants' model ids must match, "
        "e.g. ['openai/gpt-4o-mini', 'anthropic/claude-3-5-*']; null: any model the server "
        "allows.",
    )

    def allows_model(self, model: str) -> bool:
        """A challenge may narrow the models its participants submit."""
        patterns = self.allowed_models
        return not patterns or any(fnmatch.fnmatchcase(model, pattern) for pattern in patterns)

    def cost_budget(self, settings: Settings) -> float:
        """The server's per-attempt budget, or the challenge's when it is lower (never higher)."""
        budget = settings.attempt_cost_budget_usd
        own = self.cost_budget_usd
        return own if own is not None and 0 < own < budget else budget

    @property
    def task_selection(self) -> tuple[int, ...] | None:
        return tuple(self.task_indices) if self.task_indices else None


class ModelSubmission(InputSchema):
    """The model spec a participant submits to a benchmark challenge, as the engine runs it."""

    model: str
    temperature: float | None = None
    system_prompt: str | None = None


class StoredFields(ModelSubmission):
    """A benchmark attempt's stored fields (its `kind_fields`, given fields only): the model
    spec, and a practice or test run's task (its 1-based index; null: the challenge's first)."""

    task_index: int | None = None


def shown_fields(kind_fields: dict[str, Any] | None) -> ShownFields:
    """A benchmark attempt's stored fields as its reads show them: the model spec as the
    read's `model_spec` (model, temperature and system prompt, each null when not given), the
    rest (a practice or test run's `task_index`) as its `kind_fields`. Reads what is stored
    as it is: it never refuses it."""
    rest = dict(kind_fields or {})
    spec = {name: rest.pop(name, None) for name in ModelSubmission.model_fields}
    given = spec["model"] is not None
    return ShownFields(model_spec=spec if given else None, kind_fields=rest or None)


def new_split_seed() -> int:
    """A seed for a split given without one: random, nine digits at most, saved with it."""
    return secrets.randbelow(1_000_000_000)


class SplitConfig(InputSchema):
    """A benchmark challenge's split into a public and a private part."""

    public_fraction: float = Field(
        default=0.5,
        gt=0,
        lt=1,
        description="The share of the challenge's tasks whose results participants see while "
        "it is open; the other tasks' results only the tenant's admins see until the close.",
    )
    seed: int = Field(
        default_factory=new_split_seed,
        ge=0,
        le=2**63 - 1,
        description="Chooses which tasks are public (the rule is in docs/boards.md); the same "
        "seed always splits the same tasks the same way. Not given: a random one, saved with "
        "the challenge (a split is never dropped for the want of one).",
    )
    final_submissions: int = Field(
        default=2,
        ge=1,
        le=100,
        description="How many completed submissions a participant may mark final before the "
        "close; the private board ranks each participant's best final one (none marked: their "
        "best this many by the public part).",
    )


class BenchmarkConfig(KindConfig):
    benchmark: BenchmarkSpec
    evaluation: EvaluationConfig = Field(default_factory=EvaluationConfig)
    # A public and a private part of the tasks (app.kinds.benchmark.split); null: one board.
    split: SplitConfig | None = None

    def run_config(self, actor: ModelSubmission, settings: Settings) -> RunConfig:
        """The engine's run of one submitted model: the one place this configuration becomes
        a `RunConfig` (and its roles `ModelSpec`s)."""
        # The engine's runner is the worker's: the API loads this configuration, never the run.
        from app.kinds.api.runs import RunConfig

        spec = self.benchmark
        timeout = settings.model_timeout_seconds

        def role(model: str | None) -> ModelSpec | None:
            return ModelSpec(model=model, timeout_s=timeout) if model else None

        return RunConfig(
            benchmark=spec.name,
            metric=self.evaluation.metric,
            k=self.evaluation.k,
            feedback_mode=self.evaluation.feedback_mode,
            actor=ModelSpec(
                model=actor.model,
                temperature=actor.temperature,
                system_prompt=actor.system_prompt,
                api_base=spec.actor_api_base,
                timeout_s=timeout,
            ),
            judge=role(spec.judge_model),
            critic=role(spec.critic_model),
            options=dict(spec.options),
            task_indices=spec.task_selection,
            max_tasks=spec.max_tasks,
            cost_budget_usd=spec.cost_budget(settings),
        )
