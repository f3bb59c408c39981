"""The broker's gauge of /metrics, read when it is scraped."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from app.kit.config import get_settings


def queue_depth() -> Iterable[tuple[list[str], float]]:
    """Messages waiting in the broker's queue (kombu counts them, for Redis or the folder)."""
    from app.kit.broker.sender import sender_app  # Celery (~0.13 s) only once /metrics is read

    queue = get_settings().queue
    with sender_app().connection_for_read() as connection:
        connection.ensure_connection(max_retries=1, timeout=1)
        channel: Any = connection.default_channel  # a virtual channel (Redis, folder)
        declared = channel.queue_declare(queue=queue, passive=False)
        yield [queue], float(declared.message_count)


QUEUE_DEPTH = (
    "gauntlet_queue_depth",
    "Messages waiting in the broker queue.",
    ["queue"],
    queue_depth,
)
