"""Forms that a page shows again, with a message, when what was sent is refused."""

from __future__ import annotations

from collections.abc import Collection

from app.kit.error_codes import VALIDATION_ERROR
from app.kit.errors import AppError


class FormError(AppError):
    """A form the page shows again with this message; `field` names the input at fault."""

    status_code = 422
    code = VALIDATION_ERROR

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        status_code: int = 422,
        headers: dict[str, str] | None = None,
    ):
        super().__init__(message, headers=headers)
        self.field = field
        self.status_code = status_code


def error_field(exc: AppError, fields: Collection[str]) -> str | None:
    """The form field a service error is about (its details name the field path), if it is
    one of the form's."""
    details = exc.details
    if isinstance(details, list) and details and isinstance(details[0], dict):
        location = details[0].get("loc")
        if isinstance(location, list) and location:
            name = str(location[-1])
            if name in fields:
                return name
    return None
