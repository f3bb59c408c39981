"""The worker task that runs an attempt, as the unit of work sends it (after the commit that
makes the attempt's row visible)."""

from __future__ import annotations

from app.kit.unit_of_work import WorkerTask

RUN_ATTEMPT_TASK = "gauntlet.run_attempt"

# A message that never left (the broker down at submission, the API killed between its commit
# and its send) is not lost: the attempt's row stays queued and the periodic sweep sends it.
RUN_ATTEMPT = WorkerTask(RUN_ATTEMPT_TASK, "the sweep will send it again")
