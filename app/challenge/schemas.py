"""Challenge configuration, validated at the boundary.

`ChallengeCreate` checks everything that can be checked without the database (field types,
regexes, model ids, k, the template); the service adds what needs it (a registered plugin).
Two read shapes exist: `ChallengeRead` (tenant admins: everything) and `ChallengePublic`
(participants and member keys: the hidden system prompt, judge rubric and answer keys removed).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints, field_validator, model_validator
from pydantic_core import PydanticCustomError

from app.challenge.config import ChallengeStatus, LimitsConfig, Visibility
from app.evaluation.feedback import FEEDBACK_MODES
from app.evaluation.verifiers import VerifierConfig
from app.schemas import BoundedDatetime, InputSchema, ModelId, Name, OutputSchema, Slug
from app.scoring.schemas import ENTRYPOINT_PATTERN, ScoringConfig
from app.scoring.strategies import Strategy

PROMPT_SLOT = "{prompt}"


class TargetConfig(InputSchema):
    """The model that answers a participant's prompt, and what surrounds that prompt."""

    model: ModelId = Field(examples=["offline/echo"])
    system_prompt: str = Field(default="", max_length=50_000)
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, ge=1, le=200_000)
    user_template: str = Field(
        default=PROMPT_SLOT,
        max_length=50_000,
        description="The user message; '{prompt}' is replaced by the participant's prompt.",
    )
    api_base: str | None = Field(
        default=None,
        max_length=500,
        description="An OpenAI-compatible server; must match an allowed base URL (setting "
        "GAUNTLET_ALLOWED_API_BASES, docs/outbound.md). Stored in its normalised form.",
    )

    @field_validator("user_template")
    @classmethod
    def _has_prompt_slot(cls, value: str) -> str:
        if PROMPT_SLOT not in value:
            raise ValueError("must contain '{prompt}', where the participant's prompt goes")
        return value


