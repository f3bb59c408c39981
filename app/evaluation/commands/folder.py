"""Run folders: the CLI's `RunStore`, laid out as the run-folder contract fixes it.

    runs/<slice>/<passk|seqk>/<actor>/<verifier>/<feedback>/
        config.json            seq_k's settings; fingerprint, result-affecting settings, k
                               history, sessions
        summary.json           the run's curves, tokens, cost and price-map date
        task-N/task_meta.json  the task's id, index, prompt and metadata (never its answer key)
        task-N/summary.json    the task's attempts and scores, best score, curve, tokens per
                               model with their cost, last update (refreshed per trial)
        task-N/attempt-M.json  one trial: task_id, task_index, metric, feedback_mode,
                               attempt_index, actor {...}, judge {...}, critic {...}

`/` in a model id becomes `__`. The verifier level is the judge model id for a benchmark that
grades with an LLM judge, else the benchmark's fixed verifier name (`deterministic`); the
feedback level is the mode name, or the critic model id for an LLM-critic mode. In an attempt
file `actor.prompt` is the exact text the actor saw, with the message list beside it as
`actor.messages` (the same for every judge and critic call). Every file holds seq_k's keys
first, in seq_k's order and JSON layout, then Gauntlet's (docs/engine.md, "Files, as seq_k
writes them"), and is written atomically (a temporary file, then `os.replace`; an attempt file
by a hard link, which fails if the attempt exists), so an interrupted run never leaves half a
file; nothing here deletes or overwrites an attempt.

Reading is wider than writing: any folder in this layout is read, with or without
`config.json` (an S3 copy never has one), whether Gauntlet or the pass@k/seq@k research
harness (seq_k) wrote it; `describe_run_folder` says which settings it had to infer, and from
what.

This module imports no litellm: `gauntlet eval metrics` and `inspect` read folders through it.
"""

from __future__ import annotations

import asyncio
import errno
import functools
import itertools
import json
import os
import re
import threading
import uuid
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.evaluation.engine.metrics import TaskStats, apply_model_costs
from app.evaluation.engine.types import TrialRecord, prompt_text, stored_messages

if TYPE_CHECKING:
    from app.evaluation.engine.benchmark import Benchmark, Task
    from app.evaluation.engine.runner import RunConfig

CONFIG_FILE = "config.json"
SUMMARY_FILE = "summary.json"
TASK_META_FILE = "task_meta.json"
TASK_DIR_PREFIX = "task-"
ATTEMPT_PREFIX = "attempt-"
METRIC_FOLDERS: dict[str, str] = {"pass@k": "passk", "seq@k": "seqk"}
FOLDER_METRICS: dict[str, str] = {folder: metric for metric, folder in METRIC_FOLDERS.items()}

# Temporary file names: unique within the process by the counter, across processes by the pid,
# and apart from a crashed earlier process of the same pid by the tag.
_TEMPORARY_TAG = uuid.uuid4().hex[:8]
_temporaries = itertools.count(1)
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
    """Where the run of `config` lives under `runs_root`. A judge model names the verifier
    level only where the benchmark grades with one: a deterministic benchmark's runs are
    `deterministic` (its verifier's name) whatever judge the variant names."""
    verifier = (
        config.judge.model
        if config.judge is not None and benchmark.uses_judge_model
        else benchmark.verifier_name
    )
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


