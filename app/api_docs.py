"""The API's documentation: every error response in the OpenAPI document, and Swagger UI and
ReDoc served from the app's own files.

Errors: each operation lists the errors it can answer, all in the one error shape
(`ErrorResponse`): 401 and 403 from its credential dependencies, 404 where it has path
parameters, 413 and 422 where it takes a body or parameters (every request's text is checked,
app/kit/input_guard.py), 503 everywhere (the database), and what a route declares itself with
FastAPI's `responses=` (a 409 or a 429 only its rules know about: `raises(...)`). Each error
response lists the codes it may carry (app/kit/error_codes.py): in `x-error-codes`, and each with
its meaning in the description.

Swagger UI: swagger-ui-dist's bundle comes from the `fastapi-offline` package and is served
under DOCS_STATIC_URL, so /docs loads nothing from another host (no CDN, no online validator),
and its Content Security Policy would stop anything that tried. ReDoc is not served: its
bundle always loads a logo from its maker's CDN.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import fastapi_offline
from fastapi import FastAPI
from fastapi.dependencies.models import Dependant
from fastapi.openapi.docs import get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.routing import APIRoute
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, Field
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import BaseRoute

from app.attempt.attempt_kind import AttemptKind, unscored_fields
from app.auth.gate import (
    get_credential,
    require_platform_admin,
    require_tenant_admin,
    require_tenant_key,
)
from app.challenge.registry import registered
from app.kit.error_codes import (
    CODES_EXTENSION,
    GENERAL,
    ErrorCode,
    codes_described,
    declared_codes,
)

DOCS_URL = "/docs"
OAUTH2_REDIRECT_URL = "/docs/oauth2-redirect"
DOCS_STATIC_URL = "/static/api-docs"
DOCS_STATIC_DIR = Path(fastapi_offline.__file__).resolve().parent / "static"
ERROR_SCHEMA = "ErrorResponse"

ERROR_DESCRIPTIONS = {
    401: "No credential, or one that is not valid (`Authorization: Bearer <token>`).",
    403: "The credential is valid but may not do this (wrong kind of key or role), or its "
    "tenant is closed: `tenant_suspended`, `tenant_pending`.",
    404: "Nothing with this id or slug that the caller may see; another tenant's ids answer "
    "404 too.",
    409: "The request conflicts with the current state.",
    413: "The request body is larger than the server accepts (GAUNTLET_MAX_REQUEST_BYTES).",
    422: "A parameter, header or the body is not valid: `error.details` lists every problem "
    "at once, each with its location (`loc`, `field`) and in plain words (`message`), e.g. "
    "text with NUL characters or a number out of range.",
    429: "Too many requests: try again after `Retry-After` seconds.",
    503: "The database, or (saving a challenge) the DNS resolver, is unavailable: retry after "
    "`Retry-After` seconds.",
}
_RETRY_AFTER = {
    "Retry-After": {
        "description": "Seconds to wait before retrying.",
        "schema": {"type": "integer"},
    }
}
_INLINE_SCRIPT = re.compile(r"<script>(.*?)</script>", re.DOTALL)
_ROLE_CHECKS = {require_platform_admin, require_tenant_admin, require_tenant_key}


class ErrorBody(BaseModel):
    code: str = Field(examples=["validation_error"])
    message: str = Field(examples=["title: must not contain NUL (U+0000) characters"])
    details: Any = Field(
        default=None,
        description="For 422: every problem of the request, each `{loc, field, message, type, "
        "validator_message, msg}`: `loc` the path (`['body', 'scoring', 'config', 'x']`, "
        "`['query', 'offset']`), `field` the same dotted without `body`, `message` what is "
        "wrong in plain words, `type` and `validator_message` the validator's code and words "
        "(`msg`: the same, for older clients).",
    )


class ErrorResponse(BaseModel):
    """Every error the API answers has this shape."""

    error: ErrorBody


def _calls(dependant: Dependant) -> set[Callable[..., Any]]:
    found: set[Callable[..., Any]] = set()
    pending = [dependant]
    while pending:
        current = pending.pop()
        if current.call is not None:
            found.add(current.call)
        pending.extend(current.dependencies)
    return found


def _takes_path_parameters(dependant: Dependant) -> bool:
    """Whether the operation or one of its dependencies (a challenge named by id or slug,
    app/challenge/reference.py) reads a path parameter."""
    pending = [dependant]
    while pending:
        current = pending.pop()
        if current.path_params:
            return True
        pending.extend(current.dependencies)
    return False


def api_routes(routes: Sequence[BaseRoute]) -> Iterator[APIRoute]:
    """Every API route, also those of included routers (which FastAPI from 0.12x keeps as
    one entry each, holding the router)."""
    for route in routes:
        if isinstance(route, APIRoute):
            yield route
        included = getattr(route, "original_router", None)
        if included is not None:
            yield from api_routes(included.routes)


def error_statuses(route: APIRoute) -> set[int]:
    """The errors an operation can answer, as far as its signature tells."""
    calls = _calls(route.dependant)
    statuses = {422, 503}
    if get_credential in calls:
        statuses.add(401)
    # A public read of a suspended or pending tenant answers 403 too (its doors are closed).
    if calls & _ROLE_CHECKS or route.path.startswith("/v1/public/"):
        statuses.add(403)
    if _takes_path_parameters(route.dependant):
        statuses.add(404)
    if route.body_field is not None:
        statuses.add(413)
    return statuses


def _error_response(
    status: int, description: str | None, codes: Sequence[ErrorCode]
) -> dict[str, Any]:
    said = description or ERROR_DESCRIPTIONS.get(status, "Error.")
    # The codes of the operation's own, each with its meaning (the general ones the
    # description of the status says).
    own = [code for code in codes if code not in GENERAL.get(status, ())]
    response: dict[str, Any] = {
        "description": f"{said}\n\n{codes_described(own)}" if own else said,
        "content": {
            "application/json": {"schema": {"$ref": f"#/components/schemas/{ERROR_SCHEMA}"}}
        },
    }
    if codes:
        response[CODES_EXTENSION] = [str(code) for code in codes]
    if status in (429, 503):
        response["headers"] = _RETRY_AFTER
    return response


def _add_error_schema(document: dict[str, Any]) -> None:
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    schema = ErrorResponse.model_json_schema(ref_template="#/components/schemas/{model}")
    schemas.update(schema.pop("$defs", {}))
    schemas[ERROR_SCHEMA] = schema
    # FastAPI's own 422 shape is not what this API answers.
    for unused in ("HTTPValidationError", "ValidationError"):
        schemas.pop(unused, None)


def operation_id(route: APIRoute) -> str:
    """An operation's id is its endpoint's name (`post_attempt`), not FastAPI's generated
    path-and-method one: clients generated from the document get readable method names."""
    return route.name


# The credential every keyed operation takes: `/docs` shows an Authorize button for it.
BEARER_SCHEME = "bearerAuth"
_BEARER = {
    "type": "http",
    "scheme": "bearer",
    "description": "The platform admin token or a tenant API key (for /metrics, the metrics "
    "token or the admin token): `Authorization: Bearer <token>`.",
}


def document_errors(app: FastAPI, document: dict[str, Any]) -> dict[str, Any]:
    """`document` (the generated OpenAPI) with each operation's error responses, and the
    bearer credential on every operation that takes one."""
    _add_error_schema(document)
    components = document.setdefault("components", {})
    components.setdefault("securitySchemes", {})[BEARER_SCHEME] = _BEARER
    for route in api_routes(app.routes):
        if not route.include_in_schema:
            continue
        path_item = document["paths"].get(route.path_format, {})
        keyed = get_credential in _calls(route.dependant)
        for method in route.methods or ():
            operation = path_item.get(method.lower())
            if operation is None:
                continue
            if keyed:
                operation["security"] = [{BEARER_SCHEME: []}]
            responses: dict[str, Any] = operation.setdefault("responses", {})
            declared = {int(code) for code in responses if code.isdigit() and int(code) >= 400}
            for status in sorted(error_statuses(route) | declared):
                given = responses.get(str(status), {}).get("description")
                # FastAPI's default 422 description is replaced along with its schema, and
                # a description the route did not give (FastAPI writes one for a status
                # declared only by its codes) by this API's own.
                own = route.responses.get(status, route.responses.get(str(status), {}))
                keep = given if status != 422 and own.get("description") else None
                codes = declared_codes(route.responses, status)
                responses[str(status)] = _error_response(status, keep, codes)
    return document


# The bodies that carry a kind's sections as fields of their own (app/challenge/schemas.py).
KIND_BODIES = ("ChallengeCreate", "ChallengeUpdate")
# The body that carries a kind's submission fields as fields of its own (app/attempt/schemas.py).
SUBMISSION_BODY = "AttemptCreate"
# The bodies of practice and test runs, which carry the fields of a kind's unscored runs.
UNSCORED_BODIES = ("PracticeCreate", "TestRunCreate")
# The challenge's limits, which carry a kind's own limits (app/challenge/config.py).
LIMITS = "LimitsConfig"


def _kind_fields(
    schemas: dict[str, Any], models: Sequence[tuple[str, type[BaseModel]]]
) -> dict[str, tuple[str, dict[str, Any]]]:
    """Each field of the kinds' models, as the document shows it: its definition (or each of
    them, when kinds define it differently), saying which kinds take it. Their own
    definitions go to the document's components."""
    owners: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for name, model in models:
        schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        schemas.update(schema.pop("$defs", {}))
        for field, definition in schema.get("properties", {}).items():
            owners.setdefault(field, []).append((name, definition))
    fields: dict[str, tuple[str, dict[str, Any]]] = {}
    for field, given in owners.items():
        kinds = " and ".join(name for name, _ in given)
        # Kinds that take a field alike may still word it apart: one definition, one wording.
        variants = {repr(_unworded(definition)): definition for _, definition in given}
        definition = (
            next(iter(variants.values()))
            if len(variants) == 1
            else {"anyOf": [_unworded(variant) for variant in variants.values()]}
        )
        wording = next((d["description"] for _, d in given if d.get("description")), None)
        if wording is not None:
            definition = {**definition, "description": wording}
        fields[field] = (kinds, definition)
    return fields


