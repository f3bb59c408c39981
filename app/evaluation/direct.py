"""The direct transport: OpenAI-compatible servers called through the `openai` SDK, not litellm.

A call takes this path when its model is reached through a base URL: a variant's `api_base`, a
challenge's `target.api_base`, a benchmark challenge's `actor_api_base`, or a model id with the
explicit `openai-compatible/` prefix (which must have one; the server receives the name after
the prefix). Self-hosted servers (vLLM, SGLang, Ollama, llama.cpp) answer in milliseconds with
hundreds of requests in flight, where litellm's per-call CPU (~3 ms here) and its import
(seconds) would set the pace; the SDK's async client costs a fraction of that per call.
Every other model (provider ids, `offline/…`) goes through litellm.

What stays the same on both paths is `LLMClient`'s: the retries (429, 5xx, timeouts, broken
connections, malformed answers; `Retry-After`; full jitter), the concurrency caps, the budgets
and the `CallRecord` with its four token fields. The SDK's own retries are off.

Connections: one SDK client per event loop, base URL, credential and resolver, and so one
connection pool, shared by every `LLMClient` of the process (a worker's next attempt reuses the
connections of the last one). The pool itself sets no cap on connections: the clients' caps
bound what is in flight. Requests go through `GuardedTransport` (app.outbound.transport), which
enforces the outbound policy on each one and sends it with aiohttp.

Cost: from litellm's price map read as data (app.outbound.prices), by the model id, unless a
`prices:` override names the model; a model no map knows (an `openai-compatible/` one, say) is
unpriced. Nothing here imports litellm.
"""

from __future__ import annotations

import json
import weakref
from asyncio import AbstractEventLoop, get_running_loop
from typing import Any, cast

from app.evaluation.types import Message, ModelSpec
from app.outbound.addresses import AsyncResolver
from app.outbound.policy import BaseRoute, OutboundPolicy
from app.outbound.providers import DIRECT_PROVIDER

OPENAI_COMPATIBLE_PREFIX = f"{DIRECT_PROVIDER}/"
# The SDK insists on a key; GuardedTransport removes this placeholder when the base has no
# credential bound to it, and sends only the bound one otherwise.
_NO_CREDENTIAL = "no-credential"


class MalformedResponseError(Exception):
    """A provider answered, but not with a usable chat completion."""


def is_openai_compatible(model: str) -> bool:
    return model.startswith(OPENAI_COMPATIBLE_PREFIX)


def uses_direct_transport(spec: ModelSpec) -> bool:
    """Whether a call of `spec` goes through this module (else through litellm)."""
    if spec.model.startswith("offline/"):
        return False  # built in: never leaves the process, whatever api_base says
    return spec.api_base is not None or is_openai_compatible(spec.model)


def served_model_name(model: str, policy: OutboundPolicy) -> str:
    """The model name an OpenAI-compatible server receives: the id without its
    `openai-compatible/` or litellm provider prefix (`openai/my-model` -> `my-model`), as
    litellm itself sends it."""
    if is_openai_compatible(model):
        return model.removeprefix(OPENAI_COMPATIBLE_PREFIX)
    prefix, slash, rest = model.partition("/")
    if slash and policy.catalog.provider_of(model) == prefix:
        return rest
    return model


_PoolKey = tuple[str, str | None, AsyncResolver]