def write_json_atomic(path: Path, data: Any, *, overwrite: bool = True) -> None:
    """Writes `data` as JSON to `path` so a reader sees the old file or the new one, never half.

    The text is seq_k's (`json.dumps(..., ensure_ascii=False, indent=2)` and a newline), so a
    file written here from the same values is the file seq_k writes, byte for byte. The
    temporary name starts with a dot, so the folder's globs never pick it up.

    With `overwrite=False` a `path` that exists raises FileExistsError (`filename` that path)
    and stays as it was: the temporary file is hard-linked to its name, which fails if the name
    is taken, instead of renamed over it, so the check and the write are one step (on a file
    system without hard links: a check, then the rename).

    Few system calls, for the run folder's writer thread, each of which lets go of the GIL
    (and may wait for the event loop's thread to get it back): plain descriptors rather than a
    text file object, a temporary name from a counter rather than the random source, and the
    folder made only when it is missing.
    """
    text = json.dumps(data, ensure_ascii=False, indent=2, allow_nan=False) + "\n"
    if os.linesep != "\n":  # as a file opened in text mode writes it
        text = text.replace("\n", os.linesep)
    content = text.encode("utf-8")
    temporary = path.parent / f".{path.name}.{os.getpid()}.{_TEMPORARY_TAG}{next(_temporaries)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    try:
        descriptor = os.open(temporary, flags, 0o666)
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(temporary, flags, 0o666)
    try:
        try:
            view = memoryview(content)
            while view:
                view = view[os.write(descriptor, view) :]
        finally:
            os.close(descriptor)
        if overwrite:
            os.replace(temporary, path)
            return
        try:
            os.link(temporary, path)
        except OSError as error:
            if isinstance(error, FileExistsError) or path.exists():
                raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(path)) from None
            os.replace(temporary, path)
            return
        os.unlink(temporary)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def read_json(path: Path) -> Any:
    with path.open(encoding="utf-8") as handle:
        return json.load(handle)


SEQ_K_CALL_KEYS = (
    "model",
    "prompt",
    "output",
    "input_tokens",
    "cached_tokens",
    "thinking_tokens",
    "output_tokens",
)
SEQ_K_JUDGE_KEYS = ("model", "success", "score", "raw_eval_output", "details", "calls")


def call_document(call: Mapping[str, Any]) -> dict[str, Any]:
    """A model call as an attempt file holds it: seq_k's keys in its order (`prompt` the exact
    text the model saw), then Gauntlet's: `messages` (the message list it was sent), its cost,
    time and bounds."""
    messages = stored_messages(call.get("prompt"), call.get("messages"))
    document: dict[str, Any] = {
        key: prompt_text(messages) if key == "prompt" else call.get(key) for key in SEQ_K_CALL_KEYS
    }
    document["messages"] = messages
    document.update((key, value) for key, value in call.items() if key not in document)
    return document


def attempt_document(
    *, task_id: str, task_index: int, metric: str, feedback_mode: str | None, trial: TrialRecord
) -> dict[str, Any]:
    """The attempt file's content: the trial's sections under the task and run keys, each
    with seq_k's keys first, in its order."""
    data = trial.to_dict()
    judge, critic = data["judge"], data["critic"]
    judge["calls"] = [call_document(call) for call in judge["calls"]]
    return {
        "task_id": task_id,
        "task_index": task_index,
        "metric": metric,
        "feedback_mode": feedback_mode,
        "attempt_index": trial.attempt_index,
        "actor": call_document(data["actor"]),
        "judge": {
            **{key: judge[key] for key in SEQ_K_JUDGE_KEYS},
            **{key: value for key, value in judge.items() if key not in SEQ_K_JUDGE_KEYS},
        },
        "critic": {**critic, "calls": [call_document(call) for call in critic["calls"]]},
    }


# Reading a folder


def _has_task_folders(path: Path) -> bool:
    try:
        with os.scandir(path) as scan:
            return any(_TASK_DIR.match(entry.name) and entry.is_dir() for entry in scan)
    except OSError:
        return False


def is_run_folder(path: Path, *, require_config: bool = False) -> bool:
    """A folder holding `config.json`, or (unless `require_config`) task folders: a copy from
    S3 has no `config.json`, and neither has every folder the research harness wrote."""
    if (path / CONFIG_FILE).is_file():
        return True
    return not require_config and path.is_dir() and _has_task_folders(path)


def find_run_folders(path: Path, *, require_config: bool = False) -> list[Path]:
    """`path` itself when it is a run folder, else every run folder below it, sorted."""
    if is_run_folder(path, require_config=require_config):
        return [path]
    if not path.is_dir():
        raise RunFolderError(f"{path} is not a folder")
    found: list[Path] = []
    for root, directories, files in os.walk(path):
        holds_tasks = any(_TASK_DIR.match(name) for name in directories)
        if CONFIG_FILE in files or (holds_tasks and not require_config):
            found.append(Path(root))
            directories.clear()  # a run folder's task-N folders hold no runs
            continue
        directories[:] = sorted(
            name for name in directories if not _TASK_DIR.match(name) and not name.startswith(".")
        )
    return sorted(found)


