"""What `gauntlet eval` prints: the live console of a run, run summaries and single attempts."""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from app.evaluation.engine.runner import RunEvent

PROGRESS_INTERVAL_S = 2.0  # how often a non-terminal stderr gets a progress line


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


def number(value: Any, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and not math.isfinite(value):
        return "nan"
    return f"{value:.{digits}f}"


def _with_error(value: Any, error: Any) -> str:
    return number(value) if error is None else f"{number(value)} ± {number(error)}"


def _table(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


def _harness_rows(view: Mapping[str, Any] | None, name: str, count: int) -> list[str]:
    values = (view or {}).get(f"{name}_at") or []
    return [number(values[index]) if index < len(values) else "-" for index in range(count)]


def _harness_gain(view: Mapping[str, Any] | None, k: int) -> str | None:
    if not view or "delta" not in view:
        return None
    text = f"  seq_k: Δ = seq@{k} - seq@1 = {number(view['delta'])}"
    if view.get("gain") == "no gain":
        return text + " (no gain over seq@1)"
    return text + f", EGS = {number(view['egs'], 2)}, LGS = {number(view['lgs'], 2)}"


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
                    number(totals["cost_usd"], 6),
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
        f"  cost: {'$' + number(cost, 6) if cost is not None else 'unknown'}"
        f" | calls: {summary.get('calls', 0)} | wall time: {wall}{prices}"
    )
    return "\n".join(lines)


def warn_unpriced(models: Sequence[str], err: TextIO, warned: set[str]) -> None:
    for model in models:
        if model not in warned:
            warned.add(model)
            print(
                f"warning: no price known for {model}; its cost is null "
                "(give prices with --prices FILE)",
                file=err,
            )


def section_lines(title: str, text: str) -> list[str]:
    return [f"{title}:", *("  " + line for line in (text or "").splitlines() or [""])]


def _prompt_lines(actor: Mapping[str, Any]) -> list[str]:
    # The engine's types load when a prompt is shown, not with every `gauntlet` command's parser.
    from app.evaluation.engine.types import prompt_text, stored_messages

    messages = stored_messages(actor.get("prompt"), actor.get("messages"))
    stored = actor.get("prompt")
    text = stored if isinstance(stored, str) else prompt_text(messages)
    if len(messages) > 1:
        roles = ", ".join(str(message.get("role")) for message in messages)
        return section_lines(f"prompt (what the actor saw; messages: {roles})", text)
    return section_lines("prompt (what the actor saw)", text)


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
        f"cost {number(actor.get('cost_usd'), 6)}",
    ]
    lines.extend(_prompt_lines(actor))
    lines.extend(section_lines("output", str(actor.get("output") or "")))
    lines.append(
        f"judge {judge.get('model') or '(deterministic)'}: "
        f"{'pass' if judge.get('success') else 'fail'}, score {number(judge.get('score'))}"
        + (f", rating {judge.get('rating')}" if judge.get("rating") is not None else "")
        + f", {len(judge.get('calls') or [])} calls"
    )
    lines.extend(section_lines("verdict (public)", str(judge.get("raw_eval_output") or "")))
    details = judge.get("details", judge.get("judge_details"))
    lines.extend(section_lines("details (private)", json.dumps(details, ensure_ascii=False)))
    if critic.get("feedback") is not None:
        lines.append(
            f"critic {critic.get('model') or '(none)'}: {len(critic.get('calls') or [])} calls"
        )
        lines.extend(section_lines("feedback", str(critic.get("feedback") or "")))
    return "\n".join(lines)
