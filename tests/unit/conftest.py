"""Every unit test runs pure (tests/purity.py): its set-up, call and tear-down fail when they
start a process, listen on or connect a socket, look up a host name or import litellm."""

from __future__ import annotations

from collections.abc import Generator

# matplotlib lists the machine's fonts once (it runs `fc-list`) and caches the list in its
# config folder; loaded here, before any guard, so that on a fresh machine the first unit test
# that draws a chart does not start that process (and fail as impure) depending on the order.
import matplotlib.font_manager  # noqa: F401
import pytest

from tests.purity import pure


def _guarded() -> Generator[None, object, object]:
    with pure() as refused:
        outcome = yield
    if refused:
        pytest.fail("; ".join(dict.fromkeys(refused)), pytrace=False)
    return outcome


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _guarded())


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _guarded())


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(
    item: pytest.Item, nextitem: pytest.Item | None
) -> Generator[None, object, object]:
    if nextitem is None:
        # The run's last test: its tear-down also ends the session's fixtures, which the
        # integration tests of the same run set up (servers, Redis keys), not this test.
        return (yield)
    return (yield from _guarded())
