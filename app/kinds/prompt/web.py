"""The prompt kind's fragments of the web pages: its facts and its prompt form."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from pydantic import ValidationError

from app.kinds.api import AttemptCreate, KindConfig, get_settings, telling_first
from app.kinds.api.storage import Challenge
from app.kinds.api.web import FormError, WebKind
from app.kinds.prompt.config import PromptConfig
from app.kinds.prompt.schemas import PromptSubmission


@dataclass(frozen=True)
class PromptFacts:
    """What the challenge page says of the target: nothing hidden (no system prompt, no
    verifier keys)."""

    model: str
    verifier: str
    evaluation: str


@dataclass(frozen=True)
class PromptForm:
    prompt: str
    limit: int  # the longest prompt the service accepts for this challenge (the same rule)


def _prompt(config: KindConfig) -> PromptConfig:
    if not isinstance(config, PromptConfig):
        raise TypeError(f"a prompt challenge's configuration, not {type(config).__name__}")
    return config


def _refusal_text(error: ValidationError) -> str:
    first = telling_first(error.errors())[0]
    message = str(first.get("msg", "is not valid")).removeprefix("Value error, ")
    return f"Your prompt {message[0].lower()}{message[1:]}." if message else "Invalid prompt."


class PromptPages(WebKind):
    templates_dir: ClassVar[Path | None] = Path(__file__).resolve().parent / "templates"
    form_fields: ClassVar[tuple[str, ...]] = ("prompt",)
    essential_fields: ClassVar[tuple[str, ...]] = (
        "target.model",
        "target.system_prompt",
        "verifier",
    )
    model_fields: ClassVar[tuple[str, ...]] = ("target.model",)

    def facts(self, challenge: Challenge, config: KindConfig) -> Any:
        prompt = _prompt(config)
        evaluation = prompt.evaluation
        return PromptFacts(
            model=prompt.target.model,
            verifier=prompt.verifier.type,
            evaluation=evaluation.metric.replace("k", str(evaluation.k)),
        )

    def form(
        self,
        challenge: Challenge,
        config: KindConfig,
        fields: Mapping[str, str],
        error_field: str | None,
    ) -> Any | None:
        limit = challenge.limits.prompt_limit(get_settings().max_prompt_chars)
        return PromptForm(prompt=fields.get("prompt", ""), limit=limit)

    def form_submission(
        self, config: KindConfig, fields: Mapping[str, str], handle: str
    ) -> AttemptCreate:
        prompt = fields.get("prompt", "")
        if not prompt.strip():
            raise FormError("Write a prompt first: it must not be blank.", field="prompt")
        try:
            submitted = PromptSubmission(prompt=prompt)
        except ValidationError as exc:
            raise FormError(_refusal_text(exc), field="prompt") from exc
        return AttemptCreate.of(handle, prompt=submitted.prompt)
