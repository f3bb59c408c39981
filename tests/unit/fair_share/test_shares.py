"""The places of a share: at most `limit` per bucket, always given back; a bucket found full is
refused here without asking Redis until a place is given back or the hint passes, then one
request at a time asks; when Redis does not answer, places are counted in the process.

Redis is played by a script standing in for `_take_in_redis` and the client's ZREM (no
network in unit tests; tests/integration/tenant/test_fair_share.py runs the real scripts)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from app.kit.fair_share.shares import FULL_HINT_SECONDS, REDIS_RETRY_SECONDS, Lease, Shares


class FakeRedis:
    """Places per bucket, as the Redis script counts them; `calls` counts the takes asked;
    `gate`, when set, holds each take until it opens; `down` makes every call fail."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held: dict[str, set[str]] = {}
        self.calls = 0
        self.gate: asyncio.Event | None = None
        self.down = False

    async def take(self, bucket: str, lease_id: str) -> bool:
        self.calls += 1
        if self.gate is not None:
            await self.gate.wait()
        if self.down:
            raise RedisConnectionError("connection refused")
        held = self.held.setdefault(bucket, set())
        if len(held) >= self.limit:
            return False
        held.add(lease_id)
        return True

    async def zrem(self, key: str, lease_id: str) -> int:
        if self.down:
            raise RedisConnectionError("connection refused")
        for held in self.held.values():
            held.discard(lease_id)
        return 1


def _shares(
    limit: int, now: list[float], fake: FakeRedis | None = None
) -> tuple[Shares, FakeRedis]:
    """One process's shares over `fake` (a new one unless given: processes share it)."""
    shares = Shares(limit, "redis://unused", clock=lambda: now[0])
    fake = fake or FakeRedis(limit)
    shares._take_in_redis = fake.take  # type: ignore[method-assign]
    shares._client = lambda: fake  # type: ignore[assignment, method-assign, return-value]
    return shares, fake


def test_a_process_never_asks_for_more_places_than_the_share_has() -> None:
    async def scenario() -> None:
        now = [100.0]
        shares, fake = _shares(3, now)
        fake.gate = asyncio.Event()
        asking = [asyncio.create_task(shares.take("tenant:a")) for _ in range(10)]
        await asyncio.sleep(0.01)
        assert fake.calls == 3  # the other seven were refused at once
        assert sum(task.done() for task in asking) == 7
        fake.gate.set()
        leases = await asyncio.gather(*asking)
        assert sum(lease is not None for lease in leases) == 3
        assert await shares.take("tenant:a") is None
        assert fake.calls == 3

    asyncio.run(scenario())


def test_a_bucket_holds_its_limit_in_the_process_and_places_come_back() -> None:
    async def scenario() -> None:
        shares = Shares(2)
        first, second = await shares.take("tenant:a"), await shares.take("tenant:a")
        assert first is not None and second is not None
        assert await shares.take("tenant:a") is None
        assert await shares.take("tenant:b") is not None  # another bucket has its own places
        await shares.give_back(first)
        third = await shares.take("tenant:a")
        assert third is not None
        for lease in (second, third):
            await shares.give_back(lease)
        assert shares.held_here("tenant:a") == 0
        assert "tenant:a" not in shares._local  # nothing kept for an idle bucket

    asyncio.run(scenario())


def test_a_bucket_found_full_is_refused_here_until_the_hint_passes() -> None:
    async def scenario() -> None:
        now = [100.0]
        other, fake = _shares(1, now)
        shares, _ = _shares(1, now, fake)
        held = await other.take("tenant:a")  # another process holds the place
        assert held is not None and held.in_redis
        assert await shares.take("tenant:a") is None
        asked = fake.calls
        for _ in range(50):
            assert await shares.take("tenant:a") is None
        assert fake.calls == asked  # refused without asking Redis
        assert await shares.take("tenant:b") is not None  # other buckets are asked as usual
        now[0] += FULL_HINT_SECONDS + 0.001
        assert await shares.take("tenant:a") is None
        assert fake.calls == asked + 2  # one question after the hint (and tenant:b's)

    asyncio.run(scenario())


def test_after_the_hint_one_request_at_a_time_asks_redis() -> None:
    async def scenario() -> None:
        now = [100.0]
        other, fake = _shares(1, now)
        shares, _ = _shares(1, now, fake)
        held = await other.take("tenant:a")
        assert held is not None
        assert await shares.take("tenant:a") is None
        now[0] += FULL_HINT_SECONDS + 0.001
        fake.gate = asyncio.Event()
        asking = asyncio.create_task(shares.take("tenant:a"))
        await asyncio.sleep(0)
        calls = fake.calls
        # While one asks, the others are refused here.
        assert [await shares.take("tenant:a") for _ in range(10)] == [None] * 10
        assert fake.calls == calls
        fake.gate.set()
        assert await asking is None
        fake.gate = None

    asyncio.run(scenario())


def test_a_place_given_back_lets_the_next_request_ask_at_once() -> None:
    async def scenario() -> None:
        now = [100.0]
        shares, fake = _shares(2, now)
        other, _ = _shares(2, now, fake)
        held = await shares.take("tenant:a")
        assert held is not None and await other.take("tenant:a") is not None
        assert await shares.take("tenant:a") is None  # found full in Redis
        await shares.give_back(held)
        assert len(fake.held["tenant:a"]) == 1
        # Within the hint's interval, yet asked (and taken): the place is free again.
        again = await shares.take("tenant:a")
        assert again is not None and again.in_redis
        assert await shares.take("tenant:a") is None

    asyncio.run(scenario())


def test_places_are_counted_in_the_process_while_redis_does_not_answer() -> None:
    async def scenario() -> None:
        now = [100.0]
        shares, fake = _shares(2, now)
        in_redis = await shares.take("tenant:a")
        assert in_redis is not None and in_redis.in_redis
        fake.down = True
        local = await shares.take("tenant:a")  # asked, failed: counted here
        assert local == Lease("tenant:a", "", in_redis=False)
        calls = fake.calls
        assert await shares.take("tenant:a") is not None
        assert await shares.take("tenant:a") is None  # the process's own count of 2
        assert fake.calls == calls  # Redis is not asked again for a while
        await shares.give_back(in_redis)  # its ZREM fails: the lease expires in Redis by itself
        assert shares.held_here("tenant:a") == 2
        await shares.give_back(local)
        fake.down = False
        now[0] += REDIS_RETRY_SECONDS + 0.001
        back = await shares.take("tenant:a")
        assert back is not None and back.in_redis
        assert fake.calls == calls + 1

    asyncio.run(scenario())


@pytest.mark.parametrize("error", [RedisConnectionError("refused"), OSError("unreachable")])
def test_no_request_fails_because_redis_fails(error: Exception) -> None:
    async def scenario() -> None:
        shares = Shares(1, "redis://unused")

        async def failing(bucket: str, lease_id: str) -> Any:
            raise error

        shares._take_in_redis = failing  # type: ignore[method-assign]
        lease = await shares.take("tenant:a")
        assert lease is not None and not lease.in_redis
        await shares.give_back(lease)
        assert shares.held_here("tenant:a") == 0

    asyncio.run(scenario())
