"""`gauntlet eval ...`: run benchmark variants into run folders, read their metrics, inspect them.

    gauntlet eval run VARIANT.yaml [--runs-root ./runs] [--continue] [--prices FILE]
    gauntlet eval metrics PATH|s3://BUCKET/PREFIX [--k K] [--json] [--prices FILE]
    gauntlet eval inspect PATH|s3://... (--task-index N | --task-id ID) [--attempt M] [--json]
    gauntlet eval plot PATH... --out chart.png|chart.svg
    gauntlet eval upload PATH --bucket B [--prefix P]

Adding a subcommand is one function and one line: write `register_<name>(commands)` that adds
its parser with `commands.add_parser(...)` and sets `handler=` (a function taking the parsed
arguments and returning the exit code; import heavy modules inside it), then list it in
`SUBCOMMANDS`. Module-level imports here stay light: `gauntlet` builds this parser on every
start. Only `run` may import litellm, and only when one of its models goes through litellm
(see `app.evaluation.engine.llm.uses_litellm`).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

# Both keep matplotlib and boto3 imports inside their commands, so this stays light.
from app.evaluation.commands import plot, upload
from app.evaluation.commands.report import (
    Console,
    format_attempt,
    format_summary,
    number,
    section_lines,
    warn_unpriced,
)
from app.evaluation.commands.variant import (
    CliError,
    benchmark_name_for,
    load_prices,
    load_yaml,
    parse_variant,
    run_config_from_variant,
)

if TYPE_CHECKING:
    from app.evaluation.commands.variant import Variant
    from app.evaluation.engine.runner import RunResult
    from app.outbound.policy import OutboundPolicy
    from app.outbound.prices import Price

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


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


ALLOWED_API_BASES = "GAUNTLET_ALLOWED_API_BASES"


def allowed_api_bases_setting(
    environ: Mapping[str, str] | None = None, env_file: Path = Path(".env")
) -> Any:
    """GAUNTLET_ALLOWED_API_BASES read as the service's settings (app.kit.config) read it: from the
    environment, else from `.env` in the working directory, the name in any case, the value a
    JSON list; [] when unset. Read here without building the settings: pydantic and the
    settings class take ~0.1 s of a run's start-up, and the run needs this one setting."""
    wanted = ALLOWED_API_BASES.lower()
    found: str | None = None
    for name, value in (os.environ if environ is None else environ).items():
        if name.lower() == wanted:
            found = value
    if found is None and env_file.is_file():
        # python-dotenv loads only when a key must be read from a .env file.
        from dotenv import dotenv_values

        for name, written in dotenv_values(env_file, encoding="utf-8").items():
            if name.lower() == wanted and written is not None:
                found = written
    if found is None:
        return []
    try:
        return json.loads(found)
    except ValueError as error:
        raise CliError(f"{ALLOWED_API_BASES} is not a JSON list: {error}") from None


def _operator_policy() -> OutboundPolicy:
    """The CLI is the operator's own run: any provider and any base URL; a base URL still gets
    only the key configured for it in GAUNTLET_ALLOWED_API_BASES (`api_key_env`), never a
    provider key from the environment. Base-URL calls go through the operator's proxy when
    HTTPS_PROXY / HTTP_PROXY / ALL_PROXY say so (NO_PROXY excepted; app.outbound.proxy)."""
    # The outbound policy (asyncio, ssl, idna) loads when a run starts, not with the parser.
    from app.outbound.policy import OutboundPolicy, parse_allowed_bases
    from app.outbound.proxy import ProxySettings
    from app.outbound.trust import TrustedAuthorities

    entries = allowed_api_bases_setting()
    if not isinstance(entries, list):
        raise CliError(f"{ALLOWED_API_BASES} is not a JSON list")
    try:
        proxies = ProxySettings.from_environ(os.environ)
        TrustedAuthorities.from_environ(os.environ)  # refused now, not at the first call
    except ValueError as error:
        raise CliError(str(error)) from None
    try:
        return OutboundPolicy.unrestricted(parse_allowed_bases(entries), proxies=proxies)
    except ValueError as error:
        raise CliError(f"{ALLOWED_API_BASES}: {error}") from None


