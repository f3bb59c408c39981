"""Typed FastAPI dependencies of every route: the database session and the unit of work; and
the submission endpoints' Idempotency-Key header with their answer's headers. (Who is
calling is the authorization gate's: `app.auth.gate`.)

FastAPI runs each synchronous dependency in the thread pool, one hop each. Creating a session
does no I/O, so these are `async` (no hop).

A request's session holds a pooled connection only while a thread works on the request: the
trip that runs the endpoint closes it before it ends (`app.kit.routing`), and so does the
credential lookup's trip. A connection never waits, checked out, for a thread; so a crowd
cannot take every connection while the threads that would give them back wait for one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import Depends, Header
from sqlalchemy.orm import Session

from app.kit.db import get_sessionmaker
from app.kit.routing import hold_request_session
from app.kit.unit_of_work import UnitOfWork


async def get_session() -> AsyncIterator[Session]:
    # Creating a Session does no I/O (it connects on first use, in the endpoint's thread).
    session = get_sessionmaker()()
    hold_request_session(session)
    try:
        yield session
    finally:
        # Normally closed already, in the thread that used it; then this sends nothing.
        session.close()


SessionDep = Annotated[Session, Depends(get_session)]


async def get_unit_of_work(session: SessionDep) -> UnitOfWork:
    """The request's session as a unit of work: routes that write commit through it, and the
    tasks their services asked for are sent after that commit."""
    return UnitOfWork(session)


UnitOfWorkDep = Annotated[UnitOfWork, Depends(get_unit_of_work)]


# Every submission endpoint's (attempts, red_blue's defenses and attacks).
IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        min_length=1,
        max_length=255,
        description="Makes a retried submission return what the first one made (the same "
        "attempt or entry) instead of a new one.",
    ),
]


def accepted_headers(location: str, created: bool) -> dict[str, str]:
    """A submission's answer: where to poll what it made, and whether this was a replay of
    an earlier request with the same Idempotency-Key."""
    headers = {"Location": location}
    if not created:
        headers["Idempotent-Replayed"] = "true"
    return headers
