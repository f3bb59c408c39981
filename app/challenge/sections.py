"""Configuration sections several kinds share, each kind naming it in its own `config_model`:
`evaluation`, pass@k or seq@k, of the kinds that run the engine's trials."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from app.kit.error_words import pattern_words
from app.kit.schemas import InputSchema

# The name of a feedback mode or a benchmark.
NAME_PATTERN = pattern_words(
    r"^[a-z][a-z0-9_]*$", "lowercase letters, digits and underscores, starting with a letter"
)


class EvaluationConfig(InputSchema):
    metric: Literal["pass@k", "seq@k"] = "pass@k"
    k: int = Field(default=1, ge=1, le=20)
    feedback_mode: str = Field(default="binary", pattern=NAME_PATTERN, max_length=50)
