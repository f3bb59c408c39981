"""Challenge configuration, validated at the boundary.

`ChallengeCreate` checks everything that can be checked without the database (field types,
regexes, model ids, k, the template); the service adds what needs it (a registered plugin).
Two read shapes exist: `ChallengeRead` (tenant admins: everything) and `ChallengePublic`
(participants and member keys: the hidden system prompt, judge rubric and answer keys removed).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import AwareDatetime, Field, field_validator, model_validator

from app.evaluation.feedback import FEEDBACK_MODES
from app.evaluation.model_ids import model_id_problem
from app.evaluation.verifiers import VerifierConfig
from app.schemas import InputSchema, Name, OutputSchema, Slug

Strategy = Literal["first", "fastest", "fewest_tokens", "highest_rating", "custom"]
Visibility = Literal["public", "unlisted", "private"]
PROMPT_PLACEHOLDER = "{prompt}"


class TargetConfig(InputSchema):
    """The model that answers a participant's prompt, and what surrounds that prompt."""

    model: str = Field(examples=["offline/echo"])
    system_prompt: str = Field(default="", max_length=50_000)
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, ge=1, le=200_000)
    user_template: str = Field(
        default=PROMPT_PLACEHOLDER,
        max_length=50_000,
        description="The user message; '{prompt}' is replaced by the participant's prompt.",
    )
    api_base: str | None = Field(
        default=None,
        max_length=500,
        description="An OpenAI-compatible server; must start with an allowed prefix "
        "(setting GAUNTLET_ALLOWED_API_BASES).",
    )

    @field_validator("model")
    @classmethod
    def _known_model(cls, value: str) -> str:
        problem = model_id_problem(value)
        if problem:
            raise ValueError(problem)
        return value.strip()

    @field_validator("user_template")
    @classmethod
    def _has_placeholder(cls, value: str) -> str:
        if PROMPT_PLACEHOLDER not in value:
            raise ValueError("must contain '{prompt}', where the participant's prompt goes")
        return value


class EvaluationConfig(InputSchema):
    metric: Literal["pass@k", "seq@k"] = "pass@k"
    k: int = Field(default=1, ge=1, le=20)
    feedback_mode: str = "binary"

    @field_validator("feedback_mode")
    @classmethod
    def _known_mode(cls, value: str) -> str:
        if value not in FEEDBACK_MODES:
            raise ValueError(f"unknown feedback mode; known: {', '.join(sorted(FEEDBACK_MODES))}")
        return value


class ScoringConfig(InputSchema):
    strategy: Strategy = "first"
    plugin_id: str | None = Field(default=None, max_length=100)
    config: dict[str, Any] = Field(default_factory=dict)
    timeout_ms: int = Field(default=5000, ge=1, le=60_000)

    @model_validator(mode="after")
    def _plugin_only_for_custom(self) -> ScoringConfig:
        if self.strategy == "custom" and not self.plugin_id:
            raise ValueError("plugin_id is required when strategy is 'custom'")
        if self.strategy != "custom" and self.plugin_id:
            raise ValueError("plugin_id is only used with strategy 'custom'")
        return self


class LimitsConfig(InputSchema):
    max_attempts_per_day: int | None = Field(default=None, ge=1, le=1_000_000)
    max_attempts_total: int | None = Field(default=None, ge=1, le=10_000_000)
    max_prompt_chars: int | None = Field(default=None, ge=1, le=1_000_000)


class ChallengeCreate(InputSchema):
    slug: Slug
    title: Name
    goal: str = Field(default="", max_length=20_000)
    kind: Literal["prompt"] = "prompt"
    target: TargetConfig
    verifier: VerifierConfig
    evaluation: EvaluationConfig = Field(default_factory=EvaluationConfig)
    scoring: ScoringConfig = Field(default_factory=ScoringConfig)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    opens_at: AwareDatetime | None = None
    closes_at: AwareDatetime | None = None
    visibility: Visibility = "private"

    @model_validator(mode="after")
    def _consistent(self) -> ChallengeCreate:
        if self.opens_at and self.closes_at and self.closes_at <= self.opens_at:
            raise ValueError("closes_at must be after opens_at")
        if self.scoring.strategy == "highest_rating" and self.verifier.type != "llm_judge":
            raise ValueError(
                "strategy 'highest_rating' needs an 'llm_judge' verifier (only a judge rates)"
            )
        return self


class ChallengeUpdate(InputSchema):
    """Fields to change; the result is validated again as a whole."""

    title: Name | None = None
    goal: str | None = Field(default=None, max_length=20_000)
    target: TargetConfig | None = None
    verifier: VerifierConfig | None = None
    evaluation: EvaluationConfig | None = None
    scoring: ScoringConfig | None = None
    limits: LimitsConfig | None = None
    opens_at: AwareDatetime | None = None
    closes_at: AwareDatetime | None = None
    visibility: Visibility | None = None


class ChallengeRead(OutputSchema):
    id: uuid.UUID
    slug: str
    title: str
    goal: str
    kind: str
    target: dict[str, Any] | None
    verifier: dict[str, Any] | None
    evaluation: dict[str, Any]
    scoring: dict[str, Any]
    limits: dict[str, Any]
    opens_at: datetime | None
    closes_at: datetime | None
    visibility: str
    status: Literal["upcoming", "open", "closed"]
    created_at: datetime
    updated_at: datetime


class ChallengePublic(OutputSchema):
    """What a participant may see: no system prompt, no judge rubric, no answer keys."""

    id: uuid.UUID
    slug: str
    title: str
    goal: str
    kind: str
    target: dict[str, Any] | None
    verifier: dict[str, Any] | None
    evaluation: dict[str, Any]
    scoring: dict[str, Any]
    limits: dict[str, Any]
    opens_at: datetime | None
    closes_at: datetime | None
    visibility: str
    status: Literal["upcoming", "open", "closed"]
    created_at: datetime


class ChallengeList(OutputSchema):
    items: list[ChallengeRead | ChallengePublic]
    total: int
