"""The `evaluation` section kinds that run the engine's trials share: pass@k or seq@k."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from app.schemas import InputSchema


class EvaluationConfig(InputSchema):
    metric: Literal["pass@k", "seq@k"] = "pass@k"
    k: int = Field(default=1, ge=1, le=20)
    feedback_mode: str = Field(default="binary", pattern=r"^[a-z][a-z0-9_]*$", max_length=50)
