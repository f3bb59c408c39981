"""Typed FastAPI dependencies of every route: the database session and the unit of work.
(Who is calling is the authorization gate's: `app.auth.gate`.)

FastAPI runs each synchronous dependency in the thread pool, one hop each. Creating a session
does no I/O, so these are `async` (no hop).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import Depends
from sqlalchemy.orm import Session

from app.db import get_sessionmaker
from app.unit_of_work import UnitOfWork


async def get_session() -> AsyncIterator[Session]:
    # Creating a Session does no I/O (it connects on first use, in the endpoint's thread).
    # Closing one that committed sends nothing; one that only read sends a ROLLBACK, a local
    # round trip on the event loop that costs less than a hop to the thread pool.
    session = get_sessionmaker()()
    try:
        yield session
    finally:
        session.close()


SessionDep = Annotated[Session, Depends(get_session)]


async def get_unit_of_work(session: SessionDep) -> UnitOfWork:
    """The request's session as a unit of work: routes that write commit through it, and the
    tasks their services asked for are sent after that commit."""
    return UnitOfWork(session)


UnitOfWorkDep = Annotated[UnitOfWork, Depends(get_unit_of_work)]
