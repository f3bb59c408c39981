"""The one way the engine calls a model: by policy, bounded concurrency, retries, exact records.

Every actor, judge and critic call goes through `LLMClient.complete`, which returns a
`CallRecord` of exactly what was sent and received. Before each call the outbound policy
(app.outbound) decides, and the call takes one of two transports:

- litellm, for provider model ids (`openai/gpt-4o-mini`, `anthropic/…`) and the built-in
  `offline/…` models: to the provider's own endpoint with the operator's key for it;
- the direct transport (app.evaluation.engine.direct), for a model reached through a base URL or
  named `openai-compatible/…`: an OpenAI-compatible server over HTTP, on a client that enforces the
  allow-list, the address checks and the credential bound to that base (never a provider key
  from the environment). litellm is not imported for it.

A cost budget, when given, is checked before every try and charged after every answer.

What a call brings back is bounded by what it asked for (app.evaluation.engine.bounds): the answer's
text is cut at the call's output cap with a visible mark, the usage it is recorded and charged
with is at most what its messages and `max_tokens` could be, and a prompt whose size proves it
longer than the model accepts is refused before the call (as is, by the provider, one that
turns out to be; neither is retried).

Transient failures (rate limits, 5xx, timeouts, broken connections, malformed responses) are
retried with exponential backoff and full jitter, honouring `Retry-After`, the same way on both
transports; anything else, and a spent retry budget, raises `InfrastructureError`, which ends
an attempt as `error` rather than as a failed trial. Its message is what participants see
("model ... unreachable", an HTTP status), never an address; the full reason is its `detail`,
logged here.
"""

from __future__ import annotations

import asyncio
import email.utils
import functools
import gc
import logging
import math
import os
import random
import re
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Protocol

from app.evaluation.engine.bounds import (
    DEFAULT_MAX_OUTPUT_CHARS,
    Usage,
    bounded_usage,
    capped_output,
    input_token_bound,
    output_char_cap,
    output_token_bound,
    prompt_bytes,
    prompt_token_floor,
    response_byte_cap,
)
from app.evaluation.engine.direct import (
    SHARED_POOLS,
    ConnectionPools,
    MalformedResponseError,
    create_completion,
    is_openai_compatible,
    request_body,
    served_model_name,
    uses_direct_transport,
    warm_up_direct_calls,
)
from app.evaluation.engine.storable import encodable
from app.evaluation.engine.types import (
    CallRecord,
    InfrastructureError,
    Message,
    ModelSpec,
    PromptTooLong,
    RetryPolicy,
)
from app.outbound.addresses import AsyncResolver, DestinationRefused, system_resolve_async
from app.outbound.limits import ModelLimits, bundled_limits
from app.outbound.policy import BaseRoute, OutboundPolicy, OutboundRefused
from app.outbound.prices import Price, bundled_prices

logger = logging.getLogger(__name__)

SleepFunction = Callable[[float], Awaitable[None]]
# Told of every call (each try): the model id, its seconds, and its record, or None when the
# call failed. The service counts calls, latency, tokens and cost with it (the engine itself
# knows nothing of metrics).
CallObserver = Callable[[str, float, "CallRecord | None"], None]

# Statuses worth another try: timeouts, conflicts, "too early", rate limits and server errors.
_TRANSIENT_STATUSES = frozenset({408, 409, 425, 429})
_REASON_LIMIT = 500
# How providers and servers word a prompt over the model's context (OpenAI, vLLM, SGLang,
# llama.cpp, Anthropic, ...), in the statuses they refuse it with. litellm maps its providers'
# wordings to ContextWindowExceededError; the direct transport reads the error body.
_CONTEXT_OVERFLOW = re.compile(
    r"context[ _-]?(?:length|window|size)|maximum context|prompt is too long"
    r"|too many (?:input |prompt )?tokens|input (?:is )?too long|reduce the length",
    re.IGNORECASE,
)
_CONTEXT_OVERFLOW_STATUSES = frozenset({400, 413, 422})
_CONTEXT_OVERFLOW_SCAN = 4000
# litellm honours `timeout` unevenly across providers; this guard bounds a call regardless.
_HARD_TIMEOUT_FACTOR = 1.5
_HARD_TIMEOUT_GRACE_S = 5.0

