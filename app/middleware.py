"""ASGI middleware. Written against ASGI directly: Starlette's BaseHTTPMiddleware costs an extra
task and stream per request on the hottest paths."""

from __future__ import annotations

import json
import logging
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.observability import context, metrics

access_log = logging.getLogger("gauntlet.access")

_KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class BodySizeLimit:
    """Answers 413 to bodies over `max_bytes`, by Content-Length or by counting chunked bodies."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope["headers"]:
            if name == b"content-length":
                if value.isdigit() and int(value) > self.max_bytes:
                    await self._refuse(send)
                    return
                break
        received = 0
        too_large = False
        response_started = False

        async def counting_receive() -> Message:
            nonlocal received, too_large
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    # Tell the app the client went away; the 413 is sent below instead.
                    too_large = True
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal response_started
            if too_large:
                return
            if message["type"] == "http.response.start":
                response_started = True
            await send(message)

        await self.app(scope, counting_receive, guarded_send)
        if too_large and not response_started:
            await self._refuse(send)

    async def _refuse(self, send: Send) -> None:
        body = json.dumps(
            {
                "error": {
                    "code": "payload_too_large",
                    "message": f"request body is larger than {self.max_bytes} bytes",
                    "details": None,
                }
            }
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


class RequestObservability:
    """Gives every request an id (the client's `X-Request-ID` when acceptable, else a new one)
    that its log lines carry and its response returns, and counts it by route template and
    status for `/metrics`; with `access_log`, logs one line per request.

    Outermost, so refused bodies (413) and errors are counted too. It adds one closure and one
    counter increment (a memory-mapped write) to each request: bench/README.md has the cost.
    """

    def __init__(
        self, app: ASGIApp, access_log: bool = False, mounts: tuple[str, ...] = ()
    ) -> None:
        self.app = app
        self.access_log = access_log
        self.mounts = mounts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        offered = None
        for name, value in scope["headers"]:
            if name == b"x-request-id":
                offered = value.decode("latin-1")
                break
        request_id = context.accepted_request_id(offered)
        id_header = (b"x-request-id", request_id.encode("latin-1"))
        status = 500
        started = time.perf_counter()

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", ()), id_header]
            await send(message)

        token = context.begin(request_id=request_id)
        try:
            await self.app(scope, receive, send_with_id)
        finally:
            method = scope["method"] if scope["method"] in _KNOWN_METHODS else "other"
            route = _route_template(scope, self.mounts)
            metrics.count_request(method, route, status)
            if self.access_log:
                elapsed_ms = (time.perf_counter() - started) * 1000
                access_log.info(
                    "%s %s %d %.1fms",
                    method,
                    route,
                    status,
                    elapsed_ms,
                    extra={
                        "method": method,
                        "route": route,
                        "status": status,
                        "duration_ms": round(elapsed_ms, 2),
                    },
                )
            context.end(token)


def _route_template(scope: Scope, mounts: tuple[str, ...]) -> str:
    """The matched route's path template (`/v1/attempts/{attempt_id}`), never the raw path, so
    the label has a bounded number of values; "unmatched" when no route answered."""
    route = scope.get("route")  # FastAPI's routes put themselves here
    path = getattr(route, "path", None)
    if isinstance(path, str):
        return path
    endpoint = scope.get("endpoint")  # Starlette's plain routes (the OpenAPI document, /docs)
    if endpoint is not None:
        for candidate in getattr(scope.get("router"), "routes", ()):
            if getattr(candidate, "endpoint", None) is endpoint:
                return str(candidate.path)
    request_path = scope["path"]
    for mount in mounts:  # mounted apps (the web UI's static files) leave no trace in the scope
        if request_path.startswith(mount + "/"):
            return f"{mount}/*"
    return "unmatched"
