"""The red_blue kind's worker tasks, as the unit of work sends them (after the commit that
makes their rows visible). A message that never left is not lost: its row stays pending,
queued or dirty, and the kind's periodic sweep sends it again."""

from __future__ import annotations

from dataclasses import replace

from app.kinds.api import WorkerTask

SELF_TEST_TASK = "gauntlet.redblue.self_test"
PAIR_ATTACK_TASK = "gauntlet.redblue.pair_attack"
RUN_MATCH_TASK = "gauntlet.redblue.run_match"
RUN_MATCHES_TASK = "gauntlet.redblue.run_matches"
RECOMPUTE_TASK = "gauntlet.redblue.recompute"
SWEEP_TASK = "gauntlet.redblue.sweep"
FINAL_ROUND_TASK = "gauntlet.redblue.final_round"

_RESENT = "the red_blue sweep will send it again"
SELF_TEST = WorkerTask(SELF_TEST_TASK, _RESENT)
PAIR_ATTACK = WorkerTask(PAIR_ATTACK_TASK, _RESENT)
RUN_MATCH = WorkerTask(RUN_MATCH_TASK, _RESENT)
# A chunk of matches (their ids as the arguments): one claim, one finishing transaction and
# one message for up to MATCHES_PER_TASK matches.
RUN_MATCHES = WorkerTask(RUN_MATCHES_TASK, _RESENT)
MATCHES_PER_TASK = 25
# A challenge's final round made at its close (its id): sent by the sweep until it is made.
FINAL_ROUND = WorkerTask(FINAL_ROUND_TASK, _RESENT)


def chunks(ids: list[str]) -> list[list[str]]:
    """The ids in order, MATCHES_PER_TASK at a time."""
    return [ids[i : i + MATCHES_PER_TASK] for i in range(0, len(ids), MATCHES_PER_TASK)]


# Sent when a board turns dirty; it runs a moment later (countdown, longer when the board's
# last recompute was costly), so the matches landing meanwhile are rated by the same recompute.
# A quarter of a second: short enough that the board's pacing (its share of a worker), not this
# wait, spaces the recomputes of any board whose recompute takes 30 ms or more, so their share
# is the same on a young board as on a large one; long enough that a chunk's matches, landing
# within it, share one recompute.
RECOMPUTE = WorkerTask(RECOMPUTE_TASK, _RESENT, countdown=0.25)
# The second argument of a recompute sent for a board's interval refresh alone.
INTERVALS_ONLY = "intervals"


def recompute_in(seconds: float) -> WorkerTask:
    """The recompute task, run no sooner than `seconds` from now (and never before RECOMPUTE's
    own countdown, which lets the matches landing meanwhile join it)."""
    return replace(RECOMPUTE, countdown=max(RECOMPUTE.countdown or 0.0, seconds))