class ConnectionPools:
    """SDK clients (each with its httpx connection pool) by event loop and destination.

    A client belongs to the loop that made it: connections cannot move between loops. A loop's
    clients are forgotten with the loop; `aclose` closes those of the running loop first.
    """

    def __init__(self) -> None:
        self._by_loop: weakref.WeakKeyDictionary[AbstractEventLoop, dict[_PoolKey, Any]] = (
            weakref.WeakKeyDictionary()
        )

    def client(self, route: BaseRoute, resolve: AsyncResolver) -> Any:
        """The `openai.AsyncOpenAI` of one base URL, credential and resolver on this loop."""
        clients = self._by_loop.setdefault(get_running_loop(), {})
        key = (str(route.url), route.api_key, resolve)
        client = clients.get(key)
        if client is None:
            client = _new_client(route, resolve)
            clients[key] = client
        return client

    def count(self) -> int:
        """Clients (and so connection pools) open on the running loop."""
        return len(self._by_loop.get(get_running_loop(), {}))

    async def aclose(self) -> None:
        """Closes the connections of the running loop's clients."""
        clients = self._by_loop.pop(get_running_loop(), {})
        for client in clients.values():
            await client.close()


# The process's pools: every LLMClient uses these unless given its own.
SHARED_POOLS = ConnectionPools()


def _new_client(route: BaseRoute, resolve: AsyncResolver) -> Any:
    import httpx
    import openai

    from app.outbound.transport import GuardedTransport

    return openai.AsyncOpenAI(
        api_key=route.api_key or _NO_CREDENTIAL,
        base_url=str(route.url),
        max_retries=0,  # LLMClient retries, the same way on both paths
        # httpx's client: the SDK takes it in every version (newer ones also have their own
        # fork of httpx, whose client type the stubs name).
        http_client=cast(
            Any,
            httpx.AsyncClient(
                transport=GuardedTransport(route, resolve),
                trust_env=False,
                follow_redirects=False,
            ),
        ),
    )


def request_body(spec: ModelSpec, sent: list[Message], model: str) -> dict[str, Any]:
    """The chat completion request, as litellm would send it to an OpenAI-compatible server."""
    body: dict[str, Any] = {
        "model": model,
        # A fresh copy per try: a retry must not send a list a client library rewrote.
        "messages": [dict(message) for message in sent],
    }
    if spec.temperature is not None:
        body["temperature"] = spec.temperature
    if spec.max_tokens is not None:
        body["max_tokens"] = spec.max_tokens
    return body


async def create_completion(client: Any, body: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    """One chat completion through the SDK's client (its request building, headers, status
    checks and error classes), answered as the JSON the server sent. Posted with
    `client.post`, the SDK's way to send a body as it is and read the answer as plain data:
    `chat.completions.create` would walk the body against the SDK's parameter types and build
    typed objects of the answer, most of the SDK's CPU per call at hundreds in flight. An
    answer that is not a JSON object is malformed (worth a retry)."""
    try:
        answer = await client.post(
            "/chat/completions", cast_to=dict, body=body, options={"timeout": timeout_s}
        )
    except json.JSONDecodeError as error:
        raise MalformedResponseError(f"the response is not JSON: {error}") from error
    if not isinstance(answer, dict):
        raise MalformedResponseError(f"the response is {type(answer).__name__}, not an object")
    return answer


def _canned_completion(request: Any) -> Any:
    import httpx

    body = {
        "id": "warm-up",
        "object": "chat.completion",
        "created": 0,
        "model": "warm-up",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "warm"},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }
    return httpx.Response(200, json=body, request=request)


async def warm_up_direct_calls() -> None:
    """One untimed call through the SDK to an in-process answer (no network): the SDK loads
    its modules and builds its request and response machinery lazily, on a process's first
    call; made here, they are not in the first timed call. The TLS context and the price
    table are loaded here too."""
    import os

    import httpx
    import openai

    from app.outbound.prices import bundled_prices
    from app.outbound.transport import tls_context

    tls_context(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    bundled_prices()

    async with httpx.AsyncClient(transport=httpx.MockTransport(_canned_completion)) as http:
        client = openai.AsyncOpenAI(
            api_key=_NO_CREDENTIAL,
            base_url="http://warm-up.invalid/v1",
            max_retries=0,
            http_client=cast(Any, http),
        )
        body = request_body(ModelSpec(model="warm-up"), [{"role": "user", "content": "hi"}], "m")
        await create_completion(client, body, 5.0)
