"""Checks of a kind's configuration against the operator's outbound policy, when saved."""

from __future__ import annotations

from app.config import get_settings
from app.errors import ValidationFailed
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
