"""The benchmark kind's worker tasks, as the unit of work sends them (after the commit that
makes their rows visible). A message that never left is not lost: its private run stays
queued, and the kind's periodic sweep sends it again."""

from __future__ import annotations

from app.kinds.api import WorkerTask

RUN_SEALED_TASK = "gauntlet.benchmark.run_sealed"
SWEEP_TASK = "gauntlet.benchmark.sweep"

# The private part of a split challenge's scored attempt (its id), once the attempt completed.
RUN_SEALED = WorkerTask(RUN_SEALED_TASK, "the benchmark sweep will send it again")
