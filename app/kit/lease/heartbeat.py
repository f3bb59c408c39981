"""The thread that keeps a lease while a run works."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from app.kit.config import Settings
from app.kit.lease.service import LeaseLost

log = logging.getLogger(__name__)


class Heartbeat:
    """Renews a lease from its own thread, a third of the lease apart, while a run works.

    A thread, not a task on the run's event loop: anything that blocks the loop (a slow
    import, a heavy verifier) must not let the lease lapse while the worker is alive, or the
    sweep would hand a healthy run to a second worker. `renew` (`service.renewer`) renews the
    lease in its own transaction and answers False (or raises `LeaseLost`) once another
    worker holds it; the heartbeat then stops, and the run's final write, guarded by its
    token, writes nothing.
    """

    def __init__(self, renew: Callable[[], bool], settings: Settings, what: str) -> None:
        self.renew, self.settings, self.what = renew, settings, what
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lease-heartbeat", daemon=True)

    def _run(self) -> None:
        interval = self.settings.attempt_lease_seconds / 3
        while not self._stop.wait(interval):
            try:
                if not self.renew():
                    return
            except LeaseLost:
                return
            except Exception:
                # A database hiccup: keep trying; the lease has two more intervals to spare.
                log.warning("could not renew the lease of %s", self.what, exc_info=True)

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
