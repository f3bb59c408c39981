"""`gauntlet eval ...`: run benchmark variants into run folders, read their metrics, inspect them.

    gauntlet eval run VARIANT.yaml [--runs-root ./runs] [--continue] [--prices FILE]
    gauntlet eval metrics PATH|s3://BUCKET/PREFIX [--k K] [--json] [--prices FILE]
    gauntlet eval inspect PATH|s3://... (--task-index N | --task-id ID) [--attempt M] [--json]

Adding a subcommand is one function and one line: write `register_<name>(commands)` that adds
its parser with `commands.add_parser(...)` and sets `handler=` (a function taking the parsed
arguments and returning the exit code; import heavy modules inside it), then list it in
`SUBCOMMANDS`. Module-level imports here stay light: `gauntlet` builds this parser on every
start, and `metrics` / `inspect` never import litellm.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

# Both keep matplotlib and boto3 imports inside their commands, so this stays light.
from app.evaluation import plot, upload

if TYPE_CHECKING:
    from app.evaluation.metrics import Price
    from app.evaluation.runner import RunConfig, RunEvent
    from app.outbound.policy import OutboundPolicy

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
DEFAULT_CHAR_LIMIT = 1000
DEFAULT_CONCURRENCY = 50
PROGRESS_INTERVAL_S = 2.0  # how often a non-terminal stderr gets a progress line


class CliError(Exception):
    """A problem the user can fix (a bad variant, a missing folder); printed without a trace."""


# Variants


def _load_yaml(path: Path) -> Any:
    import yaml

    try:
        with path.open(encoding="utf-8") as handle:
            return yaml.safe_load(handle)
    except FileNotFoundError:
        raise CliError(f"no such file: {path}") from None
    except yaml.YAMLError as error:
        raise CliError(f"{path} is not valid YAML: {error}") from None


def load_prices(source: Any, *, base: Path | None = None) -> dict[str, Price]:
    """Price overrides from a YAML file path or an inline mapping (a variant's `prices`)."""
    from app.evaluation.metrics import parse_prices

    if source is None:
        return {}
    if isinstance(source, str | Path):
        path = Path(source)
        if base is not None and not path.is_absolute() and not path.exists():
            path = base / path
        data = _load_yaml(path)
        label = str(path)
    else:
        data, label = source, "prices"
    try:
        return parse_prices(data, source=label)
    except ValueError as error:
        raise CliError(str(error)) from None


def _model_spec(value: Any, *, key: str, temperature: float | None = None) -> Any:
    from app.evaluation.types import ModelSpec

    if value is None:
        return None
    if isinstance(value, str):
        return ModelSpec(model=value, temperature=temperature)
    settings = value.model_dump()
    if temperature is not None:
        if settings["temperature"] is not None and settings["temperature"] != temperature:
            raise CliError(
                f"{key}: two temperatures given ({settings['temperature']} and the "
                f"top-level temperature {temperature})"
            )
        settings["temperature"] = temperature
    return ModelSpec(**settings)


def parse_variant(data: Any, *, source: str) -> Any:
    """The variant's keys validated; errors name the key path."""
    from pydantic import BaseModel, ConfigDict, Field, ValidationError

    class ModelSetting(BaseModel):
        model_config = ConfigDict(extra="forbid")
        model: str = Field(min_length=1)
        temperature: float | None = Field(default=None, ge=0.0, le=2.0)
        max_tokens: int | None = Field(default=None, ge=1)
        system_prompt: str | None = None
        api_base: str | None = None
        timeout_s: float = Field(default=60.0, gt=0)

    class Concurrency(BaseModel):
        model_config = ConfigDict(extra="forbid", populate_by_name=True)
        global_: int = Field(default=DEFAULT_CONCURRENCY, ge=1, alias="global")
        per_model: int | None = Field(default=None, ge=1)
        tasks_in_flight: int | None = Field(default=None, ge=1)

    class Variant(BaseModel):
        model_config = ConfigDict(extra="forbid", populate_by_name=True)
        description: str | None = None
        benchmark: str | None = None
        metric: str = Field(pattern=r"^(pass|seq)@k$")
        k: int = Field(ge=1, le=10_000)
        feedback_mode: str = "binary"
        model: str | ModelSetting
        temperature: float | None = Field(default=None, ge=0.0, le=2.0)
        judge_model: str | ModelSetting | None = None
        critic_model: str | ModelSetting | None = None
        task_indices: list[int] | None = None
        max_tasks: int | None = Field(default=None, ge=1)
        continue_: bool = Field(default=False, alias="continue")
        s3_sync: bool | str | dict[str, Any] | None = None
        console_char_limit: int = Field(default=DEFAULT_CHAR_LIMIT, ge=0)
        concurrency: int | Concurrency = DEFAULT_CONCURRENCY
        options: dict[str, Any] = Field(default_factory=dict)
        prices: str | dict[str, Any] | None = None
        cost_budget_usd: float | None = Field(default=None, ge=0)

    if not isinstance(data, dict):
        raise CliError(f"{source}: a variant is a YAML mapping of keys")
    try:
        return Variant.model_validate(data)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in item['loc']) or '(top)'}: {item['msg']}"
            for item in error.errors()
        )
        raise CliError(f"{source}: {problems}") from None


