"""The direct transport: OpenAI-compatible servers called over HTTP here, not through litellm.

A call takes this path when its model is reached through a base URL: a variant's `api_base`, a
challenge's `target.api_base`, a benchmark challenge's `actor_api_base`, or a model id with the
explicit `openai-compatible/` prefix (which must have one; the server receives the name after
the prefix). Self-hosted servers (vLLM, SGLang, Ollama, llama.cpp) answer in milliseconds with
hundreds of requests in flight, where litellm's per-call CPU (~3 ms here) and its import
(seconds) would set the pace; this path costs a fraction of a millisecond per call and imports
in milliseconds. Every other model (provider ids, `offline/…`) goes through litellm.

What stays the same on both paths is `LLMClient`'s: the retries (429, 5xx, timeouts, broken
connections, malformed answers; `Retry-After`; full jitter), the concurrency caps, the budgets
and the `CallRecord` with its four token fields. The request is the one litellm sends to an
OpenAI-compatible server (`POST <base>/chat/completions` with model, messages and the set
sampling fields); the answer is read as plain JSON.

Connections: one `GuardedClient` (app.outbound.transport: the outbound policy enforced on each
request, HTTP/1.1 with kept-alive connections) per event loop, base URL, credential, proxy
(the operator's own runs only) and resolver, and so one connection pool, shared by every
`LLMClient` of the process (a worker's next attempt reuses the connections of the last one).
The pool sets no cap on connections: the clients' caps bound what is in flight.

Cost: from litellm's price map read as data (app.outbound.prices), by the model id, unless a
`prices:` override names the model; a model no map knows (an `openai-compatible/` one, say) is
unpriced. Nothing here imports litellm.
"""

from __future__ import annotations

import json
import weakref
from asyncio import AbstractEventLoop, get_running_loop
from typing import TYPE_CHECKING, Any

from app.evaluation.engine.types import Message, ModelSpec
from app.outbound.addresses import AsyncResolver
from app.outbound.limits import bundled_limits
from app.outbound.policy import BaseRoute, OutboundPolicy
from app.outbound.prices import bundled_prices
from app.outbound.providers import DIRECT_PROVIDER
from app.outbound.proxy import Proxy

if TYPE_CHECKING:
    # Imported where a client is made: the API process validates model ids with this module
    # and never calls a model.
    from app.outbound.transport import GuardedClient

OPENAI_COMPATIBLE_PREFIX = f"{DIRECT_PROVIDER}/"


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


_PoolKey = tuple[str, str | None, Proxy | None, AsyncResolver]


class ConnectionPools:
    """Clients (each with its pool of connections) by event loop and destination.

    A client belongs to the loop that made it: connections cannot move between loops. A loop's
    clients are forgotten with the loop; `aclose` closes those of the running loop first.
    """

    def __init__(self) -> None:
        self._by_loop: weakref.WeakKeyDictionary[
            AbstractEventLoop, dict[_PoolKey, GuardedClient]
        ] = weakref.WeakKeyDictionary()

    def client(self, route: BaseRoute, resolve: AsyncResolver) -> GuardedClient:
        """The client of one base URL, credential, proxy and resolver on this loop."""
        clients = self._by_loop.setdefault(get_running_loop(), {})
        key = (str(route.url), route.api_key, route.proxy, resolve)
        client = clients.get(key)
        if client is None:
            # The direct transport (h11, TLS) loads with the first direct call.
            from app.outbound.transport import GuardedClient

            client = GuardedClient(route, resolve)
            clients[key] = client
        return client

    def count(self) -> int:
        """Clients (and so connection pools) open on the running loop."""
        return len(self._by_loop.get(get_running_loop(), {}))

    async def aclose(self) -> None:
        """Closes the connections of the running loop's clients."""
        clients = self._by_loop.pop(get_running_loop(), {})
        for client in clients.values():
            await client.aclose()


# The process's pools: every LLMClient uses these unless given its own.
SHARED_POOLS = ConnectionPools()


def request_body(spec: ModelSpec, sent: list[Message], model: str) -> dict[str, Any]:
    """The chat completion request, as litellm would send it to an OpenAI-compatible server."""
    body: dict[str, Any] = {
        "model": model,
        "messages": sent,  # serialized here, never rewritten: a retry sends the same
    }
    if spec.temperature is not None:
        body["temperature"] = spec.temperature
    if spec.max_tokens is not None:
        body["max_tokens"] = spec.max_tokens
    return body


async def create_completion(
    client: GuardedClient,
    body: dict[str, Any],
    timeout_s: float,
    max_response_bytes: int | None = None,
) -> dict[str, Any]:
    """One chat completion, answered as the JSON the server sent. An answer that is not a JSON
    object is malformed (worth a retry); one over `max_response_bytes` (None: the transport's
    own maximum) is not read beyond them (`ResponseTooLarge`, not retried)."""
    try:
        answer = await client.post_json("/chat/completions", body, timeout_s, max_response_bytes)
    except json.JSONDecodeError as error:
        raise MalformedResponseError(f"the response is not JSON: {error}") from error
    except UnicodeDecodeError as error:
        raise MalformedResponseError(f"the response is not UTF-8: {error}") from error
    if not isinstance(answer, dict):
        raise MalformedResponseError(f"the response is {type(answer).__name__}, not an object")
    return answer


def warm_up_direct_calls() -> None:
    """Loads what a process's first direct call would otherwise load during its run: the HTTP
    client's module, the price table and the token limits. (A base's TLS context is made with
    its client, which each call gets before its timed span.)"""
    # The warm-up loads on purpose what the first direct call would.
    import app.outbound.transport  # noqa: F401

    bundled_prices()
    bundled_limits()