_litellm_module: Any = None
_litellm_lock = threading.Lock()


def load_litellm() -> Any:
    """litellm, imported on first use (it takes seconds) with the offline models registered."""
    global _litellm_module
    if _litellm_module is not None:
        return _litellm_module
    with _litellm_lock:
        if _litellm_module is None:
            # Without this, importing litellm fetches its price map over the network.
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            # litellm costs seconds to import; only calls through it need it.
            import litellm

            # The offline models register with litellm, so they load with it.
            from app.evaluation.engine.offline import register_offline_models

            # Its "Give Feedback / Get Help" banner on every exception is noise in worker logs.
            litellm.suppress_debug_info = True
            register_offline_models()
            # Importing litellm leaves ~370,000 long-lived objects; each full collection walks
            # them all (~190 ms on a 2-core machine), a pause in the middle of a run or of the
            # API's requests. They live as long as the process: frozen, the collector skips
            # them (the garbage among them is collected first).
            gc.collect()
            gc.freeze()
            _litellm_module = litellm
    return _litellm_module


WARM_UP_MODEL = "offline/echo"
_WARM_UP_FLUSH_S = 5.0
_warmed_up = False


def warmed_up() -> bool:
    """Whether this process (or the process it was forked from) made the warm-up call."""
    return _warmed_up


async def warm_up_calls() -> bool:
    """One untimed, unrecorded call through the whole client path and one through litellm,
    both to the offline echo model, and the direct transport's warm-up (its price table).

    litellm loads its provider, logging and cost modules lazily, on the first `acompletion` of
    a process: seconds on a loaded machine. Timed, they would make a process's first attempt
    look slow and rank it behind later ones (`elapsed_ms`, `fastest`, time penalties). Made
    here, before any attempt, they leave every timed call with only the call itself. Never
    raises: a failed warm-up costs fairness, not the worker (the reason is logged).
    """
    messages: list[Message] = [{"role": "user", "content": "warm up"}]
    try:
        await LLMClient().complete(ModelSpec(model=WARM_UP_MODEL), messages)
        await load_litellm().acompletion(model=WARM_UP_MODEL, messages=messages)
        warm_up_direct_calls()
        # The call's logging callback is queued on this loop; drained and stopped here, it is
        # not carried (with a warning) onto the loop of the first real call.
        # litellm's own, so imported with litellm: never at this module's import.
        from litellm.litellm_core_utils.logging_worker import GLOBAL_LOGGING_WORKER

        await asyncio.wait_for(GLOBAL_LOGGING_WORKER.flush(), _WARM_UP_FLUSH_S)
        await asyncio.wait_for(GLOBAL_LOGGING_WORKER.stop(), _WARM_UP_FLUSH_S)
    except Exception as error:
        logger.warning("litellm warm-up call failed (%s); the first call will be slower", error)
        return False
    global _warmed_up
    _warmed_up = True
    return True


def warm_up() -> bool:
    """Imports litellm and makes the warm-up call (`warm_up_calls`) on a loop of its own;
    called where no loop runs: by a worker before forking its pool (the modules loaded are
    inherited by every pool process)."""
    load_litellm()
    return asyncio.run(warm_up_calls())


def is_offline(model: str) -> bool:
    """Whether `model` is a built-in offline model, answered in this process
    (app.evaluation.engine.offline)."""
    return model.startswith("offline/")


def uses_litellm(spec: ModelSpec) -> bool:
    """Whether a call of `spec` goes through litellm (else through the direct transport, or,
    for the offline models, in this process)."""
    return not uses_direct_transport(spec) and not is_offline(spec.model)


async def _offline_answer(
    model: str, messages: list[Message], temperature: float | None
) -> dict[str, Any]:
    # Imported at the first offline call: a run of real models never loads the simulations.
    from app.evaluation.engine.offline import response_for

    return response_for(model, messages, temperature)


