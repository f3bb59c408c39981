"""The embedded broker's folder: every message taken whole and exactly once, whatever the number
of concurrent senders and takers; nothing lost with a taker that died; a bad file set aside."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path
from typing import Any

import pytest
from kombu import Connection
from kombu.transport.virtual import Channel as VirtualChannel

from app.kit.broker.folder_transport import Transport

QUEUE = "gauntlet"


def _channel(folder: Path) -> Any:
    connection = Connection(
        "filesystem://",
        transport=Transport,
        transport_options={
            "data_folder_in": str(folder),
            "data_folder_out": str(folder),
            "control_folder": str(folder / "control"),
        },
    )
    return connection.channel()


def _take_all(channel: VirtualChannel) -> list[Any]:
    taken = []
    while True:
        try:
            taken.append(channel._get(QUEUE))
        except Exception as error:
            assert type(error).__name__ == "Empty", error
            return taken


def _send(folder: str, sender: int, count: int) -> None:
    channel = _channel(Path(folder))
    for number in range(count):
        # Large enough that a write is not one system call's worth of bytes.
        channel._put(QUEUE, {"sender": sender, "number": number, "body": "x" * 300_000})


def _take(folder: str, until: int, results: Any) -> None:
    channel = _channel(Path(folder))
    seen = 0
    while seen < until:
        try:
            message = channel._get(QUEUE)
        except Exception as error:
            if type(error).__name__ != "Empty":
                results.put(("error", repr(error)))
                return
            continue
        assert len(message["body"]) == 300_000
        results.put((message["sender"], message["number"]))
        seen += 1


def test_concurrent_senders_and_takers_deliver_each_message_once_and_whole(
    tmp_path: Path,
) -> None:
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    senders, per_sender, takers = 3, 40, 3
    total = senders * per_sender
    # Each taker stops after its share; together they must take every message exactly once.
    processes = [
        context.Process(target=_take, args=(str(tmp_path), total // takers, results))
        for _ in range(takers)
    ] + [
        context.Process(target=_send, args=(str(tmp_path), sender, per_sender))
        for sender in range(senders)
    ]
    for process in processes:
        process.start()
    received = [results.get(timeout=60) for _ in range(total)]
    for process in processes:
        process.join(timeout=30)
        assert process.exitcode == 0
    assert not [r for r in received if r[0] == "error"], received
    assert sorted(received) == sorted(
        (sender, number) for sender in range(senders) for number in range(per_sender)
    )
    assert _take_all(_channel(tmp_path)) == []


def test_a_message_still_being_written_is_not_taken(tmp_path: Path) -> None:
    channel = _channel(tmp_path)
    (tmp_path / f"1_abc.{QUEUE}.msg.writing").write_bytes(b'{"half": ')
    assert _take_all(channel) == []
    channel._put(QUEUE, {"whole": True})
    assert _take_all(channel) == [{"whole": True}]


def test_a_message_taken_by_a_process_that_died_is_put_back(tmp_path: Path) -> None:
    dead = multiprocessing.get_context("fork").Process(target=os.getpid)
    dead.start()
    dead.join()
    assert dead.pid is not None
    sender = _channel(tmp_path)
    sender._put(QUEUE, {"n": 1})
    (name,) = [p.name for p in tmp_path.iterdir() if p.name.endswith(".msg")]
    orphaned = tmp_path / "taking" / str(dead.pid)
    orphaned.mkdir(parents=True)
    (tmp_path / name).rename(orphaned / name)

    assert _take_all(_channel(tmp_path)) == [{"n": 1}]
    assert not orphaned.exists()


def test_a_file_that_is_not_a_message_is_set_aside_and_the_next_one_taken(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / f"1_bad.{QUEUE}.msg").write_bytes(b"")
    channel = _channel(tmp_path)
    channel._put(QUEUE, {"good": 1})
    assert _take_all(channel) == [{"good": 1}]
    assert (tmp_path / "unreadable" / f"1_bad.{QUEUE}.msg").exists()
    assert "is not a message" in caplog.text


def test_messages_are_taken_oldest_first(tmp_path: Path) -> None:
    channel = _channel(tmp_path)
    for number in range(5):
        channel._put(QUEUE, {"n": number})
    assert _take_all(channel) == [{"n": n} for n in range(5)]
