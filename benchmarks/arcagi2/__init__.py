"""`arcagi2`: ARC-AGI-2 grid puzzles, verified by exact grid match, worded as seq_k words them.

The prompts, the replies' reading, the verdicts and the feedback are those of the seq_k research
harness's `benchmarks/arcagi2` (re-implemented here, not copied): the same task and reply give
the same prompt, the same verdict and details, and the same feedback text, byte for byte, so a
run here measures what a seq_k run measures (tests/fixtures/seq_k holds runs seq_k made).

Data: ARC-format task files `<data_dir>/<split>/<id>.json`, each
`{"train": [{"input": grid, "output": grid}, ...], "test": [{"input": grid, "output": grid}, ...]}`
(a grid is a list of rows of ints 0-9), the layout of the ARC-AGI-2 repository's `data/` folder.
An optional `<data_dir>/<split>.txt` lists the task ids in order, one a line (blank lines and
`#` comments skipped); it then fixes which tasks exist and their indices. Without it, every
`*.json` of the split is a task, by file name. A file is one task, whatever its number of test
pairs: the prompt gives every test input and the reply must give every output. Indices are
1-based in that order, so appending ids to the order file keeps every earlier index.

Options:
- `data_dir`: the folder holding the splits (from the CLI, a relative path is looked up in the
  working directory, then in this package; in the service only in the operator's data folder,
  GAUNTLET_BENCHMARK_DATA_DIR, and in this package). Default: the small sample bundled in
  `data/`, ten simple puzzles written for this package (not ARC-AGI-2's own tasks).
- `split`: `evaluation` by default.
- `seed`: seeds the offline simulated solvers (app.evaluation.engine.simulated) only; the tasks are
  the same for every seed.

The prompt: an introduction, the training pairs (`--Example i--`, 0-based, each grid as
`json.dumps` writes it), the test input(s) and the instruction to answer with only a JSON object
whose key `test` maps to the output grids, in order.

Reading a reply (`read_prediction`): the JSON of its first fenced block holding an object or
an array, else from its first `{` to its last `}` (or `[` to `]`), else the whole reply; read
as JSON, else after light repairs (typographic quotes and punctuation, missing commas between
`]`/`}` and `[`/`{`, trailing or doubled commas, missing closing brackets), else its first JSON
value. The grids are the object's `test` (else `output`), or the list itself (a list of
`{"output": grid}` too, and for one test input a bare grid). When that fails, the reply's
numbers 0-9 in order, as many as the expected grids' cells, are read as the grids of the
expected shapes (`digit_stream_repair`). A reply read neither way is a failed attempt with a
format hint, not an error of the run.

Verification (`VERIFIER = "deterministic"`, no judge model): success when every test grid
matches exactly; score 1 or 0. `raw_eval_output`: empty on a success; otherwise
`incorrect_output` and one line per test grid (its size right or not and, when right, the share
of its cells that match; never the expected grid), after any format warnings. `details`:
`parse_method` (`json`, `digit_stream_repair`, or `failed` with `parse_error`), `comparison`
(per test grid: `size_match`, `exact_match`, `mismatch_count`, `total_cells`,
`cell_accuracy`) and `prediction`.

Feedback modes (they replace the generic ones of the same name): `binary`, a fixed sentence
that the answer did not match; `cell_match`, the verifier's public output above.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from app.evaluation.engine import simulated
from app.evaluation.engine.benchmark import AttemptView, Task, resolve_data_path
from app.evaluation.engine.types import VerifierResult

VERIFIER = "deterministic"
FEEDBACK_MODES = {"binary", "cell_match"}
LLM_CRITIC_MODES: set[str] = set()
PATH_OPTIONS = {"data_dir"}

DEFAULT_SPLIT = "evaluation"
BUNDLED_DATA_DIR = Path(__file__).resolve().parent / "data"
STATUS_LINES = 8  # the most per-grid lines a cell-match verdict gives

Grid = list[list[int]]

_TASK_ID = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


class ArcDataError(ValueError):
    """A data folder, order file or task file that does not hold ARC tasks."""


# The wording, seq_k's to the byte.

PUZZLE_INTRO = (
    "You are participating in a puzzle solving competition. You are an expert at solving "
    "puzzles.\n\nBelow is a list of input and output pairs with a pattern. Your goal is to "
    "identify the pattern or transformation in the training examples that maps the input to "
    "the output, then apply that pattern to the test input to give a final output."
)
ANSWER_FORMAT = (
    'Your final response must be only a JSON object with key "test" that maps to a list of '
    "output grids, one per test input in order. Each output grid should use the same "
    "list-of-lists format as the training outputs, with integer cells from 0 to 9. Do not "
    "include markdown or explanation."
)
BINARY_FEEDBACK = (
    "Your previous answer did not exactly match the expected output grid(s). Re-examine the "
    "transformation and try again."
)
# The simulated solvers take it for what it is: a pass/fail bit, no more informative.
simulated.declare_binary_feedback(BINARY_FEEDBACK)
CORRECT = "correct_output"
INCORRECT = "incorrect_output"
STATUS_CAPPED = "...truncated remaining grid status (cap={cap})."
UNREADABLE = "format_error: could not parse your response as valid grid JSON."
UNREADABLE_HINT = (
    'hint: return a JSON object with key "test" mapping to a list of grids. Each grid is a '
    "list of lists of integers 0-9. No markdown."
)
GRID_COUNT_HINT = "hint: expected {count} test output grid(s)."
SIZE_WARNING = (
    "format_warning: Output grid {number} is {rows}x{columns}, but the expected size differs "
    "— check the transformation rule."
)
RAGGED_WARNING = "format_warning: Output grid {number} has inconsistent row widths."
# What a reply that cannot be read is told, in `details.parse_error`.
NO_JSON = "could not parse a JSON object/array from the response"
NOT_GRIDS = "output JSON must be a list of grids or an object with 'test'"
GRID_COUNT = "expected {count} test outputs, got {got}"
EMPTY_GRID = "grid must be a non-empty list of non-empty rows"
RAGGED_GRID = "grid rows must all be the same length"
BAD_CELL = "grid cells must be integers 0-9"


# The data


def _data_grid(value: Any, where: str) -> Grid:
    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(row, list) and row for row in value)
    ):
        raise ArcDataError(f"{where}: not a rectangular grid of integer rows")
    if len({len(row) for row in value}) != 1 or any(
        isinstance(cell, bool) or not isinstance(cell, int) for row in value for cell in row
    ):
        raise ArcDataError(f"{where}: not a rectangular grid of integer rows")
    if any(not 0 <= cell <= 9 for row in value for cell in row):
        raise ArcDataError(f"{where}: cells must be colours 0-9")
    return value


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


Pairs = list[tuple[Grid, Grid]]


def _load_file(path: Path) -> tuple[Pairs, Pairs]:
    if not path.is_file():
        raise ArcDataError(f"no task file {path}")
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ArcDataError(f"{path.name}: not JSON ({error.msg})") from error
    if not isinstance(document, dict):
        raise ArcDataError(f"{path.name}: expected an object with train and test pairs")
    sections: dict[str, Pairs] = {}
    for section in ("train", "test"):
        pairs = document.get(section)
        if not isinstance(pairs, list) or not pairs:
            raise ArcDataError(f"{path.name}: {section} must be a non-empty list of pairs")
        loaded: Pairs = []
        for number, pair in enumerate(pairs, 1):
            where = f"{path.name} {section} pair {number}"
            if not isinstance(pair, dict):
                raise ArcDataError(f"{where}: expected an object with input and output")
            if "output" not in pair:
                raise ArcDataError(f"{where}: no output, so it cannot be verified")
            loaded.append(
                (
                    _data_grid(pair.get("input"), f"{where} input"),
                    _data_grid(pair["output"], f"{where} output"),
                )
            )
        sections[section] = loaded
    return sections["train"], sections["test"]


def build_prompt(train: Sequence[tuple[Grid, Grid]], test_inputs: Sequence[Grid]) -> str:
    """The task's prompt, as seq_k's `format_problem` lays it out."""
    examples: list[str] = []
    for number, (example_input, example_output) in enumerate(train):
        examples += [f"--Example {number}--", "", "INPUT:", "", json.dumps(example_input)]
        examples += ["", "OUTPUT:", "", json.dumps(example_output), ""]
    if len(test_inputs) == 1:
        tests = [json.dumps(test_inputs[0])]
        opening, closing = "--Test Input--", "--End of Test Input--"
    else:
        tests = []
        for number, test_input in enumerate(test_inputs):
            tests += [f"--Test Input {number}--", "", json.dumps(test_input), ""]
        opening, closing = "--Test Inputs--", "--End of Test Inputs--"
    return "\n".join(
        [
            PUZZLE_INTRO,
            "",
            "--Training Examples--",
            "\n".join(examples).rstrip(),
            "--End of Training Examples--",
            "",
            opening,
            "\n".join(tests).rstrip(),
            closing,
            "",
            ANSWER_FORMAT,
        ]
    )


# What the simulated solvers are told (app.evaluation.engine.simulated); never seen by the actor.


def _difficulty(answers: Sequence[Grid]) -> float:
    # Bigger outputs have more cells to get wrong; the bundled puzzles land near 0.2-0.4.
    cells = sum(len(row) for answer in answers for row in answer)
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
    unique: list[Grid] = []
    for grid in (one_off, quarter_off, test_input, transposed):
        if grid != answer and grid not in unique:
            unique.append(grid)
    return unique


def _register_simulation(
    prompt: str, answers: list[Grid], test_inputs: list[Grid], seed: int
) -> None:
    # Replies a real model might give, so the reading of `read_prediction` is exercised.
    correct = [
        json.dumps({"test": answers}),
        "```json\n" + json.dumps({"test": answers}, indent=1) + "\n```",
    ]
    wrong = [
        json.dumps({"test": [grid, *answers[1:]]})
        for grid in _near_misses(answers[0], test_inputs[0])
    ]
    wrong.append("I could not work out the rule for this puzzle.")
    simulated.register_task(
        prompt, correct=correct, wrong=wrong, difficulty=_difficulty(answers), seed=seed
    )


def load_tasks(
    data_dir: str | None = None, split: str = DEFAULT_SPLIT, seed: int = 0
) -> Iterator[Task]:
    """The split's task files, one task each, lazily (one file read at a time)."""
    if not isinstance(split, str) or not _TASK_ID.match(split):
        raise ArcDataError(f"split must be a plain folder name, got {split!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ArcDataError(f"seed must be an int, got {seed!r}")
    folder = resolve_data_dir(data_dir)
    if not folder.is_dir():
        raise ArcDataError(f"no ARC data folder at {data_dir!r}")
    for index, arc_id in enumerate(_task_ids(folder, split), 1):
        train, tests = _load_file(folder / split / f"{arc_id}.json")
        test_inputs = [test_input for test_input, _ in tests]
        answers = [answer for _, answer in tests]
        prompt = build_prompt(train, test_inputs)
        _register_simulation(prompt, answers, test_inputs, seed)
        yield Task(
            task_id=arc_id,
            canonical_index=index,
            prompt=prompt,
            answer=answers,
            metadata={
                "arc_id": arc_id,
                "split": split,
                "train_pairs": len(train),
                "test_pairs": len(tests),
            },
        )


# Reading a reply

_FENCE = "```"
# `json` as a case-blind regular expression reads it: U+017F, the long s, folds to `s`.
_JSON_TAG = ("jJ", "sS\u017f", "oO", "nN")
_CLOSERS = {"{": "}", "[": "]"}
# Curly quotes, a no-break space, a full-width comma and colon.
_TYPOGRAPHY = str.maketrans(
    {
        "\u201c": '"',
        "\u201d": '"',
        "\u2018": "'",
        "\u2019": "'",
        "\u00a0": " ",
        "\uff0c": ",",
        "\uff1a": ":",
    }
)
_MISSING_COMMA = re.compile(r"([\]}])\s*([\[{])")
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_DOUBLED_COMMA = re.compile(r",\s*,+")
_NUMBER = re.compile(r"-?\d+")


def _skip_space(text: str, position: int) -> int:
    while position < len(text) and text[position].isspace():
        position += 1
    return position


def fenced_json(text: str) -> str | None:
    """The first fenced block that holds a JSON object or array: from the first "```" that an
    optional `json` tag and whitespace separate from a `{` or `[`, up to the first closing
    bracket of that kind that whitespace separates from a further "```". What the pattern
    ```` ```(?:json)?\\s*(\\{.*?\\}|\\[.*?\\])\\s*``` ```` (dot-all, case-blind) finds, found in
    time linear in the reply: a regular expression takes quadratic time on replies holding
    many fences that never close, and replies are the actor's to write."""
    fences: list[int] = []
    start = text.find(_FENCE)
    while start >= 0:
        fences.append(start)
        start = text.find(_FENCE, start + 1)
    # A closing bracket counts where only whitespace stands between it and a fence.
    closing: dict[str, list[int]] = {"}": [], "]": []}
    for fence in fences:
        before = fence - 1
        while before >= 0 and text[before].isspace():
            before -= 1
        if before >= 0 and text[before] in closing:
            closing[text[before]].append(before)
    for fence in fences:
        after = fence + len(_FENCE)
        tagged = len(text) >= after + 4 and all(
            text[after + offset] in letters for offset, letters in enumerate(_JSON_TAG)
        )
        opening = _skip_space(text, after + 4 if tagged else after)
        if opening >= len(text) or text[opening] not in _CLOSERS:
            continue
        ends = closing[_CLOSERS[text[opening]]]
        found = bisect.bisect_right(ends, opening)
        if found < len(ends):
            return text[opening : ends[found] + 1].strip()
    return None


def json_text(reply: str) -> str:
    """The part of a reply that should hold its JSON (see the module docstring)."""
    text = str(reply or "")
    fenced = fenced_json(text)
    if fenced is not None:
        return fenced
    for opening, closing in _CLOSERS.items():
        start, end = text.find(opening), text.rfind(closing)
        if start != -1 and end > start:
            return text[start : end + 1].strip()
    return text.strip()


def repaired_json_text(text: str) -> str:
    """`text` with the light repairs of the module docstring."""
    repaired = str(text or "").strip()
    if not repaired:
        return repaired
    repaired = repaired.translate(_TYPOGRAPHY)
    for _ in range(4):
        before = repaired
        repaired = _MISSING_COMMA.sub(r"\1,\2", repaired)
        repaired = _TRAILING_COMMA.sub(r"\1", repaired)
        repaired = _DOUBLED_COMMA.sub(",", repaired)
        if repaired == before:
            break
    missing = repaired.count("[") - repaired.count("]")
    if missing > 0:
        # Before the closing braces that end the text, if any (`{"test": [[1]}`).
        braces = len(repaired) - len(repaired.rstrip("}"))
        cut = len(repaired) - braces if braces else len(repaired)
        repaired = repaired[:cut] + "]" * missing + repaired[cut:]
    unclosed = repaired.count("{") - repaired.count("}")
    if unclosed > 0:
        repaired += "}" * unclosed
    return repaired


def _load_payload(reply: str) -> Any:
    for candidate in (json_text(reply), str(reply or "").strip()):
        if not candidate:
            continue
        for text in (candidate, repaired_json_text(candidate)):
            try:
                return json.loads(text)
            except json.JSONDecodeError:
                try:
                    value, _ = json.JSONDecoder().raw_decode(text.lstrip())
                except json.JSONDecodeError:
                    continue
                if isinstance(value, dict | list):
                    return value
    raise ValueError(NO_JSON)


def _is_grid(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(row, list) and bool(row) for row in value)
    )


