"""/healthz and /metrics of the API."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from app.kit.config import get_settings
from app.kit.errors import Unauthorized
from app.kit.observability import metrics, service
from app.kit.observability.health import api_health
from app.kit.routing import ApiRoute

router = APIRouter(tags=["health"], route_class=ApiRoute)


# What a generated client parses /healthz into (the body is built as a dict by `api_health`).
_CHECK = {
    "type": "object",
    "properties": {
        "ok": {"type": "boolean"},
        "error": {"type": "string", "description": "Why it failed."},
        "seen": {"type": "integer", "description": "Workers seen recently."},
        "processes": {"type": "integer", "description": "Their worker processes."},
        "within_seconds": {"type": "integer", "description": "How recently."},
    },
    "required": ["ok"],
}
_HEALTH = {
    "title": "Health",
    "type": "object",
    "properties": {
        "status": {"type": "string", "enum": ["ok", "degraded"]},
        "checks": {
            "type": "object",
            "properties": {"database": _CHECK, "broker": _CHECK, "workers": _CHECK},
            "required": ["database", "broker", "workers"],
        },
    },
    "required": ["status", "checks"],
}


@router.get("/healthz", responses={200: {"content": {"application/json": {"schema": _HEALTH}}}})
def healthz() -> JSONResponse:
    """200 when the database answers, 503 otherwise. The body names what is failing: the
    database, the broker, or no worker seen recently (`"status": "degraded"`, still 200:
    attempts are accepted and wait in the queue)."""
    status, body = api_health(get_settings())
    return JSONResponse(body, status_code=status)


@router.get(
    "/metrics",
    response_class=Response,
    responses={
        200: {"content": {"text/plain": {"schema": {"type": "string"}}}},
        401: {"description": "The metrics token or the admin token is missing or wrong."},
    },
    # Its credential is read from the header itself (the metrics token is no API caller), so
    # the document is told it takes the bearer scheme.
    openapi_extra={"security": [{"bearerAuth": []}]},
)
async def prometheus_metrics(
    request: Request,
    authorization: Annotated[str | None, Header(include_in_schema=False)] = None,
) -> Response:
    """Prometheus metrics of this API (and, in the embedded mode, of its worker). Needs
    `Authorization: Bearer` with the metrics token (`GAUNTLET_METRICS_TOKEN`) or the admin
    token."""
    settings = get_settings()
    if not service.metrics_reader_allowed(authorization, settings):
        raise Unauthorized(
            "the metrics token or the admin token is required",
            headers={"WWW-Authenticate": "Bearer"},
        )
    gauges = getattr(request.app.state, "scrape_gauges", ())
    body = await run_in_threadpool(service.api_metrics, settings, gauges)
    return Response(body, media_type=metrics.CONTENT_TYPE)