def benchmark_name_for(variant_path: Path, declared: str | None) -> str:
    """The `benchmark:` key, else the folder of `benchmarks/<name>/variants/<file>.yaml`."""
    if declared:
        return declared
    parent = variant_path.resolve().parent
    if parent.name == "variants":
        return parent.parent.name
    raise CliError(
        f"{variant_path}: not in a benchmarks/<name>/variants/ folder; "
        "name the benchmark with a `benchmark:` key"
    )


def run_config_from_variant(
    variant: Any, *, benchmark: str, prices: Mapping[str, Price], allow_continue: bool
) -> RunConfig:
    from app.evaluation.runner import RunConfig
    from app.evaluation.types import ModelSpec

    concurrency = variant.concurrency
    tasks_in_flight = None if isinstance(concurrency, int) else concurrency.tasks_in_flight
    actor = _model_spec(variant.model, key="model", temperature=variant.temperature)
    # The research harness's defaults: the judge is the actor's model (reached the same way,
    # at the judge's own temperature), the critic is the judge.
    judge = _model_spec(variant.judge_model, key="judge_model") or ModelSpec(
        model=actor.model, api_base=actor.api_base, timeout_s=actor.timeout_s
    )
    critic = _model_spec(variant.critic_model, key="critic_model") or judge
    return RunConfig(
        benchmark=benchmark,
        metric=variant.metric,
        k=variant.k,
        feedback_mode=variant.feedback_mode,
        actor=actor,
        judge=judge,
        critic=critic,
        options=variant.options,
        task_indices=tuple(variant.task_indices) if variant.task_indices is not None else None,
        max_tasks=variant.max_tasks,
        allow_continue=allow_continue or variant.continue_,
        tasks_in_flight=tasks_in_flight,
        cost_budget_usd=variant.cost_budget_usd,
        prices=dict(prices),
    )


# Console output


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n... [{len(text) - limit} more characters]"


def _format_duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