def _unworded(definition: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in definition.items() if key not in ("title", "description")}


def _add_fields(
    schema: dict[str, Any], fields: dict[str, tuple[str, dict[str, Any]]], what: str
) -> None:
    properties = schema.setdefault("properties", {})
    for field, (kinds, definition) in fields.items():
        # The field's own description, when the kinds that take it agree on one, follows.
        own = definition.get("description")
        said = f"{what} of {kinds} challenges." + (f" {own}" if own else "")
        # In the body the field is absent unless given (a body of another kind must not carry
        # it): its kind's default is said, not declared, so a generated client leaves it out.
        shown = {key: value for key, value in definition.items() if key != "default"}
        if definition.get("default") is not None:
            said += f" Left out, it is {json.dumps(definition['default'])}."
        properties[field] = {**shown, "description": said}


def document_kinds(document: dict[str, Any]) -> dict[str, Any]:
    """The bodies with what every registered kind brings to them: the challenge bodies with
    its sections (`target`, `benchmark`, ...) and its limits (`max_defense_chars`, ...), the
    submission body with its fields (`prompt`, `model`, ...), and the practice and test-run
    bodies with those of its unscored runs. The service validates those
    with the kind's model, so FastAPI does not see them; the document shows them, each with
    the kinds it belongs to."""
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    kinds = registered()
    sections = _kind_fields(schemas, [(name, kind.config_model) for name, kind in kinds.items()])
    for body in KIND_BODIES:
        _add_fields(schemas.get(body, {}), sections, "A section")
    limits = _kind_fields(schemas, [(name, kind.limits_model) for name, kind in kinds.items()])
    _add_fields(schemas.get(LIMITS, {}), limits, "A limit")
    submitted = [
        (name, kind.submission_model)
        for name, kind in kinds.items()
        if kind.accepts.attempts and isinstance(kind, AttemptKind)
    ]
    _add_fields(schemas.get(SUBMISSION_BODY, {}), _kind_fields(schemas, submitted), "A field")
    unscored = [
        (name, model)
        for name, kind in kinds.items()
        if (model := unscored_fields(kind)) is not None
    ]
    for body in UNSCORED_BODIES:
        _add_fields(schemas.get(body, {}), _kind_fields(schemas, unscored), "A field")
    return document