def warm_up_for(specs: list[ModelSpec]) -> bool:
    """Loads what calls of `specs` need, before any is timed: litellm and its warm-up call only
    when one of them goes through litellm, the direct transport's warm-up when one goes
    direct, the offline models' module when one is offline. Called where no loop runs, by the
    CLI before a run. False when a warm-up failed (the reason is logged)."""
    warmed = True
    if any(is_offline(spec.model) for spec in specs):
        import app.evaluation.engine.offline  # noqa: F401  (what the first offline call would import)
    if any(uses_litellm(spec) for spec in specs):
        warmed = warm_up()  # the direct transport's warm-up call included
    elif any(uses_direct_transport(spec) for spec in specs):
        try:
            warm_up_direct_calls()
        except Exception as error:
            logger.warning(
                "direct transport warm-up failed (%s); the first call will be slower", error
            )
            warmed = False
    # As after litellm's import: what the process loaded lives as long as it does, and the
    # collector need not walk it again during the run.
    gc.collect()
    gc.freeze()
    return warmed


class CallBudget(Protocol):
    """Spend accounting around model calls (the service's is per attempt and tenant). Every
    `before_call` that returns is followed by exactly one `after_call` (answered) or
    `release` (failed or cancelled)."""

    async def before_call(self, spec: ModelSpec) -> None:
        """Raises CostBudgetExhausted when no call may start."""

    async def after_call(self, spec: ModelSpec, record: CallRecord) -> None:
        """Charges an answered call."""

    def release(self, spec: ModelSpec) -> None:
        """A call that got no answer ends (nothing to charge)."""


def _sdk_connection_error() -> type[BaseException] | tuple[()]:
    """The `openai` SDK's connection error (litellm's timeout and connection errors derive
    from it), when the SDK is loaded: an error cannot be one of its classes otherwise, and
    the direct transport does not load it."""
    openai = sys.modules.get("openai")
    return openai.APIConnectionError if openai is not None else ()


def is_connection_failure(error: BaseException) -> bool:
    """Whether the model was not reached at all (refused, unresolvable, timed out)."""
    return isinstance(error, (ConnectionError, TimeoutError, _sdk_connection_error()))


def _refusal_in(error: BaseException) -> DestinationRefused | None:
    """The transport's refusal, as raised or wrapped by a client library."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, DestinationRefused):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def is_transient(error: BaseException) -> bool:
    """Whether another try of the same call may succeed."""
    if getattr(error, "transient", None) is False:  # says so itself (an untrusted certificate)
        return False
    if isinstance(error, MalformedResponseError | TimeoutError | ConnectionError):
        return True
    # Includes openai.APITimeoutError and every litellm timeout / connection error.
    if isinstance(error, _sdk_connection_error()):
        return True
    status = getattr(error, "status_code", None)
    if isinstance(status, int):
        return status in _TRANSIENT_STATUSES or status >= 500
    return False


def _header_items(headers: Any) -> dict[str, str]:
    if headers is None:
        return {}
    try:
        items = headers.items() if hasattr(headers, "items") else dict(headers).items()
        return {str(name).lower(): str(value) for name, value in items}
    except (TypeError, ValueError):
        return {}


def _parse_retry_after(value: str, now: datetime) -> float | None:
    try:
        seconds = float(value)
    except ValueError:
        try:
            moment = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        seconds = (moment - now).total_seconds()
    if not math.isfinite(seconds):
        return None
    return max(0.0, seconds)


def retry_after_seconds(error: BaseException, *, now: datetime | None = None) -> float | None:
    """The wait a failed call's response asks for (`Retry-After`/`retry-after-ms`), if any.

    litellm keeps the upstream headers on `litellm_response_headers` and on `response.headers`;
    its own `headers` attribute only carries proxy-supplied ones, so all three are read.
    """
    moment = now or datetime.now(UTC)
    sources = (
        getattr(error, "litellm_response_headers", None),
        getattr(getattr(error, "response", None), "headers", None),
        getattr(error, "headers", None),
    )
    for source in sources:
        headers = _header_items(source)
        milliseconds = headers.get("retry-after-ms")
        if milliseconds is not None:
            parsed = _parse_retry_after(milliseconds, moment)
            if parsed is not None:
                return parsed / 1000
        value = headers.get("retry-after")
        if value is not None:
            parsed = _parse_retry_after(value, moment)
            if parsed is not None:
                return parsed
    return None


def _describe(error: BaseException) -> str:
    text = " ".join(str(error).split())
    if len(text) > _REASON_LIMIT:
        text = text[:_REASON_LIMIT] + "..."
    described = f"{type(error).__name__}: {text}"
    # Client libraries wrap the real reason ("Connection error." around a refused connection
    # or a certificate mismatch); the operator needs the innermost one.
    cause = error.__cause__
    for _ in range(3):
        if cause is None:
            break
        inner = " ".join(str(cause).split())[:_REASON_LIMIT]
        described += f" <- {type(cause).__name__}: {inner}"
        cause = cause.__cause__
    return described


def is_context_overflow(error: BaseException) -> bool:
    """Whether the provider refused the prompt as longer than the model's context."""
    if any(kind.__name__ == "ContextWindowExceededError" for kind in type(error).__mro__):
        return True
    status = getattr(error, "status_code", None)
    if status not in _CONTEXT_OVERFLOW_STATUSES:
        return False
    return _CONTEXT_OVERFLOW.search(str(error)[:_CONTEXT_OVERFLOW_SCAN]) is not None


