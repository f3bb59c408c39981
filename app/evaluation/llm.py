"""The one way the engine calls a model: litellm, bounded concurrency, retries, exact records.

Every actor, judge and critic call goes through `LLMClient.complete`, which returns a
`CallRecord` of exactly what was sent and received. Transient failures (rate limits, 5xx,
timeouts, broken connections, malformed responses) are retried with exponential backoff and full
jitter, honouring `Retry-After`; anything else, and a spent retry budget, raises
`InfrastructureError`, which ends an attempt as `error` rather than as a failed trial.
"""

from __future__ import annotations

import asyncio
import email.utils
import gc
import logging
import math
import os
import random
import threading
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, Protocol

from app.evaluation.types import CallRecord, InfrastructureError, Message, ModelSpec, RetryPolicy
from app.storable import encodable

logger = logging.getLogger(__name__)

SleepFunction = Callable[[float], Awaitable[None]]

# Statuses worth another try: timeouts, conflicts, "too early", rate limits and server errors.
_TRANSIENT_STATUSES = frozenset({408, 409, 425, 429})
_REASON_LIMIT = 500
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
            import litellm

            from app.evaluation.offline import register_offline_models

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


def warm_up() -> None:
    """Imports litellm ahead of the first call (a worker does this before forking its pool)."""
    load_litellm()


class MalformedResponseError(Exception):
    """A provider answered, but not with a usable chat completion."""


def is_transient(error: BaseException) -> bool:
    """Whether another try of the same call may succeed."""
    import openai

    if isinstance(error, MalformedResponseError | TimeoutError | ConnectionError):
        return True
    # Includes openai.APITimeoutError and every litellm timeout / connection error.
    if isinstance(error, openai.APIConnectionError):
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
    return f"{type(error).__name__}: {text}"


def _encodable_message(message: Message) -> Message:
    return {
        key: encodable(value) if isinstance(value, str) else value for key, value in message.items()
    }


def _as_int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _output_text(response: Any) -> str:
    choices = getattr(response, "choices", None)
    if not choices:
        raise MalformedResponseError("the response has no choices")
    message = getattr(choices[0], "message", None)
    if message is None:
        raise MalformedResponseError("the first choice has no message")
    content = getattr(message, "content", None)
    if content is None:
        return ""
    if not isinstance(content, str):
        raise MalformedResponseError(f"message content is {type(content).__name__}, not text")
    return content


class LLMClient:
    """Calls models through litellm within a global and a per-model cap on calls in flight.

    The semaphores belong to the event loop that first uses them; when the client is used from a
    new loop (a worker running `asyncio.run` per task), they are recreated for it. One loop at a
    time per client. A model is identified by its id and `api_base`, so two servers of the same
    model id do not share a cap.
    """

    def __init__(
        self,
        *,
        global_concurrency: int = 50,
        per_model_concurrency: int = 50,
        retry: RetryPolicy = RetryPolicy(),
        sleep: SleepFunction = asyncio.sleep,
        rng: random.Random | None = None,
    ) -> None:
        if global_concurrency < 1 or per_model_concurrency < 1:
            raise ValueError("concurrency caps must be at least 1")
        if retry.max_attempts < 1:
            raise ValueError("retry.max_attempts must be at least 1")
        self.global_concurrency = global_concurrency
        self.per_model_concurrency = per_model_concurrency
        self.retry = retry
        self.sleep = sleep
        self.calls_made = 0
        self.max_in_flight = 0
        self._in_flight = 0
        self._rng = rng or random.Random()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._global_gate: asyncio.Semaphore | None = None
        self._model_gates: dict[tuple[str, str | None], asyncio.Semaphore] = {}
        self._cost_warned: set[str] = set()

    async def complete(self, spec: ModelSpec, messages: list[Message]) -> CallRecord:
        """One chat completion, retried on transient failures; raises `InfrastructureError`."""
        sent: list[Message] = []
        if spec.system_prompt:
            sent.append({"role": "system", "content": spec.system_prompt})
        # Earlier outputs come back in seq@k prompts and judge prompts; a lone surrogate in
        # one cannot be encoded into the request, so it goes as written when stored.
        sent.extend(_encodable_message(message) for message in messages)

        for attempt in range(1, self.retry.max_attempts + 1):
            try:
                return await self._call_once(spec, sent)
            except Exception as error:
                if not is_transient(error):
                    raise InfrastructureError(
                        f"model {spec.model} failed (not retried): {_describe(error)}"
                    ) from error
                if attempt == self.retry.max_attempts:
                    tries = "try" if attempt == 1 else "tries"
                    raise InfrastructureError(
                        f"model {spec.model} failed after {attempt} {tries}: {_describe(error)}"
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
        raise AssertionError("unreachable: the loop returns or raises")

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

    async def _call_once(self, spec: ModelSpec, sent: list[Message]) -> CallRecord:
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
        if spec.api_base is not None:
            arguments["api_base"] = spec.api_base
        hard_timeout = spec.timeout_s * _HARD_TIMEOUT_FACTOR + _HARD_TIMEOUT_GRACE_S

        # The model gate comes first so a call queued behind a busy model holds no global slot.
        model_gate, global_gate = self._gates(spec)
        async with model_gate, global_gate:
            self.calls_made += 1
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
            started = time.perf_counter()
            try:
                async with asyncio.timeout(hard_timeout):
                    response = await litellm.acompletion(**arguments)
            finally:
                self._in_flight -= 1
            elapsed_ms = round((time.perf_counter() - started) * 1000)

        output = _output_text(response)
        usage = getattr(response, "usage", None)
        prompt_details = getattr(usage, "prompt_tokens_details", None)
        completion_details = getattr(usage, "completion_tokens_details", None)
        return CallRecord(
            model=spec.model,
            prompt=sent,
            output=output,
            input_tokens=_as_int(getattr(usage, "prompt_tokens", 0)),
            cached_tokens=_as_int(getattr(prompt_details, "cached_tokens", 0)),
            thinking_tokens=_as_int(getattr(completion_details, "reasoning_tokens", 0)),
            output_tokens=_as_int(getattr(usage, "completion_tokens", 0)),
            cost_usd=self._cost(litellm, spec.model, response),
            elapsed_ms=elapsed_ms,
        )

    def _cost(self, litellm: Any, model: str, response: Any) -> float | None:
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
            cost = litellm.completion_cost(completion_response=response)
        except Exception as error:
            if model not in self._cost_warned:
                self._cost_warned.add(model)
                logger.warning("no price known for model %s; cost left unknown (%s)", model, error)
            return None
        if isinstance(cost, int | float) and math.isfinite(cost):
            return float(cost)
        return None


class CompletionClient(Protocol):
    """What verifiers and the engine need from a model client; `LLMClient` is the real one."""

    async def complete(self, spec: ModelSpec, messages: list[Message]) -> CallRecord: ...
