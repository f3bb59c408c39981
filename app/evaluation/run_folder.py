"""Run folders: the CLI's `RunStore`, laid out as DESIGN.md ("Run folders") fixes it.

    runs/<slice>/<passk|seqk>/<actor>/<verifier>/<feedback>/
        config.json            fingerprint, result-affecting settings, k history, sessions
        summary.json           the run's curves, tokens and cost (refreshed as tasks end)
        task-N/task_meta.json  the task's id, index, prompt and metadata (never its answer key)
        task-N/summary.json    the task's attempts, curve, tokens and cost (refreshed per trial)
        task-N/attempt-M.json  one trial: task_id, task_index, metric, feedback_mode,
                               attempt_index, actor {...}, judge {...}, critic {...}

`/` in a model id becomes `__`. The verifier level is the judge model id, or the benchmark's
fixed verifier name; the feedback level is the mode name, or the critic model id for an
LLM-critic mode. Every file is written atomically (a temporary file, then `os.replace`), so an
interrupted run never leaves half a file; nothing here deletes or overwrites an attempt.

This module imports no litellm: `gauntlet eval metrics` and `inspect` read folders through it.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import re
import threading
import uuid
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.evaluation.metrics import TaskStats
from app.evaluation.types import TrialRecord

if TYPE_CHECKING:
    from app.evaluation.benchmark import Benchmark, Task
    from app.evaluation.runner import RunConfig

CONFIG_FILE = "config.json"
SUMMARY_FILE = "summary.json"
TASK_META_FILE = "task_meta.json"
TASK_DIR_PREFIX = "task-"
ATTEMPT_PREFIX = "attempt-"
METRIC_FOLDERS: dict[str, str] = {"pass@k": "passk", "seq@k": "seqk"}

_TASK_DIR = re.compile(r"^task-(\d+)$")
_ATTEMPT_FILE = re.compile(r"^attempt-(\d+)\.json$")


class RunFolderError(Exception):
    """A folder that is not a run folder, or whose contents contradict the run."""


# Paths


def path_component(value: str) -> str:
    """One folder level from a model id, mode or slice name: `/` becomes `__`."""
    text = value.strip().replace("/", "__").replace("\\", "__")
    if not text or text in {".", ".."} or "\x00" in text:
        raise ValueError(f"{value!r} cannot name a folder")
    return text


def run_folder_path(
    runs_root: Path,
    *,
    slice_name: str,
    metric: str,
    actor_model: str,
    verifier: str,
    feedback: str,
) -> Path:
    if metric not in METRIC_FOLDERS:
        raise ValueError(f"unknown metric {metric!r}")
    return (
        runs_root
        / path_component(slice_name)
        / METRIC_FOLDERS[metric]
        / path_component(actor_model)
        / path_component(verifier)
        / path_component(feedback)
    )


def run_folder_for(runs_root: Path, benchmark: Benchmark, config: RunConfig) -> Path:
    """Where the run of `config` lives under `runs_root`."""
    verifier = config.judge.model if config.judge is not None else benchmark.verifier_name
    feedback = config.feedback_mode
    if benchmark.is_llm_critic_mode(feedback) and config.critic is not None:
        feedback = config.critic.model
    return run_folder_path(
        runs_root,
        slice_name=benchmark.slice_name(config.options),
        metric=config.metric,
        actor_model=config.actor.model,
        verifier=verifier,
        feedback=feedback,
    )


def task_dir_name(task_index: int) -> str:
    return f"{TASK_DIR_PREFIX}{task_index}"


def attempt_file_name(attempt_index: int) -> str:
    return f"{ATTEMPT_PREFIX}{attempt_index}.json"


# Files


def write_json_atomic(path: Path, data: Any, *, indent: int | None = 2) -> None:
    """Writes `data` as JSON to `path` so a reader sees the old file or the new one, never half.

    The temporary name starts with a dot, so the folder's globs never pick it up. Files that
    are rewritten on every trial pass `indent=None`: only then does `json` use its C encoder,
    several times faster than the indenting pure-Python one.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.parent / f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
    text = json.dumps(data, ensure_ascii=False, indent=indent, allow_nan=False)
    try:
        with temporary.open("w", encoding="utf-8") as handle:
            handle.write(text)
            handle.write("\n")
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def read_json(path: Path) -> Any:
    with path.open(encoding="utf-8") as handle:
        return json.load(handle)


