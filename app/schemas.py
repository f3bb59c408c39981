"""Schema building blocks shared by every domain."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, StringConstraints

from app.config import get_settings
from app.evaluation.model_ids import model_id_problem

Slug = Annotated[
    str, StringConstraints(pattern=r"^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$", max_length=64)
]
Handle = Annotated[
    str,
    StringConstraints(
        strip_whitespace=True, pattern=r"^[A-Za-z0-9_.-]{1,64}$", min_length=1, max_length=64
    ),
]
Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]


def _known_model_id(value: str) -> str:
    problem = model_id_problem(value, get_settings().outbound_policy().providers)
    if problem:
        raise ValueError(problem)
    return value.strip()


# A litellm model id, refused when saved if no worker could call it, or if it is of a provider
# the operator does not allow (see model_ids and app.outbound.providers).
ModelId = Annotated[str, StringConstraints(max_length=200), AfterValidator(_known_model_id)]


class InputSchema(BaseModel):
    """Request bodies refuse unknown fields, so a typo is an error rather than silently ignored."""

    model_config = ConfigDict(extra="forbid")


class OutputSchema(BaseModel):
    model_config = ConfigDict(from_attributes=True)
