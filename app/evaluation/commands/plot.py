"""`gauntlet eval plot PATH...`: the pass@t / seq@t curves of several runs on one chart.

    gauntlet eval plot PATH... [--out chart.png|chart.svg] [--k K] [--title TEXT]

Each PATH is a run folder or a folder holding run folders; every run found becomes one curve,
t = 1..k (the run's k, or `--k` where the run allows it), with error bars of one standard error
over tasks. The figures come from app.evaluation.engine.metrics (`run_summary` over the folder's
task stats), the same ones `gauntlet eval metrics` prints; nothing is re-estimated here. The legend
names each run by slice, metric, actor and feedback (pass@k runs have no feedback). The format
follows the output's suffix: `.png` or `.svg`.

matplotlib is imported only when a chart is drawn (the Agg canvas, no display needed), and
the run-folder and metrics modules only when curves are read: `gauntlet` registers this
command on every start.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from app.evaluation.commands.folder import RunFolderInfo

FORMATS = {".png": "png", ".svg": "svg"}
DEFAULT_OUT = "chart.png"
EXIT_OK = 0
EXIT_USAGE = 2
# Runs at the same t are nudged apart by this much, so their error bars do not hide each other.
_DODGE = 0.04


class PlotError(Exception):
    """Nothing to plot, or an output the chart cannot be written to."""


@dataclass(frozen=True)
class RunCurve:
    """One run's curve as metrics.run_summary gives it."""

    folder: Path
    label: str
    metric: str
    t: list[int]
    values: list[float | None]
    stderrs: list[float | None]
    tasks_complete: int


def run_label(config: Mapping[str, Any]) -> str:
    """`slice · metric · actor · feedback` from a run record (config.json)."""
    settings = config.get("settings") or {}
    actor = settings.get("actor") or {}
    metric = str(settings.get("metric", "?"))
    parts = [str(config.get("slice") or settings.get("benchmark") or "?"), metric]
    model = str(actor.get("model", "?"))
    temperature = actor.get("temperature")
    parts.append(f"{model} T={temperature:g}" if isinstance(temperature, int | float) else model)
    if metric == "seq@k":
        critic = settings.get("critic") or {}
        mode = str(settings.get("feedback_mode") or "?")
        parts.append(f"{mode} ({critic['model']})" if critic.get("model") else mode)
    return " · ".join(parts)


def _label_without_record(info: RunFolderInfo) -> str:
    settings = info.settings
    actor = settings.get("actor") or settings.get("model") or "?"
    parts = [str(settings.get("benchmark") or info.folder.name), info.metric, str(actor)]
    if info.metric == "seq@k":
        parts.append(str(settings.get("feedback_mode") or "?"))
    return " · ".join(parts)


def load_curve(folder: Path, *, k: int | None = None) -> RunCurve:
    """The curve of one run folder at `k` (default: the run's k); a folder without
    config.json is read with its settings inferred (run_folder.describe_run_folder)."""
    # Run folders load when a command reads one, not with every `gauntlet` command's parser.
    from app.evaluation.commands.folder import RunFolderError, describe_run_folder, read_stats_at
    from app.evaluation.engine.metrics import run_summary

    info = describe_run_folder(folder)
    metric = info.metric
    try:
        chosen, stats = read_stats_at(info, k)
    except RunFolderError as error:
        raise PlotError(str(error)) from None
    curves = run_summary(stats, metric=metric, k=chosen)["curves"]
    name = "pass" if metric == "pass@k" else "seq"
    return RunCurve(
        folder=folder,
        label=run_label(info.record) if info.record else _label_without_record(info),
        metric=metric,
        t=list(curves["t"]),
        values=list(curves[f"{name}_at"]),
        stderrs=list(curves[f"{name}_at_stderr"]),
        tasks_complete=int(curves["tasks_complete"]),
    )


