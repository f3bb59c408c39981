"""Shares in Redis, as API processes hold them: the places of a bucket are counted across
processes, a place given back is free to any of them, a live process keeps its places for as
long as its requests run (its leases are renewed), and a process that died without giving its
places back loses them once its leases expire."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator

import pytest
import redis

from app.kit.fair_share.shares import FULL_HINT_SECONDS, Lease, Shares
from tests.conftest import TEST_SETTINGS, Stack

pytestmark = pytest.mark.integration

LEASE_SECONDS = 1.0


@pytest.fixture
def prefix(stack: Stack) -> Iterator[str]:
    """A key prefix of this test's own; its keys are removed after."""
    own = f"{TEST_SETTINGS['GAUNTLET_REDIS_KEY_PREFIX']}shares-{uuid.uuid4().hex[:8]}:"
    yield own
    client = redis.Redis.from_url(stack.broker_url)
    written = list(client.scan_iter(match=f"{own}*"))
    if written:
        client.delete(*written)
    client.close()


def _process(stack: Stack, prefix: str, limit: int = 3) -> Shares:
    """The shares of one API process."""
    return Shares(limit, stack.broker_url, key_prefix=prefix, lease_seconds=LEASE_SECONDS)


async def _take_all(shares: Shares, bucket: str, count: int) -> list[Lease | None]:
    return [await shares.take(bucket) for _ in range(count)]


def test_the_places_of_a_bucket_are_counted_across_processes(stack: Stack, prefix: str) -> None:
    async def scenario() -> None:
        first, second = _process(stack, prefix), _process(stack, prefix)
        try:
            taken = await _take_all(first, "tenant:a", 2) + await _take_all(second, "tenant:a", 1)
            assert all(lease is not None and lease.in_redis for lease in taken)
            assert await first.take("tenant:a") is None
            assert await second.take("tenant:a") is None
            assert await second.take("tenant:b") is not None  # another tenant's own places
            lease = taken[0]
            assert lease is not None
            await first.give_back(lease)
            await asyncio.sleep(FULL_HINT_SECONDS + 0.01)
            again = await second.take("tenant:a")  # the place the other process gave back
            assert again is not None and again.in_redis
            assert await first.take("tenant:a") is None
        finally:
            await first.close()
            await second.close()

    asyncio.run(scenario())


def test_a_live_process_keeps_its_places_past_the_lease_length(stack: Stack, prefix: str) -> None:
    async def scenario() -> None:
        holder, other = _process(stack, prefix), _process(stack, prefix)
        try:
            held = await _take_all(holder, "tenant:a", 3)
            assert all(lease is not None for lease in held)
            await asyncio.sleep(LEASE_SECONDS * 3)  # requests that run long: renewed
            assert await other.take("tenant:a") is None
            for lease in held:
                assert lease is not None
                await holder.give_back(lease)
            await asyncio.sleep(FULL_HINT_SECONDS + 0.01)
            assert await other.take("tenant:a") is not None
        finally:
            await holder.close()
            await other.close()

    asyncio.run(scenario())


def test_the_places_of_a_process_that_died_come_free_once_its_leases_expire(
    stack: Stack, prefix: str
) -> None:
    async def scenario() -> None:
        dead, other = _process(stack, prefix), _process(stack, prefix)
        try:
            assert all(lease is not None for lease in await _take_all(dead, "tenant:a", 3))
            # Killed: it neither gives its places back nor renews them again.
            await dead.close()
            assert await other.take("tenant:a") is None
            died = time.monotonic()
            while (lease := await other.take("tenant:a")) is None:
                assert time.monotonic() - died < LEASE_SECONDS + 5, "the places never came back"
                await asyncio.sleep(0.1)
            assert lease.in_redis
            assert [await other.take("tenant:a") for _ in range(3)].count(None) == 1
        finally:
            await other.close()

    asyncio.run(scenario())