def attempt_document(
    *, task_id: str, task_index: int, metric: str, feedback_mode: str | None, trial: TrialRecord
) -> dict[str, Any]:
    """The attempt file's content: the trial's sections under the task and run keys."""
    data = trial.to_dict()
    return {
        "task_id": task_id,
        "task_index": task_index,
        "metric": metric,
        "feedback_mode": feedback_mode,
        "attempt_index": trial.attempt_index,
        "actor": data["actor"],
        "judge": data["judge"],
        "critic": data["critic"],
    }


# Reading a folder


def is_run_folder(path: Path) -> bool:
    return (path / CONFIG_FILE).is_file()


def find_run_folders(path: Path) -> list[Path]:
    """`path` itself when it is a run folder, else every run folder below it, sorted."""
    if is_run_folder(path):
        return [path]
    if not path.is_dir():
        raise RunFolderError(f"{path} is not a folder")
    found: list[Path] = []
    for root, directories, files in os.walk(path):
        if CONFIG_FILE in files:
            found.append(Path(root))
            directories.clear()  # a run folder's task-N folders hold no runs
            continue
        directories[:] = sorted(d for d in directories if not _TASK_DIR.match(d))
    return sorted(found)


def read_config(folder: Path) -> dict[str, Any]:
    if not is_run_folder(folder):
        raise RunFolderError(f"{folder} is not a run folder (no {CONFIG_FILE})")
    config = read_json(folder / CONFIG_FILE)
    if not isinstance(config, dict) or not isinstance(config.get("settings"), dict):
        raise RunFolderError(f"{folder / CONFIG_FILE} has no run settings")
    return config


def task_dirs(folder: Path) -> Iterator[tuple[int, Path]]:
    """(task index, folder) of every task folder, by index."""
    entries: list[tuple[int, Path]] = []
    with os.scandir(folder) as scan:
        for entry in scan:
            match = _TASK_DIR.match(entry.name)
            if match and entry.is_dir():
                entries.append((int(match.group(1)), Path(entry.path)))
    yield from sorted(entries)


def attempt_files(task_dir: Path) -> list[tuple[int, Path]]:
    entries: list[tuple[int, Path]] = []
    if not task_dir.is_dir():
        return entries
    with os.scandir(task_dir) as scan:
        for entry in scan:
            match = _ATTEMPT_FILE.match(entry.name)
            if match and entry.is_file():
                entries.append((int(match.group(1)), Path(entry.path)))
    return sorted(entries)


def read_attempts(task_dir: Path) -> list[dict[str, Any]]:
    attempts = []
    for index, path in attempt_files(task_dir):
        document = read_json(path)
        if not isinstance(document, dict) or document.get("attempt_index") != index:
            raise RunFolderError(f"{path} is not the attempt file of attempt {index}")
        attempts.append(document)
    return attempts


def read_task_stats(task_index: int, task_dir: Path) -> TaskStats:
    """The task's stats from its summary, or rebuilt from its attempt files when the summary
    is missing or behind them (a run stopped between the two writes)."""
    on_disk = [index for index, _ in attempt_files(task_dir)]
    summary_path = task_dir / SUMMARY_FILE
    if summary_path.is_file():
        summary = read_json(summary_path)
        if isinstance(summary, dict):
            stats = TaskStats.from_summary(summary)
            if [attempt.attempt_index for attempt in stats.outcome.attempts] == on_disk:
                return stats
    attempts = read_attempts(task_dir)
    task_id = str(attempts[0]["task_id"]) if attempts else ""
    meta_path = task_dir / TASK_META_FILE
    if not task_id and meta_path.is_file():
        task_id = str(read_json(meta_path).get("task_id", ""))
    stats = TaskStats.from_trials(task_index, task_id, attempts)
    stats.status = "partial" if attempts else "pending"
    return stats


def read_all_task_stats(folder: Path) -> Iterator[TaskStats]:
    for index, path in task_dirs(folder):
        yield read_task_stats(index, path)


# The store


