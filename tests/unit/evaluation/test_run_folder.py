from __future__ import annotations

import asyncio
import json
import os
import re
import threading
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from app.evaluation.commands import folder as run_folder
from app.evaluation.commands.folder import (
    RunFolderError,
    RunFolderStore,
    find_run_folders,
    path_component,
    read_task_stats,
    run_folder_for,
    write_json_atomic,
)
from app.evaluation.engine.benchmark import Task
from app.evaluation.engine.runner import RunConfig, run_benchmark
from app.evaluation.engine.types import ActorSection, JudgeSection, ModelSpec, TrialRecord
from tests.fixtures.eval_benchmark import ScriptedClient, make_benchmark

ACTOR = ModelSpec("openai/gpt-4o-mini", temperature=0.3)


def config(**changes: Any) -> RunConfig:
    values: dict[str, Any] = {
        "benchmark": "memory_bench",
        "metric": "seq@k",
        "k": 2,
        "feedback_mode": "raw",
        "actor": ACTOR,
        "options": {"size": 2},
    }
    values.update(changes)
    return RunConfig(**values)


def trial(index: int) -> TrialRecord:
    return TrialRecord(
        attempt_index=index,
        actor=ActorSection(model="m", prompt=[{"role": "user", "content": "p"}], output="o"),
        judge=JudgeSection(model=None, success=False, score=0.0),
    )


# layout


def test_folder_path_follows_the_design_layout(tmp_path: Path) -> None:
    benchmark = make_benchmark()
    assert run_folder_for(tmp_path, benchmark, config()) == (
        tmp_path / "memory_bench-2" / "seqk" / "openai__gpt-4o-mini" / "deterministic" / "raw"
    )
    judged = config(metric="pass@k", judge=ModelSpec("anthropic/claude-3-5-haiku"))
    assert run_folder_for(tmp_path, make_benchmark(verifier="llm"), judged).parts[-4:] == (
        "passk",
        "openai__gpt-4o-mini",
        "anthropic__claude-3-5-haiku",
        "raw",
    )
    # A deterministic benchmark is `deterministic` whatever judge the variant names (the seq_k
    # contract): the judge cannot change its results.
    assert run_folder_for(tmp_path, benchmark, judged).parts[-2] == "deterministic"
    # An LLM-critic mode names the critic model.
    critic = config(feedback_mode="socratic", critic=ModelSpec("openai/gpt-4o"))
    assert run_folder_for(tmp_path, benchmark, critic).name == "openai__gpt-4o"


@pytest.mark.parametrize("bad", ["", "  ", ".", ".."])
def test_a_value_that_cannot_name_a_folder_is_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        path_component(bad)