def _content_security_policy(html: bytes) -> str:
    """Only this app's files, and the page's own inline start-up script (by its hash)."""
    hashes = " ".join(
        "'sha256-" + base64.b64encode(hashlib.sha256(script.encode()).digest()).decode() + "'"
        for script in _INLINE_SCRIPT.findall(html.decode())
    )
    return (
        f"default-src 'self'; script-src 'self' {hashes}; style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data:; connect-src 'self'; font-src 'self' data:; "
        "frame-ancestors 'none'; base-uri 'none'; object-src 'none'; form-action 'self'"
    )


def install_api_docs(app: FastAPI) -> None:
    """The OpenAPI document with its errors, and the documentation pages on local assets.

    The app must be created with `docs_url=None, redoc_url=None` (FastAPI's own pages load
    their scripts from a CDN)."""
    generate = app.openapi

    def openapi_with_errors() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = document_kinds(document_errors(app, generate()))
        return app.openapi_schema

    app.openapi = openapi_with_errors  # type: ignore[method-assign]
    app.mount(DOCS_STATIC_URL, StaticFiles(directory=DOCS_STATIC_DIR), name="api-docs-static")
    openapi_url = app.openapi_url or "/openapi.json"

    @app.get(DOCS_URL, include_in_schema=False)
    async def swagger_ui(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        page = get_swagger_ui_html(
            openapi_url=f"{root}{openapi_url}",
            title=f"{app.title} - Swagger UI",
            oauth2_redirect_url=f"{root}{OAUTH2_REDIRECT_URL}",
            swagger_js_url=f"{root}{DOCS_STATIC_URL}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{DOCS_STATIC_URL}/swagger-ui.css",
            swagger_favicon_url=f"{root}{DOCS_STATIC_URL}/favicon.png",
            # No online validator: its badge is an image from another host.
            swagger_ui_parameters={"validatorUrl": None},
        )
        page.headers["Content-Security-Policy"] = _content_security_policy(bytes(page.body))
        return page

    @app.get(OAUTH2_REDIRECT_URL, include_in_schema=False)
    async def swagger_ui_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()
