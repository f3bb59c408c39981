"""How long a message the server did not take waits before its next try."""

from __future__ import annotations

from app.kit.mail.delivery import MAX_RETRY_DELAY_SECONDS, retry_delay


def test_the_wait_doubles_after_each_try_up_to_an_hour() -> None:
    waits = [retry_delay(tries, 30.0) for tries in range(1, 10)]
    assert waits[:5] == [30.0, 60.0, 120.0, 240.0, 480.0]
    assert waits[-1] == MAX_RETRY_DELAY_SECONDS
    assert retry_delay(10_000, 30.0) == MAX_RETRY_DELAY_SECONDS


def test_jitter_spreads_the_wait_around_it() -> None:
    assert retry_delay(2, 30.0, 0.8) == 48.0
    assert retry_delay(2, 30.0, 1.2) == 72.0


def test_a_try_count_below_one_waits_the_base() -> None:
    assert retry_delay(0, 30.0) == 30.0
    assert retry_delay(-3, 30.0) == 30.0
