"""One error shape for the whole API: `{"error": {"code", "message", "details"}}`.

Services raise `AppError` subclasses that carry their HTTP status; the handlers in `main.py`
render them, FastAPI's validation errors and anything unexpected in that one shape.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, get_args

from pydantic import BaseModel

from app.kit.error_codes import (
    BAD_REQUEST,
    FORBIDDEN,
    NOT_FOUND,
    RATE_LIMITED,
    UNAUTHORIZED,
    UNAVAILABLE,
    VALIDATION_ERROR,
    ErrorCode,
)
from app.kit.error_words import plain_message


class AppError(Exception):
    """An error with its HTTP status and its code (app/kit/error_codes.py): a kind's own, or the
    `code` given, which names the condition more closely."""

    status_code = 400
    code: str = BAD_REQUEST

    def __init__(
        self,
        message: str,
        *,
        code: ErrorCode | None = None,
        details: Any = None,
        headers: dict[str, str] | None = None,
    ):
        super().__init__(message)
        self.message = message
        self.details = details
        self.headers = headers
        if code is not None:
            self.code = code


class NotFound(AppError):
    status_code = 404
    code = NOT_FOUND


class Unauthorized(AppError):
    status_code = 401
    code = UNAUTHORIZED


class Forbidden(AppError):
    status_code = 403
    code = FORBIDDEN


class Conflict(AppError):
    """A 409: the request conflicts with the state of things. Its code says which conflict
    (`challenge_closed`, `slug_taken`, ...): there is no general one."""

    status_code = 409

    def __init__(
        self,
        message: str,
        *,
        code: ErrorCode,
        details: Any = None,
        headers: dict[str, str] | None = None,
    ):
        super().__init__(message, code=code, details=details, headers=headers)


def problem(
    loc: Sequence[str | int], validator_message: str, kind: str, message: str | None = None
) -> dict[str, Any]:
    """One entry of a 422's `details`: where (`loc`, and `field`, the dotted path as the body
    wrote it, without `body`), what in plain words (`message`, what the web forms show), and
    in the validator's (`validator_message`; `msg` is the same, kept for older clients), and
    its `type`."""
    # A body that is not JSON is located at the character where parsing stopped: no field.
    named = [] if kind == "json_invalid" else [part for part in loc if part != "body"]
    return {
        "loc": list(loc),
        "msg": validator_message,
        "type": kind,
        "field": ".".join(str(part) for part in named),
        "message": validator_message if message is None else message,
        "validator_message": validator_message,
    }


class ValidationFailed(AppError):
    """A 422. Its details are `problem`s; entries given in the older `{loc, msg, type}` shape
    get the rest (`field`, `message`, `validator_message`), so every 422 lists the same."""

    status_code = 422
    code = VALIDATION_ERROR

    def __init__(self, message: str, *, details: Any = None, headers: dict[str, str] | None = None):
        if isinstance(details, list):
            details = [_completed(detail) for detail in details]
        super().__init__(message, details=details, headers=headers)

    @classmethod
    def at(cls, path: Sequence[str | int], message: str) -> ValidationFailed:
        """A 422 naming the field path, in the same form as request validation errors."""
        return cls.of([problem(["body", *path], message, "value_error")])

    @classmethod
    def of(cls, details: Sequence[Mapping[str, Any]]) -> ValidationFailed:
        """A 422 listing every problem (`problem`s, as `error_details` makes them)."""
        listed = [dict(detail) for detail in details]
        return cls(validation_message(listed), details=listed)

    @property
    def problems(self) -> list[dict[str, Any]]:
        """Its details, each a `problem`."""
        if not isinstance(self.details, list):
            return []
        return [dict(detail) for detail in self.details if isinstance(detail, Mapping)]


def _completed(detail: Any) -> Any:
    if not isinstance(detail, Mapping) or "message" in detail or "loc" not in detail:
        return detail
    message = str(detail.get("msg", ""))
    return {**problem(detail["loc"], message, str(detail.get("type", "value_error"))), **detail}


class Problems:
    """Collects a body's problems from checks that do not depend on each other, so one 422
    lists them all (an organizer fixes a form once, not once per check)."""

    def __init__(self) -> None:
        self.details: list[dict[str, Any]] = []

    @contextmanager
    def collect(self) -> Iterator[None]:
        """Runs a check; a `ValidationFailed` it raises is added, not raised."""
        try:
            yield
        except ValidationFailed as failed:
            self.details.extend(failed.problems)

    def add(self, details: Sequence[Mapping[str, Any]]) -> None:
        self.details.extend(dict(detail) for detail in details)

    def raise_any(self) -> None:
        if self.details:
            raise ValidationFailed.of(self.details)


# How `telling_first` words an unknown field it takes for a misspelling.
MISSPELT = "unknown field; did you mean"


def as_given(loc: Sequence[str | int], given: Any) -> tuple[str | int, ...]:
    """An error's location as the caller wrote it. Pydantic puts the member of a union in the
    path (a tagged union's tag: `verifier.contains.patern` for `verifier.patern` of a
    `contains` verifier; `int` or `str` for a plain one); the body has no such field. Walking
    the given value, a step a mapping does not have is such a label, unless it is the last
    (a missing field), and so is every step below a value that has no fields."""
    path: list[str | int] = []
    current = given
    for position, part in enumerate(loc):
        last = position == len(loc) - 1
        if isinstance(current, Mapping):
            if part not in current and not last:
                continue
            path.append(part)
            current = current.get(part)
        elif isinstance(current, list) and isinstance(part, int):
            path.append(part)
            current = current[part] if 0 <= part < len(current) else None
    return tuple(path)


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The models a field's type holds: itself, a union's members, a list's items."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for argument in get_args(annotation) for model in _models_in(argument)]


def fields_at(model: Any, path: Sequence[str | int]) -> set[str]:
    """The fields a body may have at `path` (as the caller wrote it) under `model` (a model,
    or a type holding models: a union of bodies): those of every model that can stand there
    (each member of a union, each item of a list)."""
    models = _models_in(model)
    for part in path:
        if isinstance(part, int):
            continue  # an item of the list the previous step held
        models = [
            found
            for current in models
            if (field := current.model_fields.get(part)) is not None
            for found in _models_in(field.annotation)
        ]
    return {name for current in models for name in current.model_fields}


def _value_at(given: Any, path: Sequence[str | int]) -> Any:
    for part in path:
        if isinstance(given, Mapping):
            given = given.get(part)
        elif isinstance(given, list) and isinstance(part, int) and 0 <= part < len(given):
            given = given[part]
        else:
            return None
    return given


def telling_first(
    errors: Sequence[Mapping[str, Any]],
    given: Mapping[str, Any] | None = None,
    model: Any = None,
    beside: Collection[str] = (),
) -> list[dict[str, Any]]:
    """Validation errors with the one that says what to fix first: a field that is not
    allowed beside a missing one is a misspelling (`target.modle` for `target.model`), and
    "Field required" would send the reader looking for what they already wrote (it is left
    out: one mistake, one message).
    Such an unknown field's message names the field it probably meant: a missing one, else,
    knowing the `model` validated (a model or a union of them), one it has there that the body
    does not give; at the top, also one of `beside` (the fields of a request body around the
    part validated, which that part's model does not know). With the value `given` (what was
    validated), each location is as the caller wrote it (`as_given`)."""
    copied = [dict(error) for error in errors]
    if given is not None:
        for error in copied:
            error["loc"] = as_given(error.get("loc", ()), given)
    missing: dict[tuple[Any, ...], list[str]] = {}
    for error in copied:
        if error.get("type") == "missing" and error.get("loc"):
            missing.setdefault(tuple(error["loc"][:-1]), []).append(str(error["loc"][-1]))
    unknown = [error for error in copied if error.get("type") == "extra_forbidden"]
    explained: set[tuple[Any, ...]] = set()
    for error in unknown:
        where = tuple(error["loc"][:-1])
        candidates = missing.get(where, [])
        known: set[str] = set()
        if given is not None:
            known = fields_at(model, where) if model is not None else set()
            if where == ():
                known |= set(beside)
        if not candidates and given is not None:
            written = _value_at(given, where)
            present = set(written) if isinstance(written, Mapping) else set()
            candidates = sorted(known - present)
        meant = difflib.get_close_matches(str(error["loc"][-1]), candidates, n=1)
        if meant:
            error["msg"] = f"{MISSPELT} '{meant[0]}'?"
            # The field it meant is not missing: it was misspelt (one mistake, one message).
            explained.add((*where, meant[0]))
        elif known or candidates:
            # No close one: the plain message lists what this part of the body takes.
            error["known"] = sorted(known | set(candidates))
    rest = [
        error
        for error in copied
        if error.get("type") != "extra_forbidden"
        and not (error.get("type") == "missing" and tuple(error.get("loc", ())) in explained)
    ]
    return unknown + rest


def error_details(
    errors: Sequence[Mapping[str, Any]],
    within: Sequence[str | int] = (),
    given: Mapping[str, Any] | None = None,
    model: Any = None,
    beside: Collection[str] = (),
) -> list[dict[str, Any]]:
    """Validation errors as a 422 lists them (`details`, each a `problem`): the telling one
    first, each with its location (`within` the part of the request that held the value:
    `body`), its message in plain words and in the validator's, and its type (`given`,
    `model` and `beside`: as `telling_first` takes them). The API and the web forms both use
    it, so a form shows what the API says."""
    return [
        problem(
            [*within, *error["loc"]], str(error["msg"]), str(error["type"]), plain_message(error)
        )
        for error in telling_first(errors, given, model, beside)
    ]


def request_error_details(
    errors: Sequence[Mapping[str, Any]], body: Any = None, body_model: Any = None
) -> list[dict[str, Any]]:
    """A request's validation errors as a 422 lists them: the body's first, each named as the
    body wrote it, an unknown field at any depth with the field it probably meant (knowing
    `body_model`, the type the operation declares for its body), then the parameters'."""
    in_body = [
        {**error, "loc": tuple(error["loc"][1:])}
        for error in errors
        if tuple(error.get("loc", ()))[:1] == ("body",)
    ]
    elsewhere = [error for error in errors if tuple(error.get("loc", ()))[:1] != ("body",)]
    # A body that is not an object (not JSON, a list) has no fields to walk or to suggest.
    given = body if isinstance(body, Mapping) else None
    return error_details(
        in_body, ["body"], given, body_model if given is not None else None
    ) + error_details(elsewhere)


def detail_text(detail: Mapping[str, Any]) -> str:
    """One error of a 422 in words: its field path (without `body`), then its plain message."""
    location = detail.get("field")
    if location is None:
        location = ".".join(str(part) for part in detail.get("loc", ()) if part != "body")
    message = str(detail.get("message", detail.get("msg")))
    return f"{location}: {message}" if location else message


# A 422's message lists this many of its problems; `details` has them all.
MESSAGE_PROBLEMS = 5


def validation_message(details: Sequence[Mapping[str, Any]]) -> str:
    """A 422's message: its first problems in plain words (how many more, when there are)."""
    text = "; ".join(detail_text(detail) for detail in details[:MESSAGE_PROBLEMS])
    more = len(details) - MESSAGE_PROBLEMS
    return f"{text}; and {more} more (error.details lists them all)" if more > 0 else text


class TooManyRequests(AppError):
    status_code = 429
    code = RATE_LIMITED


class ServiceUnavailable(AppError):
    status_code = 503
    code = UNAVAILABLE
