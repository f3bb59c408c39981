"""The red_blue kind's worker tasks, as the unit of work sends them (after the commit that
makes their rows visible). A message that never left is not lost: its row stays pending,
queued or dirty, and the kind's periodic sweep sends it again."""

from __future__ import annotations

from app.unit_of_work import WorkerTask

SELF_TEST_TASK = "gauntlet.redblue.self_test"
PAIR_ATTACK_TASK = "gauntlet.redblue.pair_attack"
RUN_MATCH_TASK = "gauntlet.redblue.run_match"
RECOMPUTE_TASK = "gauntlet.redblue.recompute"
SWEEP_TASK = "gauntlet.redblue.sweep"

_RESENT = "the red_blue sweep will send it again"
SELF_TEST = WorkerTask(SELF_TEST_TASK, _RESENT)
PAIR_ATTACK = WorkerTask(PAIR_ATTACK_TASK, _RESENT)
RUN_MATCH = WorkerTask(RUN_MATCH_TASK, _RESENT)
# Sent when a board turns dirty; it runs a moment later (countdown), so the matches landing
# meanwhile are rated by the same recompute.
RECOMPUTE = WorkerTask(RECOMPUTE_TASK, _RESENT, countdown=1.0)
