"""ASGI middleware. Written against ASGI directly: Starlette's BaseHTTPMiddleware costs an extra
task and stream per request on the hottest paths."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.kit.fair_share.requesters import Requesters
from app.kit.fair_share.shares import Shares
from app.kit.observability import context, metrics

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
                # A new message: the one given may be shared (a refusal's is built once).
                message = {**message, "headers": [*message.get("headers", ()), id_header]}
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


def _json_error(
    status: int,
    code: str,
    message: str,
    retry_after: int,
    details: dict[str, object] | None = None,
    headers: tuple[tuple[bytes, bytes], ...] = (),
) -> tuple[Message, Message]:
    body = json.dumps({"error": {"code": code, "message": message, "details": details}}).encode()
    start: Message = {
        "type": "http.response.start",
        "status": status,
        "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"retry-after", str(retry_after).encode()),
            (b"cache-control", b"no-store"),
            *headers,
        ],
    }
    return start, {"type": "http.response.body", "body": body}


class AdmissionControl:
    """Bounds the requests one API process works on at once, those of any one client, and,
    with `shares`, those of any one tenant across every API process.

    A request is refused at once, without touching a thread or the database: past
    `per_client` requests of one client address (after trusted proxies) at this process with
    429; past `max_in_flight` requests at this process with 503; past its tenant's share
    (`shares`, the bucket `requesters` names: the tenant of its key or session, or the
    anonymous readers of the tenant its path names) across all processes with 429 and the
    `RateLimit-*` fields. All carry `Retry-After`. A connection refused by a share that sends
    again for that share before its Retry-After passed gets that refusal when it passes, holding
    no place meanwhile: a client that ignores Retry-After then costs one request per connection
    and second, where answering at once let it cost the service all its CPU in refusals.

    An admitted request waits behind at most `max_in_flight` others for the thread pool, and
    at most a share's worth of them come from any one tenant, so one tenant's flood cannot
    take the places of the others. `exempt` paths (health, metrics, static assets) always
    pass: a load balancer must see a busy process as alive. The counts of this process live
    on the event loop only, so they need no lock.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        max_in_flight: int,
        per_client: int,
        exempt: tuple[str, ...] = (),
        retry_after_seconds: int = 1,
        shares: Shares | None = None,
        requesters: Requesters | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.app = app
        self.max_in_flight = max_in_flight
        self.per_client = per_client
        self.exempt = exempt
        self.in_flight = 0
        self.by_client: dict[str, int] = {}
        self.shares = shares if requesters is not None else None
        self.requesters = requesters
        self.retry_after_seconds = retry_after_seconds
        self.clock = clock
        self.sleep = sleep
        # When each connection (address, port) was last refused for a bucket, plus Retry-After.
        self._refused: dict[tuple[str, int, str], float] = {}
        self._busy = _json_error(
            503,
            "unavailable",
            "the service is busy; retry shortly",
            retry_after_seconds,
        )
        self._client_busy = _json_error(
            429,
            "rate_limited",
            "too many requests at once from this client; retry shortly",
            retry_after_seconds,
        )
        share = shares.limit if shares is not None else 0
        # The RateLimit header fields of the IETF draft (draft-ietf-httpapi-ratelimit-headers):
        # the share's size, none left, and when to look again (as Retry-After).
        rate_limit = (
            (b"ratelimit-limit", str(share).encode()),
            (b"ratelimit-remaining", b"0"),
            (b"ratelimit-reset", str(retry_after_seconds).encode()),
        )
        self._tenant_busy = _json_error(
            429,
            "rate_limited",
            f"this tenant has {share} requests in progress, its share of the service; "
            "retry shortly",
            retry_after_seconds,
            {"limit": "tenant_in_flight", "share": share},
            rate_limit,
        )
        self._public_busy = _json_error(
            429,
            "rate_limited",
            f"this tenant's public pages have {share} anonymous requests in progress, their "
            "share of the service; retry shortly",
            retry_after_seconds,
            {"limit": "public_in_flight", "share": share},
            rate_limit,
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].startswith(self.exempt):
            await self.app(scope, receive, send)
            return
        client = scope.get("client")
        address = client[0] if client else ""
        held = self.by_client.get(address, 0)
        if held >= self.per_client:
            await self._refuse(send, self._client_busy, "client")
            return
        if self.in_flight >= self.max_in_flight:
            await self._refuse(send, self._busy, "busy")
            return
        # Both places are taken before the first await, so that the client's and the process's
        # other requests see them meanwhile; a request waiting for its share's answer holds
        # the process's place, so a full process refuses at once whatever Redis is doing.
        self.by_client[address] = held + 1
        self.in_flight += 1
        metrics.request_admitted()
        lease = None
        refusal: tuple[tuple[Message, Message], str] | None = None
        wait = 0.0
        try:
            if self.shares is not None and self.requesters is not None:
                bucket = await self.requesters.bucket(scope)
                if bucket is not None:
                    lease = await self.shares.take(bucket)
                    if lease is None:
                        if bucket.startswith("public:"):
                            refusal = self._public_busy, "public"
                        else:
                            refusal = self._tenant_busy, "tenant"
                        wait = self._hold_back(client, bucket)
                        if not wait:
                            await self._refuse(send, *refusal)
                            return
            if refusal is None:
                await self.app(scope, receive, send)
        finally:
            self.in_flight -= 1
            metrics.request_done()
            left = self.by_client[address] - 1
            if left:
                self.by_client[address] = left
            else:
                del self.by_client[address]
            if lease is not None and self.shares is not None:
                await self.shares.give_back(lease)
        if refusal is not None and wait:
            # Sent again on the same connection before its Retry-After passed: answered when
            # it passes, holding no place meanwhile (so a client that ignores Retry-After
            # sends one request per connection and second, not thousands).
            await self.sleep(wait)
            await self._refuse(send, *refusal)

    def _hold_back(self, client: tuple[str, int] | None, bucket: str) -> float:
        """Seconds to wait before refusing this connection again for this bucket: none the
        first time (and after its Retry-After passed), else what is left of it."""
        if client is None:
            return 0.0
        now = self.clock()
        key = (client[0], client[1], bucket)
        until = self._refused.get(key, 0.0)
        if until > now:
            # Its answer comes at `until`; the next one not before another Retry-After.
            self._refused[key] = until + self.retry_after_seconds
            return until - now
        if len(self._refused) >= 10_000:
            self._refused = {name: at for name, at in self._refused.items() if at > now}
        self._refused[key] = now + self.retry_after_seconds
        return 0.0

    @staticmethod
    async def _refuse(send: Send, answer: tuple[Message, Message], reason: str) -> None:
        metrics.request_refused(reason)
        start, body = answer
        await send(start)
        await send(body)