class Console:
    """The run's live output: each attempt's exact prompt on stdout (up to `char_limit`
    characters), and a progress bar on stderr, redrawn in place on a terminal and printed as
    a line every few seconds otherwise."""

    BAR_WIDTH = 24

    def __init__(
        self,
        *,
        total: int,
        char_limit: int,
        out: TextIO | None = None,
        err: TextIO | None = None,
        interactive: bool | None = None,
    ) -> None:
        self.total = total
        self.char_limit = char_limit
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.interactive = self.err.isatty() if interactive is None else interactive
        self.started = time.monotonic()
        self.finished = 0
        self.attempts = 0
        self.solved = 0
        self.errors = 0
        self.skipped = 0
        self._bar_shown = False
        self._last_line = 0.0

    def handle(self, event: RunEvent) -> None:
        if event.kind == "trial" and event.trial is not None:
            self.attempts += 1
            self._print_attempt(event)
        elif event.kind in ("task_done", "task_skipped", "task_error"):
            self.finished += 1
            self.skipped += event.kind == "task_skipped"
            self.errors += event.kind == "task_error"
            self.solved += event.stats.outcome.first_success is not None
            if event.kind == "task_error":
                self._clear_bar()
                print(
                    f"task {event.task.canonical_index} ({event.task.task_id}) failed: "
                    f"{event.error}",
                    file=self.err,
                )
        self._progress()

    def _print_attempt(self, event: RunEvent) -> None:
        trial = event.trial
        assert trial is not None
        self._clear_bar()
        verdict = "pass" if trial.success else "fail"
        header = (
            f"--- task {event.task.canonical_index} ({event.task.task_id}) "
            f"attempt {trial.attempt_index}: {verdict}, score {trial.judge.score:.2f} ---"
        )
        lines = [header]
        if self.char_limit > 0:
            messages = trial.actor.prompt
            if len(messages) == 1:
                prompt = str(messages[0].get("content", ""))
            else:
                prompt = "\n".join(
                    f"[{message.get('role', '?')}] {message.get('content', '')}"
                    for message in messages
                )
            lines.append(_clip(prompt, self.char_limit))
        print("\n".join(lines), file=self.out, flush=True)

    def _bar(self) -> str:
        elapsed = _format_duration(time.monotonic() - self.started)
        total = max(self.total, self.finished)
        share = self.finished / total if total else 1.0
        filled = round(share * self.BAR_WIDTH)
        bar = "#" * filled + "-" * (self.BAR_WIDTH - filled)
        parts = [
            f"[{bar}] {self.finished}/{total} tasks",
            f"{self.attempts} attempts",
            f"{self.solved} solved",
        ]
        if self.skipped:
            parts.append(f"{self.skipped} resumed done")
        if self.errors:
            parts.append(f"{self.errors} errors")
        parts.append(elapsed)
        return " | ".join(parts)

    def _clear_bar(self) -> None:
        if self.interactive and self._bar_shown:
            self.err.write("\r\x1b[2K")
            self.err.flush()
            self._bar_shown = False

    def _progress(self, *, force: bool = False) -> None:
        if self.interactive:
            self.err.write("\r\x1b[2K" + self._bar())
            self.err.flush()
            self._bar_shown = True
            return
        now = time.monotonic()
        if force or now - self._last_line >= PROGRESS_INTERVAL_S:
            self._last_line = now
            print(self._bar(), file=self.err, flush=True)

    def close(self) -> None:
        if self.interactive:
            self._progress()
            self.err.write("\n")
            self.err.flush()
            self._bar_shown = False
        else:
            self._progress(force=True)


