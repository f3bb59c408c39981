"""Conditional GET: an ETag on the reads clients poll, and 304 Not Modified while it holds.

A read takes part by declaring the 304 answer (`responses=CONDITIONAL_READ`, or merged with its
own); from that declaration alone its route (`app.kit.routing.ApiRoute`) sets the ETag of each 200
and the document declares the ETag, the 304 and the `If-None-Match` header. The ETag is a strong
validator computed from the exact bytes of the body the reader gets: it tells nothing the body
does not, and readers who see different bodies of one board (a member's frozen view, an admin's
live one, another tenant's 404) get different tags. `ConditionalGet`, an ASGI middleware outside
the public reads' cache (app/kit/middleware.py), answers 304 with no body when the request's
`If-None-Match` names the response's ETag, so a copy served from that cache is answered the
same way. What caches may keep stays the cache middleware's to say: keyed reads `no-store`, as
every keyed answer (no cache, a browser's included, keeps a key, a hidden prompt or another
reader's view; a client polling keeps its last body and tag itself), public reads
`public, max-age=GAUNTLET_PUBLIC_CACHE_SECONDS`, which a shared cache revalidates with the tag.

The body is still computed for a 304: the saving is the transfer and the client's parsing.
Hashing the body costs little next to computing it (bench/conditional.py, bench/README.md).

`If-None-Match` is read here (RFC 9110, section 13.1.2: a list of entity tags or `*`, weak
comparison) in a few lines rather than with werkzeug's `parse_etags`, whose import took
100-150 ms on the 2-core machine: a cost every API process would pay at start.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

NOT_MODIFIED = 304

# The opaque part of an entity tag (RFC 9110, section 8.8.3): visible characters other than the
# double quote, quoted; a weak tag has `W/` before it.
_ENTITY_TAG = re.compile(r'"([\x21\x23-\x7e\x80-\xff]*)"')
# What a 304 keeps of the 200 it stands for (RFC 9110, section 15.4.5).
_KEPT_ON_304 = frozenset(
    {b"cache-control", b"content-location", b"date", b"etag", b"expires", b"vary"}
)

_HEADERS = {
    "ETag": {
        "description": "A strong validator of this exact body: send it back in `If-None-Match` "
        "to be answered 304 while the body is unchanged.",
        "schema": {"type": "string", "examples": ['"3f2b8a4e5c1d4e6f9a7b0c1d2e3f4a5b"']},
    },
    "Cache-Control": {
        "description": "`no-store` for keyed reads (a client polling keeps its last body and "
        "ETag itself); public reads: `public, max-age=N` (N: GAUNTLET_PUBLIC_CACHE_SECONDS), "
        "or `no-cache`.",
        "schema": {"type": "string"},
    },
}
# The responses a conditional read declares: its 200 with the ETag, and the 304.
CONDITIONAL_READ: dict[int | str, dict[str, Any]] = {
    200: {"headers": _HEADERS},
    NOT_MODIFIED: {
        "description": "Not Modified: the body would be the one whose ETag `If-None-Match` "
        "names. No body; the same ETag and Cache-Control as the 200.",
        "headers": _HEADERS,
    },
}
IF_NONE_MATCH = {
    "name": "If-None-Match",
    "in": "header",
    "required": False,
    "description": "ETags of bodies the client holds (or `*`): the answer is 304 with no body "
    "when the body would be one of them (weak comparison).",
    "schema": {"type": "string"},
}


def is_conditional(responses: Mapping[int | str, Any] | None) -> bool:
    """Whether an operation declaring `responses` is a conditional read."""
    return any(str(code) == str(NOT_MODIFIED) for code in responses or ())


def with_if_none_match(openapi_extra: dict[str, Any] | None) -> dict[str, Any]:
    """An operation's extra OpenAPI with the `If-None-Match` parameter declared."""
    extra = dict(openapi_extra or {})
    extra["parameters"] = [*extra.get("parameters", []), IF_NONE_MATCH]
    return extra


def entity_tag(body: bytes) -> str:
    """The strong ETag of a body: 128 bits of its SHA-256, quoted."""
    return '"' + hashlib.sha256(body).hexdigest()[:32] + '"'


def tag(response: Response) -> None:
    """Sets the ETag of a successful response with a body in hand (a streamed one has none)."""
    body = getattr(response, "body", None)
    if response.status_code == 200 and isinstance(body, bytes | memoryview):
        response.headers.setdefault("etag", entity_tag(bytes(body)))


def none_match(if_none_match: str, etag: str) -> bool:
    """Whether `If-None-Match` names `etag`, by weak comparison (`W/"x"` names `"x"`), or is `*`
    (there is a current body). Its entity tags are its quoted strings: a tag holds no double
    quote, so they are found in order whatever lies between them."""
    if if_none_match.strip(" \t") == "*":
        return True
    wanted = etag.removeprefix("W/")
    return any(f'"{opaque}"' == wanted for opaque in _ENTITY_TAG.findall(if_none_match))


class ConditionalGet:
    """Answers 304 Not Modified, with no body and the headers a 304 keeps, to a GET whose
    `If-None-Match` names the ETag of the 200 the app answers."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return
        given = [value for name, value in scope["headers"] if name == b"if-none-match"]
        if not given:
            await self.app(scope, receive, send)
            return
        if_none_match = b",".join(given).decode("latin-1")
        not_modified = False

        async def answer(message: Message) -> None:
            nonlocal not_modified
            if message["type"] == "http.response.start" and message["status"] == 200:
                headers = message.get("headers", ())
                etag = next((value for name, value in headers if name.lower() == b"etag"), None)
                if etag is not None and none_match(if_none_match, etag.decode("latin-1")):
                    not_modified = True
                    kept = [
                        (name, value) for name, value in headers if name.lower() in _KEPT_ON_304
                    ]
                    message = {"type": message["type"], "status": NOT_MODIFIED, "headers": kept}
            elif message["type"] == "http.response.body" and not_modified:
                if message.get("more_body", False):
                    return
                message = {"type": "http.response.body", "body": b""}
            await send(message)

        await self.app(scope, receive, answer)
