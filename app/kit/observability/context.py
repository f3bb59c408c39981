"""The ids that tie log lines together: a request's id and the attempt it works on.

One context variable holds a small mutable dict per request or task. A dict, not one variable
per id, so that an id bound in a thread-pool thread (which runs in a copy of the request's
context) is seen by the middleware that logs the request afterwards: the copy shares the dict.
"""

from __future__ import annotations

import re
import uuid
from contextvars import ContextVar, Token

REQUEST_ID_HEADER = "X-Request-ID"
# A client's id is kept only when it is short and plain: it ends up in every log line of the
# request and of its attempt, so it must not be able to forge or break one.
_CLIENT_REQUEST_ID = re.compile(r"[A-Za-z0-9._:@/+=-]{1,128}")

LogContext = dict[str, str]

_log_context: ContextVar[LogContext | None] = ContextVar("gauntlet_log_context", default=None)


def new_request_id() -> str:
    return uuid.uuid4().hex


def accepted_request_id(value: str | None) -> str:
    """The client's `X-Request-ID` when it is acceptable, else a new id."""
    if value and _CLIENT_REQUEST_ID.fullmatch(value):
        return value
    return new_request_id()


def begin(**ids: str) -> Token[LogContext | None]:
    """Starts a fresh log context (a request, a task); `end` restores the previous one."""
    return _log_context.set(dict(ids))


def end(token: Token[LogContext | None]) -> None:
    _log_context.reset(token)


def bind(**ids: str) -> None:
    """Adds ids to the current request's or task's context (a no-op outside of one)."""
    context = _log_context.get()
    if context is not None:
        context.update(ids)


def current() -> LogContext:
    return _log_context.get() or {}


def request_id() -> str | None:
    context = _log_context.get()
    return context.get("request_id") if context else None