class _Recorded:
    """A response kept whole: its status, headers and body."""

    __slots__ = ("body", "expires", "headers", "status")

    def __init__(self, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body
        self.expires = 0.0

    async def replay(self, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status, "headers": self.headers})
        await send({"type": "http.response.body", "body": self.body})


class ApiCaching:
    """What API responses let caches do, and a short-lived copy of public reads.

    Responses under `/v1/` carry `Cache-Control: no-store` (they hold keys, private texts and
    per-caller views), except the public reads under `/v1/public/`, which anyone may keep for
    `public_seconds`. Those public reads, when anonymous (no credential, no cookie), are served
    from one copy per URL for `public_seconds`, and concurrent misses of one URL wait for a
    single computation: a crowd refreshing a public board costs one database read per URL and
    interval. Only 200 and 404 answers are kept, up to `max_entries` URLs of at most
    `max_body_bytes` each.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        public_seconds: float,
        max_entries: int = 2048,
        max_body_bytes: int = 1_000_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.app = app
        self.public_seconds = public_seconds
        self.max_entries = max_entries
        self.max_body_bytes = max_body_bytes
        self.clock = clock
        self._entries: OrderedDict[bytes, _Recorded] = OrderedDict()
        self._computing: dict[bytes, asyncio.Future[_Recorded | None]] = {}
        public = f"public, max-age={int(public_seconds)}" if public_seconds >= 1 else "no-cache"
        self._public_header = (b"cache-control", public.encode())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope.get("path", "") if scope["type"] == "http" else ""
        if not path.startswith("/v1/"):
            await self.app(scope, receive, send)
            return
        if not path.startswith("/v1/public/"):
            await self.app(scope, receive, self._with_header(send, (b"cache-control", b"no-store")))
            return
        if self.public_seconds <= 0 or not self._anonymous_read(scope):
            await self.app(scope, receive, self._with_header(send, self._public_header))
            return
        key = path.encode() + b"?" + scope["query_string"]
        entry = self._entries.get(key)
        if entry is not None and entry.expires > self.clock():
            await entry.replay(send)
            return
        pending = self._computing.get(key)
        if pending is not None:
            recorded = await asyncio.shield(pending)
            if recorded is not None:
                await recorded.replay(send)
                return
            # The computation could not be kept (an error, a large body): compute our own.
            await self.app(scope, receive, self._with_header(send, self._public_header))
            return
        await self._compute(key, scope, receive, send)

    async def _compute(self, key: bytes, scope: Scope, receive: Receive, send: Send) -> None:
        future: asyncio.Future[_Recorded | None] = asyncio.get_running_loop().create_future()
        self._computing[key] = future
        status = 0
        headers: list[tuple[bytes, bytes]] = []
        chunks: list[bytes] = []
        size = 0
        keep = True

        async def recording_send(message: Message) -> None:
            nonlocal status, headers, size, keep
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = [*message.get("headers", ()), self._public_header]
                message = {**message, "headers": headers}
                keep = status in (200, 404)
            elif message["type"] == "http.response.body" and keep:
                size += len(message.get("body", b""))
                if size > self.max_body_bytes:
                    keep = False
                    chunks.clear()
                else:
                    chunks.append(message.get("body", b""))
            await send(message)

        recorded: _Recorded | None = None
        try:
            await self.app(scope, receive, recording_send)
            if keep and status:
                recorded = _Recorded(status, headers, b"".join(chunks))
                recorded.expires = self.clock() + self.public_seconds
                self._entries[key] = recorded
                self._entries.move_to_end(key)
                while len(self._entries) > self.max_entries:
                    self._entries.popitem(last=False)
        finally:
            del self._computing[key]
            future.set_result(recorded)

    @staticmethod
    def _anonymous_read(scope: Scope) -> bool:
        if scope["method"] != "GET":
            return False
        return all(name not in (b"authorization", b"cookie") for name, _ in scope["headers"])

    @staticmethod
    def _with_header(send: Send, header: tuple[bytes, bytes]) -> Send:
        async def send_with_header(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {name.lower() for name, _ in message.get("headers", ())}
                if header[0] not in names:
                    message = {**message, "headers": [*message.get("headers", ()), header]}
            await send(message)

        return send_with_header
