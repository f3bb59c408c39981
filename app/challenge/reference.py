"""A challenge named in a tenant's request: by its id or by its slug, as the public addresses
name it (`/v1/challenges/say-pwned/leaderboard` is `/v1/challenges/<its id>/leaderboard`).

The rule that keeps the two apart: a reference that reads as a UUID (as the API writes ids,
or as 32 hex digits) is an id, anything else a slug. A challenge's slug may not read as a UUID
(refused when it is created, `ChallengeSlug`), so every slug is reachable and no reference
means two challenges. A slug is looked up in the caller's tenant only: another tenant's slug
answers 404, as another tenant's id does.

Every tenant route that takes a challenge resolves it here: through `ChallengeIdDep` (a path
parameter `challenge_id`), `ChallengeFilterDep` (a query parameter `challenge_id`), or, for
the routes that authenticate inside their one trip to the thread pool, `resolve_challenge`.
An id costs what FastAPI's own UUID parsing did (a few microseconds, no I/O); a slug costs one
indexed lookup, and through the dependencies one more trip to the thread pool.
"""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import Depends, Path, Query
from pydantic import AfterValidator, TypeAdapter, ValidationError
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from app.auth.gate import CallerDep, check_tenant_key
from app.challenge.repository import ChallengeRepository
from app.kit.deps import SessionDep
from app.kit.errors import NotFound
from app.kit.routing import release_request_session
from app.kit.schemas import Slug

_AS_ID = TypeAdapter(uuid.UUID)
_DESCRIPTION = (
    "The challenge's id, or its slug: a value that reads as a UUID is an id, anything else "
    "the slug of one of the caller's tenant's challenges."
)

# What a path or a query names a challenge by: an id (36 characters, or 45 as a URN) or a slug
# (at most 64).
ChallengeRef = Annotated[
    str, Path(min_length=1, max_length=64, description=_DESCRIPTION, examples=["say-pwned"])
]
ChallengeRefQuery = Annotated[
    str | None, Query(min_length=1, max_length=64, description=_DESCRIPTION)
]


def id_in_reference(reference: str) -> uuid.UUID | None:
    """The id a reference names, or None when it is a slug: the same reading FastAPI gave a
    path parameter typed `uuid.UUID`, so every id that worked still does."""
    try:
        return _AS_ID.validate_python(reference)
    except ValidationError:
        return None


def _not_an_id(slug: str) -> str:
    if id_in_reference(slug) is not None:
        raise ValueError("must not read as a UUID: the API would take it for a challenge's id")
    return slug


# A challenge's slug: a slug that no reference could take for an id.
ChallengeSlug = Annotated[Slug, AfterValidator(_not_an_id)]


def resolve_challenge(session: Session, tenant_id: uuid.UUID, reference: str) -> uuid.UUID:
    """The id of the tenant's challenge the reference names. An id is returned as it is (the
    route's own lookup answers 404 for one that is not the tenant's); a slug costs one
    indexed lookup and answers 404 when the tenant has no challenge of that slug."""
    as_id = id_in_reference(reference)
    if as_id is not None:
        return as_id
    found = ChallengeRepository(session, tenant_id).id_of_slug(reference)
    if found is None:
        raise NotFound("challenge not found")
    return found


def _resolve_and_release(session: Session, tenant_id: uuid.UUID, reference: str) -> uuid.UUID:
    try:
        return resolve_challenge(session, tenant_id, reference)
    finally:
        # The endpoint runs in another trip: its connection must not wait checked out.
        release_request_session()


async def _resolved(session: Session, caller_tenant: uuid.UUID, reference: str) -> uuid.UUID:
    as_id = id_in_reference(reference)
    if as_id is not None:  # no I/O, no trip to the thread pool
        return as_id
    return await run_in_threadpool(_resolve_and_release, session, caller_tenant, reference)


async def challenge_in_path(
    challenge_id: ChallengeRef, caller: CallerDep, session: SessionDep
) -> uuid.UUID:
    return await _resolved(session, check_tenant_key(caller).tenant_id, challenge_id)


async def challenge_in_query(
    caller: CallerDep, session: SessionDep, challenge_id: ChallengeRefQuery = None
) -> uuid.UUID | None:
    if challenge_id is None:
        return None
    return await _resolved(session, check_tenant_key(caller).tenant_id, challenge_id)


# The challenge a tenant route's path names (`/challenges/{challenge_id}/...`), by id or slug.
ChallengeIdDep = Annotated[uuid.UUID, Depends(challenge_in_path)]
# The challenge a list is filtered by (`?challenge_id=`), by id or slug; None when not given.
ChallengeFilterDep = Annotated[uuid.UUID | None, Depends(challenge_in_query)]
