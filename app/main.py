"""The FastAPI application: routers, the one error shape, health, and start-up warm-up."""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from fastapi import Depends, FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from fastapi.staticfiles import StaticFiles
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.api_docs import install_api_docs, operation_id
from app.attempt.router import router as attempt_router
from app.attempt.telemetry import UNFINISHED_ATTEMPTS
from app.auth.service import KEY_PREFIX, key_tenant
from app.auth.sessions import session_tenant
from app.challenge.deleted_router import router as deleted_challenge_router
from app.challenge.participants_router import router as participants_router
from app.challenge.registry import registered
from app.challenge.router import router as challenge_router
from app.challenge.templates_router import router as challenge_template_router
from app.competition.router import router as competition_router
from app.export.router import router as export_router
from app.hosting.router import router as hosting_router
from app.kit.broker.telemetry import QUEUE_DEPTH
from app.kit.conditional import ConditionalGet
from app.kit.config import get_settings
from app.kit.db import get_autocommit_sessionmaker, get_engine
from app.kit.error_codes import (
    BAD_REQUEST,
    FORBIDDEN,
    METHOD_NOT_ALLOWED,
    NOT_FOUND,
    PAYLOAD_TOO_LARGE,
    RATE_LIMITED,
    UNAUTHORIZED,
    UNDECLARED_ERROR_CODE,
    UNSUPPORTED_MEDIA_TYPE,
    VALIDATION_ERROR,
    declared_codes,
)
from app.kit.errors import AppError, request_error_details, validation_message
from app.kit.fair_share.requesters import Requesters, tenant_bucket
from app.kit.fair_share.shares import Shares
from app.kit.input_guard import refuse_unstorable_input
from app.kit.middleware import AdmissionControl, ApiCaching, BodySizeLimit, RequestObservability
from app.kit.observability import metrics
from app.kit.observability.router import router as observability_router
from app.leaderboard.router import router as leaderboard_router
from app.rescore.router import router as rescore_router
from app.scoring.router import router as scoring_router
from app.scoring.sandbox.service import log_scorer_sandbox
from app.team.router import router as team_router
from app.tenant.router import router as tenant_router
from app.web.auth import ADMIN_COOKIE, SESSION_COOKIE, admin_token_of_cookie, signed_in_token
from app.web.rendering import STATIC_DIR, STATIC_URL
from app.web.router import web_router

log = logging.getLogger(__name__)

# The code of an HTTP error Starlette raises itself (an unknown path, a method it does not take).
HTTP_CODES = {
    code.status: code
    for code in (
        BAD_REQUEST,
        UNAUTHORIZED,
        FORBIDDEN,
        NOT_FOUND,
        METHOD_NOT_ALLOWED,
        PAYLOAD_TOO_LARGE,
        UNSUPPORTED_MEDIA_TYPE,
        VALIDATION_ERROR,
        RATE_LIMITED,
    )
}


OPENAPI_TAG_ORDER = (
    "tenants",
    "api keys",
    "participants",
    "challenges",
    "attempts",
    "leaderboards",
    "teams",
    "red-blue",
    "exports",
    "scorers",
    "health",
)


def error_body(code: str, message: str, details: Any = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "details": details}}