@dataclass
class RunFolderInfo:
    """What a run folder says about its run: from Gauntlet's `config.json`, from the research
    harness's, or (no `config.json`) inferred from `summary.json`, the path and the attempt
    files, each inferred setting noted in `inferred` with where it came from."""

    folder: Path
    metric: str
    k: int
    # False when k is only the most attempts a task has. Without config.json even a stated k
    # (summary.json, the path) may be behind the run's: see `read_stats_at`.
    k_is_the_runs: bool
    settings: dict[str, Any]
    source: str  # "config.json", "seq_k config.json" or "inferred"
    record: dict[str, Any] | None = None  # Gauntlet's config.json
    run_summary: dict[str, Any] | None = None  # the stored summary.json
    inferred: list[str] = field(default_factory=list)


def _path_settings(folder: Path) -> dict[str, Any]:
    """What the folder's path says: Gauntlet's `<slice>/<passk|seqk>/<actor>/<verifier>/
    <feedback>`, or the research harness's labelled levels (`metric=seqk/k=05/agent=.../
    judge=.../fb=...`)."""
    parts = folder.resolve().parts
    found: dict[str, Any] = {}
    labels = {"metric": "metric", "k": "k", "agent": "actor", "judge": "judge", "fb": "feedback"}
    for part in parts:
        name, separator, value = part.partition("=")
        if separator and name in labels and value:
            found[labels[name]] = value
    if "metric" in found:
        found["metric"] = FOLDER_METRICS.get(found["metric"], found["metric"])
        if "k" in found:
            found["k"] = int(found["k"]) if str(found["k"]).isdigit() else None
        feedback = found.get("feedback")
        if isinstance(feedback, str):
            found["feedback"] = feedback.partition("@")[0] or None
    elif len(parts) >= 5 and parts[-4] in FOLDER_METRICS:
        found = {
            "metric": FOLDER_METRICS[parts[-4]],
            "actor": parts[-3],
            "judge": parts[-2],
            "feedback": parts[-1],
        }
    for key in ("actor", "judge"):
        if isinstance(found.get(key), str):
            found[key] = found[key].replace("__", "/")
    return {key: value for key, value in found.items() if value is not None}


def _first_attempt(folder: Path) -> dict[str, Any] | None:
    for _, task_dir in task_dirs(folder):
        for _, path in attempt_files(task_dir):
            document = read_json(path)
            if isinstance(document, dict):
                return document
    return None


def _most_attempts(folder: Path) -> int:
    return max((len(attempt_files(task_dir)) for _, task_dir in task_dirs(folder)), default=0)


