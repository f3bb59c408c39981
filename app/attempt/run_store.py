"""The evaluation engine's `RunStore` on the attempt's tables: a whole run of a benchmark
(tasks, trials, summaries) stored as it lands.

Trials land in the `trials` table (unique per attempt, task and index), task summaries in
`attempt_tasks`, the run record and the latest summary on the row whose lease the run holds
(the attempt's own; a split challenge's private part keeps them on its own run's row). A
worker that takes over a dead worker's run runs the same configuration against the same
store, so the engine skips finished tasks and continues partial ones without repeating a
finished call. Every write checks the lease first.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from sqlalchemy.orm import Session

from app.attempt import repository
from app.attempt.repository import LandedTrial, RunTrialRepository
from app.attempt.trial_writer import TrialWriter
from app.evaluation.engine.benchmark import Task
from app.evaluation.engine.types import TrialRecord
from app.kit.config import Settings
from app.kit.db import session_scope
from app.kit.lease.service import LeaseLost, hold


class DatabaseRunStore:
    def __init__(
        self,
        attempt_id: uuid.UUID,
        tenant_id: uuid.UUID,
        token: uuid.UUID,
        settings: Settings,
        trials: TrialWriter,
        sealed_task_ids: frozenset[str] = frozenset(),
    ) -> None:
        self.attempt_id, self.tenant_id = attempt_id, tenant_id
        self.token, self.settings = token, settings
        self.trials = trials
        # The challenge's private part: these tasks' rows are stored sealed.
        self.sealed_task_ids = sealed_task_ids

    def _held(self, session: Session) -> None:
        trials = self.trials
        hold(session, trials.holder, trials.holder_id, self.token, self.settings)

    def _load_config(self) -> dict[str, Any] | None:
        with session_scope() as session:
            return repository.run_config_of(session, self.trials.holder, self.trials.holder_id)

    def _write_record(self, **values: Any) -> None:
        trials = self.trials
        with session_scope() as session:
            if not repository.set_run_record(
                session, trials.holder, trials.holder_id, self.token, **values
            ):
                raise LeaseLost()

    def _load_trials(self, task: Task) -> list[TrialRecord]:
        with session_scope() as session:
            run_trials = RunTrialRepository(session, self.tenant_id)
            return run_trials.trial_records(self.attempt_id, task.canonical_index)

    def _save_task(self, task: Task, field: str, value: dict[str, Any]) -> None:
        with session_scope() as session:
            self._held(session)
            RunTrialRepository(session, self.tenant_id).upsert_task(
                self.attempt_id,
                task.canonical_index,
                {
                    "task_id": task.task_id[:200],
                    "sealed": task.task_id in self.sealed_task_ids,
                    field: value,
                },
                [field, "sealed"],
            )

    async def load_config(self) -> dict[str, Any] | None:
        return await asyncio.to_thread(self._load_config)

    async def save_config(self, config: dict[str, Any]) -> None:
        await asyncio.to_thread(self._write_record, run_config=config)

    async def load_trials(self, task: Task) -> list[TrialRecord]:
        return await asyncio.to_thread(self._load_trials, task)

    async def save_trial(self, task: Task, trial: TrialRecord) -> None:
        # Trials of tasks running at once that land together are written together.
        sealed = task.task_id in self.sealed_task_ids
        await self.trials.save(LandedTrial(trial, task.canonical_index, task.task_id, sealed))

    async def save_task_meta(self, task: Task, meta: dict[str, Any]) -> None:
        await asyncio.to_thread(self._save_task, task, "meta", meta)

    async def save_task_summary(self, task: Task, summary: dict[str, Any]) -> None:
        await asyncio.to_thread(self._save_task, task, "summary", summary)

    async def save_run_summary(self, summary: dict[str, Any]) -> None:
        # The per-task list stays in attempt_tasks; the attempt keeps the run-level figures.
        # The sealed part's results are measured when the attempt ends (the kind's own
        # measures), never shown as its progress.
        progress = {key: value for key, value in summary.items() if key not in ("tasks", "sealed")}
        await asyncio.to_thread(self._write_record, progress=progress)