def _checked_grid(value: Any) -> Grid:
    if not _is_grid(value):
        raise ValueError(EMPTY_GRID)
    width = len(value[0])
    for row in value:
        if len(row) != width:
            raise ValueError(RAGGED_GRID)
        for cell in row:
            # As seq_k reads them: JSON's true and false pass for 1 and 0.
            if not isinstance(cell, int) or not 0 <= cell <= 9:
                raise ValueError(BAD_CELL)
    grid: Grid = value
    return grid


def _grids(value: Any, count: int) -> list[Grid]:
    if isinstance(value, dict):
        value = value.get("test", value.get("output", value))
    if not isinstance(value, list):
        raise ValueError(NOT_GRIDS)
    if value and all(isinstance(item, dict) and "output" in item for item in value):
        value = [item["output"] for item in value]
    grid_list = bool(value) and all(_is_grid(item) for item in value)
    if count == 1 and _is_grid(value) and not grid_list:
        return [_checked_grid(value)]
    if len(value) != count:
        raise ValueError(GRID_COUNT.format(count=count, got=len(value)))
    return [_checked_grid(grid) for grid in value]


def _shape(grid: Grid) -> tuple[int, int]:
    return len(grid), len(grid[0]) if grid else 0


def _from_digits(reply: str, expected: Sequence[Grid]) -> list[Grid] | None:
    shapes = [_shape(grid) for grid in expected]
    cells = sum(rows * columns for rows, columns in shapes)
    if cells <= 0:
        return None
    digits = [number for number in map(int, _NUMBER.findall(json_text(reply))) if 0 <= number <= 9]
    if len(digits) < cells:
        return None
    grids: list[Grid] = []
    offset = 0
    for rows, columns in shapes:
        grid: Grid = []
        for _ in range(rows):
            grid.append(digits[offset : offset + columns])
            offset += columns
        grids.append(grid)
    return grids


