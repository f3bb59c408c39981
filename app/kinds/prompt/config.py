"""A prompt challenge's sections: the target model a participant's prompt is sent to, the
verifier that judges its answer, and pass@k or seq@k."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from app.kinds.api import EvaluationConfig, InputSchema, KindConfig, ModelId
from app.kinds.api.evaluation import ModelSpec, VerifierConfig

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

    def model_spec(self, timeout_s: float) -> ModelSpec:
        """The actor the engine calls: the one place this section becomes a `ModelSpec`."""
        return ModelSpec(
            model=self.model,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            system_prompt=self.system_prompt or None,
            api_base=self.api_base,
            timeout_s=timeout_s,
        )

    def task_prompt(self, prompt: str) -> str:
        # str.replace, not str.format: braces in a participant's prompt must stay literal.
        return self.user_template.replace(PROMPT_SLOT, prompt)

    def public(self) -> dict[str, Any]:
        # The user template is not secret: it is part of the prompt each trial shows.
        return {"model": self.model, "user_template": self.user_template}


class PromptConfig(KindConfig):
    target: TargetConfig
    verifier: VerifierConfig = Field(examples=[{"type": "contains", "pattern": "PWNED"}])
    evaluation: EvaluationConfig = Field(default_factory=EvaluationConfig)
