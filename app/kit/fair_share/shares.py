"""The places of each share: requests in flight, counted where every API process sees them.

A share is a bucket (`tenant:<id>`, `public:<slug>`: `app.kit.fair_share.requesters`) with room for
`limit` requests at once. In Redis a bucket is a sorted set of leases, one per request in
flight, each scored with the time (Redis's clock) it expires; taking a place is one script:
drop the expired leases, count the others, add one if there is room. Each process renews its
live leases every third of LEASE_SECONDS, so a lease outlives its request only when its
process died, and then only for LEASE_SECONDS (15 s): a killed API process gives its places
back by itself, where bare counters (INCR/DECR) would lose them for good.

Without Redis (the embedded mode, one API process) the places are counted in the process.
When Redis does not answer (within REDIS_TIMEOUT_SECONDS), each process counts its own for
REDIS_RETRY_SECONDS, then tries Redis again: the share then holds per process (a tenant may
have up to `limit` in each), and a request is never failed or held up because Redis is away.

A place Redis refused makes this process refuse the bucket at once, without asking Redis,
until it gives back one of that bucket's places or FULL_HINT_SECONDS pass; then one request
at a time asks Redis again (the others meanwhile are refused here). A tenant sending far past
its share so costs about one Redis call per place given back and per interval, not one per
request, and gets its 429 in microseconds. The hint only ever delays a place of a bucket
that was full a moment ago; it never lets a request in past the share. Nor does a process
ask for more places than the share has: with as many held or asked for, it refuses at once.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import math
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from redis.asyncio import BlockingConnectionPool, Redis
from redis.exceptions import RedisError

log = logging.getLogger(__name__)

LEASE_SECONDS = 15.0
REDIS_TIMEOUT_SECONDS = 1.0
REDIS_RETRY_SECONDS = 5.0
FULL_HINT_SECONDS = 0.05
# Connections per process: a place is taken and given back in well under a millisecond each.
REDIS_CONNECTIONS = 32

# KEYS[1]: the bucket; ARGV: limit, lease seconds, lease id. Answers 1 (taken) or 0 (full).
# Redis's clock, so that processes on hosts whose clocks differ agree on what expired.
_TAKE = """
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then
  return 0
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
redis.call('EXPIRE', KEYS[1], math.ceil(tonumber(ARGV[2])) + 1)
return 1
"""
# KEYS[1]: the bucket; ARGV: lease seconds, then the lease ids to extend (only those still
# there: a lease that expired is not brought back).
_RENEW = """
local clock = redis.call('TIME')
local expires = tonumber(clock[1]) + tonumber(clock[2]) / 1000000 + tonumber(ARGV[1])
for index = 2, #ARGV do
  redis.call('ZADD', KEYS[1], 'XX', expires, ARGV[index])
end
redis.call('EXPIRE', KEYS[1], math.ceil(tonumber(ARGV[1])) + 1)
return 1
"""


@dataclass(frozen=True, slots=True)
class Lease:
    """A place taken in a bucket's share; give it back once the request is answered."""

    bucket: str
    lease_id: str
    in_redis: bool


