"""Conditional GET (app/kit/conditional.py): a read that declares the 304 answer carries the ETag of
its exact body, a request naming that ETag in If-None-Match (weak comparison, lists, `*`) is
answered 304 with no body and the same ETag and Cache-Control, anything else is answered as
before; keyed reads stay `no-store` with their ETag, and copies the public reads' cache
serves are answered 304 as well. Against FastAPI apps built here and scripted ASGI apps."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from fastapi import APIRouter, FastAPI, Response

from app.kit.conditional import (
    CONDITIONAL_READ,
    NOT_MODIFIED,
    ConditionalGet,
    entity_tag,
    none_match,
)
from app.kit.middleware import ApiCaching
from app.kit.routing import ApiRoute

Message = dict[str, Any]
TAG = entity_tag(b'{"items": []}')


@pytest.mark.parametrize(
    ("if_none_match", "matches"),
    [
        (TAG, True),
        (f"W/{TAG}", True),  # weak comparison: the weakness mark does not count
        (f'"other", {TAG}', True),
        (f'"other",{TAG} , "more"', True),
        (f" \t{TAG}\t ", True),
        (f'"a,b", {TAG}', True),  # a comma inside a tag is the tag's
        (f", , {TAG}, ,", True),  # empty list elements are allowed
        ("*", True),
        (" * ", True),
        ('"other"', False),
        ('W/"other", "another"', False),
        (TAG.strip('"'), False),  # unquoted: not an entity tag
        (TAG[:-2] + '"', False),
        ('"*", "x"', False),
        (f'*, {TAG[:-2]}"', False),  # `*` is the whole value or nothing
        ("", False),
        ('"', False),
        ("\x00\xff garbage ,,,", False),
    ],
)
def test_if_none_match_names_the_tag_by_weak_comparison(if_none_match: str, matches: bool) -> None:
    assert none_match(if_none_match, TAG) is matches


def test_a_weak_response_tag_is_named_by_its_strong_form_too() -> None:
    assert none_match(TAG, f"W/{TAG}") and none_match(f"W/{TAG}", f"W/{TAG}")


def test_the_tag_is_strong_quoted_and_a_function_of_the_exact_bytes() -> None:
    body = json.dumps({"rank": 1, "participant": "ana"}).encode()
    tag = entity_tag(body)
    assert tag == entity_tag(bytes(body)) and tag.startswith('"') and tag.endswith('"')
    assert len(tag) == 34 and not tag.startswith("W/")
    assert entity_tag(body + b" ") != tag
    assert entity_tag(body.replace(b"ana", b"anb")) != tag
    assert entity_tag(b"") != entity_tag(b" ")


# The middleware against scripted ASGI apps ------------------------------------------------------


def _scope(
    path: str = "/v1/challenges/c/leaderboard",
    *,
    method: str = "GET",
    headers: list[tuple[bytes, bytes]] | None = None,
) -> dict[str, Any]:
    return {
        "type": "http",
        "method": method,
        "path": path,
        "query_string": b"",
        "headers": headers or [],
        "client": ("10.0.0.1", 5000),
    }


async def _call(app: Any, scope: dict[str, Any]) -> tuple[int, dict[bytes, bytes], bytes]:
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    await app(scope, receive, send)
    starts = [m for m in sent if m["type"] == "http.response.start"]
    assert len(starts) == 1
    bodies = [m for m in sent if m["type"] == "http.response.body"]
    assert bodies and not bodies[-1].get("more_body", False)  # the response is finished
    return starts[0]["status"], dict(starts[0]["headers"]), b"".join(m["body"] for m in bodies)


class Scripted:
    """An app answering `status` with a body in `chunks`, an ETag and the usual headers."""

    def __init__(self, status: int = 200, etag: bytes | None = TAG.encode(), chunks: int = 1):
        self.status, self.etag, self.chunks = status, etag, chunks

    async def __call__(
        self, scope: dict[str, Any], receive: Any, send: Callable[[Message], Awaitable[None]]
    ) -> None:
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", b"13"),
            (b"cache-control", b"no-store"),
            (b"vary", b"Accept-Encoding"),
            (b"location", b"/v1/elsewhere"),
        ]
        if self.etag is not None:
            headers.append((b"etag", self.etag))
        await send({"type": "http.response.start", "status": self.status, "headers": headers})
        for index in range(self.chunks):
            more = index < self.chunks - 1
            await send({"type": "http.response.body", "body": b"x", "more_body": more})


def _if_none_match(value: str) -> list[tuple[bytes, bytes]]:
    return [(b"if-none-match", value.encode("latin-1"))]


def test_a_matching_request_is_answered_304_with_no_body_and_the_validators_only() -> None:
    for chunks in (1, 3):
        status, headers, body = asyncio.run(
            _call(ConditionalGet(Scripted(chunks=chunks)), _scope(headers=_if_none_match(TAG)))
        )
        assert status == NOT_MODIFIED and body == b""
        assert headers == {
            b"etag": TAG.encode(),
            b"cache-control": b"no-store",
            b"vary": b"Accept-Encoding",
        }


def test_several_if_none_match_fields_are_one_list() -> None:
    headers = [(b"if-none-match", b'"old"'), (b"if-none-match", TAG.encode())]
    status, _, _ = asyncio.run(_call(ConditionalGet(Scripted()), _scope(headers=headers)))
    assert status == NOT_MODIFIED


@pytest.mark.parametrize(
    ("app", "method", "if_none_match"),
    [
        (Scripted(), "GET", '"old"'),  # another body
        (Scripted(), "POST", TAG),  # not a read
        (Scripted(), "DELETE", "*"),
        (Scripted(status=404), "GET", TAG),  # only a 200 stands for a body
        (Scripted(status=201), "GET", "*"),
        (Scripted(etag=None), "GET", "*"),  # not a conditional read
        (Scripted(), "GET", None),  # not a conditional request
    ],
)
def test_anything_else_is_answered_as_the_app_answers_it(
    app: Scripted, method: str, if_none_match: str | None
) -> None:
    headers = _if_none_match(if_none_match) if if_none_match is not None else []
    scope = _scope(method=method, headers=headers)
    assert asyncio.run(_call(ConditionalGet(app), scope)) == asyncio.run(_call(app, scope))


# Routes declaring the 304, in a FastAPI app -------------------------------------------------------


def _app(body: dict[str, Any]) -> FastAPI:
    router = APIRouter(route_class=ApiRoute)

    @router.get("/v1/boards/{name}", responses=CONDITIONAL_READ)
    def read_board(name: str) -> dict[str, Any]:
        return {**body, "name": name}

    @router.get("/v1/plain")
    def read_plain() -> dict[str, Any]:
        return body

    @router.get("/v1/raw", responses={**CONDITIONAL_READ, 409: {"description": "Busy."}})
    async def read_raw() -> Response:
        return Response(json.dumps(body), media_type="application/json")

    @router.get("/v1/missing", responses=CONDITIONAL_READ)
    def read_missing() -> Response:
        return Response(status_code=404)

    app = FastAPI()
    app.include_router(router)
    app.add_middleware(ApiCaching, public_seconds=1)
    app.add_middleware(ConditionalGet)
    return app


def test_a_conditional_read_tags_the_exact_body_its_reader_gets_and_answers_304_to_it() -> None:
    app = _app({"items": [1, 2]})
    status, headers, body = asyncio.run(_call(app, _scope("/v1/boards/a")))
    assert status == 200 and headers[b"etag"] == entity_tag(body).encode()
    assert headers[b"cache-control"] == b"no-store"
    polled = _scope("/v1/boards/a", headers=[(b"if-none-match", headers[b"etag"])])
    status, again, body = asyncio.run(_call(app, polled))
    assert status == NOT_MODIFIED and body == b""
    assert again == {b"etag": headers[b"etag"], b"cache-control": b"no-store"}
    # Another body (another board, or the same one changed) has another tag: answered whole.
    other = _scope("/v1/boards/b", headers=[(b"if-none-match", headers[b"etag"])])
    status, headers_b, body_b = asyncio.run(_call(app, other))
    assert status == 200 and json.loads(body_b)["name"] == "b"
    assert headers_b[b"etag"] == entity_tag(body_b).encode() != headers[b"etag"]
    status, _, body = asyncio.run(_call(_app({"items": [1, 2, 3]}), polled))
    assert status == 200 and json.loads(body)["items"] == [1, 2, 3]


def test_a_read_answering_its_own_response_is_tagged_too_and_errors_never_are() -> None:
    app = _app({"items": []})
    status, headers, body = asyncio.run(_call(app, _scope("/v1/raw")))
    assert status == 200 and headers[b"etag"] == entity_tag(body).encode()
    status, headers, _ = asyncio.run(_call(app, _scope("/v1/missing", headers=_if_none_match("*"))))
    assert status == 404 and b"etag" not in headers
    assert headers[b"cache-control"] == b"no-store"


def test_other_reads_carry_no_tag() -> None:
    app = _app({"items": []})
    status, headers, _ = asyncio.run(_call(app, _scope("/v1/plain", headers=_if_none_match("*"))))
    assert status == 200 and b"etag" not in headers
    assert headers[b"cache-control"] == b"no-store"


def test_the_document_declares_the_etag_the_304_and_if_none_match_on_conditional_reads_only() -> (
    None
):
    document = _app({}).openapi()
    for path in ("/v1/boards/{name}", "/v1/raw", "/v1/missing"):
        operation = document["paths"][path]["get"]
        responses = operation["responses"]
        assert set(responses["200"]["headers"]) == {"ETag", "Cache-Control"}, path
        assert "content" in responses["200"], path  # the body's schema is kept
        assert set(responses["304"]["headers"]) == {"ETag", "Cache-Control"}, path
        assert "content" not in responses["304"], path
        parameters = {(p["in"], p["name"]) for p in operation.get("parameters", [])}
        assert ("header", "If-None-Match") in parameters, path
    assert document["paths"]["/v1/raw"]["get"]["responses"]["409"]["description"] == "Busy."
    plain = document["paths"]["/v1/plain"]["get"]
    assert "304" not in plain["responses"] and "headers" not in plain["responses"]["200"]
    assert "parameters" not in plain


# The public reads' cache ------------------------------------------------------------------------


class PublicBoard:
    """A public board whose body is `self.body`; counts its computations."""

    def __init__(self) -> None:
        self.body, self.calls = b'{"items": [1]}', 0

    async def __call__(
        self, scope: dict[str, Any], receive: Any, send: Callable[[Message], Awaitable[None]]
    ) -> None:
        self.calls += 1
        headers = [
            (b"content-type", b"application/json"),
            (b"etag", entity_tag(self.body).encode()),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": self.body})


def test_a_copy_from_the_public_cache_is_answered_304_and_public_reads_stay_public() -> None:
    board = PublicBoard()
    app = ConditionalGet(ApiCaching(board, public_seconds=5, clock=lambda: 100.0))
    path = "/v1/public/t/challenges/c/leaderboard"

    async def scenario() -> None:
        status, headers, _ = await _call(app, _scope(path))
        assert status == 200 and headers[b"cache-control"] == b"public, max-age=5"
        polled = _scope(path, headers=[(b"if-none-match", headers[b"etag"])])
        status, again, body = await _call(app, polled)
        assert status == NOT_MODIFIED and body == b""
        assert again == {b"etag": headers[b"etag"], b"cache-control": b"public, max-age=5"}
        # A reader signed in reads the board itself, not the copy: 304 all the same.
        keyed = _scope(path, headers=[*polled["headers"], (b"authorization", b"Bearer k")])
        status, again, _ = await _call(app, keyed)
        assert status == NOT_MODIFIED and again[b"cache-control"] == b"public, max-age=5"

    asyncio.run(scenario())
    assert board.calls == 2  # the anonymous poll was answered from the copy


def test_a_poll_that_misses_the_public_cache_leaves_a_whole_copy_for_the_others() -> None:
    board = PublicBoard()
    app = ConditionalGet(ApiCaching(board, public_seconds=5, clock=lambda: 100.0))
    path = "/v1/public/t/challenges/c/leaderboard"
    tag = entity_tag(board.body).encode()

    async def scenario() -> None:
        status, _, _ = await _call(app, _scope(path, headers=[(b"if-none-match", tag)]))
        assert status == NOT_MODIFIED
        status, headers, body = await _call(app, _scope(path))
        assert status == 200 and body == board.body and headers[b"etag"] == tag

    asyncio.run(scenario())
    assert board.calls == 1
