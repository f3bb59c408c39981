"""The broker transport the API publishes through: kombu's Redis transport, one client kept."""

from __future__ import annotations

import json
import uuid
from typing import Any

import redis
from celery import Celery

from tests.conftest import Stack


def _sender() -> Celery:
    """A Celery app configured as the API's sender is, for the stack's broker."""
    from app.kit.broker.config import configure
    from app.kit.config import get_settings

    app = Celery("sender")
    configure(app, get_settings())
    return app


def test_messages_reach_the_queue_through_one_kept_client(stack: Stack) -> None:
    from app.kit.broker.redis_transport import Transport

    app = _sender()
    queue = f"transport-{uuid.uuid4().hex[:8]}"
    ids = [str(uuid.uuid4()) for _ in range(5)]
    clients = []
    with app.connection_for_write() as connection:
        assert isinstance(connection.transport, Transport)
        for attempt_id in ids:
            app.send_task(
                "gauntlet.run_attempt", args=[attempt_id], queue=queue, connection=connection
            )
            channel: Any = connection.default_channel
            clients.append(channel._command_client)
    # kombu's own channel builds a client per message; this one keeps the first.
    assert clients[0] is not None
    assert all(client is clients[0] for client in clients)

    from app.kit.config import get_settings

    # The run's key prefix is on every key the transport writes, the queue's list included.
    key = get_settings().redis_key_prefix + queue
    assert key != queue
    broker = redis.Redis.from_url(stack.broker_url)
    try:
        messages = [json.loads(raw) for raw in reversed(broker.lrange(key, 0, -1))]
        assert [message["headers"]["argsrepr"] for message in messages] == [
            repr([attempt_id]) for attempt_id in ids
        ]
    finally:
        broker.delete(key)


def test_a_channel_whose_pool_is_replaced_builds_a_new_client(stack: Stack) -> None:
    app = _sender()
    with app.connection_for_write() as connection:
        channel: Any = connection.default_channel  # the Redis transport's own channel
        first = channel._create_client()
        assert channel._create_client() is first
        channel._pool = None  # as kombu does when the channel reconnects
        second = channel._create_client()
        assert second is not first
        assert second.connection_pool is channel.pool
        assert second.ping()