def read_prediction(reply: str, expected: Sequence[Grid]) -> tuple[list[Grid], str]:
    """The reply's grids and how they were read (`json` or `digit_stream_repair`); raises with
    the reason it was read neither way (the module docstring says how)."""
    try:
        return _grids(_load_payload(reply), len(expected)), "json"
    except Exception:
        recovered = _from_digits(reply, expected)
        if recovered is None:
            raise
        return recovered, "digit_stream_repair"


# Comparison and feedback


def compare(prediction: Sequence[Grid], expected: Sequence[Grid]) -> dict[str, Any]:
    """Private per-grid figures: size, exact match, mismatching cells, cell accuracy."""
    report: dict[str, Any] = {"all_correct": True, "tests": []}
    for index, want in enumerate(expected):
        got = prediction[index]
        figures: dict[str, Any] = {
            "test_index": index,
            "size_match": _shape(got) == _shape(want),
            "exact_match": False,
            "mismatch_count": 0,
        }
        report["tests"].append(figures)
        if not figures["size_match"]:
            report["all_correct"] = False
            continue
        rows, columns = _shape(want)
        total = rows * columns
        mismatches = sum(1 for y in range(rows) for x in range(columns) if got[y][x] != want[y][x])
        figures["total_cells"] = total
        if mismatches:
            report["all_correct"] = False
            figures["mismatch_count"] = mismatches
            figures["cell_accuracy"] = (total - mismatches) / total if total else 0.0
        else:
            figures["exact_match"] = True
            figures["cell_accuracy"] = 1.0
    return report


