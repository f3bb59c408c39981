"""Whose share a request counts against, known before it runs, mostly without the database.

- A bearer credential that is a tenant's API key counts against its tenant (`tenant:<id>`),
  whatever the path; so does a web browser session cookie of a signed-in participant or tenant
  admin (against the session's tenant). The platform admin's token counts against no share.
- Otherwise (no credential, or one that names no tenant), a path that names a tenant by its
  slug (`/v1/public/{slug}/...`, `/t/{slug}/...`) counts against that tenant's anonymous share
  (`public:<slug>`): the anonymous readers of a tenant's public pages and boards share it,
  apart from the tenant's keys and signed-in visitors, so that a crowd (or a flood) of
  anonymous reads never takes their places, nor another tenant's.
- Anything else (the landing page, the API documents, an unknown credential on a path without
  a slug) counts against no share: only the process's and the client's limits hold it.

What a credential names is read in two steps: `readers` (on the event loop, cheap: a bearer
token's form, a cookie's signature) give the secret to look up, or None when it names nobody;
`owner_of` (in the thread pool: one database read) gives the bucket of that secret, or None
when it is unknown. Its answer is kept for KNOWN_SECONDS (an unknown secret's for
UNKNOWN_SECONDS), for at most MAX_KEPT secrets, keyed by the secret's SHA-256; concurrent
requests with a secret not yet kept wait for one lookup. So a tenant's requests cost the
database one read per key and minute, and a key revoked (a session ended) may count against
its tenant for up to a minute after: the gate refuses its requests meanwhile anyway.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import re
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping

import anyio.to_thread
from starlette.requests import cookie_parser
from starlette.types import Scope

log = logging.getLogger(__name__)

KNOWN_SECONDS = 60.0
UNKNOWN_SECONDS = 10.0
MAX_KEPT = 10_000
# Paths whose next segment is a tenant's slug (the slug's own pattern: app.kit.schemas.Slug).
SLUG_PATHS = ("/v1/public/", "/t/")
_SLUG = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?")

# A credential's secret to look up, or None when it names nobody (cheap; on the event loop).
Reader = Callable[[str], str | None]
# The bucket a secret counts against ("" for none), or None when the secret is unknown
# (blocking: a database read; in the thread pool). `kind` is the reader's name.
OwnerOf = Callable[[str, str], str | None]


def tenant_bucket(tenant_id: object) -> str:
    return f"tenant:{tenant_id}"


def public_bucket(path: str) -> str | None:
    """The anonymous share of the tenant a path names by its slug, if it names one."""
    for prefix in SLUG_PATHS:
        if path.startswith(prefix):
            slug = path[len(prefix) :].split("/", 1)[0]
            return f"public:{slug}" if _SLUG.fullmatch(slug) else None
    return None


class _Kept:
    __slots__ = ("bucket", "expires")

    def __init__(self, bucket: str | None, expires: float) -> None:
        self.bucket, self.expires = bucket, expires


class Requesters:
    """The bucket of a request (`bucket`), or None when it counts against no share.

    `bearer` reads the `Authorization: Bearer` token; `cookies` read the cookies of those
    names; `unlimited` are bearer tokens that count against no share (the platform admin's).
    """

    def __init__(
        self,
        owner_of: OwnerOf,
        *,
        bearer: Reader,
        cookies: Mapping[str, Reader] | None = None,
        unlimited: tuple[str, ...] = (),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.owner_of = owner_of
        self.bearer = bearer
        self.cookies = dict(cookies or {})
        self.unlimited = tuple(token.encode() for token in unlimited)
        self.clock = clock
        self._kept: OrderedDict[bytes, _Kept] = OrderedDict()
        self._looking_up: dict[bytes, asyncio.Future[str | None]] = {}

    async def bucket(self, scope: Scope) -> str | None:
        authorization = b""
        cookie_header = b""
        for name, value in scope["headers"]:
            if name == b"authorization":
                authorization = value
            elif name == b"cookie":
                cookie_header = value
        if authorization:
            scheme, _, token = authorization.partition(b" ")
            token = token.strip()
            if scheme.lower() == b"bearer" and token:
                if any(hmac.compare_digest(token, known) for known in self.unlimited):
                    return None
                found = await self._owner("bearer", self.bearer, token.decode("latin-1"))
                if found is not None:
                    return found or None
        if cookie_header and self.cookies:
            for name, reader in self.cookies.items():
                raw = _cookie(cookie_header, name)
                if raw is None:
                    continue
                found = await self._owner(name, reader, raw)
                if found is not None:
                    return found or None
        return public_bucket(scope["path"])

    async def _owner(self, kind: str, reader: Reader, raw: str) -> str | None:
        secret = reader(raw)
        if secret is None:
            return None
        key = hashlib.sha256(f"{kind}\0{secret}".encode("utf-8", "surrogatepass")).digest()
        kept = self._kept.get(key)
        now = self.clock()
        if kept is not None and kept.expires > now:
            return kept.bucket
        pending = self._looking_up.get(key)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        self._looking_up[key] = future
        bucket: str | None = None
        try:
            bucket = await anyio.to_thread.run_sync(self.owner_of, kind, secret)
        except Exception:
            # Counted against no tenant this time, and not kept: the next request asks again.
            log.warning("could not look up whose a %s credential is", kind, exc_info=True)
            return None
        finally:
            del self._looking_up[key]
            # Those waiting get the answer, or None if the lookup failed or was cancelled.
            future.set_result(bucket)
        seconds = UNKNOWN_SECONDS if bucket is None else KNOWN_SECONDS
        self._kept[key] = _Kept(bucket, self.clock() + seconds)
        self._kept.move_to_end(key)
        while len(self._kept) > MAX_KEPT:
            self._kept.popitem(last=False)
        return bucket


def _cookie(header: bytes, name: str) -> str | None:
    text = header.decode("latin-1")
    if name not in text:
        return None
    # Starlette's parser, the one the web pages read their cookies with.
    return cookie_parser(text).get(name)
