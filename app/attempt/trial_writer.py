"""A run's trials, written as they land: those that land together in one transaction.

A trial is stored as soon as it is judged, so a worker that takes over a dead one's attempt
continues after it. pass@k draws its samples at once, and offline or fast models answer them
within microseconds of each other: a transaction each (the lease checked, the row written,
the commit) was most of a worker's database work per attempt. Here a trial that lands while
another batch is being written waits for that write, and goes with every other trial that
landed meanwhile in the next one. Each `save` returns once its trial is stored (or raises
what stopped the write: `LeaseLost` when another worker took the attempt over).
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from app.attempt.models import ATTEMPT_LEASES
from app.attempt.repository import LandedTrial, RunTrialRepository
from app.kit.config import Settings
from app.kit.db import session_scope
from app.kit.lease.models import LeasedTable
from app.kit.lease.service import hold


class TrialWriter:
    """The trials of one run of one attempt (used on one event loop). Every write holds the
    run's lease: the attempt's, or that of the row another run of the attempt's trials holds
    (`holder`, `holder_id`: a split challenge's private part, app/kinds/benchmark/sealed.py)."""

    def __init__(
        self,
        attempt_id: uuid.UUID,
        tenant_id: uuid.UUID,
        token: uuid.UUID,
        settings: Settings,
        *,
        holder: LeasedTable[Any] = ATTEMPT_LEASES,
        holder_id: uuid.UUID | None = None,
    ) -> None:
        self.attempt_id, self.tenant_id = attempt_id, tenant_id
        self.token, self.settings = token, settings
        self.holder, self.holder_id = holder, holder_id or attempt_id
        self._landed: list[tuple[LandedTrial, asyncio.Future[None]]] = []
        self._writing: asyncio.Task[None] | None = None
        self.transactions = 0

    async def save(self, landed: LandedTrial) -> None:
        """Stores the trial (a repeat of a stored index changes nothing)."""
        stored: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._landed.append((landed, stored))
        if self._writing is None or self._writing.done():
            self._writing = asyncio.ensure_future(self._write_landed())
        await stored

    async def _write_landed(self) -> None:
        while self._landed:
            batch, self._landed = self._landed, []
            try:
                await asyncio.to_thread(self._write, [landed for landed, _ in batch])
            except BaseException as error:
                for _, stored in batch:
                    if not stored.done():
                        stored.set_exception(error)
                if not isinstance(error, Exception):
                    raise
            else:
                for _, stored in batch:
                    if not stored.done():
                        stored.set_result(None)

    def _write(self, batch: list[LandedTrial]) -> None:
        with session_scope() as session:
            hold(session, self.holder, self.holder_id, self.token, self.settings)
            RunTrialRepository(session, self.tenant_id).insert_trials(self.attempt_id, batch)
        self.transactions += 1