# A glob over model ids: the characters of model ids and the glob's own `*?[]!`.
ModelPattern = Annotated[
    str, StringConstraints(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9._:@+/*?\[\]!-]+$")
]


class BenchmarkSpec(InputSchema):
    """A benchmark challenge: which benchmark runs, on which tasks, judged and critiqued how."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$", max_length=100, examples=["arcagi2"])
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


class EvaluationConfig(InputSchema):
    metric: Literal["pass@k", "seq@k"] = "pass@k"
    k: int = Field(default=1, ge=1, le=20)

    feedback_mode: str = Field(default="binary", pattern=r"^[a-z][a-z0-9_]*$", max_length=50)


# The original challenge body's flat scoring fields, accepted beside `scoring` and mapped onto it
# by app/challenge/flat_scoring.py (scorers/README.md has the table). Never stored or returned.
FLAT_SCORING_FIELDS = (
    "scoring_strategy",
    "scoring_plugin_id",
    "scoring_entrypoint",
    "scoring_config",
)
_FLAT = "The original flat form (give either `scoring` or the flat fields): "
FlatScoringStrategy = Annotated[
    Strategy | None,
    Field(
        exclude=True,
        description=_FLAT + "`scoring.strategy`; 'custom' when only a plugin is named.",
    ),
]
FlatScoringPluginId = Annotated[
    str | None, Field(exclude=True, max_length=100, description=_FLAT + "`scoring.plugin_id`.")
]
FlatScoringEntrypoint = Annotated[
    str | None,
    Field(
        exclude=True,
        max_length=500,
        pattern=ENTRYPOINT_PATTERN,
        description=_FLAT + "checked, never stored: must equal the entrypoint that the plugin "
        "named by `scoring_plugin_id` was registered with.",
    ),
]
FlatScoringConfig = Annotated[
    dict[str, Any] | None, Field(exclude=True, description=_FLAT + "`scoring.config`.")
]


def refuse_both_scoring_forms(data: Any) -> Any:
    """`scoring` and the flat fields spell the same thing; given both, neither can win."""
    if isinstance(data, dict) and data.get("scoring") is not None:
        flat = [name for name in FLAT_SCORING_FIELDS if data.get(name) is not None]
        if flat:
            raise PydanticCustomError(
                "scoring_forms_conflict",
                "give the scoring either as 'scoring' or as the flat fields, not both: "
                "'scoring' conflicts with {fields}",
                {"fields": ", ".join(f"'{name}'" for name in flat)},
            )
    return data


class ChallengeCreate(InputSchema):
    slug: Slug
    title: Name
    goal: str = Field(default="", max_length=20_000)
    kind: Literal["prompt", "benchmark"] = "prompt"
    target: TargetConfig | None = None
    verifier: VerifierConfig | None = None
    benchmark: BenchmarkSpec | None = None
    evaluation: EvaluationConfig = Field(default_factory=EvaluationConfig)
    scoring: ScoringConfig = Field(default_factory=ScoringConfig)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    opens_at: BoundedDatetime | None = None
    closes_at: BoundedDatetime | None = None
    visibility: Visibility = Visibility.PRIVATE
    scoring_strategy: FlatScoringStrategy = None
    scoring_plugin_id: FlatScoringPluginId = None
    scoring_entrypoint: FlatScoringEntrypoint = None
    scoring_config: FlatScoringConfig = None

    @model_validator(mode="before")
    @classmethod
    def _one_scoring_form(cls, data: Any) -> Any:
        return refuse_both_scoring_forms(data)

    @model_validator(mode="after")
    def _consistent(self) -> ChallengeCreate:
        if self.opens_at and self.closes_at and self.closes_at <= self.opens_at:
            raise ValueError("closes_at must be after opens_at")
        strategy = self.scoring.strategy
        if self.kind == "prompt":
            if self.target is None or self.verifier is None:
                raise ValueError("a prompt challenge needs 'target' and 'verifier'")
            if self.benchmark is not None:
                raise ValueError("'benchmark' is only for benchmark challenges")
            if strategy == "metric_at_k":
                raise ValueError("strategy 'metric_at_k' is only for benchmark challenges")
            if self.evaluation.feedback_mode not in FEEDBACK_MODES:
                known = ", ".join(sorted(FEEDBACK_MODES))
                raise ValueError(f"evaluation.feedback_mode: unknown feedback mode; known: {known}")
            if strategy == "highest_rating" and self.verifier.type != "llm_judge":
                raise ValueError(
                    "strategy 'highest_rating' needs an 'llm_judge' verifier (only a judge rates)"
                )
            self.scoring.strategy = strategy or Strategy.FIRST
        else:
            if self.benchmark is None:
                raise ValueError("a benchmark challenge needs 'benchmark'")
            if self.target is not None or self.verifier is not None:
                raise ValueError(
                    "'target' and 'verifier' are only for prompt challenges; a benchmark "
                    "challenge's attempts name the model, and the benchmark verifies"
                )
            if strategy not in (None, "metric_at_k", "custom"):
                raise ValueError(
                    f"strategy '{strategy}' does not apply to benchmark challenges; "
                    "use 'metric_at_k' or 'custom'"
                )
            self.scoring.strategy = strategy or Strategy.METRIC_AT_K
        return self


class ChallengeUpdate(InputSchema):
    """Fields to change; the result is validated again as a whole."""

    title: Name | None = None
    goal: str | None = Field(default=None, max_length=20_000)
    target: TargetConfig | None = None
    verifier: VerifierConfig | None = None
    benchmark: BenchmarkSpec | None = None
    evaluation: EvaluationConfig | None = None
    scoring: ScoringConfig | None = None
    limits: LimitsConfig | None = None
    opens_at: BoundedDatetime | None = None
    closes_at: BoundedDatetime | None = None
    visibility: Visibility | None = None
    scoring_strategy: FlatScoringStrategy = None
    scoring_plugin_id: FlatScoringPluginId = None
    scoring_entrypoint: FlatScoringEntrypoint = None
    scoring_config: FlatScoringConfig = None

    @model_validator(mode="before")
    @classmethod
    def _one_scoring_form(cls, data: Any) -> Any:
        return refuse_both_scoring_forms(data)


class ChallengePublic(OutputSchema):
    """What a participant or a member key sees: no system prompt, no judge rubric, no answer
    keys, no server addresses (`challenge_view` decides)."""

    id: uuid.UUID
    slug: str
    title: str
    goal: str
    kind: str
    target: dict[str, Any] | None
    verifier: dict[str, Any] | None
    benchmark: dict[str, Any] | None
    evaluation: dict[str, Any]
    scoring: dict[str, Any]
    limits: LimitsConfig
    opens_at: datetime | None
    closes_at: datetime | None
    visibility: Visibility
    status: ChallengeStatus
    created_at: datetime


class ChallengeRead(ChallengePublic):
    """What a tenant admin sees: everything."""

    updated_at: datetime


class ChallengeList(OutputSchema):
    items: list[ChallengeRead | ChallengePublic]
    total: int
