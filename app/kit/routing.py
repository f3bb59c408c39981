"""The route class of every router: a blocking endpoint runs in one trip to the thread pool, and
the request's database connection goes back to the pool before that trip ends.

FastAPI runs a synchronous endpoint in the thread pool, then checks its return value in a
second trip to the pool, while the request's session (closed only when the response has been
sent) keeps its pooled connection. Under a crowd that deadlocks: every thread waits for a
connection, every connection belongs to a request waiting for a thread, until the pool's
timeout. Here a synchronous endpoint is wrapped in a coroutine that runs it in the pool and,
in the same trip, closes the request's session (`release_request_session`), so a
connection is held only while a thread works on the request. Its return value is then checked
on the event loop, which also saves the second trip. (The credential lookup, a dependency,
releases the connection at the end of its own trip: `app.auth.gate.get_caller`.)

A streaming endpoint that reads the database while it streams must open its own session per
chunk: the request's session is closed when the endpoint returns.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Coroutine
from contextvars import ContextVar
from typing import Any

from fastapi.routing import APIRoute
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from app.kit import conditional

# The request's session (`app.kit.deps.get_session`). Set in the request's task; the request's
# trips to the thread pool run in copies of that task's context, so they see it.
_request_session: ContextVar[Session | None] = ContextVar("request_session", default=None)


def hold_request_session(session: Session) -> None:
    _request_session.set(session)


def release_request_session() -> None:
    """Gives the request's connection back to the pool (rolling back what was not committed);
    the session stays usable, and connects again if used again. Called at the end of each
    thread-pool trip of a request; nothing to do for a request without a session."""
    session = _request_session.get()
    if session is not None:
        session.close()


def _run_and_release(endpoint: Callable[..., Any], arguments: dict[str, Any]) -> Any:
    try:
        return endpoint(**arguments)
    finally:
        release_request_session()


def in_one_trip(endpoint: Callable[..., Any]) -> Callable[..., Any]:
    """The endpoint as a coroutine function of the same signature (FastAPI reads the wrapped
    one's parameters and annotations) that runs it in the thread pool."""

    @functools.wraps(endpoint)
    async def run(**arguments: Any) -> Any:
        return await run_in_threadpool(_run_and_release, endpoint, arguments)

    return run


def _blocks(endpoint: Callable[..., Any]) -> bool:
    return not (
        inspect.iscoroutinefunction(endpoint)
        or inspect.isasyncgenfunction(endpoint)
        or inspect.isgeneratorfunction(endpoint)
    )


class ApiRoute(APIRoute):
    """Every route of the service (`APIRouter(route_class=ApiRoute)`, or a subclass). A route
    that declares the 304 answer is a conditional read (app/kit/conditional.py): its 200s carry
    their ETag, and its operation takes `If-None-Match`."""

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        if _blocks(endpoint):
            endpoint = in_one_trip(endpoint)
        self.conditional = conditional.is_conditional(kwargs.get("responses"))
        if self.conditional:
            kwargs["openapi_extra"] = conditional.with_if_none_match(kwargs.get("openapi_extra"))
        super().__init__(path, endpoint, **kwargs)

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        if not self.conditional:
            return handler

        async def tagged(request: Request) -> Response:
            response = await handler(request)
            conditional.tag(response)
            return response

        return tagged
