"""A benchmark challenge's split into a public and a private part: the documented rule, its
stability, and the private part's measures."""

from __future__ import annotations

import hashlib
import random

import pytest

from app.evaluation.engine.metrics import (
    AttemptOutcome,
    TaskOutcome,
    TaskStats,
    UsageTotals,
    run_summary,
)
from app.kinds.benchmark.config import SplitConfig
from app.kinds.benchmark.split import (
    SplitTooSmall,
    part_measures,
    private_task_ids,
    public_count,
    task_parts,
)

TASKS = [f"task-{index}" for index in range(1, 11)]


def test_the_rule_orders_tasks_by_the_sha256_of_seed_and_id_and_keeps_the_first_public() -> None:
    # The rule as docs/boards.md states it, computed here from the text of the rule.
    def documented(task_ids: list[str], seed: int, fraction: float) -> set[str]:
        ordered = sorted(task_ids, key=lambda t: hashlib.sha256(f"{seed}:{t}".encode()).hexdigest())
        return set(ordered[round(fraction * len(ordered)) :])

    for seed in (0, 7, 8, 2**40):
        for fraction in (0.2, 0.5, 0.7):
            split = SplitConfig(seed=seed, public_fraction=fraction)
            assert private_task_ids(TASKS, split) == documented(TASKS, seed, fraction)


def test_a_known_split_stays_what_it_was() -> None:
    # Changing the rule would move tasks between parts under running challenges.
    assert private_task_ids(TASKS, SplitConfig(seed=7)) == {
        "task-3",
        "task-6",
        "task-7",
        "task-8",
        "task-9",
    }


def test_the_same_seed_splits_the_same_tasks_the_same_way_in_any_order() -> None:
    shuffled = TASKS[:]
    random.Random(3).shuffle(shuffled)
    split = SplitConfig(seed=12345)
    assert private_task_ids(shuffled, split) == private_task_ids(TASKS, split)
    assert private_task_ids(TASKS, split) != private_task_ids(TASKS, SplitConfig(seed=12346))


@pytest.mark.parametrize(
    ("tasks", "fraction", "public"),
    [(10, 0.5, 5), (10, 0.33, 3), (10, 0.01, 1), (10, 0.99, 9), (2, 0.5, 1), (3, 0.9, 2)],
)
def test_the_public_part_is_the_fraction_rounded_with_a_task_in_each_part(
    tasks: int, fraction: float, public: int
) -> None:
    assert public_count(tasks, fraction) == public
    ids = [f"t{index}" for index in range(tasks)]
    private = private_task_ids(ids, SplitConfig(seed=1, public_fraction=fraction))
    assert len(private) == tasks - public


def test_one_task_cannot_be_split() -> None:
    with pytest.raises(SplitTooSmall):
        private_task_ids(["only"], SplitConfig(seed=1))


def test_task_parts_name_the_private_indices_and_the_first_public_task() -> None:
    listed = [(task_id, index) for index, task_id in enumerate(TASKS, start=1)]
    parts = task_parts(listed, SplitConfig(seed=7))
    assert parts.private_indices == {3, 6, 7, 8, 9}
    assert parts.public_ids == {f"task-{index}" for index in (1, 2, 4, 5, 10)}
    assert parts.first_public_index == 1
    assert parts.private_ids == {f"task-{index}" for index in (3, 6, 7, 8, 9)}


def _stats(task_id: str, successes: list[bool], cost: float) -> TaskStats:
    outcome = TaskOutcome(
        task_index=int(task_id.split("-")[1]),
        task_id=task_id,
        attempts=[
            AttemptOutcome(attempt_index=index, success=success, score=float(success))
            for index, success in enumerate(successes, start=1)
        ],
    )
    usage = {"actor": {"m": UsageTotals(calls=len(successes), cost_usd=cost)}}
    return TaskStats(outcome=outcome, usage=usage, status="done")


def test_part_measures_count_tasks_that_never_ran_as_unsolved() -> None:
    stats = [_stats("task-1", [True, True], 0), _stats("task-2", [False, True], 0)]
    curves = run_summary(stats, metric="pass@k", k=2)["curves"]
    complete = part_measures(curves, 2, 2)
    assert complete.metric_at_k == pytest.approx(1.0) and complete.tasks_solved == 2
    # Two more tasks in the part never ran: the curve is over four.
    partial = part_measures(curves, 4, 2)
    assert partial.metric_at_k == pytest.approx(0.5) and partial.tasks_total == 4
