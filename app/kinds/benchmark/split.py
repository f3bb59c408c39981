"""A benchmark challenge's public and private parts: which of its tasks participants see
results of while the challenge is open, and which decide the private board at the close.

The rule, documented for participants in docs/boards.md: each task is ordered by the SHA-256
of `"<seed>:<task_id>"` (its hex digest, ascending); the first `round(public_fraction * n)`
of the n tasks the challenge runs are public, at least one and at most n - 1; the others are
private. A task's part depends only on the seed, its own id and the tasks the challenge runs,
so every run with the same seed and selection splits the same way, whatever order the data
lists the tasks in.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from app.kinds.api.evaluation import Benchmark, confined_data_files, select_tasks
from app.kinds.benchmark.config import BenchmarkSpec, SplitConfig
from app.kinds.benchmark.schemas import PartMeasures


class SplitTooSmall(ValueError):
    """Fewer than two tasks: no part could be empty of the other."""


def _order_key(seed: int, task_id: str) -> str:
    return hashlib.sha256(f"{seed}:{task_id}".encode()).hexdigest()


def public_count(tasks: int, public_fraction: float) -> int:
    """How many of `tasks` tasks are public: the fraction, rounded, keeping one task in each
    part (both parts exist from two tasks on)."""
    if tasks < 2:
        raise SplitTooSmall("a split needs at least two tasks")
    return min(tasks - 1, max(1, round(public_fraction * tasks)))


def private_task_ids(task_ids: Iterable[str], split: SplitConfig) -> frozenset[str]:
    """The ids of the private part's tasks among `task_ids` (the tasks the challenge runs)."""
    ordered = sorted(set(task_ids), key=lambda task_id: (_order_key(split.seed, task_id), task_id))
    return frozenset(ordered[public_count(len(ordered), split.public_fraction) :])


@dataclass(frozen=True)
class TaskParts:
    """The tasks a split challenge runs, by part: their ids, and their benchmark indices."""

    public_ids: frozenset[str]
    private_ids: frozenset[str]
    public_indices: tuple[int, ...]
    private_indices: frozenset[int]
    # The public part's first task in the challenge's order (a practice run's default).
    first_public_index: int


def task_parts(tasks: Iterable[tuple[str, int]], split: SplitConfig) -> TaskParts:
    """Splits the challenge's tasks, given in its order as (task id, canonical index)."""
    listed = list(tasks)
    ids = frozenset(task_id for task_id, _ in listed)
    private = private_task_ids(ids, split)
    return TaskParts(
        public_ids=ids - private,
        private_ids=private,
        public_indices=tuple(index for task_id, index in listed if task_id not in private),
        private_indices=frozenset(index for task_id, index in listed if task_id in private),
        first_public_index=next(index for task_id, index in listed if task_id not in private),
    )


def parts_of(spec: BenchmarkSpec, split: SplitConfig, data_dir: Path | None) -> TaskParts:
    """The challenge's tasks by part: its benchmark's tasks as it selects them, split. Read
    once per process for each selection and split (a benchmark may list 10,000 tasks)."""
    return _parts(spec.model_dump_json(), split.model_dump_json(), data_dir)


@lru_cache(maxsize=64)
def _parts(spec_json: str, split_json: str, data_dir: Path | None) -> TaskParts:
    spec = BenchmarkSpec.model_validate_json(spec_json)
    with confined_data_files(data_dir):
        tasks = select_tasks(
            Benchmark.load(spec.name).iter_tasks(spec.options),
            task_indices=spec.task_selection,
            max_tasks=spec.max_tasks,
        )
        listed = [(task.task_id, task.canonical_index) for task in tasks]
    return task_parts(listed, SplitConfig.model_validate_json(split_json))


def part_measures(curves: Mapping[str, Any], tasks_total: int, k: int) -> PartMeasures:
    """The curve at t = 1..k over `tasks_total` tasks from a run summary's `curves`. Tasks
    that never ran (the cost budget ran out) count as unsolved, so a cheaper partial run
    cannot outrank a complete one."""
    key = "seq_at" if curves.get("metric") == "seq@k" else "pass_at"
    complete = int(curves.get("tasks_complete") or 0)
    share = complete / tasks_total if tasks_total else 0.0
    # With no task complete (a budget spent during the first tries) the curve has no values:
    # every task counts as unsolved.
    curve = [float(value or 0.0) * share for value in curves.get(key) or []]
    return PartMeasures(
        metric_at=curve,
        metric_at_k=curve[k - 1] if len(curve) >= k else None,
        tasks_total=tasks_total,
        tasks_solved=int(curves.get("tasks_solved") or 0),
    )
