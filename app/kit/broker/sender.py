"""Sends task messages to this deployment's queue, by name, through a Celery app that knows no
task: what the API and the unit of work need, without the worker's app and its kinds."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from celery import Celery
from celery.signals import before_task_publish

from app.kit.broker.config import configure
from app.kit.config import get_settings
from app.kit.observability import context

log = logging.getLogger(__name__)

# The header that carries the id of the request a task was sent for, to the worker's logs.
REQUEST_ID_HEADER = "gauntlet_request_id"


@dataclass(frozen=True)
class Message:
    """A task to send: its registered name, its arguments, and a delay in seconds."""

    name: str
    args: Sequence[Any]
    countdown: float | None = None


@lru_cache(maxsize=1)
def sender_app() -> Celery:
    app = Celery("gauntlet-sender")
    configure(app, get_settings())
    return app


def send(message: Message) -> None:
    """Sends one message (raises what the broker raised)."""
    args = list(message.args)
    sender_app().send_task(
        message.name,
        args=args,
        queue=get_settings().queue,
        # The representations monitoring tools show, given rather than computed by Celery's
        # safe repr (~10 % of a publish).
        argsrepr=repr(args),
        kwargsrepr="{}",
        countdown=message.countdown,
    )


@before_task_publish.connect
def _send_request_id(headers: dict[str, Any] | None = None, **_: Any) -> None:
    """A task sent while serving a request carries the request's id to the worker."""
    request_id = context.request_id()
    if request_id is not None and headers is not None:
        headers[REQUEST_ID_HEADER] = request_id
