"""The broker transport the API publishes through: kombu's Redis transport, one client kept."""

from __future__ import annotations

import json
import uuid

import redis

from tests.conftest import Stack


def test_messages_reach_the_queue_through_one_kept_client(stack: Stack) -> None:
    from workers.celery_app import make_celery
    from workers.redis_transport import Transport

    app = make_celery()
    queue = f"transport-{uuid.uuid4().hex[:8]}"
    ids = [str(uuid.uuid4()) for _ in range(5)]
    clients = []
    with app.connection_for_write() as connection:
        assert isinstance(connection.transport, Transport)
        for attempt_id in ids:
            app.send_task(
                "gauntlet.run_attempt", args=[attempt_id], queue=queue, connection=connection
            )
            clients.append(connection.default_channel._command_client)
    # kombu's own channel builds a client per message; this one keeps the first.
    assert clients[0] is not None
    assert all(client is clients[0] for client in clients)

    from app.config import get_settings

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
    from workers.celery_app import make_celery

    app = make_celery()
    with app.connection_for_write() as connection:
        channel = connection.default_channel
        first = channel._create_client()
        assert channel._create_client() is first
        channel._pool = None  # as kombu does when the channel reconnects
        second = channel._create_client()
        assert second is not first
        assert second.connection_pool is channel.pool
        assert second.ping()
