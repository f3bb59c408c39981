"""The direct transport's answers that need no connection: a resolver that cannot answer
now is retried, and status errors carry the OpenAI API's names and headers (the transport
against loopback servers is tests/process/outbound/test_transport.py)."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import pytest

from app.evaluation.engine.llm import is_transient
from app.outbound.addresses import DestinationRefused, ResolutionFailed, system_resolve_async
from app.outbound.transport import status_error


def test_a_resolver_that_cannot_answer_now_is_retried_not_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def unavailable(*_: Any, **__: Any) -> Any:
        raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")

    async def scenario() -> None:
        monkeypatch.setattr(asyncio.get_running_loop(), "getaddrinfo", unavailable)
        await system_resolve_async("models.test", 443)

    with pytest.raises(ResolutionFailed) as caught:
        asyncio.run(scenario())
    assert is_transient(caught.value)
    assert not isinstance(caught.value, DestinationRefused)


def test_status_errors_carry_the_openai_api_s_names_and_headers() -> None:
    cases = {
        400: "BadRequestError",
        401: "AuthenticationError",
        404: "NotFoundError",
        429: "RateLimitError",
        500: "InternalServerError",
        503: "InternalServerError",
        418: "APIStatusError",
    }
    for status, name in cases.items():
        error = status_error(status, {"retry-after": "2"}, b'{"error": "no"}')
        assert type(error).__name__ == name
        assert error.status_code == status and error.headers["retry-after"] == "2"
        assert str(error) == f'HTTP {status}: {{"error": "no"}}'
    assert is_transient(status_error(429, {}, b"")) and is_transient(status_error(503, {}, b""))
    assert not is_transient(status_error(401, {}, b""))