def _checked_k(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        return None
    return value


def describe_run_folder(folder: Path) -> RunFolderInfo:
    """The run's metric, k and settings, from wherever the folder keeps them."""
    summary_path = folder / SUMMARY_FILE
    loaded = read_json(summary_path) if summary_path.is_file() else None
    summary: dict[str, Any] | None = loaded if isinstance(loaded, dict) else None
    if (folder / CONFIG_FILE).is_file():
        config = read_json(folder / CONFIG_FILE)
        if not isinstance(config, dict):
            raise RunFolderError(f"{folder / CONFIG_FILE} is not a run record")
        settings = config.get("settings")
        if isinstance(settings, dict):
            metric, k = settings.get("metric"), _checked_k(settings.get("k"))
            source, record = CONFIG_FILE, config
        elif "metric" in config:
            # The research harness freezes its settings as flat keys.
            settings = dict(config)
            metric, k = config.get("metric"), _checked_k(config.get("k"))
            source, record = f"seq_k {CONFIG_FILE}", None
        else:
            raise RunFolderError(f"{folder / CONFIG_FILE} has no run settings")
        if metric not in METRIC_FOLDERS or k is None:
            raise RunFolderError(f"{folder / CONFIG_FILE} names no metric and k")
        return RunFolderInfo(
            folder=folder,
            metric=str(metric),
            k=k,
            k_is_the_runs=True,
            settings=settings,
            source=source,
            record=record,
            run_summary=summary,
        )

    if not _has_task_folders(folder):
        raise RunFolderError(f"{folder} is not a run folder (no {CONFIG_FILE}, no task folders)")
    inferred: list[str] = []
    attempt = _first_attempt(folder) or {}
    from_path = _path_settings(folder)
    stored = summary or {}
    section = attempt.get("actor")
    actor: dict[str, Any] = section if isinstance(section, dict) else {}

    def pick(name: str, *candidates: tuple[Any, str]) -> Any:
        for value, origin in candidates:
            if value is not None and value != "":
                inferred.append(f"{name} from {origin}")
                return value
        return None

    metric = pick(
        "metric",
        (attempt.get("metric"), "the attempt files"),
        (stored.get("metric"), SUMMARY_FILE),
        (from_path.get("metric"), "the folder path"),
    )
    if metric not in METRIC_FOLDERS:
        raise RunFolderError(
            f"{folder}: no {CONFIG_FILE}, and neither the attempt files, {SUMMARY_FILE} nor the "
            "folder path name the metric (pass@k or seq@k)"
        )
    k = pick(
        "k",
        (_checked_k(stored.get("k")), SUMMARY_FILE),
        (_checked_k(from_path.get("k")), "the folder path"),
    )
    k_is_the_runs = k is not None
    if k is None:
        k = _most_attempts(folder)
        if k < 1:
            raise RunFolderError(f"{folder} holds no attempt files")
        inferred.append("k as the most attempts any task has (choose another with --k)")
    settings = {
        "metric": metric,
        "k": k,
        "feedback_mode": pick(
            "feedback mode",
            (attempt.get("feedback_mode"), "the attempt files"),
            (stored.get("feedback_mode"), SUMMARY_FILE),
            (from_path.get("feedback"), "the folder path"),
        ),
        "actor": pick(
            "actor",
            (actor.get("model"), "the attempt files"),
            (stored.get("actor") or stored.get("model"), SUMMARY_FILE),
            (from_path.get("actor"), "the folder path"),
        ),
        "judge": pick(
            "verifier",
            (stored.get("judge"), SUMMARY_FILE),
            (from_path.get("judge"), "the folder path"),
        ),
    }
    return RunFolderInfo(
        folder=folder,
        metric=str(metric),
        k=int(k),
        k_is_the_runs=k_is_the_runs,
        settings=settings,
        source="inferred",
        run_summary=summary,
        inferred=inferred,
    )


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
        if not isinstance(document, dict):
            raise RunFolderError(f"{path} is not an attempt file")
        document.setdefault("attempt_index", index)
        if document.get("attempt_index") != index:
            raise RunFolderError(f"{path} is not the attempt file of attempt {index}")
        attempts.append(document)
    return attempts


def _is_gauntlet_task_summary(summary: Any) -> bool:
    # seq_k writes task summaries too, without Gauntlet's `usage` per role: those are rebuilt
    # from the attempt files rather than half read. Gauntlet's name each attempt `attempt`, as
    # seq_k's do (`attempt_index` before).
    if not isinstance(summary, dict) or not isinstance(summary.get("usage"), dict):
        return False
    attempts = summary.get("attempts")
    return isinstance(attempts, list) and all(
        isinstance(item, dict) and ("attempt" in item or "attempt_index" in item)
        for item in attempts
    )


def read_task_stats(task_index: int, task_dir: Path) -> TaskStats:
    """The task's stats from its summary, or rebuilt from its attempt files when the summary
    is missing, behind them (a run stopped between the two writes) or not Gauntlet's."""
    on_disk = [index for index, _ in attempt_files(task_dir)]
    summary_path = task_dir / SUMMARY_FILE
    summary = read_json(summary_path) if summary_path.is_file() else None
    if isinstance(summary, dict) and _is_gauntlet_task_summary(summary):
        stats = TaskStats.from_summary(summary)
        if [attempt.attempt_index for attempt in stats.outcome.attempts] == on_disk:
            return stats
    attempts = read_attempts(task_dir)
    task_id = str(attempts[0].get("task_id") or "") if attempts else ""
    meta_path = task_dir / TASK_META_FILE
    if not task_id and meta_path.is_file():
        meta = read_json(meta_path)
        task_id = str(meta.get("task_id", "")) if isinstance(meta, dict) else ""
    stats = TaskStats.from_trials(task_index, task_id, attempts)
    stats.status = "partial" if attempts else "pending"
    if isinstance(summary, dict) and isinstance(summary.get("tokens"), dict):
        # seq_k keeps no cost per call: it prices each model's tokens per task, here.
        apply_model_costs(stats.usage, summary["tokens"])
    return stats


def read_all_task_stats(folder: Path) -> Iterator[TaskStats]:
    for index, path in task_dirs(folder):
        yield read_task_stats(index, path)


def read_stats_at(info: RunFolderInfo, k: int | None) -> tuple[int, list[TaskStats]]:
    """The k to read a run folder at (default: the run's) and its tasks' stats.

    With Gauntlet's or seq_k's `config.json`, k is at most the run's. Without one, the k that
    `summary.json` or the path states may be behind the run's: seq_k rewrites its summary only
    when a task runs, so a seq@k run continued to a larger k whose every task had already
    stopped on a success keeps the old k there. A larger k is read when every task is
    complete for it (seq@k: a success within its attempts, or that many attempts; pass@k: that
    many samples), and refused, naming the tasks, otherwise.
    """
    chosen = info.k if k is None else k
    if chosen < 1 or (info.source != "inferred" and chosen > info.k):
        raise RunFolderError(
            f"{info.folder}: --k must be between 1 and the run's k ({info.k}), got {chosen}"
        )
    stats = list(read_all_task_stats(info.folder))
    if info.k_is_the_runs and chosen > info.k:
        short = [
            task.outcome.task_index
            for task in stats
            if not task.outcome.is_complete(info.metric, chosen)
        ]
        if short:
            shown = ", ".join(str(index) for index in short[:5])
            more = f" and {len(short) - 5} more" if len(short) > 5 else ""
            raise RunFolderError(
                f"{info.folder}: --k must be between 1 and the run's k ({info.k}, inferred), "
                f"got {chosen}: a larger k needs every task complete for it, and task(s) "
                f"{shown}{more} are not"
            )
        info.inferred.append(
            f"k={chosen} from --k, above the k={info.k} inferred: every task is complete for it"
        )
    return chosen, stats


# The store


class RunFolderStore:
    """A `RunStore` (app.evaluation.engine.runner) writing one run folder.

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

    async def _write(self, path: Path, data: Any, *, overwrite: bool = True) -> None:
        job = functools.partial(write_json_atomic, path, data, overwrite=overwrite)
        # Shielded: a cancelled run (Ctrl-C) still lets a write that started finish whole.
        await asyncio.shield(asyncio.get_running_loop().run_in_executor(self._executor(), job))

    def _write_queued_summary(self, path: Path) -> None:
        with self._lock:
            data, _ = self._queued_summaries.pop(path)
        # Indented as seq_k writes its task summaries, though the indenting encoder is the
        # slower one: the coalescing above keeps a busy task's rewrites few.
        write_json_atomic(path, data)

    async def load_config(self) -> dict[str, Any] | None:
        if not (self.folder / CONFIG_FILE).is_file():
            if _has_task_folders(self.folder):
                # A copy from S3, or a folder another harness wrote: without the run record
                # nothing says its attempts were made under this run's settings.
                raise RunFolderError(
                    f"{self.folder} holds task folders but no {CONFIG_FILE} (a copy from S3, or "
                    "a folder another harness wrote), so nothing says they were made with these "
                    "settings; Gauntlet does not add attempts to it. Read it with `gauntlet eval "
                    "metrics`, or run into another folder (--runs-root)."
                )
            return None
        config = read_json(self.folder / CONFIG_FILE)
        if not isinstance(config, dict):
            raise RunFolderError(f"{self.folder / CONFIG_FILE} is not a run record")
        return config

    async def save_config(self, config: dict[str, Any]) -> None:
        settings = config.get("settings") or {}
        self._metric = str(settings.get("metric", "pass@k"))
        # The run's mode, also for pass@k, whose settings leave it out (it gives no feedback).
        mode = config.get("feedback_mode", settings.get("feedback_mode"))
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
        document = attempt_document(
            task_id=task.task_id,
            task_index=task.canonical_index,
            metric=self._metric,
            feedback_mode=self._feedback_mode,
            trial=trial,
        )
        # The writer thread checks that the attempt is new in the same step as it writes it:
        # the event loop makes no file-system call per trial.
        try:
            await self._write(path, document, overwrite=False)
        except FileExistsError as error:
            if error.filename != str(path):
                raise  # not the attempt file: say, a file where the task's folder belongs
            raise RunFolderError(f"{path} exists already; attempts are never overwritten") from None

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