def command_run(args: argparse.Namespace) -> int:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    # The engine loads when a run starts, not with the parser every `gauntlet` command builds.
    import asyncio

    from app.evaluation.commands.folder import RunFolderError, RunFolderStore, run_folder_for
    from app.evaluation.engine.benchmark import Benchmark, BenchmarkError, select_tasks
    from app.evaluation.engine.direct import SHARED_POOLS
    from app.evaluation.engine.llm import LLMClient, warm_up_for
    from app.evaluation.engine.runner import (
        RunAborted,
        RunConfigMismatch,
        check_config,
        run_benchmark,
    )

    err: TextIO = sys.stderr
    variant_path = Path(args.variant)
    variant = parse_variant(load_yaml(variant_path), source=str(variant_path))
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
        prices=config.prices,
    )
    console = Console(total=total, char_limit=variant.console_char_limit)
    print(f"run folder: {folder}", file=err)
    print(
        f"{name}: {total} tasks, {config.metric}, k={config.k}, actor {config.actor.model}",
        file=err,
    )
    store = RunFolderStore(folder)
    # What the run's calls need is loaded before the run, so neither its wall time nor the
    # first attempts' elapsed_ms holds it: litellm (seconds to import, seconds more for its
    # first call) only when a model goes through it, the price table when one
    # goes direct.
    warm_up_for([spec for spec in (config.actor, config.judge, config.critic) if spec])

    async def run_and_close() -> RunResult:
        try:
            return await run_benchmark(benchmark, config, store, llm, on_event=console.handle)
        finally:
            await SHARED_POOLS.aclose()

    try:
        result = asyncio.run(run_and_close())
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
    try:
        status = _report(result, folder, variant, err)
    except KeyboardInterrupt:
        # The run had finished: everything is on disk, only the report (or the upload) stops.
        print("\ninterrupted: the run had finished and its results are saved.", file=err)
        status = EXIT_INTERRUPTED
    # The process ends here: frozen, its objects are not walked by the interpreter's last
    # collection at exit (~0.15 s after a run on this machine, for nothing).
    gc.freeze()
    return status


def _report(result: RunResult, folder: Path, variant: Variant, err: TextIO) -> int:
    """A finished run's summary, its status and the upload the variant asks for."""
    wall = result.summary.get("session", {}).get("wall_time_s")
    print(format_summary(result.summary, title=str(folder), wall_time_s=wall))
    warn_unpriced(result.summary.get("unpriced_models", []), err, set())
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
    # Run folders load when a command reads one, not with every `gauntlet` command's parser.
    from app.evaluation.commands.folder import describe_run_folder, read_stats_at
    from app.evaluation.engine.metrics import run_summary

    info = describe_run_folder(folder)
    chosen, stats = read_stats_at(info, k)
    record = info.record or {}
    stored = info.run_summary or {}
    # seq_k's summary.json prices each model over the run (Gauntlet's keeps the calls' costs,
    # per role, in `usage`): its costs are the run's, not the sum of its rounded task costs.
    seq_k_tokens = stored.get("tokens") if "usage" not in stored else None
    summary = run_summary(
        stats,
        metric=info.metric,
        k=chosen,
        prices=prices,
        seq_k_tokens=seq_k_tokens if isinstance(seq_k_tokens, dict) else None,
    )
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
    # tempfile (and random) loads only to copy an s3:// folder, not with the parser.
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
    # Run folders load when a command reads one, not with every `gauntlet` command's parser.
    from app.evaluation.commands.folder import RunFolderError, find_run_folders

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
        warn_unpriced(document["unpriced_models"], sys.stderr, warned)
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


def _find_task(folder: Path, task_id: str) -> int:
    # Run folders load when a command reads one, not with every `gauntlet` command's parser.
    from app.evaluation.commands.folder import TASK_META_FILE, read_attempts, read_json, task_dirs

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
    # Run folders load when a command reads one, not with every `gauntlet` command's parser.
    from app.evaluation.commands.folder import (
        SUMMARY_FILE,
        TASK_META_FILE,
        attempt_file_name,
        describe_run_folder,
        read_attempts,
        read_json,
        read_task_stats,
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
    # Whatever wrote the folder (seq_k's task summaries have no status), as the metrics say.
    status = read_task_stats(task_index, task_dir).status_at(info.metric, info.k)
    lines = [f"task {task_index} ({task_id}): {status}, {len(attempts)} attempts"]
    if info.inferred:
        lines.append(f"no config.json: inferred {'; '.join(info.inferred)}")
    if summary.get("error"):
        lines.append(f"error: {summary['error']}")
    lines.extend(section_lines("prompt", str(meta.get("prompt", ""))))
    if meta.get("metadata"):
        lines.append(f"metadata: {json.dumps(meta['metadata'], ensure_ascii=False)}")
    for document in attempts:
        judge = document.get("judge") or {}
        feedback = (document.get("critic") or {}).get("feedback")
        lines.append(
            f"  attempt {document['attempt_index']}: "
            f"{'pass' if judge.get('success') else 'fail'}, score {number(judge.get('score'))}"
            f" | {judge.get('raw_eval_output') or ''}"
            + (f" | feedback: {' '.join(str(feedback).split())[:120]}" if feedback else "")
        )
    lines.append("(--attempt M shows an attempt in full)")
    print("\n".join(lines))
    return EXIT_OK


def command_inspect(args: argparse.Namespace) -> int:
    # Run folders load when a command reads one, not with every `gauntlet` command's parser.
    from app.evaluation.commands.folder import RunFolderError

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
