"""`jsonl`: any local JSONL dataset, one task a row.

Options: `path` (the file, default `example.jsonl`, bundled with this package; from the CLI a
relative path is looked up in the working directory, then in this package; in the service only
in the operator's data folder, GAUNTLET_BENCHMARK_DATA_DIR, and in this package), `judge_votes`
(default 1) and `judge_pass_threshold` (0-10, default 7) for rows graded by the LLM judge.

Each row is a JSON object with a `prompt` and exactly one way to grade it:

- `correct_keywords` (and optional `incorrect_patterns`, `pass_threshold`): the correct-first
  rubric of app.evaluation.engine.verifiers.RubricVerifier; the score is the share of keywords
  found, so rubric rows give graded scores;
- `regex`: passes when the regular expression matches anywhere in the output (any case);
- `answer`: a string (or a list of accepted strings) the whole output must equal, compared with
  whitespace collapsed and case folded;
- `criteria`: judged by the LLM judge (`judge_model`, needed for such rows) against the
  criteria, with the row's prompt as the goal.

Optional: `id` (the task id; default `row-N`), `hint` (public help text, given as feedback by
the `hint` mode) and any other keys, kept as the task's metadata. Rows are numbered 1, 2, ...
in file order, blank lines skipped: append rows to keep earlier indices stable.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from app.evaluation.engine.benchmark import AttemptView, Task, resolve_data_path, run_model_client
from app.evaluation.engine.feedback import render_feedback
from app.evaluation.engine.types import VerifierResult
from app.evaluation.engine.verifiers import (
    JUDGE_RUBRIC_MAX_CHARS,
    LLMJudgeConfig,
    LLMJudgeVerifier,
    RegexConfig,
    RegexVerifier,
    RubricConfig,
    RubricVerifier,
)

# Each row says how it is graded: rules (a rubric's share of keywords, a regex, an exact
# answer) or, for rows with `criteria`, the judge model (the others' judge.model is null).
VERIFIER = "per_row"
USES_JUDGE_MODEL = True
FEEDBACK_MODES = {"hint"}
LLM_CRITIC_MODES: set[str] = set()
PATH_OPTIONS = {"path"}

DEFAULT_PATH = "example.jsonl"
_PACKAGE_DIR = Path(__file__).resolve().parent
_GRADING_KEYS = ("correct_keywords", "regex", "answer", "criteria")
_RUBRIC_KEYS = ("correct_keywords", "incorrect_patterns", "pass_threshold")
_RESERVED_KEYS = {"id", "prompt", "hint", *_GRADING_KEYS, *_RUBRIC_KEYS}


class DatasetError(ValueError):
    """A row that does not say how to grade it, or a file that is not JSONL."""


def resolve_path(path: str | Path) -> Path:
    return resolve_data_path("path", path, bundled=_PACKAGE_DIR, kind="file")


def slice_name(options: dict[str, Any]) -> str:
    return f"jsonl-{Path(str(options.get('path', DEFAULT_PATH))).stem}"


def normalize(text: str) -> str:
    return " ".join(text.split()).casefold()


def _answer_key(row: dict[str, Any], where: str) -> dict[str, Any]:
    kinds = [key for key in _GRADING_KEYS if key in row]
    if len(kinds) != 1:
        found = ", ".join(kinds) if kinds else "none"
        raise DatasetError(
            f"{where}: give exactly one of {', '.join(_GRADING_KEYS)} (found: {found})"
        )
    kind = kinds[0]
    try:
        if kind == "correct_keywords":
            config = RubricConfig(**{key: row[key] for key in _RUBRIC_KEYS if key in row})
            return {"kind": "rubric", **config.model_dump(exclude={"type"})}
        if kind == "regex":
            return {"kind": "regex", "pattern": RegexConfig(pattern=row["regex"]).pattern}
    except ValidationError as error:
        raise DatasetError(f"{where}: {error}") from error
    if kind == "answer":
        accepted = row["answer"] if isinstance(row["answer"], list) else [row["answer"]]
        if not accepted or not all(isinstance(item, str | int | float) for item in accepted):
            raise DatasetError(f"{where}: answer must be a string, a number or a list of them")
        return {"kind": "answer", "accepted": [str(item) for item in accepted]}
    criteria = row["criteria"]
    if not isinstance(criteria, str) or not criteria.strip():
        raise DatasetError(f"{where}: criteria must be non-empty text")
    if len(criteria) > JUDGE_RUBRIC_MAX_CHARS:
        raise DatasetError(f"{where}: criteria must be at most {JUDGE_RUBRIC_MAX_CHARS} characters")
    return {"kind": "criteria", "criteria": criteria}


def load_tasks(
    path: str = DEFAULT_PATH, judge_votes: int = 1, judge_pass_threshold: float = 7.0
) -> Iterator[Task]:
    """The rows of `path`, lazily: a dataset of any size streams through the runner."""
    file = resolve_path(path)
    if not file.is_file():
        raise DatasetError(
            f"no JSONL file at {path!r} (looked in the working directory and {_PACKAGE_DIR})"
        )
    index = 0
    with file.open(encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            index += 1
            where = f"{file.name} line {line_number}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as error:
                raise DatasetError(f"{where}: not JSON ({error.msg})") from error
            if not isinstance(row, dict):
                raise DatasetError(f"{where}: a row must be a JSON object")
            prompt = row.get("prompt")
            if not isinstance(prompt, str) or not prompt.strip():
                raise DatasetError(f"{where}: prompt must be non-empty text")
            hint = row.get("hint")
            if hint is not None and not isinstance(hint, str):
                raise DatasetError(f"{where}: hint must be text")
            answer = _answer_key(row, where)
            answer["judge_votes"] = judge_votes
            answer["judge_pass_threshold"] = judge_pass_threshold
            metadata = {key: value for key, value in row.items() if key not in _RESERVED_KEYS}
            metadata["grading"] = answer["kind"]
            if hint is not None:
                metadata["hint"] = hint
            yield Task(
                task_id=str(row.get("id") or f"row-{index}"),
                canonical_index=index,
                prompt=prompt,
                answer=answer,
                metadata=metadata,
            )


def _exact(accepted: list[str], output: str) -> VerifierResult:
    normalized = normalize(output)
    matched = any(normalize(item) == normalized for item in accepted)
    return VerifierResult(
        success=matched,
        score=1.0 if matched else 0.0,
        raw_eval_output=(
            "the output is the expected answer"
            if matched
            else "the output is not the expected answer (compared ignoring case and spacing)"
        ),
        details={"accepted": accepted, "normalized_output": normalized[:200]},
    )


async def verify(task: Task, attempt: AttemptView, *, judge_model: str | None) -> VerifierResult:
    key: dict[str, Any] = task.answer
    kind = key["kind"]
    if kind == "rubric":
        config = RubricConfig(
            correct_keywords=key["correct_keywords"],
            incorrect_patterns=key["incorrect_patterns"],
            pass_threshold=key["pass_threshold"],
        )
        return await RubricVerifier(config).verify(attempt.output)
    if kind == "regex":
        return await RegexVerifier(RegexConfig(pattern=key["pattern"])).verify(attempt.output)
    if kind == "answer":
        return _exact(key["accepted"], attempt.output)
    if judge_model is None:
        raise DatasetError(
            f"task {task.canonical_index} ({task.task_id}) is graded by criteria: set judge_model"
        )
    judge = LLMJudgeVerifier(
        LLMJudgeConfig(
            model=judge_model,
            rubric=key["criteria"],
            votes=key["judge_votes"],
            pass_threshold=key["judge_pass_threshold"],
        ),
        goal=task.prompt,
        llm=run_model_client,
    )
    return await judge.verify(attempt.output)


def feedback(
    task: Task,
    attempt: AttemptView,
    result: VerifierResult,
    mode: str,
    *,
    critic_model: str | None,
) -> str:
    """`hint`: the row's public hint, after the verifier's public verdict; rows without a hint
    get the verdict alone."""
    if mode != "hint":
        raise ValueError(f"jsonl has no feedback mode {mode!r}")
    verdict = render_feedback("raw", result)
    hint = task.metadata.get("hint")
    return f"{verdict}\nHint: {hint}" if isinstance(hint, str) and hint.strip() else verdict
