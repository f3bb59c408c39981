"""The unit of work: one transaction, the worker tasks its changes call for, and the domain
events its services publish.

A task must reach a worker only once the rows it names are visible, so services never send
tasks themselves: they ask the unit of work (`send_after_commit`), which sends what it
collected after a successful commit and drops it on a rollback. Every route and every task
that changes rows goes through one (`UnitOfWork` around a request's session, `unit_of_work()`
around a task's transaction), so "commit, then send" is written once, here.

A message that cannot be sent (the broker is down) is logged and counted, never raised: the
client already holds its answer, and each task kind says what sends it again (`WorkerTask`).

Domain events are how a lower domain lets the domains above it react without importing them.
A service announces what happened (`work.publish(ScoringChanged(...))`); the handlers of the
domains that care run at once, in the same transaction, and may ask the unit of work for tasks
to send after its commit. So the challenge domain changes a challenge's scoring without
knowing that the rescore domain (above it) rescores its attempts, and the import arrows keep
pointing down. Handlers live in the reacting domain's `handlers.py`, registered with
`@handles(EventType)`; the modules that hold them are listed in `HANDLER_MODULES` and imported
on the first publish, in whatever process publishes, so none is missed because nothing
happened to import it. Every event type declares what its handlers return (`Event[R]`).
"""

from __future__ import annotations

import importlib
import logging
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from sqlalchemy.orm import Session

from app.kit import db

R = TypeVar("R")
E = TypeVar("E", bound="Event[Any]")

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WorkerTask:
    """A Celery task a domain sends: its name and what recovers a message that was not sent."""

    name: str
    if_unsent: str
    # Seconds the worker waits before running it (a debounce: what lands meanwhile is handled
    # by the same run); None: at once.
    countdown: float | None = None


@dataclass(frozen=True)
class TaskMessage:
    task: WorkerTask
    args: tuple[str, ...]


class UnitOfWork:
    """A session's transaction and the tasks to send once it commits. Services flush, never
    commit; the route or task that owns the transaction calls `commit` (or `rollback`)."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self._pending: list[TaskMessage] = []
        self.sent = 0

    def send_after_commit(self, task: WorkerTask, *args: str) -> None:
        """Sends `task(*args)` once this transaction has committed; never if it rolls back."""
        self._pending.append(TaskMessage(task, args))

    def publish(self, event: Event[R]) -> list[R]:
        """Lets the domains that react to the event do so now, in this transaction; returns
        what their handlers returned, in registration order."""
        _load_handlers()
        return [handler(self, event) for handler in _handlers[type(event)]]

    @property
    def pending(self) -> tuple[TaskMessage, ...]:
        return tuple(self._pending)

    def commit(self) -> int:
        """Commits, then sends the collected tasks; returns how many were sent."""
        self.session.commit()
        messages, self._pending = self._pending, []
        sent = send_tasks(messages) if messages else 0
        self.sent += sent
        return sent

    def rollback(self) -> None:
        self._pending.clear()
        self.session.rollback()


# Domain events -------------------------------------------------------------------------------

# The modules whose import registers handlers; add a domain's `handlers` module here.
HANDLER_MODULES = (
    "app.challenge.handlers",
    "app.rescore.handlers",
    "app.kinds.red_blue.handlers",
)


class Event(Generic[R]):
    """Something a domain announces; `R` is what each of its handlers returns."""


Handler = Callable[[UnitOfWork, Any], Any]
_handlers: defaultdict[type[Event[Any]], list[Handler]] = defaultdict(list)
_loaded = False


def handles(
    event_type: type[E],
) -> Callable[[Callable[[UnitOfWork, E], R]], Callable[[UnitOfWork, E], R]]:
    """Registers the decorated function as a handler of `event_type`."""

    def register(handler: Callable[[UnitOfWork, E], R]) -> Callable[[UnitOfWork, E], R]:
        _handlers[event_type].append(handler)
        return handler

    return register


def _load_handlers() -> None:
    global _loaded
    if not _loaded:
        for module in HANDLER_MODULES:
            importlib.import_module(module)
        _loaded = True


@contextmanager
def unit_of_work() -> Iterator[UnitOfWork]:
    """A unit of work for tasks and scripts: commits (then sends) on success, rolls back on
    error, closes the session either way."""

    session = db.get_sessionmaker()()
    work = UnitOfWork(session)
    try:
        yield work
        work.commit()
    except BaseException:
        work.rollback()
        raise
    finally:
        session.close()


def send_tasks(messages: list[TaskMessage]) -> int:
    """Sends each message to this deployment's queue; returns how many left the process."""
    from app.kit.broker import sender  # Celery (~0.13 s to import) only once something is sent
    from app.kit.observability import metrics as telemetry  # prometheus_client: likewise, once sent

    sent = 0
    for message in messages:
        try:
            sender.send(sender.Message(message.task.name, message.args, message.task.countdown))
            sent += 1
        except Exception:
            log.exception(
                "could not send %s%s; %s",
                message.task.name,
                tuple(message.args),
                message.task.if_unsent,
            )
            telemetry.enqueue_failed()
    return sent