def _number(value: Any, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and not math.isfinite(value):
        return "nan"
    return f"{value:.{digits}f}"


def _with_error(value: Any, error: Any) -> str:
    return _number(value) if error is None else f"{_number(value)} ± {_number(error)}"


def _table(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


def _harness_rows(view: Mapping[str, Any] | None, name: str, count: int) -> list[str]:
    values = (view or {}).get(f"{name}_at") or []
    return [_number(values[index]) if index < len(values) else "-" for index in range(count)]


def _harness_gain(view: Mapping[str, Any] | None, k: int) -> str | None:
    if not view or "delta" not in view:
        return None
    text = f"  seq_k: Δ = seq@{k} - seq@1 = {_number(view['delta'])}"
    if view.get("gain") == "no gain":
        return text + " (no gain over seq@1)"
    return text + f", EGS = {_number(view['egs'], 2)}, LGS = {_number(view['lgs'], 2)}"


def format_summary(summary: Mapping[str, Any], *, title: str, wall_time_s: float | None) -> str:
    """A run summary (metrics.run_summary) as the table `metrics` prints: Gauntlet's unbiased
    curves, and beside them the research harness's first-t best-score curve (seq_k)."""
    curves = summary["curves"]
    name = "pass" if curves["metric"] == "pass@k" else "seq"
    lines = [title]
    inferred = summary.get("inferred") or []
    if inferred:
        lines.append(f"  no config.json: inferred {'; '.join(inferred)}")
    lines.append(
        f"  {curves['metric']}, k={curves['k']}: {curves['tasks_complete']} tasks complete, "
        f"{curves['tasks_incomplete']} incomplete, {curves['tasks_solved']} solved"
    )
    view = summary.get("harness_view")
    rows = [["t", f"{name}@t", "best score", f"seq_k {name}@t"]]
    values, errors = curves[f"{name}_at"], curves[f"{name}_at_stderr"]
    best, best_errors = curves["best_score_at"], curves["best_score_at_stderr"]
    harness = _harness_rows(view, name, len(curves["t"]))
    for position, t in enumerate(curves["t"]):
        rows.append(
            [
                str(t),
                _with_error(values[position], errors[position]),
                _with_error(best[position], best_errors[position]),
                harness[position],
            ]
        )
    lines.extend(f"  {line}" for line in _table(rows))
    gain = curves.get("gain")
    if gain is not None:
        lines.append(f"  gain {gain['name']}: {_with_error(gain['value'], gain['stderr'])}")
    harness_gain = _harness_gain(view, int(curves["k"]))
    if harness_gain is not None:
        lines.append(harness_gain)
    if view:
        lines.append(
            f"  (seq_k {name}@t: mean best score within the first t attempts, over the "
            f"{view['tasks']} tasks with an attempt)"
        )
    for figure, figures in (summary.get("figures") or {}).items():
        lines.append(
            f"  {figure}: {_with_error(figures['mean'], figures['stderr'])} over "
            f"{figures['tasks']} tasks (reported beside the curves)"
        )
    usage = summary.get("usage") or {}
    usage_rows = [["role", "model", "calls", "input", "cached", "thinking", "output", "cost_usd"]]
    for role, models in usage.items():
        for model, totals in models.items():
            usage_rows.append(
                [
                    role,
                    model,
                    str(totals["calls"]),
                    str(totals["input_tokens"]),
                    str(totals["cached_tokens"]),
                    str(totals["thinking_tokens"]),
                    str(totals["output_tokens"]),
                    _number(totals["cost_usd"], 6),
                ]
            )
    if len(usage_rows) > 1:
        lines.append("  usage")
        lines.extend(f"    {line}" for line in _table(usage_rows))
    cost = summary.get("cost_usd")
    wall = f"{wall_time_s:.1f} s" if wall_time_s is not None else "-"
    pricing = summary.get("pricing") or {}
    prices = ""
    if pricing.get("pricing_last_updated") or pricing.get("litellm_version"):
        prices = (
            f" | prices: litellm {pricing.get('litellm_version') or '?'}, "
            f"map of {pricing.get('pricing_last_updated') or 'unknown date'}"
        )
    lines.append(
        f"  cost: {'$' + _number(cost, 6) if cost is not None else 'unknown'}"
        f" | calls: {summary.get('calls', 0)} | wall time: {wall}{prices}"
    )
    return "\n".join(lines)


def _warn_unpriced(models: Sequence[str], err: TextIO, warned: set[str]) -> None:
    for model in models:
        if model not in warned:
            warned.add(model)
            print(
                f"warning: no price known for {model}; its cost is null "
                "(give prices with --prices FILE)",
                file=err,
            )


# run


def _sync_to_s3(folder: Path, setting: Any, err: TextIO) -> int:
    """Uploads the run folder when the variant asks (`s3_sync`); the results stay on disk
    whatever happens to the upload."""
    try:
        upload.sync_run_folder(folder, setting)
    except upload.UploadError as error:
        print(f"error: s3 sync failed: {error}", file=err)
        return EXIT_FAILED
    return EXIT_OK


def _operator_policy() -> OutboundPolicy:
    """The CLI is the operator's own run: any provider and any base URL; a base URL still gets
    only the key configured for it in GAUNTLET_ALLOWED_API_BASES (`api_key_env`), never a
    provider key from the environment."""
    from app.config import get_settings
    from app.outbound.policy import OutboundPolicy, parse_allowed_bases

    return OutboundPolicy.unrestricted(parse_allowed_bases(get_settings().allowed_api_bases))


def command_run(args: argparse.Namespace) -> int:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import asyncio

    from app.evaluation.benchmark import Benchmark, BenchmarkError
    from app.evaluation.llm import LLMClient, warm_up
    from app.evaluation.run_folder import RunFolderError, RunFolderStore, run_folder_for
    from app.evaluation.runner import (
        RunAborted,
        RunConfigMismatch,
        check_config,
        run_benchmark,
        select_tasks,
    )

    err: TextIO = sys.stderr
    variant_path = Path(args.variant)
    variant = parse_variant(_load_yaml(variant_path), source=str(variant_path))
    if args.max_tasks is not None:
        variant.max_tasks = args.max_tasks
    if args.task_indices is not None:
        variant.task_indices = args.task_indices
    if args.char_limit is not None:
        variant.console_char_limit = args.char_limit
    prices = load_prices(args.prices or variant.prices, base=variant_path.parent)
    name = benchmark_name_for(variant_path, variant.benchmark)
    try:
        benchmark = Benchmark.load(name)
        config = run_config_from_variant(
            variant, benchmark=name, prices=prices, allow_continue=args.allow_continue
        )
        check_config(benchmark, config)
        folder = run_folder_for(Path(args.runs_root), benchmark, config)
        # Counted by streaming the tasks once, so the progress bar has a total while memory
        # stays flat; the run streams them again.
        total = sum(
            1
            for _ in select_tasks(
                benchmark.iter_tasks(config.options),
                task_indices=config.task_indices,
                max_tasks=config.max_tasks,
            )
        )
    except (BenchmarkError, ValueError) as error:
        raise CliError(str(error)) from None
    if config.task_indices is not None and total < len(set(config.task_indices)):
        print(
            f"warning: only {total} of the {len(set(config.task_indices))} task_indices "
            f"exist in {name}",
            file=err,
        )

    concurrency = variant.concurrency
    global_cap = concurrency if isinstance(concurrency, int) else concurrency.global_
    per_model = global_cap if isinstance(concurrency, int) else concurrency.per_model or global_cap
    llm = LLMClient(
        global_concurrency=global_cap,
        per_model_concurrency=per_model,
        outbound=_operator_policy(),
    )
    console = Console(total=total, char_limit=variant.console_char_limit)
    print(f"run folder: {folder}", file=err)
    print(
        f"{name}: {total} tasks, {config.metric}, k={config.k}, actor {config.actor.model}",
        file=err,
    )
    store = RunFolderStore(folder)
    # litellm takes seconds to import, and its first call seconds more (it loads its provider
    # modules then): both happen before the run, so neither the run's wall time nor the first
    # attempts' elapsed_ms holds them.
    warm_up()
    try:
        result = asyncio.run(run_benchmark(benchmark, config, store, llm, on_event=console.handle))
    except (RunConfigMismatch, RunFolderError) as error:
        print(f"error: {error}", file=err)
        return EXIT_USAGE
    except RunAborted as error:
        console.close()
        print(f"error: run aborted: {error}\nFinished trials are kept; rerun to resume.", file=err)
        return EXIT_FAILED
    except KeyboardInterrupt:
        console.close()
        print("interrupted: finished attempts are saved; run the same command to resume.", file=err)
        return EXIT_INTERRUPTED
    console.close()
    wall = result.summary.get("session", {}).get("wall_time_s")
    print(format_summary(result.summary, title=str(folder), wall_time_s=wall))
    _warn_unpriced(result.summary.get("unpriced_models", []), err, set())
    status = EXIT_OK
    if result.status != "complete":
        print(
            f"run status: {result.status} ({result.tasks_errored} tasks failed; "
            "rerun to retry them)"
            if result.tasks_errored
            else f"run status: {result.status}",
            file=err,
        )
        status = EXIT_FAILED
    if variant.s3_sync:
        status = max(status, _sync_to_s3(folder, variant.s3_sync, err))
    return status


def register_run(commands: Any) -> None:
    parser = commands.add_parser(
        "run",
        help="run a benchmark variant into a run folder (resumes when rerun)",
        description="Run a benchmark variant. The benchmark is the variant's folder "
        "(benchmarks/<name>/variants/) or its `benchmark:` key. Ctrl-C stops cleanly; "
        "the same command resumes.",
    )
    parser.add_argument("variant", help="the variant YAML file")
    parser.add_argument("--runs-root", default="runs", help="where run folders go (./runs)")
    parser.add_argument(
        "--continue",
        dest="allow_continue",
        action="store_true",
        help="let a larger k extend an existing run (the variant key `continue: true`)",
    )
    parser.add_argument("--prices", help="a YAML file of price overrides per model")
    parser.add_argument("--max-tasks", type=int, help="only the first N tasks")
    parser.add_argument(
        "--task-indices",
        type=_index_list,
        help="only these canonical task indices, comma separated (e.g. 1,2,5)",
    )
    parser.add_argument("--char-limit", type=int, help="prompt characters printed per attempt")
    parser.set_defaults(handler=command_run)


def _index_list(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of ints: {text!r}") from None
    if not values or any(value < 1 for value in values):
        raise argparse.ArgumentTypeError("task indices are 1-based ints")
    return values


# metrics


def _wall_time(config: Mapping[str, Any]) -> float | None:
    sessions = [item for item in config.get("sessions", []) if isinstance(item, dict)]
    times = [item.get("wall_time_s") for item in sessions]
    known = [value for value in times if isinstance(value, int | float)]
    return float(sum(known)) if known else None


PRICING_KEYS = ("price_map", "litellm_version", "pricing_last_updated")


def folder_metrics(
    folder: Path, *, k: int | None, prices: Mapping[str, Price] | None = None
) -> dict[str, Any]:
    """The summary of one run folder at `k` (default: the run's k), read from disk. A folder
    without config.json (an S3 copy, a research-harness folder) is read too: its settings are
    inferred, and `inferred` says from what."""
    from app.evaluation.metrics import run_summary
    from app.evaluation.run_folder import describe_run_folder, read_all_task_stats

    info = describe_run_folder(folder)
    chosen = info.k if k is None else k
    if chosen < 1 or (info.k_is_the_runs and chosen > info.k):
        raise CliError(f"{folder}: --k must be between 1 and the run's k ({info.k}), got {chosen}")
    summary = run_summary(read_all_task_stats(folder), metric=info.metric, k=chosen, prices=prices)
    record = info.record or {}
    stored = info.run_summary or {}
    return {
        "folder": str(folder),
        "settings_source": info.source,
        "inferred": info.inferred,
        "fingerprint": record.get("fingerprint"),
        "settings": info.settings,
        "wall_time_s": _wall_time(record),
        "sessions": len(record.get("sessions", [])),
        "pricing": {key: stored[key] for key in PRICING_KEYS if key in stored},
        "price_overrides": sorted(prices or {}),
        **summary,
    }


def _local_folder(path_text: str, endpoint_url: str | None, stack: Any) -> Path:
    """A local folder for PATH: PATH itself, or an `s3://bucket/prefix` copied into a
    temporary folder that `stack` removes."""
    if not path_text.startswith(upload.S3_SCHEME):
        path = Path(path_text)
        if not path.exists():
            raise CliError(f"no such folder: {path}")
        return path
    import tempfile

    target = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="gauntlet-s3-")))
    try:
        count = upload.download_prefix(path_text, target, endpoint_url=endpoint_url)
    except upload.UploadError as error:
        raise CliError(str(error)) from None
    if count == 0:
        raise CliError(f"no objects under {path_text}")
    return target