class Shares:
    """Places of `limit` requests at once per bucket, in Redis (`redis_url`) or this process."""

    def __init__(
        self,
        limit: int,
        redis_url: str | None = None,
        *,
        key_prefix: str = "",
        lease_seconds: float = LEASE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limit = limit
        self.lease_seconds = lease_seconds
        self.redis_url = redis_url
        self.key_prefix = key_prefix + "gauntlet-share:"
        self.clock = clock
        self._redis: Redis | None = None
        self._take_script: Any = None
        self._renew_script: Any = None
        self._renewer: asyncio.Task[None] | None = None
        self._redis_away_until = -math.inf
        self._local: dict[str, int] = {}
        # This process's leases in Redis, by bucket: renewed until given back.
        self._live: dict[str, set[str]] = {}
        self._full_until: dict[str, float] = {}
        self._asking: set[str] = set()
        # Places this process is asking Redis for, by bucket.
        self._pending: dict[str, int] = {}
        self._process = secrets.token_hex(8)
        self._numbers = itertools.count()

    async def take(self, bucket: str) -> Lease | None:
        """A place in the bucket's share, or None when it has none free."""
        if self.redis_url is None:
            return self._take_here(bucket)
        now = self.clock()
        if now < self._redis_away_until:
            return self._take_here(bucket)
        if len(self._live.get(bucket, ())) + self._pending.get(bucket, 0) >= self.limit:
            # This process alone holds (or is asking for) the whole share.
            return None
        full_until = self._full_until.get(bucket)
        if full_until is not None:
            # Found full lately: refused here until the hint passes, then one request at a
            # time asks Redis again.
            if now < full_until or bucket in self._asking:
                return None
            self._asking.add(bucket)
        lease_id = f"{self._process}:{next(self._numbers)}"
        self._pending[bucket] = self._pending.get(bucket, 0) + 1
        try:
            taken = await self._take_in_redis(bucket, lease_id)
        except (RedisError, OSError) as error:
            self._redis_away(error)
            return self._take_here(bucket)
        finally:
            self._asking.discard(bucket)
            left = self._pending[bucket] - 1
            if left:
                self._pending[bucket] = left
            else:
                del self._pending[bucket]
        if not taken:
            self._remember_full(bucket, self.clock())
            return None
        self._full_until.pop(bucket, None)
        self._live.setdefault(bucket, set()).add(lease_id)
        return Lease(bucket, lease_id, in_redis=True)

    async def give_back(self, lease: Lease) -> None:
        if not lease.in_redis:
            left = self._local[lease.bucket] - 1
            if left:
                self._local[lease.bucket] = left
            else:
                del self._local[lease.bucket]
            return
        # Forgotten first, so that it is no longer renewed even if Redis cannot be told now
        # (it then expires by itself).
        live = self._live.get(lease.bucket)
        if live is not None:
            live.discard(lease.lease_id)
            if not live:
                del self._live[lease.bucket]
        if lease.bucket in self._full_until:
            # A place of a full bucket is free again: the next request asks Redis for it.
            self._full_until[lease.bucket] = -math.inf
        try:
            await self._client().zrem(self._key(lease.bucket), lease.lease_id)
        except (RedisError, OSError) as error:
            self._redis_away(error)

    def held_here(self, bucket: str) -> int:
        """This process's places in the bucket (tests and metrics)."""
        return self._local.get(bucket, 0) + len(self._live.get(bucket, ()))

    async def close(self) -> None:
        if self._renewer is not None:
            self._renewer.cancel()
            self._renewer = None
        if self._redis is not None:
            await self._redis.aclose()
            self._redis = None

    def _take_here(self, bucket: str) -> Lease | None:
        held = self._local.get(bucket, 0)
        if held >= self.limit:
            return None
        self._local[bucket] = held + 1
        return Lease(bucket, "", in_redis=False)

    def _key(self, bucket: str) -> str:
        return self.key_prefix + bucket

    def _client(self) -> Redis:
        if self._redis is None:
            assert self.redis_url is not None
            pool = BlockingConnectionPool.from_url(
                self.redis_url,
                max_connections=REDIS_CONNECTIONS,
                timeout=REDIS_TIMEOUT_SECONDS,
                socket_timeout=REDIS_TIMEOUT_SECONDS,
                socket_connect_timeout=REDIS_TIMEOUT_SECONDS,
            )
            self._redis = Redis(connection_pool=pool)
            self._take_script = self._redis.register_script(_TAKE)
            self._renew_script = self._redis.register_script(_RENEW)
        return self._redis

    async def _take_in_redis(self, bucket: str, lease_id: str) -> bool:
        self._client()
        if self._renewer is None or self._renewer.done():
            self._renewer = asyncio.get_running_loop().create_task(self._renew_forever())
        taken = await self._take_script(
            keys=[self._key(bucket)], args=[self.limit, self.lease_seconds, lease_id]
        )
        return bool(taken)

    async def _renew_forever(self) -> None:
        while True:
            await asyncio.sleep(self.lease_seconds / 3)
            for bucket, live in list(self._live.items()):
                if not live:
                    continue
                try:
                    await self._renew_script(
                        keys=[self._key(bucket)], args=[self.lease_seconds, *sorted(live)]
                    )
                except (RedisError, OSError) as error:
                    self._redis_away(error)
                    break

    def _remember_full(self, bucket: str, now: float) -> None:
        if len(self._full_until) > 10_000:
            self._full_until = {
                name: until for name, until in self._full_until.items() if until > now
            }
        self._full_until[bucket] = now + FULL_HINT_SECONDS

    def _redis_away(self, error: BaseException) -> None:
        now = self.clock()
        if now >= self._redis_away_until:
            log.warning(
                "the shares' Redis did not answer (%s); each API process counts its own "
                "places for %.0f s",
                error,
                REDIS_RETRY_SECONDS,
            )
        self._redis_away_until = now + REDIS_RETRY_SECONDS
