"""kombu's Redis transport with one Redis client per channel for the commands it sends.

kombu builds a new `redis.Redis` for every message it puts on a queue, and the constructor
fills a table of ~170 response callbacks: ~7 % of the API's CPU per attempt submission.
This channel builds one and keeps it; the connection pool behind it (kombu's own) is shared
and thread-safe as before, so nothing else changes. Used for `redis://` broker
URLs (workers/celery_app.py); `rediss://` keeps kombu's own.

It also keeps a worker alive when Redis goes away with a message taken and not yet
acknowledged. Celery's consumer then collects the connection (the transport forgets its
broker) and closes it, ignoring connection errors only; the channel's close gives the message
back, and kombu's channel, asked for a client with no broker named, fails with an
AttributeError that ended the worker. Here it is the connection error it is: the worker
connects again, and the message, still in Redis's set of unacknowledged ones, is given back
after the visibility timeout.
"""

from __future__ import annotations

from typing import Any

from kombu.transport import redis
from redis.exceptions import ConnectionError as RedisConnectionError


class Channel(redis.Channel):
    _command_client: Any = None

    def _create_client(self, asynchronous: bool = False) -> Any:
        # kombu's type information (from celery-types) does not declare this method.
        create = super()._create_client  # type: ignore[misc]
        if asynchronous:
            return create(asynchronous=True)
        client = self._command_client
        # The pool is replaced when the channel reconnects; a client of the old one is dropped.
        if client is None or client.connection_pool is not self.pool:
            client = create()
            self._command_client = client
        return client

    def _connparams(self, asynchronous: bool = False) -> Any:
        if self.connection.client is None:
            raise RedisConnectionError("the broker connection was closed")
        return super()._connparams(asynchronous=asynchronous)  # type: ignore[misc]


class Transport(redis.Transport):
    Channel = Channel