def command_metrics(args: argparse.Namespace) -> int:
    import contextlib

    from app.evaluation.run_folder import RunFolderError, find_run_folders

    prices = load_prices(args.prices)
    with contextlib.ExitStack() as stack:
        path = _local_folder(args.path, args.endpoint_url, stack)
        try:
            folders = find_run_folders(path)
            if not folders:
                raise CliError(f"no run folders under {args.path}")
            documents = [folder_metrics(folder, k=args.k, prices=prices) for folder in folders]
        except RunFolderError as error:
            raise CliError(str(error)) from None
        if path != Path(args.path):
            # Read from S3: name the folders by their keys, not the temporary copy.
            for document in documents:
                relative = Path(document["folder"]).relative_to(path).as_posix()
                below = "" if relative == "." else f"/{relative}"
                document["folder"] = args.path.rstrip("/") + below
    if args.json:
        print(json.dumps({"runs": documents}, indent=2, ensure_ascii=False))
    else:
        print(
            "\n\n".join(
                format_summary(
                    document, title=document["folder"], wall_time_s=document["wall_time_s"]
                )
                for document in documents
            )
        )
    warned: set[str] = set()
    for document in documents:
        _warn_unpriced(document["unpriced_models"], sys.stderr, warned)
    return EXIT_OK