def warn_if_undeclared(route: Any, exc: AppError) -> None:
    """Logs an error whose code the operation does not declare (app/kit/error_codes.py `raises`):
    the API document would not tell clients of it. The tests fail on this warning."""
    if not isinstance(route, APIRoute) or not route.include_in_schema:
        return
    if exc.code not in declared_codes(route.responses, exc.status_code):
        log.warning(
            "%s %s: %s %s is not among the error codes the operation declares",
            UNDECLARED_ERROR_CODE,
            route.path,
            exc.status_code,
            exc.code,
        )


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(AppError)
    async def app_error(request: Request, exc: AppError) -> JSONResponse:
        warn_if_undeclared(request.scope.get("route"), exc)
        return JSONResponse(
            error_body(exc.code, exc.message, exc.details),
            status_code=exc.status_code,
            headers=exc.headers,
        )

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        # The operation's declared body type, so an unknown field at any depth is named with
        # the field it probably meant.
        body_field = getattr(request.scope.get("route"), "body_field", None)
        body_model = body_field.field_info.annotation if body_field is not None else None
        details = jsonable_encoder(request_error_details(exc.errors(), exc.body, body_model))
        return JSONResponse(
            error_body("validation_error", validation_message(details), details),
            status_code=422,
        )

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = HTTP_CODES.get(exc.status_code, "error")
        return JSONResponse(
            error_body(code, str(exc.detail)),
            status_code=exc.status_code,
            headers=getattr(exc, "headers", None),
        )

    @app.exception_handler(DBAPIError)
    async def database_error(_: Request, exc: DBAPIError) -> JSONResponse:
        if exc.connection_invalidated or isinstance(exc, OperationalError):
            log.warning("database unavailable: %s", exc.orig)
            return JSONResponse(
                error_body("unavailable", "the database is unavailable; retry shortly"),
                status_code=503,
                headers={"Retry-After": "1"},
            )
        log.exception("database error", exc_info=exc)
        return JSONResponse(error_body("internal_error", "internal server error"), status_code=500)

    @app.exception_handler(PoolTimeout)
    async def pool_exhausted(_: Request, exc: PoolTimeout) -> JSONResponse:
        log.warning("no database connection free: %s", exc)
        return JSONResponse(
            error_body("unavailable", "the service is busy; retry shortly"),
            status_code=503,
            headers={"Retry-After": "1"},
        )

    @app.exception_handler(Exception)
    async def unexpected(_: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error", exc_info=exc)
        return JSONResponse(error_body("internal_error", "internal server error"), status_code=500)


def _share_owner(kind: str, secret: str) -> str | None:
    """The bucket whose share a credential's requests count against: its tenant's (blocking:
    one database read; `Requesters` keeps the answer)."""
    session = get_autocommit_sessionmaker()()
    try:
        if kind == "bearer":
            tenant = key_tenant(session, secret)
        else:
            tenant = session_tenant(session, secret)
    finally:
        session.close()
    return None if tenant is None else tenant_bucket(tenant)


def fair_share() -> tuple[Shares, Requesters]:
    """Each tenant's share of the API (docs/capacity.md): counted in the rate limits' Redis
    (in this process's memory without one), against the tenant of a request's API key or
    web session, or the anonymous share of the tenant its path names."""
    settings = get_settings()
    url = settings.resolved_rate_limit_url
    shares = Shares(
        settings.api_max_in_flight_per_tenant,
        None if url.startswith("memory://") else url,
        key_prefix=settings.redis_key_prefix,
    )
    requesters = Requesters(
        _share_owner,
        bearer=lambda token: token if token.startswith(KEY_PREFIX) else None,
        cookies={ADMIN_COOKIE: admin_token_of_cookie, SESSION_COOKIE: signed_in_token},
        unlimited=(settings.resolved_admin_token,),
    )
    return shares, requesters


@asynccontextmanager
async def lifespan(_: FastAPI) -> AsyncIterator[None]:
    # Registration checks plugins in the scorer sandbox: say at start-up what it isolates here
    # (through uvicorn's logger, the one a server's operator sees).
    threading.Thread(
        target=log_scorer_sandbox,
        args=(logging.getLogger("uvicorn.error"),),
        name="scorer-sandbox-probe",
        daemon=True,
    ).start()
    # Blocking request work (the database) runs in a thread pool. AnyIO's default of 40
    # threads lets that many fight over the GIL; a few keep the database busy for less CPU
    # (bench/README.md: ~25% less CPU per submission at 8 than at 40, and at 500
    # submissions/s a p99 of 32-137 ms at 4 against 119-266 ms at 8).
    settings = get_settings()
    limiter = anyio.to_thread.current_default_thread_limiter()
    limiter.total_tokens = settings.api_threads
    metrics.instrument_pool(get_engine())
    metrics.capacity(
        {
            "api_threads": settings.api_threads,
            "api_in_flight": settings.api_max_in_flight,
            "api_in_flight_per_client": settings.api_max_in_flight_per_client,
            "api_in_flight_per_tenant": settings.api_max_in_flight_per_tenant,
            "queued_per_tenant": settings.max_queued_per_tenant,
            "database_pool": settings.database_pool_size,
        }
    )
    yield


def create_app() -> FastAPI:
    settings = get_settings()
    app = FastAPI(
        title="Gauntlet",
        version="0.1.0",
        description="LLM challenges, attempts run by workers, and leaderboards.",
        lifespan=lifespan,
        openapi_tags=[{"name": tag} for tag in OPENAPI_TAG_ORDER],
        # Before every other dependency: text the database cannot store never goes further.
        dependencies=[Depends(refuse_unstorable_input)],
        # /docs and /redoc are served from the app's own assets (app/api_docs.py).
        docs_url=None,
        redoc_url=None,
        generate_unique_id_function=operation_id,
    )
    install_error_handlers(app)
    # Deployment-wide gauges /metrics reads when scraped, from the domains that own the rows.
    app.state.scrape_gauges = [QUEUE_DEPTH, UNFINISHED_ATTEMPTS]

    app.add_middleware(BodySizeLimit, max_bytes=settings.max_request_bytes)
    # Outside the body limit, inside the caching: a request served from the public cache takes
    # no place; what is admitted is bounded (docs/capacity.md).
    shares, requesters = fair_share()
    app.add_middleware(
        AdmissionControl,
        max_in_flight=settings.api_max_in_flight,
        per_client=settings.api_max_in_flight_per_client,
        exempt=("/healthz", "/metrics", STATIC_URL + "/"),
        shares=shares,
        requesters=requesters,
    )
    app.add_middleware(ApiCaching, public_seconds=settings.public_cache_seconds)
    # Outside the public reads' cache, so its copies are answered 304 too (app/kit/conditional.py).
    app.add_middleware(ConditionalGet)
    # Added last, so outermost: refused bodies and errors get a request id and are counted.
    app.add_middleware(RequestObservability, access_log=settings.access_log, mounts=(STATIC_URL,))

    # Requests are matched against the routers in this order, each router's routes one by one:
    # the attempt router comes first because submissions are the busiest requests (matching
    # through the other routers first was ~5 % of a submission's CPU). The documentation keeps
    # its reading order through `openapi_tags`.
    for router in (
        attempt_router,
        tenant_router,
        hosting_router,
        challenge_router,
        deleted_challenge_router,
        participants_router,
        challenge_template_router,
        competition_router,
        leaderboard_router,
        team_router,
        export_router,
        rescore_router,
        scoring_router,
        observability_router,
    ):
        app.include_router(router)
    # What the challenge kinds bring of their own (app/challenge/challenge_kind.py): endpoints.
    for kind in registered().values():
        for router in kind.api_routers():
            app.include_router(router)
    # The web UI: server-rendered pages and their static assets (no CDN, works offline).
    app.mount(STATIC_URL, StaticFiles(directory=STATIC_DIR), name="web-static")
    app.include_router(web_router())
    install_api_docs(app)
    return app