def _public_failure(model: str, error: BaseException) -> str:
    """What a participant may read about a failed call: whether the model was reached, the HTTP
    status it answered, or the kind of failure; never an address, a port or a response body
    (those would make the service a port scanner of the networks it can reach)."""
    if is_connection_failure(error):
        return f"model {model} unreachable"
    status = getattr(error, "status_code", None)
    if isinstance(status, int) and not isinstance(status, bool):
        return f"model {model} failed: HTTP {status}"
    limit = getattr(error, "limit_bytes", None)
    if isinstance(limit, int):
        return f"model {model} answered more than the {limit:,} bytes its max_tokens allow"
    return f"model {model} failed: {type(error).__name__}"


def _encodable_message(message: Message) -> Message:
    return {
        key: encodable(value) if isinstance(value, str) else value for key, value in message.items()
    }


def _as_int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _field(value: Any, name: str) -> Any:
    """A field of a response part: litellm's are objects, the direct transport's plain JSON."""
    if isinstance(value, dict):
        return value.get(name)
    return getattr(value, name, None)


def _first_message(response: Any) -> Any:
    choices = _field(response, "choices")
    if not choices or not isinstance(choices, list | tuple):
        raise MalformedResponseError("the response has no choices")
    message = _field(choices[0], "message")
    if message is None:
        raise MalformedResponseError("the first choice has no message")
    return message


def _output_text(message: Any) -> str:
    content = _field(message, "content")
    if content is None:
        return ""
    if not isinstance(content, str):
        raise MalformedResponseError(f"message content is {type(content).__name__}, not text")
    return content


def _reasoning_text(message: Any) -> str:
    """The reasoning a server returns beside the answer (`reasoning_content`, or `reasoning`),
    if any: it is not kept, but its tokens are within the output tokens."""
    for name in ("reasoning_content", "reasoning"):
        value = _field(message, name)
        if isinstance(value, str):
            return value
    return ""


class _CallBounds:
    """What one call may bring back (app.evaluation.engine.bounds), fixed before its first try."""

    __slots__ = ("max_input_tokens", "output_chars", "response_bytes", "token_limit")

    def __init__(self, token_limit: int | None, max_input_tokens: int, ceiling: int) -> None:
        self.token_limit = token_limit
        self.max_input_tokens = max_input_tokens
        self.output_chars = output_char_cap(token_limit, ceiling)
        self.response_bytes = response_byte_cap(token_limit)


# The jitter of retry delays when a client is given no generator of its own.
_SHARED_RNG = random.Random()


