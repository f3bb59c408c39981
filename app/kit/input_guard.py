"""Refusing, at the door, request text PostgreSQL cannot store (app/evaluation/engine/storable.py).

One dependency of every route, API and web pages alike, checks what the caller sent: path
parameters, query parameters, headers, and the JSON or form body. The first NUL, lone
surrogate or non-finite number answers 422 naming where it is (`body.scoring.config.x`,
`query.participant`, `header.idempotency-key`), in the one error shape; the web pages render
the same refusal as an HTML page. It runs before the other dependencies, so no credential
lookup, no query and no validation ever sees such text.

Clean requests (all but hostile ones) pay little: a byte scan and a second C-speed parse of a
JSON body, whose hooks run only for floats; the body is walked (FastAPI's parsed value,
cached) to name the field only when something is found. A form's fields (FastAPI's parse,
cached too) are few and always checked.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from fastapi import Request
from fastapi.routing import APIRoute

from app.evaluation.engine.storable import (
    NUL_MESSAGE,
    Location,
    describe_location,
    first_problem,
    text_problem,
)
from app.kit.errors import ValidationFailed

_BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# How NUL and surrogates can appear in JSON text: as escapes (raw, they are not valid JSON or
# not valid UTF-8). A valid surrogate pair matches too, and passes the walk.
_UNSTORABLE_ESCAPE = re.compile(rb"\\u(?:0000|[dD][89a-fA-F])")


class _NonFinite(Exception):
    """A NaN or Infinity token, or a number too large for a float, in the JSON text."""


def _refuse_constant(_name: str) -> float:
    raise _NonFinite


def _finite_float(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):
        raise _NonFinite
    return value


def _suspect(body: bytes) -> bool:
    """Whether a JSON body may hold an unstorable value: a C-speed scan for the escapes, and a
    second parse whose hooks see only the non-finite numbers (FastAPI's parse takes them)."""
    if b"\\u" in body and _UNSTORABLE_ESCAPE.search(body) is not None:
        return True
    try:
        json.loads(body, parse_constant=_refuse_constant, parse_float=_finite_float)
    except _NonFinite:
        return True
    except (ValueError, RecursionError):
        return False  # not JSON FastAPI took either; its own validation answers
    return False


def _refuse(location: Location, message: str) -> ValidationFailed:
    return ValidationFailed(
        f"{describe_location(location)}: {message}",
        details=[{"loc": list(location), "msg": message, "type": "value_error"}],
    )


def refuse_unstorable_value(value: Any, location: Location) -> None:
    """The same refusal for a value assembled from a request in other ways (the JSON fields of
    the web's challenge forms, parsed by the page)."""
    found = first_problem(value, location)
    if found is not None:
        raise _refuse(*found)


def _check_pairs(kind: str, pairs: list[tuple[str, Any]]) -> None:
    for name, value in pairs:
        problem = text_problem(name)
        if problem is not None:
            raise _refuse((kind,), f"parameter names {problem}")
        if isinstance(value, str):
            problem = text_problem(value)
            if problem is not None:
                raise _refuse((kind, name), problem)


async def _check_body(request: Request, content_type: bytes) -> None:
    route = request.scope.get("route")
    if not isinstance(route, APIRoute) or route.body_field is None:
        return
    if b"form" in content_type.lower():
        # Parsed and cached by FastAPI for form routes (their stream is consumed by then).
        form = await request.form()
        _check_pairs("body", list(form.multi_items()))
        return
    body = await request.body()  # cached: FastAPI read it before solving dependencies
    if not _suspect(body):
        return
    try:
        value = await request.json()
    except ValueError:
        return  # not JSON: FastAPI's own validation answers it
    refuse_unstorable_value(value, ("body",))


async def refuse_unstorable_input(request: Request) -> None:
    """Answers 422 when the request carries text or numbers the database cannot store."""
    scope = request.scope
    # The path and the query are percent-decoded with replacement characters for invalid
    # UTF-8, so a NUL is all they can carry; the checks that name the parameter run only then.
    if "\x00" in scope["path"]:
        _check_pairs("path", list(request.path_params.items()))
    query = scope.get("query_string", b"")
    if b"%00" in query or b"\x00" in query:
        _check_pairs("query", request.query_params.multi_items())
    content_type = b""
    for name, value in scope["headers"]:
        if b"\x00" in value:
            raise _refuse(("header", name.decode("latin-1")), NUL_MESSAGE)
        if name == b"content-type":
            content_type = value
    if scope["method"] in _BODY_METHODS:
        await _check_body(request, content_type)
