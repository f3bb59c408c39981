"""Checks of a kind's configuration against the operator's outbound policy, when saved."""

from __future__ import annotations

from app.config import get_settings
from app.errors import ValidationFailed
from app.evaluation.model_ids import base_url_problem, model_id_problem
from app.outbound.policy import OutboundRefused


def checked_api_base(api_base: str | None, path: list[str | int]) -> str | None:
    """The base URL is allowed and resolves to permitted addresses now; it is stored in its
    normalised form, which the worker checks again before every call."""
    if api_base is None:
        return None
    try:
        return get_settings().outbound_policy().checked_base(api_base)
    except OutboundRefused as error:
        raise ValidationFailed.at(path, str(error)) from error


def check_model_id(model: str, path: list[str | int]) -> None:
    """A model id named where the schema could not check it (a judge's, say) is held to the
    same rules as every other."""
    problem = model_id_problem(model, get_settings().outbound_policy().providers)
    if problem:
        raise ValidationFailed.at(path, problem)
    check_served(model, None, path, None)


def check_served(
    model: str, api_base: str | None, path: list[str | int], base_field: str | None
) -> None:
    """An `openai-compatible/` model is refused where it names no base URL to be called at,
    when the challenge (or attempt) is saved rather than on its first call."""
    problem = base_url_problem(model, api_base, base_field)
    if problem:
        raise ValidationFailed.at(path, problem)