def cell_match_text(report: dict[str, Any], cap: int = STATUS_LINES) -> str:
    """The public verdict on a comparison: per grid its size verdict and, when the size is
    right, the share of matching cells; never the expected grid."""
    if report.get("all_correct"):
        return CORRECT
    tests = report.get("tests", [])
    lines = [INCORRECT]
    for shown, figures in enumerate(tests):
        if shown >= cap:
            lines.append(STATUS_CAPPED.format(cap=cap))
            break
        label = "Output grid" if len(tests) == 1 else f"Output grid {figures['test_index'] + 1}"
        if figures.get("exact_match"):
            lines.append(f"{label}: size correct: True; content match accuracy: 100.00%.")
        elif not figures.get("size_match"):
            lines.append(f"{label}: size correct: False.")
        else:
            total = int(figures.get("total_cells", 0))
            matching = total - int(figures.get("mismatch_count", 0))
            accuracy = figures.get("cell_accuracy", 0.0)
            lines.append(
                f"{label}: size correct: True; content match accuracy: {accuracy:.2%} "
                f"({matching} of {total} cells match)."
            )
    return "\n".join(lines)


def _format_warnings(prediction: Sequence[Grid], expected: Sequence[Grid]) -> str:
    warnings: list[str] = []
    for index, got in enumerate(prediction):
        rows, columns = _shape(got)
        if (rows, columns) != _shape(expected[index]):
            warnings.append(SIZE_WARNING.format(number=index + 1, rows=rows, columns=columns))
        if len({len(row) for row in got}) > 1:
            warnings.append(RAGGED_WARNING.format(number=index + 1))
    return "\n".join(warnings)