def _add_endpoint_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--endpoint-url",
        default=None,
        help=f"for s3:// paths: an S3-compatible endpoint (env {upload.ENDPOINT_ENV})",
    )


def register_metrics(commands: Any) -> None:
    parser = commands.add_parser(
        "metrics",
        help="pass@t / seq@t curves, standard errors, tokens and cost of run folders",
        description="Read the metrics of a run folder, or of every run folder below PATH "
        "(a local folder, or s3://bucket/prefix). Folders without config.json (S3 copies, "
        "folders the seq_k harness wrote) are read too, their settings inferred.",
    )
    parser.add_argument("path", help="a run folder, a folder holding run folders, or s3://...")
    parser.add_argument("--k", type=int, help="the curve up to this k (default: the run's k)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    parser.add_argument("--prices", help="a YAML file of price overrides per model")
    _add_endpoint_argument(parser)
    parser.set_defaults(handler=command_metrics)


# inspect


def _section_lines(title: str, text: str) -> list[str]:
    return [f"{title}:", *("  " + line for line in (text or "").splitlines() or [""])]


def _prompt_lines(actor: Mapping[str, Any]) -> list[str]:
    from app.evaluation.types import prompt_text, stored_messages

    messages = stored_messages(actor.get("prompt"), actor.get("messages"))
    stored = actor.get("prompt")
    text = stored if isinstance(stored, str) else prompt_text(messages)
    if len(messages) > 1:
        roles = ", ".join(str(message.get("role")) for message in messages)
        return _section_lines(f"prompt (what the actor saw; messages: {roles})", text)
    return _section_lines("prompt (what the actor saw)", text)


def format_attempt(document: Mapping[str, Any]) -> str:
    actor = document.get("actor") or {}
    judge = document.get("judge") or {}
    critic = document.get("critic") or {}
    lines = [
        f"task {document.get('task_index')} ({document.get('task_id')}), "
        f"attempt {document.get('attempt_index')}, {document.get('metric')}, "
        f"feedback mode {document.get('feedback_mode')}",
        f"actor {actor.get('model')}: {actor.get('input_tokens') or 0} in "
        f"({actor.get('cached_tokens') or 0} cached), {actor.get('output_tokens') or 0} out "
        f"({actor.get('thinking_tokens') or 0} thinking), {actor.get('elapsed_ms') or 0} ms, "
        f"cost {_number(actor.get('cost_usd'), 6)}",
    ]
    lines.extend(_prompt_lines(actor))
    lines.extend(_section_lines("output", str(actor.get("output") or "")))
    lines.append(
        f"judge {judge.get('model') or '(deterministic)'}: "
        f"{'pass' if judge.get('success') else 'fail'}, score {_number(judge.get('score'))}"
        + (f", rating {judge.get('rating')}" if judge.get("rating") is not None else "")
        + f", {len(judge.get('calls') or [])} calls"
    )
    lines.extend(_section_lines("verdict (public)", str(judge.get("raw_eval_output") or "")))
    details = judge.get("details", judge.get("judge_details"))
    lines.extend(_section_lines("details (private)", json.dumps(details, ensure_ascii=False)))
    if critic.get("feedback") is not None:
        lines.append(
            f"critic {critic.get('model') or '(none)'}: {len(critic.get('calls') or [])} calls"
        )
        lines.extend(_section_lines("feedback", str(critic.get("feedback") or "")))
    return "\n".join(lines)


def _task_status(summary: Mapping[str, Any]) -> str:
    status = summary.get("status")
    if isinstance(status, str):
        return status
    if "success" in summary:  # the research harness's task summary has no status
        return "solved" if summary.get("success") else "not solved"
    return "unknown"


def _find_task(folder: Path, task_id: str) -> int:
    from app.evaluation.run_folder import TASK_META_FILE, read_attempts, read_json, task_dirs

    for index, task_dir in task_dirs(folder):
        meta_path = task_dir / TASK_META_FILE
        meta = read_json(meta_path) if meta_path.is_file() else {}
        if isinstance(meta, dict) and meta.get("task_id") == task_id:
            return index
        attempts = read_attempts(task_dir)[:1]
        if attempts and attempts[0].get("task_id") == task_id:
            return index
    raise CliError(f"{folder} has no task {task_id!r}")


def _inspect_folder(folder: Path, args: argparse.Namespace) -> int:
    from app.evaluation.run_folder import (
        SUMMARY_FILE,
        TASK_META_FILE,
        attempt_file_name,
        describe_run_folder,
        read_attempts,
        read_json,
        task_dir_name,
    )

    info = describe_run_folder(folder)
    task_index = args.task_index if args.task_id is None else _find_task(folder, args.task_id)
    task_dir = folder / task_dir_name(task_index)
    if not task_dir.is_dir():
        raise CliError(f"{args.path} has no task {task_index}")
    if args.attempt is not None:
        path = task_dir / attempt_file_name(args.attempt)
        if not path.is_file():
            raise CliError(f"task {task_index} has no attempt {args.attempt}")
        document = read_json(path)
        print(
            json.dumps(document, indent=2, ensure_ascii=False)
            if args.json
            else format_attempt(document)
        )
        return EXIT_OK
    meta = read_json(task_dir / TASK_META_FILE) if (task_dir / TASK_META_FILE).is_file() else {}
    summary = read_json(task_dir / SUMMARY_FILE) if (task_dir / SUMMARY_FILE).is_file() else {}
    attempts = read_attempts(task_dir)
    if args.json:
        print(
            json.dumps(
                {"task_meta": meta, "summary": summary, "attempts": attempts},
                indent=2,
                ensure_ascii=False,
            )
        )
        return EXIT_OK
    task_id = meta.get("task_id") or (attempts[0].get("task_id") if attempts else None) or "?"
    lines = [f"task {task_index} ({task_id}): {_task_status(summary)}, {len(attempts)} attempts"]
    if info.inferred:
        lines.append(f"no config.json: inferred {'; '.join(info.inferred)}")
    if summary.get("error"):
        lines.append(f"error: {summary['error']}")
    lines.extend(_section_lines("prompt", str(meta.get("prompt", ""))))
    if meta.get("metadata"):
        lines.append(f"metadata: {json.dumps(meta['metadata'], ensure_ascii=False)}")
    for document in attempts:
        judge = document.get("judge") or {}
        feedback = (document.get("critic") or {}).get("feedback")
        lines.append(
            f"  attempt {document['attempt_index']}: "
            f"{'pass' if judge.get('success') else 'fail'}, score {_number(judge.get('score'))}"
            f" | {judge.get('raw_eval_output') or ''}"
            + (f" | feedback: {' '.join(str(feedback).split())[:120]}" if feedback else "")
        )
    lines.append("(--attempt M shows an attempt in full)")
    print("\n".join(lines))
    return EXIT_OK


def command_inspect(args: argparse.Namespace) -> int:
    import contextlib

    from app.evaluation.run_folder import RunFolderError

    with contextlib.ExitStack() as stack:
        folder = _local_folder(args.path, args.endpoint_url, stack)
        try:
            return _inspect_folder(folder, args)
        except RunFolderError as error:
            raise CliError(str(error)) from None


def register_inspect(commands: Any) -> None:
    parser = commands.add_parser(
        "inspect",
        help="show a task of a run folder, or one attempt in full",
        description="Show a task of a run folder (local, or s3://bucket/prefix of one run "
        "folder), with or without config.json.",
    )
    parser.add_argument("path", help="a run folder, or s3://bucket/prefix of one")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--task-index", type=int, help="the task's index")
    which.add_argument("--task-id", help="the task's id")
    parser.add_argument("--attempt", type=int, help="show this attempt in full")
    parser.add_argument("--json", action="store_true", help="print the stored JSON")
    _add_endpoint_argument(parser)
    parser.set_defaults(handler=command_inspect)


# The command group

SUBCOMMANDS: list[Callable[[Any], None]] = [
    register_run,
    register_metrics,
    register_inspect,
    plot.add_parser,
    upload.add_parser,
]


def add_eval_commands(parser: argparse.ArgumentParser) -> None:
    """Adds the `eval` subcommands to `parser` (the `gauntlet eval` parser)."""
    commands = parser.add_subparsers(dest="eval_command", required=True, metavar="COMMAND")
    for register in SUBCOMMANDS:
        register(commands)


def dispatch(args: argparse.Namespace) -> int:
    """Runs the parsed `eval` subcommand; a `CliError` is printed as one line, exit code 2."""
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        return handler(args)
    except CliError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        # `gauntlet eval metrics ... | head`: the reader left; that is not an error. Stdout is
        # pointed at /dev/null so the interpreter's final flush does not raise again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="gauntlet eval",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_eval_commands(parser)
    return dispatch(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
