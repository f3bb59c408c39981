"""The unit of work sends the tasks it collected after its commit, and none after a rollback."""

from __future__ import annotations

import pytest

from app.kit.broker import sender
from app.kit.unit_of_work import UnitOfWork, WorkerTask, unit_of_work

TASK = WorkerTask("gauntlet.test_task", "nothing sends it again")


class FakeSession:
    def __init__(self, events: list[str], *, fail_commit: bool = False) -> None:
        self.events = events
        self.fail_commit = fail_commit

    def commit(self) -> None:
        if self.fail_commit:
            self.events.append("commit failed")
            raise RuntimeError("the database went away")
        self.events.append("commit")

    def rollback(self) -> None:
        self.events.append("rollback")

    def close(self) -> None:
        self.events.append("close")


@pytest.fixture
def events(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What the broker's sender was asked to send (nothing leaves the process)."""
    recorded: list[str] = []

    def send(message: sender.Message) -> None:
        recorded.append(f"send {message.name} {','.join(message.args)}")

    monkeypatch.setattr(sender, "send", send)
    return recorded


def test_tasks_are_sent_after_the_commit_in_the_order_asked(events: list[str]) -> None:
    work = UnitOfWork(FakeSession(events))  # type: ignore[arg-type]
    work.send_after_commit(TASK, "a")
    work.send_after_commit(TASK, "b", "c")
    assert events == []  # nothing leaves before the commit
    assert work.commit() == 2
    assert events == ["commit", "send gauntlet.test_task a", "send gauntlet.test_task b,c"]
    assert work.pending == () and work.sent == 2
    # A second commit of the same unit sends nothing again.
    assert work.commit() == 0
    assert events[-1] == "commit"


def test_a_rollback_drops_the_tasks(events: list[str]) -> None:
    work = UnitOfWork(FakeSession(events))  # type: ignore[arg-type]
    work.send_after_commit(TASK, "a")
    work.rollback()
    assert work.commit() == 0
    assert events == ["rollback", "commit"]


def test_a_failed_commit_sends_nothing(events: list[str]) -> None:
    work = UnitOfWork(FakeSession(events, fail_commit=True))  # type: ignore[arg-type]
    work.send_after_commit(TASK, "a")
    with pytest.raises(RuntimeError):
        work.commit()
    assert events == ["commit failed"]


def test_the_context_manager_commits_then_sends_or_rolls_back(
    events: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import app.kit.db

    monkeypatch.setattr(app.kit.db, "get_sessionmaker", lambda: lambda: FakeSession(events))
    with unit_of_work() as work:
        work.send_after_commit(TASK, "kept")
    assert events == ["commit", "send gauntlet.test_task kept", "close"]
    events.clear()
    with pytest.raises(ValueError), unit_of_work() as work:
        work.send_after_commit(TASK, "dropped")
        raise ValueError("a rule refused the change")
    assert events == ["rollback", "close"]


def test_a_message_the_broker_refuses_is_logged_and_counted_not_raised(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from app.kit.observability import metrics

    sent: list[str] = []

    def send(message: sender.Message) -> None:
        if list(message.args) == ["lost"]:
            raise ConnectionError("broker down")
        sent.append(message.args[0])

    failures: list[bool] = []
    monkeypatch.setattr(sender, "send", send)
    monkeypatch.setattr(metrics, "enqueue_failed", lambda: failures.append(True))
    work = UnitOfWork(FakeSession([]))  # type: ignore[arg-type]
    for argument in ("first", "lost", "last"):
        work.send_after_commit(TASK, argument)
    assert work.commit() == 2
    assert sent == ["first", "last"]
    assert failures == [True]
    assert "could not send gauntlet.test_task('lost',); nothing sends it again" in caplog.text