class LLMClient:
    """Calls models within a global and a per-model cap on calls in flight, by `outbound` policy
    (default: the operator's own run, any provider and base URL, no credential for any base).

    The semaphores belong to the event loop that first uses them; when the client is used from
    a new loop (a worker running `asyncio.run` per task), they are recreated for it. One loop at
    a time per client. A model is identified by its id and `api_base`, so two servers of the
    same model id do not share a cap. Direct-transport connections come from `pools` (default:
    the process's, shared by every client; see app.evaluation.engine.direct). `prices` (the
    `prices:` overrides) price their models on both transports. `max_output_chars` is the most
    characters of an answer any call keeps (`GAUNTLET_MAX_OUTPUT_CHARS` in the service).
    """

    def __init__(
        self,
        *,
        global_concurrency: int = 50,
        per_model_concurrency: int = 50,
        retry: RetryPolicy = RetryPolicy(),
        sleep: SleepFunction = asyncio.sleep,
        rng: random.Random | None = None,
        outbound: OutboundPolicy | None = None,
        budget: CallBudget | None = None,
        resolve: AsyncResolver = system_resolve_async,
        on_call: CallObserver | None = None,
        prices: Mapping[str, Price] | None = None,
        pools: ConnectionPools | None = None,
        max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
    ) -> None:
        if global_concurrency < 1 or per_model_concurrency < 1:
            raise ValueError("concurrency caps must be at least 1")
        if max_output_chars < 1:
            raise ValueError("max_output_chars must be at least 1")
        if retry.max_attempts < 1:
            raise ValueError("retry.max_attempts must be at least 1")
        self.global_concurrency = global_concurrency
        self.per_model_concurrency = per_model_concurrency
        self.retry = retry
        self.sleep = sleep
        self.calls_made = 0
        self.max_in_flight = 0
        self._in_flight = 0
        # Seeding a generator reads the OS's entropy (milliseconds on a busy virtual machine);
        # a client per attempt or match shares the process's unless given one.
        self._rng = rng or _SHARED_RNG
        self._loop: asyncio.AbstractEventLoop | None = None
        self._global_gate: asyncio.Semaphore | None = None
        self._model_gates: dict[tuple[str, str | None], asyncio.Semaphore] = {}
        self._cost_warned: set[str] = set()
        self.outbound = outbound if outbound is not None else OutboundPolicy.unrestricted()
        self.budget = budget
        self.resolve = resolve
        self.on_call = on_call
        self.prices: Mapping[str, Price] = dict(prices or {})
        self._own_pools = pools is not None
        self.pools = pools if pools is not None else SHARED_POOLS
        # The policy is immutable: a base URL's route is decided once per client.
        self._routes: dict[str, BaseRoute] = {}
        # The ceiling of every answer's output cap (app.evaluation.engine.bounds).
        self.max_output_chars = max_output_chars
        self._limits: dict[str, ModelLimits | None] = {}

    async def complete(self, spec: ModelSpec, messages: list[Message]) -> CallRecord:
        """One chat completion, retried on transient failures; raises `InfrastructureError`."""
        sent: list[Message] = []
        if spec.system_prompt:
            sent.append({"role": "system", "content": spec.system_prompt})
        # Earlier outputs come back in seq@k prompts and judge prompts; a lone surrogate in
        # one cannot be encoded into the request, so it goes as written when stored.
        sent.extend(_encodable_message(message) for message in messages)
        route = self._route(spec)
        bounds = self._bounds(spec, sent)

        for attempt in range(1, self.retry.max_attempts + 1):
            if self.budget is not None:
                # Before every try: a retry is a new call, and the budget may be spent by now.
                await self.budget.before_call(spec)
            try:
                record = await self._call_once(spec, sent, route, bounds)
            except BaseException as error:
                if self.budget is not None:
                    self.budget.release(spec)
                if not isinstance(error, Exception):
                    raise  # cancelled: not a failure of the call
                refusal = _refusal_in(error)
                if refusal is not None:
                    raise self._failure(
                        f"model {spec.model} unreachable",
                        f"model {spec.model}: destination refused: {refusal}",
                        error,
                    ) from error
                if is_context_overflow(error):
                    detail = f"model {spec.model} refused the prompt: {_describe(error)}"
                    logger.warning("%s", detail)
                    raise PromptTooLong(
                        f"the prompt is longer than model {spec.model} accepts (not retried)",
                        detail=detail,
                    ) from error
                if not is_transient(error):
                    raise self._failure(
                        f"{_public_failure(spec.model, error)} (not retried)",
                        f"model {spec.model} failed (not retried): {_describe(error)}",
                        error,
                    ) from error
                if attempt == self.retry.max_attempts:
                    tries = "try" if attempt == 1 else "tries"
                    raise self._failure(
                        f"{_public_failure(spec.model, error)} after {attempt} {tries}",
                        f"model {spec.model} failed after {attempt} {tries}: {_describe(error)}",
                        error,
                    ) from error
                delay = self._delay_before_retry(attempt, error)
                logger.info(
                    "model %s: try %d of %d failed (%s); retrying in %.2fs",
                    spec.model,
                    attempt,
                    self.retry.max_attempts,
                    type(error).__name__,
                    delay,
                )
                await self.sleep(delay)
                continue
            if self.budget is not None:
                await self.budget.after_call(spec, record)
            return record
        raise AssertionError("unreachable: the loop returns or raises")

    def _model_limits(self, spec: ModelSpec) -> ModelLimits | None:
        """The model's token limits from litellm's map (none for offline and
        `openai-compatible/` models, which it does not know)."""
        if spec.model in self._limits:
            return self._limits[spec.model]
        limits = None
        if not spec.model.startswith("offline/") and not is_openai_compatible(spec.model):
            limits = bundled_limits().limits_of(spec.model, self.outbound.catalog)
        self._limits[spec.model] = limits
        return limits

    def _bounds(self, spec: ModelSpec, sent: list[Message]) -> _CallBounds:
        """The call's bounds; a prompt its size proves too long for the model is refused here,
        before any try (PromptTooLong, not retried)."""
        limits = self._model_limits(spec)
        content_bytes = prompt_bytes(sent)
        max_input = limits.max_input_tokens if limits is not None else None
        if max_input is not None and prompt_token_floor(content_bytes) > max_input:
            characters = sum(len(message.get("content") or "") for message in sent)
            public = (
                f"the prompt is too long for model {spec.model}: {characters:,} characters, "
                f"more than the {max_input:,} tokens it accepts (not retried)"
            )
            logger.warning("model %s: %s", spec.model, public)
            raise PromptTooLong(public)
        token_limit = spec.max_tokens
        if token_limit is None and limits is not None:
            token_limit = limits.max_output_tokens
        return _CallBounds(
            token_limit, input_token_bound(sent, content_bytes), self.max_output_chars
        )

    @staticmethod
    def _failure(public: str, detail: str, error: BaseException) -> InfrastructureError:
        logger.warning("%s", detail)
        return InfrastructureError(public, detail=detail)

    def _route(self, spec: ModelSpec) -> BaseRoute | None:
        """The policy's decision for this call: None for a call through litellm, the base-URL
        route of the direct transport otherwise. Refusals raise InfrastructureError at once
        (not retried)."""
        if not uses_direct_transport(spec):
            if spec.model.startswith("offline/"):
                return None  # built in: never leaves the process, whatever api_base says
            self._check_provider(spec)
            self._check_key(spec)
            return None
        self._check_provider(spec)
        if spec.api_base is None:
            # An `openai-compatible/` model names no provider that litellm could reach.
            error = OutboundRefused(f"model {spec.model} needs an api_base (the server's URL)")
            raise self._failure(
                f"model {spec.model} has no api_base (not retried)", str(error), error
            ) from error
        route = self._routes.get(spec.api_base)
        if route is None:
            try:
                route = self.outbound.route(spec.api_base)
            except OutboundRefused as error:
                raise self._failure(
                    f"model {spec.model} unreachable", f"model {spec.model}: {error}", error
                ) from error
            self._routes[spec.api_base] = route
        return route

    def _check_provider(self, spec: ModelSpec) -> None:
        try:
            self.outbound.check_provider(spec.model)
        except OutboundRefused as error:
            raise self._failure(
                f"model {spec.model} is not allowed on this server", str(error), error
            ) from error

    def _check_key(self, spec: ModelSpec) -> None:
        """A provider with no key configured fails every try alike: refused before the first
        (the key may have been removed after the challenge was saved), not retried."""
        try:
            self.outbound.check_key(spec.model)
        except OutboundRefused as error:
            raise self._failure(f"{error} (not retried)", str(error), error) from error

    def _delay_before_retry(self, failed_attempt: int, error: BaseException) -> float:
        requested = retry_after_seconds(error)
        if requested is not None:
            # Honoured up to the cap, so a server asking for minutes cannot stall a worker.
            return min(requested, self.retry.max_delay_s)
        ceiling = min(self.retry.max_delay_s, self.retry.base_delay_s * 2 ** (failed_attempt - 1))
        return self._rng.uniform(0.0, ceiling)

    def _gates(self, spec: ModelSpec) -> tuple[asyncio.Semaphore, asyncio.Semaphore]:
        loop = asyncio.get_running_loop()
        if loop is not self._loop or self._global_gate is None:
            self._loop = loop
            self._global_gate = asyncio.Semaphore(self.global_concurrency)
            self._model_gates = {}
        key = (spec.model, spec.api_base)
        model_gate = self._model_gates.get(key)
        if model_gate is None:
            model_gate = asyncio.Semaphore(self.per_model_concurrency)
            self._model_gates[key] = model_gate
        return model_gate, self._global_gate

    async def _call_once(
        self, spec: ModelSpec, sent: list[Message], route: BaseRoute | None, bounds: _CallBounds
    ) -> CallRecord:
        hard_timeout = spec.timeout_s * _HARD_TIMEOUT_FACTOR + _HARD_TIMEOUT_GRACE_S
        if is_offline(spec.model):
            send: Callable[[], Awaitable[Any]] = functools.partial(
                _offline_answer,
                spec.model,
                [dict(message) for message in sent],
                spec.temperature,
            )
        elif route is None:
            litellm = load_litellm()
            arguments: dict[str, Any] = {
                "model": spec.model,
                # A fresh copy per try: providers may rewrite the list they are given.
                "messages": [dict(message) for message in sent],
                "timeout": spec.timeout_s,
                "num_retries": 0,
                "max_retries": 0,
            }
            if spec.temperature is not None:
                arguments["temperature"] = spec.temperature
            if spec.max_tokens is not None:
                arguments["max_tokens"] = spec.max_tokens
            send = functools.partial(litellm.acompletion, **arguments)
        else:
            # Built before the timed span, like litellm's arguments: the call alone is timed.
            client = self.pools.client(route, self.resolve)
            body = request_body(spec, sent, served_model_name(spec.model, self.outbound))
            send = functools.partial(
                create_completion, client, body, spec.timeout_s, bounds.response_bytes
            )

        # The model gate comes first so a call queued behind a busy model holds no global slot.
        model_gate, global_gate = self._gates(spec)
        async with model_gate, global_gate:
            self.calls_made += 1
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
            started = time.perf_counter()
            try:
                async with asyncio.timeout(hard_timeout):
                    response = await send()
            except BaseException:
                self._observe(spec.model, time.perf_counter() - started, None)
                raise
            finally:
                self._in_flight -= 1
            elapsed_s = time.perf_counter() - started
            elapsed_ms = round(elapsed_s * 1000)

        try:
            message = _first_message(response)
            answer = _output_text(message)
        except MalformedResponseError:
            self._observe(spec.model, elapsed_s, None)
            raise
        output, cut = capped_output(answer, bounds.output_chars)
        usage = _field(response, "usage")
        prompt_details = _field(usage, "prompt_tokens_details")
        completion_details = _field(usage, "completion_tokens_details")
        reported = Usage(
            input_tokens=_as_int(_field(usage, "prompt_tokens")),
            cached_tokens=_as_int(_field(prompt_details, "cached_tokens")),
            thinking_tokens=_as_int(_field(completion_details, "reasoning_tokens")),
            output_tokens=_as_int(_field(usage, "completion_tokens")),
        )
        counted = bounded_usage(
            reported,
            max_input=bounds.max_input_tokens,
            max_output=output_token_bound(bounds.token_limit, answer, _reasoning_text(message)),
        )
        record = CallRecord(
            model=spec.model,
            prompt=sent,
            output=output,
            input_tokens=counted.input_tokens,
            cached_tokens=counted.cached_tokens,
            thinking_tokens=counted.thinking_tokens,
            output_tokens=counted.output_tokens,
            elapsed_ms=elapsed_ms,
            output_truncated_chars=cut,
            reported_usage=None if counted == reported else reported.to_dict(),
        )
        if cut or record.reported_usage is not None:
            # The offline simulations ignore max_tokens by design; anything else doing so is
            # a broken or hostile server the operator should hear of.
            logger.log(
                logging.DEBUG if spec.model.startswith("offline/") else logging.WARNING,
                "model %s: answer bounded (%d characters cut; usage reported %s, counted %s)",
                spec.model,
                cut,
                reported.to_dict(),
                counted.to_dict(),
            )
        record.cost_usd = self._cost(record, response if uses_litellm(spec) else None)
        self._observe(spec.model, elapsed_s, record)
        return record

    def _observe(self, model: str, seconds: float, record: CallRecord | None) -> None:
        if self.on_call is None:
            return
        try:
            self.on_call(model, seconds, record)
        except Exception:
            # Accounting must never fail a model call.
            logger.warning("call observer failed", exc_info=True)

    async def aclose(self) -> None:
        """Closes this client's own connection pools (given as `pools`). The process's shared
        pools stay open for the next client on this loop (a worker's next attempt); whoever
        owns the loop closes them (`SHARED_POOLS.aclose()`, as the CLI does after a run)."""
        if self._own_pools:
            await self.pools.aclose()

    def _cost(self, record: CallRecord, litellm_response: Any) -> float | None:
        """The call's cost in USD: a `prices` override, else nothing for an offline model,
        else litellm's own price of a litellm response, else litellm's price map read as data
        (app.outbound.prices), by the model id (what the server claims to be is not used).
        None, with one warning per model, when no price is known."""
        override = self.prices.get(record.model)
        if override is not None:
            return _finite(
                override.cost(
                    input_tokens=record.input_tokens,
                    cached_tokens=record.cached_tokens,
                    output_tokens=record.output_tokens,
                    thinking_tokens=record.thinking_tokens,
                )
            )
        if is_offline(record.model):
            return 0.0
        if litellm_response is not None:
            if record.reported_usage is not None:
                # litellm priced the usage the server claimed; the record's is what counts.
                return self._litellm_cost_of_record(record)
            return self._litellm_cost(record.model, litellm_response)
        if is_openai_compatible(record.model):
            price = None  # your own server: only `prices` knows its price
        else:
            price = bundled_prices().price_of(record.model, self.outbound.catalog)
        if price is None:
            self._warn_unpriced(record.model, "not in litellm's price map")
            return None
        return _finite(
            price.cost(
                input_tokens=record.input_tokens,
                cached_tokens=record.cached_tokens,
                output_tokens=record.output_tokens,
                thinking_tokens=record.thinking_tokens,
            )
        )

    def _warn_unpriced(self, model: str, reason: str) -> None:
        if model not in self._cost_warned:
            self._cost_warned.add(model)
            logger.warning("no price known for model %s; cost left unknown (%s)", model, reason)

    def _litellm_cost(self, model: str, response: Any) -> float | None:
        # litellm prices every response as it builds it; pricing it again costs milliseconds
        # of CPU per call, which at 50 calls in flight is most of the engine's own time.
        hidden = getattr(response, "_hidden_params", None)
        if isinstance(hidden, dict):
            known = hidden.get("response_cost")
            if (
                isinstance(known, int | float)
                and not isinstance(known, bool)
                and math.isfinite(known)
            ):
                return float(known)
        if model in self._cost_warned:
            return None  # litellm could not price this model before; it will not now
        try:
            cost = load_litellm().completion_cost(completion_response=response)
        except Exception as error:
            self._warn_unpriced(model, str(error))
            return None
        if isinstance(cost, int | float) and not isinstance(cost, bool):
            return _finite(float(cost))
        return None

    def _litellm_cost_of_record(self, record: CallRecord) -> float | None:
        """litellm's price of the record's (bounded) usage: its own `completion_cost` on a
        response carrying exactly those counts."""
        litellm = load_litellm()
        response = litellm.ModelResponse(
            model=record.model,
            usage=litellm.Usage(
                prompt_tokens=record.input_tokens,
                completion_tokens=record.output_tokens,
                total_tokens=record.input_tokens + record.output_tokens,
                prompt_tokens_details={"cached_tokens": record.cached_tokens},
                completion_tokens_details={"reasoning_tokens": record.thinking_tokens},
            ),
        )
        try:
            cost = litellm.completion_cost(completion_response=response, model=record.model)
        except Exception as error:
            self._warn_unpriced(record.model, str(error))
            return None
        if isinstance(cost, int | float) and not isinstance(cost, bool):
            return _finite(float(cost))
        return None


def _finite(cost: float) -> float | None:
    return cost if math.isfinite(cost) else None


class CompletionClient(Protocol):
    """What verifiers and the engine need from a model client; `LLMClient` is the real one."""

    async def complete(self, spec: ModelSpec, messages: list[Message]) -> CallRecord: ...