class RunFolderStore:
    """A `RunStore` (app.evaluation.runner) writing one run folder.

    Files are written by one thread of the store's own, in the order they are asked for: the
    run's event loop never waits on the file system (writes overlap with calls in flight), and
    an attempt file always lands before the task summary that counts it. A task summary asked
    for while an older one of the same task still waits its turn replaces it: at 50 calls in
    flight the summaries of a busy task are coalesced instead of each being written.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._metric = "pass@k"
        self._feedback_mode: str | None = None
        self._writer: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        # A summary path's newest content and the write job that will take it, while queued.
        self._queued_summaries: dict[Path, tuple[dict[str, Any], asyncio.Future[None]]] = {}

    def task_dir(self, task: Task) -> Path:
        return self.folder / task_dir_name(task.canonical_index)

    def _executor(self) -> ThreadPoolExecutor:
        if self._writer is None:
            self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="run-folder")
        return self._writer

    async def _write(self, path: Path, data: Any, *, indent: int | None = 2) -> None:
        job = functools.partial(write_json_atomic, path, data, indent=indent)
        # Shielded: a cancelled run (Ctrl-C) still lets a write that started finish whole.
        await asyncio.shield(asyncio.get_running_loop().run_in_executor(self._executor(), job))

    def _write_queued_summary(self, path: Path) -> None:
        with self._lock:
            data, _ = self._queued_summaries.pop(path)
        # Rewritten after every trial of the task: compact (see write_json_atomic).
        write_json_atomic(path, data, indent=None)

    async def load_config(self) -> dict[str, Any] | None:
        if not is_run_folder(self.folder):
            return None
        config = read_json(self.folder / CONFIG_FILE)
        if not isinstance(config, dict):
            raise RunFolderError(f"{self.folder / CONFIG_FILE} is not a run record")
        return config

    async def save_config(self, config: dict[str, Any]) -> None:
        settings = config.get("settings") or {}
        self._metric = str(settings.get("metric", "pass@k"))
        mode = settings.get("feedback_mode")
        self._feedback_mode = mode if isinstance(mode, str) else None
        await self._write(self.folder / CONFIG_FILE, config)

    async def load_trials(self, task: Task) -> list[TrialRecord]:
        trials = []
        for document in read_attempts(self.task_dir(task)):
            if document.get("task_id") != task.task_id:
                # The benchmark now gives another task at this index: its "stable" index was
                # not. Mixing the two tasks' trials would corrupt both.
                raise RunFolderError(
                    f"{self.task_dir(task)} holds attempts of task {document.get('task_id')!r}, "
                    f"but the benchmark's task {task.canonical_index} is {task.task_id!r}"
                )
            trials.append(TrialRecord.from_dict(document))
        return trials

    async def save_trial(self, task: Task, trial: TrialRecord) -> None:
        path = self.task_dir(task) / attempt_file_name(trial.attempt_index)
        if path.exists():
            raise RunFolderError(f"{path} exists already; attempts are never overwritten")
        document = attempt_document(
            task_id=task.task_id,
            task_index=task.canonical_index,
            metric=self._metric,
            feedback_mode=self._feedback_mode,
            trial=trial,
        )
        await self._write(path, document)

    async def save_task_meta(self, task: Task, meta: dict[str, Any]) -> None:
        await self._write(self.task_dir(task) / TASK_META_FILE, meta)

    async def save_task_summary(self, task: Task, summary: dict[str, Any]) -> None:
        path = self.task_dir(task) / SUMMARY_FILE
        loop = asyncio.get_running_loop()
        with self._lock:
            queued = self._queued_summaries.get(path)
            if queued is None:
                job: asyncio.Future[None] = loop.run_in_executor(
                    self._executor(), self._write_queued_summary, path
                )
            else:
                job = queued[1]
            self._queued_summaries[path] = (summary, job)
        await asyncio.shield(job)

    async def save_run_summary(self, summary: dict[str, Any]) -> None:
        await self._write(self.folder / SUMMARY_FILE, summary)


def config_value(config: Mapping[str, Any], key: str) -> Any:
    """A result-affecting setting of a run record (`metric`, `k`, `feedback_mode`, ...)."""
    settings = config.get("settings")
    return settings.get(key) if isinstance(settings, Mapping) else None
