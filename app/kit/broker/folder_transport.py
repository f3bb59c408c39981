"""The embedded mode's broker: kombu's filesystem transport, safe with concurrent senders and
takers.

kombu's own creates a message file under its final name and then writes it, while a taker lists
the folder, moves any file with that name away and reads it: a taker that comes between the two
reads an empty or half-written file, and the worker dies on `JSONDecodeError`. It also moves a
taken file to the system's temporary folder, which on another filesystem is a copy and a
delete, so that two takers can both get the same message.

Here a message is written under a name no taker looks at and renamed into place once complete
(a rename within one folder is atomic: a taker sees the whole file or nothing). A taker renames
the file into a folder of its own process (`taking/<pid>`) before reading it: of two takers,
exactly one rename succeeds. A message left in the folder of a process that died (killed
between taking and reading) is put back in the queue by the next taker that starts. A file
that still cannot be read as a message is moved to `unreadable/` with a log line, never
raised: one bad file must not stop the worker.
"""

from __future__ import annotations

import contextlib
import logging
import os
import uuid
from pathlib import Path
from queue import Empty
from time import monotonic_ns
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.json import dumps, loads

log = logging.getLogger(__name__)

_WRITING = ".writing"  # a message being written: no taker matches this suffix


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Channel(filesystem.Channel):
    """One connection's view of the folder (senders and takers alike)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._taking: Path | None = None

    @property
    def _queue_folder(self) -> Path:
        return Path(self.data_folder_in)

    # kombu's stubs name this parameter `payload` here and `message` in the base class.
    def _put(self, queue: str, payload: dict[str, Any], **kwargs: Any) -> None:  # type: ignore[override]
        # The name sorts by time sent (to the nanosecond: kombu's milliseconds leave messages
        # sent together in random order), so takers take the oldest first.
        name = f"{monotonic_ns():020d}_{uuid.uuid4()}.{queue}.msg"
        final = Path(self.data_folder_out) / name
        partial = final.with_name(name + _WRITING)
        try:
            with open(partial, "wb") as file:
                file.write(dumps(payload).encode())
            os.replace(partial, final)
        except OSError as error:
            partial.unlink(missing_ok=True)
            raise ChannelError(f"Cannot add {name!r} to the broker folder") from error

    def _taking_folder(self) -> Path:
        if self._taking is None or self._taking.name != str(os.getpid()):
            # A forked child is a taker of its own.
            root = self._queue_folder / "taking"
            self._taking = root / str(os.getpid())
            self._taking.mkdir(parents=True, exist_ok=True)
            self._put_back_from_the_dead(root)
        return self._taking

    def _put_back_from_the_dead(self, root: Path) -> None:
        for folder in root.iterdir():
            if not folder.name.isdigit() or _alive(int(folder.name)):
                continue
            for message in folder.iterdir():
                try:
                    os.replace(message, self._queue_folder / message.name)
                except OSError:
                    continue  # another starting taker put it back first
                log.warning("broker message %s put back: its taker died", message.name)
            with contextlib.suppress(OSError):  # not empty yet, or removed by another taker
                folder.rmdir()

    def _get(self, queue: str, timeout: float | None = None) -> Any:
        wanted = f"{queue}.msg"
        taking = self._taking_folder()
        for name in sorted(os.listdir(self._queue_folder)):
            if name.partition(".")[2] != wanted:
                continue
            taken = taking / name
            try:
                os.rename(self._queue_folder / name, taken)
            except OSError:
                continue  # another taker had it first
            try:
                payload = taken.read_bytes()
                message = loads(payload)
            except (OSError, ValueError):
                self._set_aside(taken)
                continue
            taken.unlink(missing_ok=True)
            return message
        raise Empty()

    def _set_aside(self, taken: Path) -> None:
        aside = self._queue_folder / "unreadable"
        aside.mkdir(exist_ok=True)
        try:
            os.replace(taken, aside / taken.name)
        except OSError:
            taken.unlink(missing_ok=True)
        log.error("broker message %s is not a message: moved to %s", taken.name, aside)


class Transport(filesystem.Transport):
    Channel = Channel
