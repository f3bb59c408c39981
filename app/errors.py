"""One error shape for the whole API: `{"error": {"code", "message", "details"}}`.

Services raise `AppError` subclasses that carry their HTTP status; the handlers in `main.py`
render them, FastAPI's validation errors and anything unexpected in that one shape.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class AppError(Exception):
    status_code = 400
    code = "bad_request"

    def __init__(self, message: str, *, details: Any = None, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.message = message
        self.details = details
        self.headers = headers


class NotFound(AppError):
    status_code = 404
    code = "not_found"


class Unauthorized(AppError):
    status_code = 401
    code = "unauthorized"


class Forbidden(AppError):
    status_code = 403
    code = "forbidden"


class Conflict(AppError):
    status_code = 409
    code = "conflict"


class ValidationFailed(AppError):
    status_code = 422
    code = "validation_error"

    @classmethod
    def at(cls, path: Sequence[str | int], message: str) -> ValidationFailed:
        """A 422 naming the field path, in the same form as request validation errors."""
        return cls(
            f"{'.'.join(str(p) for p in path)}: {message}",
            details=[{"loc": ["body", *path], "msg": message, "type": "value_error"}],
        )


class TooManyRequests(AppError):
    status_code = 429
    code = "rate_limited"


class ServiceUnavailable(AppError):
    status_code = 503
    code = "unavailable"
