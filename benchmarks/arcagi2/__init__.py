"""`arcagi2`: ARC-AGI-2 style grid puzzles, verified by exact grid match.

Data: ARC-format task files `<data_dir>/<split>/<id>.json`, each
`{"train": [{"input": grid, "output": grid}, ...], "test": [{"input": grid, "output": grid}, ...]}`
(a grid is a list of rows of ints 0-9), the layout of the ARC-AGI-2 repository's `data/` folder.
An optional `<data_dir>/<split>.txt` lists the task ids in order, one a line (blank lines and
`#` comments skipped); it then fixes which tasks exist and their indices. Without it, every
`*.json` of the split is a task, by file name. Each test pair is one task: its id is the file's
id, with `-<n>` appended when the file has several test pairs. Indices are 1-based in that
order, so appending ids to the order file keeps every earlier index.

Options:
- `data_dir`: the folder holding the splits (from the CLI, a relative path is looked up in the
  working directory, then in this package; in the service only in the operator's data folder,
  GAUNTLET_BENCHMARK_DATA_DIR, and in this package). Default: the small sample bundled in
  `data/`, ten simple puzzles written for this package (not ARC-AGI-2's own tasks).
- `split`: `evaluation` by default.
- `seed`: seeds the offline simulated solvers (app.evaluation.simulated) only; the tasks are
  the same for every seed.

Verification (`VERIFIER = "deterministic"`, no judge model): the last grid-like JSON array in
the reply (prose and code fences allowed) is read with light repairs (trailing commas, single
quotes, integral floats and digit strings as ints) and must equal the expected grid exactly.
The score is 1 for an exact grid and 0 otherwise, the deterministic verifier's score of the
run-folder contract, so pass@k, seq@k and the research harness's best-score curves agree on
what a solved task is. The partial credit, the share of matching cells when the shape is right
(0 otherwise), is kept in `details` as `cell_share`. `raw_eval_output` says only whether a
grid was read and whether it matched.

Feedback mode `cell_match` (besides the generic ones): whether the grid's shape is right and,
if it is, how many cells match (a count and a percentage). It never shows the expected grid,
its shape, or which cells are wrong.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from app.evaluation import simulated
from app.evaluation.benchmark import AttemptView, Task, resolve_data_path
from app.evaluation.jsonish import balanced_spans
from app.evaluation.types import VerifierResult

VERIFIER = "deterministic"
FEEDBACK_MODES = {"cell_match"}
LLM_CRITIC_MODES: set[str] = set()
PATH_OPTIONS = {"data_dir"}

DEFAULT_SPLIT = "evaluation"
BUNDLED_DATA_DIR = Path(__file__).resolve().parent / "data"
MAX_CANDIDATE_CHARS = 100_000  # a grid of 30 x 30 is about 2,000 characters
# How many extra list levels around a grid are unwrapped; hostile nesting stops here.
_MAX_WRAPPING = 2

Grid = list[list[int]]

_TASK_ID = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
_TRAILING_COMMA = re.compile(r",(\s*\])")


class ArcDataError(ValueError):
    """A data folder, order file or task file that does not hold ARC tasks."""


# Grids


def _as_cell(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
        return int(value)
    return None


def as_grid(value: Any) -> Grid | None:
    """`value` as a grid (a non-empty list of non-empty lists of ints), or None.

    Rows may differ in length here: a ragged reply is still the reply's grid, just of no
    valid shape.
    """
    if not isinstance(value, list) or not value:
        return None
    rows: Grid = []
    for row in value:
        if not isinstance(row, list) or not row:
            return None
        cells = [_as_cell(cell) for cell in row]
        if any(cell is None for cell in cells):
            return None
        rows.append([cell for cell in cells if cell is not None])
    return rows


def shape(grid: Grid) -> tuple[int, int] | None:
    """(rows, columns), or None for a ragged grid."""
    widths = {len(row) for row in grid}
    return (len(grid), widths.pop()) if len(widths) == 1 else None


def _check_grid(value: Any, where: str) -> Grid:
    grid = as_grid(value)
    if grid is None or shape(grid) is None:
        raise ArcDataError(f"{where}: not a rectangular grid of integer rows")
    if any(not 0 <= cell <= 9 for row in grid for cell in row):
        raise ArcDataError(f"{where}: cells must be colours 0-9")
    return grid


def render_grid(grid: Grid) -> str:
    """A grid as JSON, one row a line: readable, and what the actor is asked to reply with."""
    rows = ",\n ".join(json.dumps(row, separators=(",", ", ")) for row in grid)
    return f"[{rows}]"


# Reading a grid from a reply


def _top_level_arrays(text: str) -> list[str]:
    """Every balanced `[...]` span that is not inside another one, in order."""
    return balanced_spans(text, "[", "]")


def _load_array(candidate: str) -> Any:
    repaired = _TRAILING_COMMA.sub(r"\1", candidate)
    try:
        return json.loads(repaired)
    except (json.JSONDecodeError, RecursionError):
        pass
    try:
        # Single quotes and Python-style lists; literal_eval evaluates no code.
        return ast.literal_eval(repaired.replace("'", '"'))
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return None


def extract_grid(text: str, *, _depth: int = 0) -> Grid | None:
    """The last grid-like array of a reply, after light repairs; None when there is none.

    A list of grids (`[[[...]]]`) is not a grid; the search then looks inside it for the
    last grid, as a model that wraps its answer in one more list still gave that grid.
    """
    if _depth > _MAX_WRAPPING:
        return None
    for candidate in reversed(_top_level_arrays(text)):
        if len(candidate) > MAX_CANDIDATE_CHARS or not re.match(r"\[\s*\[", candidate):
            continue
        loaded = _load_array(candidate)
        grid = as_grid(loaded)
        if grid is not None:
            return grid
        inner = extract_grid(candidate[1:-1], _depth=_depth + 1)
        if inner is not None:
            return inner
    return None


def compare(expected: Grid, got: Grid | None) -> dict[str, Any]:
    """Private comparison figures: shapes, matching cells."""
    expected_shape = shape(expected)
    if got is None:
        return {"parsed": False, "expected_shape": expected_shape}
    got_shape = shape(got)
    same_shape = got_shape is not None and got_shape == expected_shape
    cells = sum(len(row) for row in expected)
    matching = (
        sum(
            1
            for expected_row, got_row in zip(expected, got, strict=True)
            for want, have in zip(expected_row, got_row, strict=True)
            if want == have
        )
        if same_shape
        else 0
    )
    return {
        "parsed": True,
        "expected_shape": expected_shape,
        "got_shape": got_shape,
        "shape_matches": same_shape,
        "cells": cells,
        "matching_cells": matching,
    }


# Loading tasks


def resolve_data_dir(data_dir: str | Path | None) -> Path:
    if data_dir is None:
        return BUNDLED_DATA_DIR
    return resolve_data_path(
        "data_dir", data_dir, bundled=Path(__file__).resolve().parent, kind="dir"
    )


def slice_name(options: dict[str, Any]) -> str:
    split = str(options.get("split", DEFAULT_SPLIT))
    data_dir = options.get("data_dir")
    bundled = data_dir is None or resolve_data_dir(data_dir) == BUNDLED_DATA_DIR
    name = "arcagi2-sample" if bundled else f"arcagi2-{split}"
    if bundled and split != DEFAULT_SPLIT:
        name += f"-{split}"
    seed = options.get("seed", 0)
    return f"{name}-seed{seed}" if seed != 0 else name


def _task_ids(folder: Path, split: str) -> list[str]:
    order_file = folder / f"{split}.txt"
    split_dir = folder / split
    if not order_file.is_file():
        if not split_dir.is_dir():
            raise ArcDataError(f"no split {split!r} in {folder} (no {split}/ folder)")
        return sorted(path.stem for path in split_dir.glob("*.json"))
    ids: list[str] = []
    for line_number, line in enumerate(order_file.read_text(encoding="utf-8").splitlines(), 1):
        entry = line.split("#", 1)[0].strip()
        if not entry:
            continue
        entry = entry.removesuffix(".json")
        if not _TASK_ID.match(entry):
            raise ArcDataError(f"{order_file.name} line {line_number}: bad task id {entry!r}")
        ids.append(entry)
    repeated = sorted({task_id for task_id in ids if ids.count(task_id) > 1})
    if repeated:
        raise ArcDataError(f"{order_file.name} lists ids more than once: {', '.join(repeated)}")
    return ids


def _load_file(path: Path) -> tuple[list[tuple[Grid, Grid]], list[tuple[Grid, Grid]]]:
    if not path.is_file():
        raise ArcDataError(f"no task file {path}")
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ArcDataError(f"{path.name}: not JSON ({error.msg})") from error
    if not isinstance(document, dict):
        raise ArcDataError(f"{path.name}: expected an object with train and test pairs")
    sections: dict[str, list[tuple[Grid, Grid]]] = {}
    for section in ("train", "test"):
        pairs = document.get(section)
        if not isinstance(pairs, list) or not pairs:
            raise ArcDataError(f"{path.name}: {section} must be a non-empty list of pairs")
        loaded: list[tuple[Grid, Grid]] = []
        for number, pair in enumerate(pairs, 1):
            where = f"{path.name} {section} pair {number}"
            if not isinstance(pair, dict):
                raise ArcDataError(f"{where}: expected an object with input and output")
            if "output" not in pair:
                raise ArcDataError(f"{where}: no output, so it cannot be verified")
            loaded.append(
                (
                    _check_grid(pair.get("input"), f"{where} input"),
                    _check_grid(pair["output"], f"{where} output"),
                )
            )
        sections[section] = loaded
    return sections["train"], sections["test"]


def build_prompt(train: Sequence[tuple[Grid, Grid]], test_input: Grid) -> str:
    parts = [
        "Solve this ARC puzzle. Each grid is a JSON array of rows; each cell is a colour "
        "from 0 to 9. Find the rule that turns every example input into its output, then "
        "apply it to the test input."
    ]
    for number, (example_input, example_output) in enumerate(train, 1):
        parts.append(
            f"Example {number}\nInput:\n{render_grid(example_input)}\n"
            f"Output:\n{render_grid(example_output)}"
        )
    parts.append(f"Test input:\n{render_grid(test_input)}")
    parts.append(
        "Reply with the test output grid as a JSON array of rows of integers. You may explain "
        "your reasoning first: the last grid in your reply is taken as your answer."
    )
    return "\n\n".join(parts)


# What the simulated solvers are told (app.evaluation.simulated); never seen by the actor.


def _difficulty(answer: Grid) -> float:
    # Bigger outputs have more cells to get wrong; the bundled puzzles land near 0.2-0.4.
    cells = sum(len(row) for row in answer)
    return min(0.9, 0.15 + cells / 150)


def _near_misses(answer: Grid, test_input: Grid) -> list[Grid]:
    """Plausible wrong grids: one cell off, a quarter of the cells off, the input unchanged,
    the answer transposed; never the answer itself."""
    one_off = [list(row) for row in answer]
    one_off[0][0] = (one_off[0][0] + 1) % 10
    quarter_off = [list(row) for row in answer]
    cells = [(y, x) for y, row in enumerate(answer) for x in range(len(row))]
    for y, x in cells[::4]:
        quarter_off[y][x] = (quarter_off[y][x] + 5) % 10
    transposed = [list(row) for row in zip(*answer, strict=True)]
    candidates = [one_off, quarter_off, test_input, transposed]
    unique: list[Grid] = []
    for grid in candidates:
        if grid != answer and grid not in unique:
            unique.append(grid)
    return unique


def _register_simulation(prompt: str, answer: Grid, test_input: Grid, seed: int) -> None:
    compact = json.dumps(answer, separators=(",", ":"))
    # Renderings a real model might give, so the repairs of `extract_grid` are exercised.
    correct = [
        f"The rule applied to the test input gives:\n```json\n{render_grid(answer)}\n```",
        f"Output grid: {compact.replace(']', ',]')}",
    ]
    wrong = [
        f"The rule applied to the test input gives:\n```json\n{render_grid(grid)}\n```"
        for grid in _near_misses(answer, test_input)
    ]
    wrong.append("I could not work out the rule for this puzzle.")
    simulated.register_task(
        prompt, correct=correct, wrong=wrong, difficulty=_difficulty(answer), seed=seed
    )


def load_tasks(
    data_dir: str | None = None, split: str = DEFAULT_SPLIT, seed: int = 0
) -> Iterator[Task]:
    """The split's test pairs, one task each, lazily (one file read at a time)."""
    if not isinstance(split, str) or not _TASK_ID.match(split):
        raise ArcDataError(f"split must be a plain folder name, got {split!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ArcDataError(f"seed must be an int, got {seed!r}")
    folder = resolve_data_dir(data_dir)
    if not folder.is_dir():
        raise ArcDataError(f"no ARC data folder at {data_dir!r}")
    index = 0
    for arc_id in _task_ids(folder, split):
        train, tests = _load_file(folder / split / f"{arc_id}.json")
        for test_number, (test_input, answer) in enumerate(tests, 1):
            index += 1
            prompt = build_prompt(train, test_input)
            _register_simulation(prompt, answer, test_input, seed)
            yield Task(
                task_id=arc_id if len(tests) == 1 else f"{arc_id}-{test_number}",
                canonical_index=index,
                prompt=prompt,
                answer=answer,
                metadata={
                    "arc_id": arc_id,
                    "split": split,
                    "test_pair": test_number,
                    "train_pairs": len(train),
                    "test_input_shape": list(shape(test_input) or ()),
                },
            )


# Verification and feedback


def verify(task: Task, attempt: AttemptView, *, judge_model: str | None) -> VerifierResult:
    expected: Grid = task.answer
    got = extract_grid(attempt.output)
    figures = compare(expected, got)
    if got is None:
        return VerifierResult(
            success=False,
            score=0.0,
            raw_eval_output="no grid could be read from the output",
            details={**figures, "cell_share": 0.0},
        )
    success = got == expected
    share = figures["matching_cells"] / figures["cells"] if figures["shape_matches"] else 0.0
    return VerifierResult(
        success=success,
        score=1.0 if success else 0.0,
        raw_eval_output=(
            "the output grid matches the expected grid"
            if success
            else "the output grid does not match the expected grid"
        ),
        details={**figures, "cell_share": share, "got": got},
    )


def feedback(
    task: Task,
    attempt: AttemptView,
    result: VerifierResult,
    mode: str,
    *,
    critic_model: str | None,
) -> str:
    """`cell_match`: the shape verdict and the share of matching cells, recomputed from the
    output (not read from `result.details`, which is private)."""
    if mode != "cell_match":
        raise ValueError(f"arcagi2 has no feedback mode {mode!r}")
    got = extract_grid(attempt.output)
    if got is None:
        return (
            "No grid could be read from your reply. End it with the grid as a JSON array of "
            "rows of integers."
        )
    figures = compare(task.answer, got)
    if figures["got_shape"] is None:
        return "Your grid's rows differ in length; the output grid must be rectangular."
    if not figures["shape_matches"]:
        rows, columns = figures["got_shape"]
        return f"Your grid is {rows}x{columns}, which is not the shape of the expected output."
    matching, cells = figures["matching_cells"], figures["cells"]
    if matching == cells:
        return "Your grid matches the expected output."
    return (
        f"Shape correct; {matching} of {cells} cells ({round(100 * matching / cells)}%) match "
        "the expected output."
    )
