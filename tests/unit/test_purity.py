"""The unit tier stays pure: under the guard every unit test runs in (tests/purity.py,
tests/unit/conftest.py), starting a process, listening on or connecting a socket, looking up a
host name and importing litellm are refused before they happen and recorded, even when the code
under test swallows the refusal or acts in a thread it started. Each check here runs in a guard
of its own, so what it provokes is its record, not the test's."""

from __future__ import annotations

import contextlib
import multiprocessing
import socket
import subprocess
import sys
import threading
import types

import pytest

from tests.purity import ImpureUnitTest, pure


def test_a_process_is_refused_before_it_starts() -> None:
    with pure() as refused, pytest.raises(ImpureUnitTest, match="starts a process"):
        subprocess.run(["true"], check=False)
    assert len(refused) == 1 and "subprocess.Popen" in refused[0]


@pytest.mark.parametrize("method", ["spawn", "fork", "forkserver"])
def test_multiprocessing_is_refused_by_every_start_method(method: str) -> None:
    # spawn and forkserver start their interpreter without an audit event (forkserver first
    # listens on a socket of its own); fork has one.
    context = multiprocessing.get_context(method)
    with pure() as refused, pytest.raises(ImpureUnitTest):
        context.Process(target=print).start()
    assert refused


def test_a_socket_to_listen_on_is_refused_before_it_is_bound() -> None:
    with socket.socket() as listener, pure() as refused:
        with pytest.raises(ImpureUnitTest, match="listen"):
            listener.bind(("127.0.0.1", 0))
        assert listener.getsockname()[1] == 0  # never bound
    assert len(refused) == 1


@pytest.mark.parametrize("address", [("127.0.0.1", 9), ("::1", 9, 0, 0)])
def test_a_connection_is_refused_before_it_is_attempted(address: tuple[object, ...]) -> None:
    family = socket.AF_INET6 if ":" in str(address[0]) else socket.AF_INET
    with (
        socket.socket(family) as client,
        pure() as refused,
        pytest.raises(ImpureUnitTest, match="connects"),
    ):
        client.connect(address)
    assert len(refused) == 1


def test_host_names_are_not_looked_up_but_addresses_pass() -> None:
    with pure() as refused:
        with pytest.raises(ImpureUnitTest, match=r"looks up the host 'example\.com'"):
            socket.getaddrinfo("example.com", 443)
        assert socket.getaddrinfo("127.0.0.1", 443, type=socket.SOCK_STREAM)
        assert socket.getaddrinfo("::1", 443, type=socket.SOCK_STREAM)
    assert len(refused) == 1


def test_a_refusal_swallowed_in_a_thread_the_test_started_is_still_recorded() -> None:
    def careless() -> None:
        with contextlib.suppress(Exception):
            subprocess.run(["true"], check=False)

    with pure() as refused:
        thread = threading.Thread(target=careless)
        thread.start()
        thread.join()
    assert len(refused) == 1 and "starts a process" in refused[0]


def test_threads_running_before_the_test_and_those_they_start_are_not_the_tests() -> None:
    # Another tier's server thread in the same process (`make test`) may do what it does, in
    # a thread of its own too. The events are raised as audit events only: nothing is looked up.
    go, done = threading.Event(), threading.Event()
    raised: list[BaseException] = []

    def look_up() -> None:
        try:
            sys.audit("socket.getaddrinfo", "example.com", 443, 0, 0, 0)
        except BaseException as error:
            raised.append(error)

    def bystander() -> None:
        go.wait()
        look_up()
        helper = threading.Thread(target=look_up)
        helper.start()
        helper.join()
        done.set()

    thread = threading.Thread(target=bystander)
    thread.start()
    with pure() as refused:
        go.set()
        done.wait(timeout=10)
    thread.join()
    assert raised == [] and refused == []


def test_a_thread_started_by_a_thread_the_test_started_is_the_tests() -> None:
    def look_up() -> None:
        with contextlib.suppress(ImpureUnitTest):
            sys.audit("socket.getaddrinfo", "example.com", 443, 0, 0, 0)

    def starter() -> None:
        helper = threading.Thread(target=look_up)
        helper.start()
        helper.join()

    with pure() as refused:
        thread = threading.Thread(target=starter)
        thread.start()
        thread.join()
    assert len(refused) == 1 and "example.com" in refused[0]


def test_importing_litellm_is_recorded() -> None:
    # A stand-in module, gone again before the test ends: the real import is what costs seconds.
    real = sys.modules.pop("litellm", None)
    try:
        with pure() as refused:
            sys.modules["litellm"] = types.ModuleType("litellm")
    finally:
        del sys.modules["litellm"]
        if real is not None:
            sys.modules["litellm"] = real
    assert len(refused) == 1 and refused[0].startswith("imports litellm")


def test_a_nested_guard_keeps_its_own_record_and_leaves_the_outer_one_as_it_was() -> None:
    # Audit events only: nothing runs.
    with pure() as outer:
        with pure() as inner, pytest.raises(ImpureUnitTest):
            sys.audit("os.system", b"true")
        with pytest.raises(ImpureUnitTest):
            sys.audit("os.system", b"true")
    assert len(inner) == 1 and len(outer) == 1
