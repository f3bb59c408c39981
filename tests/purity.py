"""A guard that keeps the unit tier pure: a unit test starts no process, opens no socket to
listen on, connects to nothing and looks up no host name, and does not import litellm.

tests/unit/conftest.py turns it on around each unit test's set-up, call and tear-down. It is a
Python audit hook (which sees `subprocess`, `os.fork`, `os.exec*`, `os.posix_spawn`, `os.system`
and every socket's `bind`, `connect`, `sendto` and name lookup, whatever library makes them),
plus a wrapper of `_posixsubprocess.fork_exec`, which multiprocessing's spawn and forkserver
call without an audit event. What it sees is refused (the call raises `ImpureUnitTest`) and
recorded, and the test fails with it even when the code under test swallowed the exception or
it happened in a thread the test started. Threads that were running before the test began
(another tier's servers in the same process, under `make test`), and the threads they start,
are not the test's: they pass.

Tests that need a process, a server or litellm live in tests/process (or tests/integration);
docs/testing.md says what each tier holds.
"""

from __future__ import annotations

import _posixsubprocess
import ipaddress
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

# What litellm costs each test process at import (3-13 s on the 2-core machine, docs/testing.md).
HEAVY_MODULES = ("litellm",)

_PROCESS_EVENTS = {
    "subprocess.Popen": "starts a process",
    "os.fork": "forks a process",
    "os.forkpty": "forks a process",
    "os.posix_spawn": "starts a process",
    "os.spawn": "starts a process",
    "os.system": "starts a shell",
    "os.exec": "replaces the process",
}
_LOOKUP_EVENTS = (
    "socket.getaddrinfo",
    "socket.gethostbyname",
    "socket.gethostbyname_ex",
    "socket.gethostbyaddr",
    "socket.getnameinfo",
)


class ImpureUnitTest(RuntimeError):
    """What a unit test may not do (start a process, listen, connect, look up a host)."""


class _Guard:
    def __init__(self) -> None:
        self.active = False
        self.bystanders: frozenset[threading.Thread] = frozenset()
        self.refused: list[str] = []

    def watching(self) -> bool:
        """Whether the calling thread is the test's: the test's own, or one started from it
        (at any depth). Threads running before the test began, and those they start, are not."""
        if not self.active:
            return False
        thread: threading.Thread | None = threading.current_thread()
        while thread is not None:
            if thread in self.bystanders:
                return False
            thread = getattr(thread, _STARTED_BY, None)
        return True

    def refuse(self, what: str) -> None:
        self.refused.append(what)
        raise ImpureUnitTest(
            f"a unit test {what}: tests that need processes, servers or the network belong in "
            "tests/process or tests/integration (docs/testing.md)"
        )


_guard = _Guard()
# Set on each thread as it starts: the thread that started it.
_STARTED_BY = "_purity_started_by"


def _is_address(host: object) -> bool:
    if host is None:
        return True
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if not isinstance(host, str):
        return False
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    return True


def _refusal(event: str, args: tuple[Any, ...]) -> str | None:
    """What the event does that a unit test may not, or None."""
    if event in _PROCESS_EVENTS:
        return f"{_PROCESS_EVENTS[event]} ({event} {args[0]!r})" if args else _PROCESS_EVENTS[event]
    if event == "socket.bind":
        return f"opens a socket to listen on ({args[1]!r})"
    if event == "socket.connect":
        return f"connects a socket to {args[1]!r}"
    if event == "socket.sendto":
        sock, address = args
        if getattr(sock, "family", None) in (socket.AF_INET, socket.AF_INET6):
            return f"sends a datagram to {address!r}"
    if event in _LOOKUP_EVENTS and not _is_address(args[0]):
        return f"looks up the host {args[0]!r} ({event})"
    return None


def _audit(event: str, args: tuple[Any, ...]) -> None:
    # Called for every audited event of the process: nothing here may itself be audited.
    if not _guard.active:
        return
    what = _refusal(event, args)
    if what is not None and _guard.watching():
        _guard.refuse(what)


_fork_exec: Callable[..., int] = _posixsubprocess.fork_exec


def _guarded_fork_exec(*args: Any, **kwargs: Any) -> int:
    if _guard.watching():
        _guard.refuse("starts a process (_posixsubprocess.fork_exec)")
    return _fork_exec(*args, **kwargs)


_start_thread = threading.Thread.start


def _start_recording_who(thread: threading.Thread) -> None:
    setattr(thread, _STARTED_BY, threading.current_thread())
    _start_thread(thread)


_installed = False


def install() -> None:
    """Adds the audit hook (for the life of the process: hooks cannot be removed), the
    fork_exec wrapper, and a note on each thread of the thread that started it; all do nothing
    outside `pure()` but the note. Idempotent."""
    global _installed
    if _installed:
        return
    sys.addaudithook(_audit)
    _posixsubprocess.fork_exec = _guarded_fork_exec
    threading.Thread.start = _start_recording_who  # type: ignore[method-assign]
    _installed = True


@contextmanager
def pure() -> Iterator[list[str]]:
    """Within: the calling thread and the threads it starts may do nothing impure. Yields the
    list of what was refused (filled as it happens), with the heavy modules imported added at
    the end. Nested, the inner one keeps its own list and the outer one is as it was after."""
    install()
    saved = (_guard.active, _guard.bystanders, _guard.refused)
    heavy_before = {name for name in HEAVY_MODULES if name in sys.modules}
    current = threading.current_thread()
    _guard.bystanders = frozenset(t for t in threading.enumerate() if t is not current)
    _guard.refused = refused = []
    _guard.active = True
    try:
        yield refused
    finally:
        _guard.active, _guard.bystanders, _guard.refused = saved
        for name in HEAVY_MODULES:
            if name in sys.modules and name not in heavy_before:
                refused.append(
                    f"imports {name} (seconds in every test process): tests that need it "
                    "belong in tests/process"
                )