def _unreadable_text(count: int) -> str:
    lines = [UNREADABLE, UNREADABLE_HINT]
    if count != 1:
        lines.append(GRID_COUNT_HINT.format(count=count))
    return "\n".join(lines)


def verify(task: Task, attempt: AttemptView, *, judge_model: str | None) -> VerifierResult:
    expected: list[Grid] = task.answer
    try:
        prediction, method = read_prediction(attempt.output or "", expected)
    except Exception as error:
        return VerifierResult(
            success=False,
            score=0.0,
            raw_eval_output=_unreadable_text(len(expected)),
            details={"parse_method": "failed", "parse_error": str(error)},
        )
    report = compare(prediction, expected)
    success = bool(report["all_correct"])
    public = "" if success else cell_match_text(report)
    warnings = _format_warnings(prediction, expected)
    if warnings and not success:
        public = f"{warnings}\n{public}"
    return VerifierResult(
        success=success,
        score=1.0 if success else 0.0,
        raw_eval_output=public,
        details={"parse_method": method, "comparison": report, "prediction": prediction},
    )


def feedback(
    task: Task,
    attempt: AttemptView,
    result: VerifierResult,
    mode: str,
    *,
    critic_model: str | None,
) -> str:
    """`binary`: that the answer did not match; `cell_match`: the verifier's public verdict
    (sizes and shares of matching cells, or the format hint)."""
    if mode == "binary":
        return BINARY_FEEDBACK
    if mode == "cell_match":
        return result.raw_eval_output
    raise ValueError(f"arcagi2 has no feedback mode {mode!r}")