def test_a_run_writes_every_file_with_the_documented_keys(tmp_path: Path) -> None:
    asyncio.run(
        run_benchmark(make_benchmark(count=2), config(), RunFolderStore(tmp_path), ScriptedClient())
    )
    names = sorted(str(path.relative_to(tmp_path)) for path in tmp_path.rglob("*"))
    assert names == [
        "config.json",
        "summary.json",
        "task-1",
        "task-1/attempt-1.json",
        "task-1/attempt-2.json",
        "task-1/summary.json",
        "task-1/task_meta.json",
        "task-2",
        "task-2/attempt-1.json",
        "task-2/attempt-2.json",
        "task-2/summary.json",
        "task-2/task_meta.json",
    ]
    attempt = json.loads((tmp_path / "task-2" / "attempt-2.json").read_text())
    assert list(attempt) == [
        "task_id",
        "task_index",
        "metric",
        "feedback_mode",
        "attempt_index",
        "actor",
        "judge",
        "critic",
    ]
    assert (attempt["task_id"], attempt["task_index"], attempt["attempt_index"]) == ("t2", 2, 2)
    assert (attempt["metric"], attempt["feedback_mode"]) == ("seq@k", "raw")
    for key in (
        "model",
        "prompt",
        "output",
        "input_tokens",
        "cached_tokens",
        "thinking_tokens",
        "output_tokens",
    ):
        assert key in attempt["actor"]
    # The exact text the actor saw, its message list beside it.
    first_prompt = (
        "Task 2: name the secret.\n\nThis is attempt 1 of 2. If this attempt does not pass, "
        "you will receive feedback and can revise it on the remaining attempts."
    )
    assert attempt["actor"]["prompt"] == (
        "Task 2: name the secret.\n\nThis is attempt 2 of 2. Review your previous attempt(s) "
        "and the feedback below, then provide an improved answer.\n\n"
        f"<PreviousAttempt 1>\n{first_prompt}\n</PreviousAttempt 1>\n\n"
        "<Feedback 1>\nwrong secret\n</Feedback 1>"
    )
    assert attempt["actor"]["messages"] == [{"role": "user", "content": attempt["actor"]["prompt"]}]
    for key in ("model", "success", "score", "raw_eval_output", "details", "calls"):
        assert key in attempt["judge"]
    # A deterministic verifier: no judge model, a 0/1 score, partial credit in the details.
    assert attempt["judge"]["model"] is None and attempt["judge"]["score"] == 0.0
    assert attempt["judge"]["details"]["partial_score"] == 0.5
    assert set(attempt["critic"]) >= {"model", "feedback", "calls"}
    assert attempt["critic"]["feedback"] == "wrong secret"

    meta = json.loads((tmp_path / "task-1" / "task_meta.json").read_text())
    assert meta == {
        "task_id": "t1",
        "task_index": 1,
        "prompt": "Task 1: name the secret.",
        "metadata": {"n": 1},
    }
    assert "ANSWER-KEY" not in json.dumps(meta)
    config_json = json.loads((tmp_path / "config.json").read_text())
    assert len(config_json["fingerprint"]) == 64
    assert config_json["settings"]["prompt_version"]
    assert config_json["sessions"][-1]["status"] == "complete"
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["status"] == "complete"
    assert summary["curves"]["seq_at"] == [0.0, 0.0]
    # The price map that priced the run: litellm's version and the map's date.
    assert summary["litellm_version"] and summary["price_map"] == "litellm bundled"
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", summary["pricing_last_updated"])
    task_summary = json.loads((tmp_path / "task-1" / "summary.json").read_text())
    assert task_summary["status"] == "done"
    assert [(a["attempt"], a["success"], a["score"]) for a in task_summary["attempts"]] == [
        (1, False, 0.0),
        (2, False, 0.0),
    ]
    assert task_summary["best_score"] == 0.0
    assert task_summary["usage"]["actor"]["openai/gpt-4o-mini"]["calls"] == 2
    assert set(task_summary["tokens"]["openai/gpt-4o-mini"]) == {
        "input_tokens",
        "cached_tokens",
        "thinking_tokens",
        "output_tokens",
        "cost_usd",
    }
    assert task_summary["pricing_last_updated"] == summary["pricing_last_updated"]
    # seq_k's time stamp: UTC, safe in a file name.
    assert datetime.strptime(task_summary["last_updated"], "%Y-%m-%dT%H-%M-%SZ")
    assert not list(tmp_path.rglob(".*.tmp"))


# atomic writes and never overwriting


def test_an_interrupted_write_leaves_the_old_file_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "summary.json"
    write_json_atomic(target, {"version": 1})

    def interrupted_replace(source: Any, destination: Any) -> None:
        # Ctrl-C after the temporary file is written, before it takes the target's place.
        raise KeyboardInterrupt

    monkeypatch.setattr(run_folder.os, "replace", interrupted_replace)
    with pytest.raises(KeyboardInterrupt):
        write_json_atomic(target, {"version": 2})
    assert json.loads(target.read_text()) == {"version": 1}
    assert [path.name for path in tmp_path.iterdir()] == ["summary.json"]


def test_an_attempt_is_never_overwritten(tmp_path: Path) -> None:
    store = RunFolderStore(tmp_path)
    task = Task(task_id="a", canonical_index=1, prompt="p")
    asyncio.run(store.save_trial(task, trial(1)))
    with pytest.raises(RunFolderError, match="never overwritten"):
        asyncio.run(store.save_trial(task, trial(1)))


def test_an_attempt_file_already_on_disk_is_left_as_it_was(tmp_path: Path) -> None:
    # Put there by another process (or an earlier session): the check is in the write itself.
    existing = tmp_path / "task-1" / "attempt-1.json"
    existing.parent.mkdir()
    existing.write_text("another writer's attempt")
    store = RunFolderStore(tmp_path)
    with pytest.raises(RunFolderError, match="never overwritten"):
        asyncio.run(store.save_trial(Task(task_id="a", canonical_index=1, prompt="p"), trial(1)))
    assert existing.read_text() == "another writer's attempt"
    assert [path.name for path in existing.parent.iterdir()] == ["attempt-1.json"]


def test_without_hard_links_attempts_are_still_written_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_links(source: Any, destination: Any) -> None:
        raise PermissionError("this file system has no hard links")

    monkeypatch.setattr(run_folder.os, "link", no_links)
    store = RunFolderStore(tmp_path)
    task = Task(task_id="a", canonical_index=1, prompt="p")
    asyncio.run(store.save_trial(task, trial(1)))
    written = (tmp_path / "task-1" / "attempt-1.json").read_text()
    assert json.loads(written)["attempt_index"] == 1
    with pytest.raises(RunFolderError, match="never overwritten"):
        asyncio.run(store.save_trial(task, trial(1)))
    assert (tmp_path / "task-1" / "attempt-1.json").read_text() == written
    assert [path.name for path in (tmp_path / "task-1").iterdir()] == ["attempt-1.json"]


