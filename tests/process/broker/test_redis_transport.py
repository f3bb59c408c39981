"""The Redis broker's channel when Redis goes away with a message taken but not acknowledged:
the worker's consumer drops the connection as Celery does, and that must raise nothing but a
connection error (which Celery ignores before it connects again). Anything else ends the
worker ("Unrecoverable error"), which once left a deployment with no worker after a Redis
restart."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from kombu import Connection
from kombu.common import ignore_errors

from app.kit.broker.redis_transport import Transport
from tests.services import start_redis


@pytest.fixture
def redis_server() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    url, process = start_redis()
    yield url, process
    process.kill()
    process.wait(timeout=10)


def test_a_connection_lost_with_an_unacknowledged_message_closes_with_no_other_error(
    redis_server: tuple[str, subprocess.Popen[bytes]],
) -> None:
    url, process = redis_server
    connection = Connection(url, transport=Transport)
    queue = connection.SimpleQueue("gauntlet-lost")
    queue.put({"n": 1})
    taken = queue.get(timeout=5)  # delivered, not acknowledged
    assert taken.payload == {"n": 1}
    channel: Any = connection.default_channel
    process.kill()
    process.wait(timeout=10)
    # The state a worker's consumer left the channel in after a failed close: its pools
    # dropped, and its connection collected (the transport no longer names its broker).
    channel._disconnect_pools()
    connection.transport.client = None
    assert not channel.closed and channel.qos._delivered
    # Celery then closes the connection, ignoring connection errors only.
    ignore_errors(connection, channel.close)
    assert channel.closed