def collect_curves(paths: Sequence[Path], *, k: int | None = None) -> list[RunCurve]:
    """One curve per run folder found under `paths` (each folder once, in the order given)."""
    # Run folders load when a command reads one, not with every `gauntlet` command's parser.
    from app.evaluation.commands.folder import RunFolderError, find_run_folders

    folders: list[Path] = []
    seen: set[Path] = set()
    for path in paths:
        if not path.exists():
            raise PlotError(f"no such folder: {path}")
        try:
            found = find_run_folders(path)
        except RunFolderError as error:
            raise PlotError(str(error)) from None
        if not found:
            raise PlotError(f"no run folders under {path}")
        for folder in found:
            if folder.resolve() not in seen:
                seen.add(folder.resolve())
                folders.append(folder)
    try:
        return [load_curve(folder, k=k) for folder in folders]
    except RunFolderError as error:
        raise PlotError(str(error)) from None


def draw_chart(curves: Sequence[RunCurve], out: Path, *, title: str | None = None) -> Path:
    """Draws `curves` on one chart and writes it to `out` (.png or .svg)."""
    output_format = FORMATS.get(out.suffix.lower())
    if output_format is None:
        raise PlotError(f"--out must end in .png or .svg, got {out.name!r}")
    if not curves:
        raise PlotError("no runs to plot")
    # matplotlib (~0.5 s) loads only when a chart is drawn.
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(8.0, 5.0), layout="constrained")
    # The Agg canvas, attached to this figure only: no pyplot, no global backend switch, no
    # display needed. savefig hands SVG output to matplotlib's SVG canvas.
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    middle = (len(curves) - 1) / 2
    for position, curve in enumerate(curves):
        points = [
            (t + (position - middle) * _DODGE, value, stderr or 0.0)
            for t, value, stderr in zip(curve.t, curve.values, curve.stderrs, strict=True)
            if value is not None
        ]
        xs = [x for x, _, _ in points]
        ys = [y for _, y, _ in points]
        errors = [error for _, _, error in points]
        sequential = curve.metric == "seq@k"
        axes.errorbar(
            xs,
            ys,
            yerr=errors,
            label=f"{curve.label} (n={curve.tasks_complete})",
            marker="s" if sequential else "o",
            linestyle="--" if sequential else "-",
            capsize=3,
        )
    k_max = max((max(curve.t) for curve in curves if curve.t), default=1)
    axes.set_xticks(range(1, k_max + 1))
    axes.set_xlim(0.5, k_max + 0.5)
    axes.set_ylim(-0.02, 1.02)
    axes.set_xlabel("t (samples for pass@t, attempts for seq@t)")
    axes.set_ylabel("share of tasks solved (± 1 standard error)")
    axes.set_title(title or "pass@t and seq@t")
    axes.grid(True, alpha=0.3)
    axes.legend(loc="lower right", fontsize="small")
    out.parent.mkdir(parents=True, exist_ok=True)
    # No date in the file, so the same runs always give the same chart file.
    metadata: dict[str, Any] = {"Date": None} if output_format == "svg" else {}
    with matplotlib.rc_context({"svg.hashsalt": "gauntlet", "svg.fonttype": "none"}):
        figure.savefig(out, format=output_format, metadata=metadata)
    return out


def plot(
    paths: Sequence[Path], out: Path, *, k: int | None = None, title: str | None = None
) -> Path:
    """The chart of every run folder under `paths`, written to `out`."""
    return draw_chart(collect_curves(paths, k=k), out, title=title)


# The command


def add_parser(subparsers: Any) -> None:
    """Adds `plot` to the `gauntlet eval` subcommands."""
    parser = subparsers.add_parser(
        "plot",
        help="pass@t / seq@t curves of several runs on one PNG or SVG chart, with error bars",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="run folders (or parents)")
    parser.add_argument("--out", default=DEFAULT_OUT, help="chart.png or chart.svg")
    parser.add_argument("--k", type=int, help="curves up to this t (default: each run's k)")
    parser.add_argument("--title", help="the chart's title")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Runs `plot`; prints the chart's path, or one error line (exit 2)."""
    try:
        out = plot([Path(path) for path in args.paths], Path(args.out), k=args.k, title=args.title)
    except PlotError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USAGE
    print(f"chart: {out}")
    return EXIT_OK