def test_attempts_of_another_task_at_the_same_index_are_refused(tmp_path: Path) -> None:
    store = RunFolderStore(tmp_path)
    asyncio.run(store.save_trial(Task(task_id="old", canonical_index=3, prompt="p"), trial(1)))
    with pytest.raises(RunFolderError, match=r"'old'.*'new'"):
        asyncio.run(store.load_trials(Task(task_id="new", canonical_index=3, prompt="p")))


def test_summaries_queued_behind_a_slow_write_collapse_to_the_newest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = RunFolderStore(tmp_path)
    task = Task(task_id="a", canonical_index=1, prompt="p")
    release = threading.Event()
    written: list[tuple[str, Any]] = []
    real_write = run_folder.write_json_atomic

    def slow_write(path: Path, data: Any, **options: Any) -> None:
        written.append((path.name, data))
        if len(written) == 1:
            release.wait(5)  # the first file holds the writer while the loop asks for more
        real_write(path, data, **options)

    monkeypatch.setattr(run_folder, "write_json_atomic", slow_write)

    async def scenario() -> None:
        first = asyncio.create_task(store.save_trial(task, trial(1)))
        await asyncio.sleep(0.05)
        refreshes = [
            asyncio.create_task(store.save_task_summary(task, {"version": version}))
            for version in range(1, 6)
        ]
        await asyncio.sleep(0.05)
        release.set()
        await asyncio.gather(first, *refreshes)

    asyncio.run(scenario())
    # The attempt file first, then one summary write carrying the newest of the five.
    assert written == [("attempt-1.json", written[0][1]), ("summary.json", {"version": 5})]
    assert json.loads((tmp_path / "task-1" / "summary.json").read_text()) == {"version": 5}


def test_files_land_in_the_order_they_are_asked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = RunFolderStore(tmp_path)
    task = Task(task_id="a", canonical_index=1, prompt="p")
    order: list[str] = []
    real_write = run_folder.write_json_atomic

    def recording_write(path: Path, data: Any, **options: Any) -> None:
        order.append(f"{path.parent.name}/{path.name}")
        real_write(path, data, **options)

    monkeypatch.setattr(run_folder, "write_json_atomic", recording_write)

    async def scenario() -> None:
        await store.save_task_meta(task, {"task_id": "a"})
        for index in (1, 2):
            await store.save_trial(task, trial(index))
            await store.save_task_summary(task, {"attempts": index})
        await store.save_run_summary({"done": True})

    asyncio.run(scenario())
    assert order == [
        "task-1/task_meta.json",
        "task-1/attempt-1.json",
        "task-1/summary.json",
        "task-1/attempt-2.json",
        "task-1/summary.json",
        f"{tmp_path.name}/summary.json",
    ]


def test_a_failed_write_reaches_the_caller(tmp_path: Path) -> None:
    (tmp_path / "task-1").write_text("a file where the task's folder belongs")
    store = RunFolderStore(tmp_path)
    task = Task(task_id="a", canonical_index=1, prompt="p")
    with pytest.raises(OSError):
        asyncio.run(store.save_task_summary(task, {"attempts": 1}))
    with pytest.raises(OSError):
        asyncio.run(store.save_task_meta(task, {"task_id": "a"}))
    with pytest.raises(OSError) as raised:
        asyncio.run(store.save_trial(task, trial(1)))
    assert not isinstance(raised.value, RunFolderError)  # not an attempt that exists already


# reading


def test_task_stats_are_rebuilt_when_the_summary_is_behind(tmp_path: Path) -> None:
    asyncio.run(
        run_benchmark(make_benchmark(count=1), config(), RunFolderStore(tmp_path), ScriptedClient())
    )
    task_dir = tmp_path / "task-1"
    summary = json.loads((task_dir / "summary.json").read_text())
    summary["attempts"] = summary["attempts"][:1]  # as if the run stopped between the writes
    (task_dir / "summary.json").write_text(json.dumps(summary))
    stats = read_task_stats(1, task_dir)
    assert [attempt.attempt_index for attempt in stats.outcome.attempts] == [1, 2]
    assert stats.outcome.task_id == "t1"
    (task_dir / "summary.json").unlink()
    assert len(read_task_stats(1, task_dir).outcome.attempts) == 2


def test_run_folders_are_found_below_a_root(tmp_path: Path) -> None:
    benchmark = make_benchmark(count=1)
    for metric in ("pass@k", "seq@k"):
        run_config = config(metric=metric)
        folder = run_folder_for(tmp_path, benchmark, run_config)
        asyncio.run(run_benchmark(benchmark, run_config, RunFolderStore(folder), ScriptedClient()))
    found = find_run_folders(tmp_path)
    assert [path.relative_to(tmp_path).parts[1] for path in found] == ["passk", "seqk"]
    assert find_run_folders(found[0]) == [found[0]]
    assert find_run_folders(tmp_path / "memory_bench-2" / "seqk") == [found[1]]
