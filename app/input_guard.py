"""Refusing, at the door, request text PostgreSQL cannot store (app/storable.py).

One dependency of every route, API and web pages alike, checks what the caller sent: path
parameters, query parameters, headers, and the JSON or form body. The first NUL, lone
surrogate or non-finite number answers 422 naming where it is (`body.scoring.config.x`,
`query.participant`, `header.idempotency-key`), in the one error shape; the web pages render
the same refusal as an HTML page. It runs before the other dependencies, so no credential
lookup, no query and no validation ever sees such text.

Clean requests (all but hostile ones) pay a few byte scans: a JSON body is only walked when its
bytes hold something that could be a problem (the parsed value is FastAPI's, cached); a form's
fields (FastAPI's parse, cached too) are few and always checked.
"""

from __future__ import annotations

import re
from typing import Any

from fastapi import Request
from fastapi.routing import APIRoute

from app.errors import ValidationFailed
from app.storable import NUL_MESSAGE, Location, describe_location, first_problem, text_problem

_BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# What an unstorable value looks like in JSON text: the escapes of NUL and of surrogates (a
# valid pair is checked and passes), the non-standard NaN and Infinity Python's parser takes,
# and numbers large enough to overflow a float. Only a body matching this is walked.
_JSON_SUSPECT = re.compile(rb"\\u(?:0000|[dD][89a-fA-F])|NaN|Infinity|[eE][+]?\d{3}|\d{300}")


def _refuse(location: Location, message: str) -> ValidationFailed:
    return ValidationFailed(
        f"{describe_location(location)}: {message}",
        details=[{"loc": list(location), "msg": message, "type": "value_error"}],
    )


def _check_pairs(kind: str, pairs: list[tuple[str, Any]]) -> None:
    for name, value in pairs:
        problem = text_problem(name)
        if problem is not None:
            raise _refuse((kind,), f"parameter names {problem}")
        if isinstance(value, str):
            problem = text_problem(value)
            if problem is not None:
                raise _refuse((kind, name), problem)


async def _check_body(request: Request) -> None:
    route = request.scope.get("route")
    if not isinstance(route, APIRoute) or route.body_field is None:
        return
    content_type = request.headers.get("content-type", "").lower()
    if "form" in content_type:
        # Parsed and cached by FastAPI for form routes (their stream is consumed by then).
        form = await request.form()
        _check_pairs("body", list(form.multi_items()))
        return
    body = await request.body()  # cached: FastAPI read it before solving dependencies
    if not _JSON_SUSPECT.search(body):
        return
    try:
        value = await request.json()
    except ValueError:
        return  # not JSON: FastAPI's own validation answers it
    found = first_problem(value, ("body",))
    if found is not None:
        raise _refuse(*found)


async def refuse_unstorable_input(request: Request) -> None:
    """Answers 422 when the request carries text or numbers the database cannot store."""
    _check_pairs("path", list(request.path_params.items()))
    query = request.scope.get("query_string", b"")
    if b"%00" in query or b"\x00" in query:
        _check_pairs("query", request.query_params.multi_items())
    for name, value in request.scope["headers"]:
        if b"\x00" in value:
            raise _refuse(("header", name.decode("latin-1")), NUL_MESSAGE)
    if request.method in _BODY_METHODS:
        await _check_body(request)
