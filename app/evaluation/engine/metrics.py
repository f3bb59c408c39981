"""Estimators and totals: pass@k, seq@k, best-score curves, standard errors, tokens and cost.

Pure functions over plain data; no litellm, so `gauntlet eval metrics` starts fast. Costs come
from the calls' recorded `cost_usd` (litellm's price map at call time) unless a price override
names the model.

Two sets of definitions are computed side by side. Gauntlet's own are unbiased: pass@t by the
estimator of Chen et al. over all n samples of a task, seq@t as the share of tasks solved within
t attempts, over the tasks complete for k. The research harness's (seq_k's, `harness_view`)
are what its `metrics` command prints for the same folder: the first-t best-score curve (per
task, the best score among its first t attempts, carried forward past its last attempt, 0
without one; averaged over every task with an attempt), Δ = curve@K - curve@1, and for seq@k the
early and late gain shares EGS = (curve@2 - curve@1) / Δ and LGS = (curve@K - curve@K-1) / Δ,
or "no gain" when Δ is not positive. The summaries also carry seq_k's own fields, computed,
rounded and laid out as its writer does (`seq_k_curve_fields`, `tokens_by_model` and its
`seq_k_cost`, `seq_k_run_fields`, `TaskStats.to_summary`), so that a summary here is seq_k's
byte for byte once Gauntlet's own fields, which follow seq_k's, are left out.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from app.evaluation.engine.types import TrialRecord
from app.outbound.prices import Price, bundled_prices, litellm_release_date
from app.outbound.providers import bundled_catalog


def _check_counts(n: int, c: int, k: int) -> None:
    for name, value in (("n", n), ("c", c), ("k", k)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int, got {type(value).__name__}")
        if value < 0:
            raise ValueError(f"{name} must not be negative, got {value}")
    if c > n:
        raise ValueError(f"c (correct samples, {c}) cannot exceed n (samples, {n})")
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if k > n:
        raise ValueError(f"k ({k}) cannot exceed n (samples, {n})")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n samples of which c are correct (Chen et al. 2021).

    1 - C(n-c, k) / C(n, k), computed as 1 - prod_{i=n-c+1}^{n} (1 - k/i), which stays exact in
    floating point where the binomials would overflow.
    """
    _check_counts(n, c, k)
    if n - c < k:
        return 1.0
    product = 1.0
    for i in range(n - c + 1, n + 1):
        product *= 1.0 - k / i
    return 1.0 - product


def pass_curve(n: int, c: int, k: int) -> list[float]:
    """pass@t for t = 1..k."""
    _check_counts(n, c, k)
    return [pass_at_k(n, c, t) for t in range(1, k + 1)]


def seq_at_t(first_success_indices: Sequence[int | None], t: int) -> float:
    """Share of tasks solved within their first t attempts.

    `first_success_indices` holds, per task, the 1-based attempt that first succeeded, or None
    for a task never solved. No tasks gives 0.0.
    """
    if isinstance(t, bool) or not isinstance(t, int) or t < 1:
        raise ValueError(f"t must be an int of at least 1, got {t!r}")
    if not first_success_indices:
        return 0.0
    solved = 0
    for index in first_success_indices:
        if index is None:
            continue
        if isinstance(index, bool) or not isinstance(index, int) or index < 1:
            raise ValueError(f"attempt indices are 1-based ints, got {index!r}")
        if index <= t:
            solved += 1
    return solved / len(first_success_indices)


def expected_best_of(scores: Sequence[float], t: int) -> float:
    """Expected best score of t samples drawn without replacement from `scores` (n of them).

    The best-score analogue of the unbiased pass@k estimator: with the scores sorted ascending,
    s_(i) is the best of a random t-subset with probability C(i-1, t-1) / C(n, t). The weights
    are built by a running product, so large n stays finite. For 0/1 scores this equals
    `pass_at_k(n, c, t)`.
    """
    n = len(scores)
    _check_counts(n, 0, t)
    ordered = sorted(_finite_score(score) for score in scores)
    # weight(i) = C(i-1, t-1) / C(n, t); weight(n) = t / n, and
    # weight(i-1) / weight(i) = (i - t) / (i - 1).
    total = 0.0
    weight = t / n
    for i in range(n, t - 1, -1):
        total += weight * ordered[i - 1]
        if i > 1:
            weight *= (i - t) / (i - 1)
    return total


def _finite_score(score: float) -> float:
    if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
        raise ValueError(f"scores must be finite numbers, got {score!r}")
    return float(score)


def prefix_best_curve(scores: Sequence[float], k: int) -> list[float]:
    """max(scores[:t]) for t = 1..k; past the last attempt the best so far holds (a seq@k task
    that stopped at its first success keeps its score), and no attempt at all counts 0."""
    curve: list[float] = []
    best: float | None = None
    for t in range(1, k + 1):
        if t <= len(scores):
            score = _finite_score(scores[t - 1])
            best = score if best is None else max(best, score)
        curve.append(0.0 if best is None else best)
    return curve


def standard_error(values: Sequence[float]) -> float | None:
    """Standard error of the mean (sample standard deviation / sqrt(n)); None below 2 values."""
    if len(values) < 2:
        return None
    mean = math.fsum(values) / len(values)
    variance = math.fsum((value - mean) ** 2 for value in values) / (len(values) - 1)
    return math.sqrt(variance / len(values))


def mean(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


@dataclass(frozen=True)
class AttemptOutcome:
    """What the estimators need of one trial."""

    attempt_index: int
    success: bool
    score: float


@dataclass
class TaskOutcome:
    """The trials of one task, as the estimators see them, ordered by attempt index."""

    task_index: int
    task_id: str
    attempts: list[AttemptOutcome] = field(default_factory=list)

    @property
    def first_success(self) -> int | None:
        for attempt in self.attempts:
            if attempt.success:
                return attempt.attempt_index
        return None

    def is_complete(self, metric: str, k: int) -> bool:
        """Whether the task has what a curve up to k needs: k samples (pass@k); a success or k
        attempts (seq@k)."""
        if metric == "pass@k":
            return len(self.attempts) >= k
        first = self.first_success
        return (first is not None and first <= k) or len(self.attempts) >= k

    def metric_curve(self, metric: str, k: int) -> list[float]:
        """pass@t (unbiased, over all samples) or seq@t (1 if solved within t) for t = 1..k."""
        if metric == "pass@k":
            n = len(self.attempts)
            c = sum(1 for attempt in self.attempts if attempt.success)
            return pass_curve(n, c, k)
        first = self.first_success
        return [1.0 if first is not None and first <= t else 0.0 for t in range(1, k + 1)]

    def best_score_curve(self, metric: str, k: int) -> list[float]:
        scores = [attempt.score for attempt in self.attempts]
        if metric == "pass@k":
            return [expected_best_of(scores, t) for t in range(1, k + 1)]
        return prefix_best_curve(scores[:k], k)


@dataclass(frozen=True)
class CurvePoint:
    t: int
    value: float | None
    stderr: float | None


def _curve(per_task: list[list[float]], k: int) -> list[CurvePoint]:
    points: list[CurvePoint] = []
    for t in range(1, k + 1):
        values = [curve[t - 1] for curve in per_task]
        points.append(CurvePoint(t=t, value=mean(values), stderr=standard_error(values)))
    return points


@dataclass(frozen=True)
class RunCurves:
    """The run's curves at t = 1..k over its complete tasks, with standard errors over tasks."""

    metric: str
    k: int
    tasks_complete: int
    tasks_incomplete: int
    tasks_solved: int
    metric_at: list[CurvePoint]
    best_score_at: list[CurvePoint]
    gain: CurvePoint | None  # seq@k - seq@1 (paired over tasks); None for pass@k

    @property
    def name(self) -> str:
        return "pass" if self.metric == "pass@k" else "seq"

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "metric": self.metric,
            "k": self.k,
            "tasks_complete": self.tasks_complete,
            "tasks_incomplete": self.tasks_incomplete,
            "tasks_solved": self.tasks_solved,
            "t": [point.t for point in self.metric_at],
            f"{self.name}_at": [point.value for point in self.metric_at],
            f"{self.name}_at_stderr": [point.stderr for point in self.metric_at],
            "best_score_at": [point.value for point in self.best_score_at],
            "best_score_at_stderr": [point.stderr for point in self.best_score_at],
        }
        if self.gain is not None:
            data["gain"] = {
                "name": f"seq@{self.k} - seq@1",
                "value": self.gain.value,
                "stderr": self.gain.stderr,
            }
        return data


def run_curves(outcomes: Iterable[TaskOutcome], metric: str, k: int) -> RunCurves:
    """Curves over the tasks complete for k; incomplete tasks are counted, not estimated."""
    if metric not in ("pass@k", "seq@k"):
        raise ValueError(f"unknown metric {metric!r}")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be an int of at least 1, got {k!r}")
    metric_curves: list[list[float]] = []
    best_curves: list[list[float]] = []
    incomplete = 0
    solved = 0
    for outcome in outcomes:
        if not outcome.is_complete(metric, k):
            incomplete += 1
            continue
        curve = outcome.metric_curve(metric, k)
        metric_curves.append(curve)
        best_curves.append(outcome.best_score_curve(metric, k))
        if curve[-1] > 0:
            solved += 1
    gain: CurvePoint | None = None
    if metric == "seq@k":
        differences = [curve[-1] - curve[0] for curve in metric_curves]
        gain = CurvePoint(t=k, value=mean(differences), stderr=standard_error(differences))
    return RunCurves(
        metric=metric,
        k=k,
        tasks_complete=len(metric_curves),
        tasks_incomplete=incomplete,
        tasks_solved=solved,
        metric_at=_curve(metric_curves, k),
        best_score_at=_curve(best_curves, k),
        gain=gain,
    )


def first_t_best_curve(scores: Sequence[float], k: int) -> list[float]:
    """The research harness's per-task curve: the best of the first t scores, t = 1..k, from
    0 (so a negative score never shows), carried forward past the last attempt."""
    curve: list[float] = []
    best = 0.0
    for t in range(k):
        if t < len(scores):
            best = max(best, _finite_score(scores[t]))
        curve.append(best)
    return curve


def harness_view(
    score_lists: Iterable[Sequence[float]], metric: str, k: int
) -> dict[str, Any] | None:
    """seq_k's definitions over the tasks' scores (each task's, in attempt order): the mean
    first-t best-score curve over every task with an attempt, its standard errors (0 below two
    tasks, as seq_k writes them), and for seq@k with k >= 2 the gain Δ and its shares EGS and
    LGS, or `"no gain"`. None without a task that has an attempt."""
    curves = [first_t_best_curve(scores, k) for scores in score_lists if len(scores) > 0]
    if not curves:
        return None
    n = len(curves)
    name = "seq" if metric == "seq@k" else "pass"
    values = [math.fsum(curve[t] for curve in curves) / n for t in range(k)]
    errors = []
    for t in range(k):
        error = standard_error([curve[t] for curve in curves])
        errors.append(0.0 if error is None else error)
    view: dict[str, Any] = {
        "definition": "seq_k: mean over tasks of the best score within the first t attempts",
        "tasks": n,
        "k": k,
        f"{name}_at": values,
        f"{name}_at_stderr": errors,
    }
    if metric == "seq@k" and k >= 2:
        delta = values[k - 1] - values[0]
        view["delta"] = delta
        if delta > 0:
            view["egs"] = (values[1] - values[0]) / delta
            view["lgs"] = (values[k - 1] - values[k - 2]) / delta
        else:
            view["egs"] = view["lgs"] = None
            view["gain"] = "no gain"
    return view


# seq_k's summary fields: its `core/results.py:_summary_view`, value for value (the same sums
# in the same order, the same rounding), so that tools written for seq_k's summary.json read
# Gauntlet's unchanged.

SEQ_K_TIME_FORMAT = "%Y-%m-%dT%H-%M-%SZ"  # seq_k's `last_updated`: UTC, safe in file names


def seq_k_now() -> str:
    return datetime.now(UTC).strftime(SEQ_K_TIME_FORMAT)


def seq_k_curve_fields(
    score_lists: Iterable[tuple[int, Sequence[float]]], metric: str, k: int
) -> dict[str, Any]:
    """`tasks`, `pass@t`/`seq@t` for t = 1..k, `se` and, for seq@k with k >= 2, `delta` and,
    when it is positive, `EGS` and `LGS`, from each task's (index, scores in attempt order):
    the mean first-t best-score curve over the tasks with an attempt, rounded as seq_k rounds
    them (4 places; EGS and LGS 3). Only `tasks` (0) without a task that has an attempt."""
    ordered = sorted((index, scores) for index, scores in score_lists if len(scores) > 0)
    curves = [first_t_best_curve(scores, k) for _, scores in ordered]
    if not curves:
        return {"tasks": 0}
    n = len(curves)
    label = "seq" if metric == "seq@k" else "pass"
    at = [sum(curve[t] for curve in curves) / n for t in range(k)]
    fields: dict[str, Any] = {"tasks": n}
    for t in range(k):
        fields[f"{label}@{t + 1}"] = round(at[t], 4)
    errors = []
    for t in range(k):
        if n > 1:
            variance = sum((curve[t] - at[t]) ** 2 for curve in curves) / (n - 1)
            errors.append((variance / n) ** 0.5)
        else:
            errors.append(0.0)
    fields["se"] = {f"{label}@{t + 1}": round(errors[t], 4) for t in range(k)}
    if metric == "seq@k" and k >= 2:
        delta = at[k - 1] - at[0]
        fields["delta"] = round(delta, 4)
        if delta > 0:
            fields["EGS"] = round((at[1] - at[0]) / delta, 3)
            fields["LGS"] = round((at[k - 1] - at[k - 2]) / delta, 3)
    return fields


def seq_k_run_fields(
    document: Mapping[str, Any],
    *,
    metric: str,
    model: str,
    feedback_mode: str,
    pricing_last_updated: str | None,
) -> dict[str, Any]:
    """A run summary (`run_summary`'s document) laid out as seq_k's `save_summary` writes one:
    `metric`, `model`, `feedback_mode`, then the document's seq_k fields (`tasks` through
    `tokens`), `pricing_last_updated` and `last_updated`, then the rest. With no task attempted
    seq_k writes `tasks` (0), `k` and `last_updated` alone; so does this, an empty `tokens`
    left out."""
    items = list(document.items())
    if document.get("tasks") == 0:
        rest = {
            key: value
            for key, value in items
            if key not in ("tasks", "k") and not (key == "tokens" and not value)
        }
        return {"tasks": 0, "k": document.get("k"), "last_updated": seq_k_now(), **rest}
    names = [key for key, _ in items]
    end = names.index("tokens") + 1 if "tokens" in names else 0
    return {
        "metric": metric,
        "model": model,
        "feedback_mode": feedback_mode,
        **dict(items[:end]),
        "pricing_last_updated": pricing_last_updated,
        "last_updated": seq_k_now(),
        **dict(items[end:]),
    }


# Usage and cost

ROLES: tuple[str, ...] = ("actor", "judge", "critic", "summarizer")
BUNDLED_PRICE_MAP = "model_prices_and_context_window_backup.json"


def price_map_info() -> dict[str, Any]:
    """Which price map priced a run's calls, for its summary: litellm's version and the map's
    date. litellm's map carries no date of its own; the date is that of the litellm release
    (the build timestamp of its SBOM, recorded in app/outbound/litellm_prices.json when it was
    derived, so a run does not scan litellm's package files for it), else the day its bundled
    map file was installed. With `LITELLM_LOCAL_MODEL_COST_MAP` unset, litellm fetches the
    current map at import instead."""
    # importlib.metadata (~10 ms: email, zipfile, csv) loads only when a run names its price map.
    from importlib import metadata

    bundled = os.environ.get("LITELLM_LOCAL_MODEL_COST_MAP", "").lower() == "true"
    info: dict[str, Any] = {
        "price_map": "litellm bundled" if bundled else "litellm fetched at start",
        "litellm_version": None,
        "pricing_last_updated": None,
    }
    try:
        version = metadata.version("litellm")
    except metadata.PackageNotFoundError:
        return info
    info["litellm_version"] = version
    if not bundled:
        info["pricing_last_updated"] = datetime.now(UTC).date().isoformat()
        return info
    table = bundled_prices()
    if table.litellm_version == version and table.price_map_date is not None:
        info["pricing_last_updated"] = table.price_map_date
        return info
    info["pricing_last_updated"] = litellm_release_date() or _bundled_map_install_date()
    return info


def _bundled_map_install_date() -> str | None:
    # importlib.metadata (~10 ms: email, zipfile, csv) loads only when a run names its price map.
    from importlib import metadata

    for entry in metadata.distribution("litellm").files or ():
        if entry.name == BUNDLED_PRICE_MAP:
            try:
                moment = os.stat(entry.locate()).st_mtime
            except OSError:
                return None
            return datetime.fromtimestamp(moment, UTC).date().isoformat()
    return None


TOKEN_FIELDS: tuple[str, ...] = (
    "input_tokens",
    "cached_tokens",
    "thinking_tokens",
    "output_tokens",
)


def parse_prices(data: Any, *, source: str = "prices") -> dict[str, Price]:
    """`{model: {input_cost_per_token, output_cost_per_token, cache_read_input_token_cost?}}`."""
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError(f"{source}: expected a mapping of model id to prices")
    prices: dict[str, Price] = {}
    allowed = {"input_cost_per_token", "output_cost_per_token", "cache_read_input_token_cost"}
    for model, entry in data.items():
        if not isinstance(entry, dict):
            raise ValueError(f"{source}.{model}: expected a mapping of prices")
        unknown = set(entry) - allowed
        if unknown:
            raise ValueError(f"{source}.{model}: unknown keys {sorted(unknown)}")
        values: dict[str, float] = {}
        for key, value in entry.items():
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
                or value < 0
            ):
                raise ValueError(f"{source}.{model}.{key}: expected a price >= 0, got {value!r}")
            values[key] = float(value)
        for required in ("input_cost_per_token", "output_cost_per_token"):
            if required not in values:
                raise ValueError(f"{source}.{model}: missing {required}")
        prices[str(model)] = Price(
            input_cost_per_token=values["input_cost_per_token"],
            output_cost_per_token=values["output_cost_per_token"],
            cache_read_input_token_cost=values.get("cache_read_input_token_cost"),
        )
    return prices


@dataclass
class UsageTotals:
    """Calls, tokens and cost of one model in one role. `cost_usd` is None when any call's
    price is unknown (a partial sum would understate the cost)."""

    calls: int = 0
    input_tokens: int = 0
    cached_tokens: int = 0
    thinking_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0
    elapsed_ms: int = 0

    def add_call(self, call: Mapping[str, Any]) -> None:
        self.calls += 1
        tokens = {name: _count(call.get(name)) for name in TOKEN_FIELDS}
        self.input_tokens += tokens["input_tokens"]
        self.cached_tokens += tokens["cached_tokens"]
        self.thinking_tokens += tokens["thinking_tokens"]
        self.output_tokens += tokens["output_tokens"]
        self.elapsed_ms += _count(call.get("elapsed_ms"))
        cost = _known_cost(call.get("cost_usd"))
        if cost is None or self.cost_usd is None:
            self.cost_usd = None
        else:
            self.cost_usd += cost

    def merge(self, other: UsageTotals) -> None:
        self.calls += other.calls
        self.input_tokens += other.input_tokens
        self.cached_tokens += other.cached_tokens
        self.thinking_tokens += other.thinking_tokens
        self.output_tokens += other.output_tokens
        self.elapsed_ms += other.elapsed_ms
        if self.cost_usd is None or other.cost_usd is None:
            self.cost_usd = None
        else:
            self.cost_usd += other.cost_usd

    def to_dict(self) -> dict[str, Any]:
        # Explicit rather than dataclasses.asdict, whose deep copy is slow: a run of 10,000
        # tasks builds this for every task summary.
        return {
            "calls": self.calls,
            "input_tokens": self.input_tokens,
            "cached_tokens": self.cached_tokens,
            "thinking_tokens": self.thinking_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": self.cost_usd,
            "elapsed_ms": self.elapsed_ms,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> UsageTotals:
        cost = data.get("cost_usd")
        return cls(
            calls=_count(data.get("calls")),
            input_tokens=_count(data.get("input_tokens")),
            cached_tokens=_count(data.get("cached_tokens")),
            thinking_tokens=_count(data.get("thinking_tokens")),
            output_tokens=_count(data.get("output_tokens")),
            cost_usd=_known_cost(cost),
            elapsed_ms=_count(data.get("elapsed_ms")),
        )


def _known_cost(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


Usage = dict[str, dict[str, UsageTotals]]
"""role -> model -> totals."""


def trial_view(trial: TrialRecord) -> dict[str, Any]:
    """A trial in the stored layout (`TrialRecord.to_dict()`) without copying it: a read-only
    view for the totals here, cheap enough to build for every trial of a large run."""
    return {
        "attempt_index": trial.attempt_index,
        "actor": vars(trial.actor),
        "judge": vars(trial.judge),
        "critic": vars(trial.critic),
    }


def trial_calls(trial: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(role, call) for every model call of a stored trial (a TrialRecord.to_dict(), or an
    attempt file, whose research-harness form may add a `summarizer` section)."""
    actor = trial.get("actor")
    if isinstance(actor, Mapping):
        yield "actor", actor
    for role in ("judge", "critic", "summarizer"):
        section = trial.get(role)
        if isinstance(section, Mapping):
            for call in section.get("calls") or ():
                if isinstance(call, Mapping):
                    yield role, call


def add_trial_usage(usage: Usage, trial: Mapping[str, Any]) -> None:
    for role, call in trial_calls(trial):
        model = str(call.get("model") or "unknown")
        usage.setdefault(role, {}).setdefault(model, UsageTotals()).add_call(call)


def apply_prices(usage: Usage, prices: Mapping[str, Price]) -> Usage:
    """A copy of `usage` whose overridden models' costs come from `prices`.

    Cost is linear in the token counts, so pricing the totals equals pricing every call.
    """
    priced: Usage = {}
    for role, models in usage.items():
        for model, totals in models.items():
            copy = replace(totals)
            price = prices.get(model)
            if price is not None:
                copy.cost_usd = price.cost(
                    input_tokens=totals.input_tokens,
                    cached_tokens=totals.cached_tokens,
                    output_tokens=totals.output_tokens,
                    thinking_tokens=totals.thinking_tokens,
                )
            priced.setdefault(role, {})[model] = copy
    return priced


def merge_usage(into: Usage, other: Usage) -> None:
    for role, models in other.items():
        for model, totals in models.items():
            into.setdefault(role, {}).setdefault(model, UsageTotals()).merge(totals)


def usage_to_dict(usage: Usage) -> dict[str, dict[str, dict[str, Any]]]:
    return {
        role: {model: totals.to_dict() for model, totals in sorted(models.items())}
        for role, models in sorted(usage.items(), key=lambda item: _role_order(item[0]))
    }


def usage_from_dict(data: Any) -> Usage:
    usage: Usage = {}
    if not isinstance(data, Mapping):
        return usage
    for role, models in data.items():
        if isinstance(models, Mapping):
            usage[str(role)] = {
                str(model): UsageTotals.from_dict(totals)
                for model, totals in models.items()
                if isinstance(totals, Mapping)
            }
    return usage


def _role_order(role: str) -> int:
    return ROLES.index(role) if role in ROLES else len(ROLES)


def total_cost(usage: Usage) -> float | None:
    """The cost over all roles and models; None when any model's price is unknown."""
    costs = [totals.cost_usd for models in usage.values() for totals in models.values()]
    if any(cost is None for cost in costs):
        return None
    return math.fsum(cost for cost in costs if cost is not None)


def unpriced_models(usage: Usage) -> list[str]:
    return sorted(
        {
            model
            for models in usage.values()
            for model, totals in models.items()
            if totals.cost_usd is None
        }
    )


def total_calls(usage: Usage) -> int:
    return sum(totals.calls for models in usage.values() for totals in models.values())


PriceLookup = Callable[[str], Price | None]
"""A model's price (per token, USD), or None when it is not known."""

SEQ_K_COST_PLACES = 6  # seq_k rounds each `cost_usd` to the micro-dollar


def seq_k_cost(price: Price, *, input_tokens: int, cached_tokens: int, output_tokens: int) -> float:
    """A model's cost over its tokens the way seq_k's `core/pricing.py` computes it, before its
    rounding: (uncached input * input price + cached * cached-input price + output * output
    price) / 1,000,000, the prices in USD per million tokens, in that order of operations. The
    sum is the same as Gauntlet's sum over the calls, but floating point rounds each step: done
    seq_k's way, a cost that falls on half a micro-dollar rounds as seq_k's does."""
    uncached = max(0, input_tokens - cached_tokens)
    cached_price = price.cache_read_input_token_cost
    if cached_price is None:
        cached_price = price.input_cost_per_token
    return (
        uncached * _per_million(price.input_cost_per_token)
        + cached_tokens * _per_million(cached_price)
        + output_tokens * _per_million(price.output_cost_per_token)
    ) / 1_000_000


def _per_million(per_token: float) -> float:
    # litellm's 1.5e-07 a token is seq_k's 0.15 a million, exactly: scaled in decimal, not binary.
    return float(Decimal(repr(per_token)) * 1_000_000)


@functools.lru_cache(maxsize=256)
def _listed_price(model: str) -> Price | None:
    if model.startswith("offline/"):
        return None
    return bundled_prices().price_of(model, bundled_catalog())


def price_lookup(prices: Mapping[str, Price] | None = None) -> PriceLookup:
    """The price of a model: its override in `prices`, else litellm's price map (as data)."""
    overrides = dict(prices or {})

    def lookup(model: str) -> Price | None:
        return overrides[model] if model in overrides else _listed_price(model)

    return lookup


def rounded_cost(model: str, totals: UsageTotals, price_of: PriceLookup | None) -> float | None:
    """A model's cost as seq_k writes it, rounded to the micro-dollar: from its tokens the way
    seq_k computes it (`seq_k_cost`) when the model's price gives the cost its calls recorded,
    else the recorded cost itself (a price that changed since, a tiered or reasoning price, an
    unlisted model). None when a call's cost is unknown."""
    recorded = totals.cost_usd
    if recorded is None:
        return None
    price = price_of(model) if price_of is not None else None
    if price is not None:
        cost = seq_k_cost(
            price,
            input_tokens=totals.input_tokens,
            cached_tokens=totals.cached_tokens,
            output_tokens=totals.output_tokens,
        )
        if math.isclose(cost, recorded, rel_tol=1e-9, abs_tol=1e-12):
            return round(cost, SEQ_K_COST_PLACES)
    return round(recorded, SEQ_K_COST_PLACES)


def tokens_by_model(
    usage: Usage, *, order: Iterable[str] = (), price_of: PriceLookup | None = None
) -> dict[str, dict[str, Any]]:
    """The usage of each model over every role it played (a model both actor and judge is
    one entry), with its cost: the summaries' `tokens`, keyed, ordered, shaped and rounded as
    seq_k writes them (models in `order`, the order seq_k meets them; any other after, by name;
    the calls are counted in `usage`)."""
    merged: dict[str, UsageTotals] = {}
    for models in usage.values():
        for model, totals in models.items():
            merged.setdefault(model, UsageTotals()).merge(totals)
    ordered = [model for model in dict.fromkeys(order) if model in merged]
    ordered += sorted(model for model in merged if model not in set(ordered))
    return {
        model: {
            "input_tokens": merged[model].input_tokens,
            "cached_tokens": merged[model].cached_tokens,
            "thinking_tokens": merged[model].thinking_tokens,
            "output_tokens": merged[model].output_tokens,
            "cost_usd": rounded_cost(model, merged[model], price_of),
        }
        for model in ordered
    }


def apply_model_costs(
    usage: Usage, tokens: Mapping[str, Any], *, replace_costs: bool = False
) -> set[str]:
    """Fills in, in place, the costs a seq_k summary's `tokens` gives per model (seq_k prices
    a model's tokens over a task, or over the run, every role merged, and keeps no cost per
    call); returns the models it priced.

    A model's cost is taken only where its token counts equal the summary's (a summary of other
    attempts prices nothing), and, unless `replace_costs`, where its calls here carry none. A
    model that played several roles has its cost shared between them by their tokens: the
    model's and the run's costs are seq_k's exactly, a role's share is an estimate.
    """
    counted = tokens_by_model(usage)
    priced: set[str] = set()
    for model, entry in tokens.items():
        if not isinstance(entry, Mapping):
            continue
        cost = _known_cost(entry.get("cost_usd"))
        ours = counted.get(str(model))
        if cost is None or ours is None:
            continue
        if any(_count(entry.get(name)) != ours[name] for name in TOKEN_FIELDS):
            continue
        roles = [models[str(model)] for models in usage.values() if str(model) in models]
        if not replace_costs and any(
            totals.cost_usd is not None and totals.calls for totals in roles
        ):
            continue
        weights = [totals.input_tokens + totals.output_tokens for totals in roles]
        whole = sum(weights)
        for totals, weight in zip(roles, weights, strict=True):
            share = weight / whole if whole else 1.0 / len(roles)
            totals.cost_usd = cost * share
        priced.add(str(model))
    return priced


def _figures(data: Any) -> dict[str, float]:
    if not isinstance(data, Mapping):
        return {}
    return {
        str(name): float(value)
        for name, value in data.items()
        if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    }


def task_figures(metadata: Mapping[str, Any]) -> dict[str, float]:
    """A task's `figures` (its metadata's numbers other than the grade, e.g. memory_qa's
    retrieval recall), reported beside the curves, never folded into them."""
    return _figures(metadata.get("figures"))


# Per task and per run

TASK_STATUSES: tuple[str, ...] = ("pending", "partial", "done", "error")


@dataclass
class TaskStats:
    """What a task's summary holds: its outcome, its usage, its status. Small on purpose: the
    runner keeps one per task for the run summary, never the prompts."""

    outcome: TaskOutcome
    usage: Usage = field(default_factory=dict)
    status: str = "pending"
    error: str | None = None
    figures: dict[str, float] = field(default_factory=dict)
    # Where each model is first met, (attempt index, place among the trial's calls): seq_k
    # lists a summary's `tokens` in that order.
    first_use: dict[str, tuple[int, int]] = field(default_factory=dict)

    @classmethod
    def from_trials(
        cls, task_index: int, task_id: str, trials: Iterable[Mapping[str, Any]]
    ) -> TaskStats:
        stats = cls(outcome=TaskOutcome(task_index=task_index, task_id=task_id))
        for trial in trials:
            stats.add_trial(trial)
        return stats

    def add_trial(self, trial: Mapping[str, Any]) -> None:
        judge = trial.get("judge") or {}
        score = judge.get("score")
        attempt = AttemptOutcome(
            attempt_index=int(trial["attempt_index"]),
            success=bool(judge.get("success")),
            score=float(score) if isinstance(score, int | float) and math.isfinite(score) else 0.0,
        )
        attempts = self.outcome.attempts
        attempts.append(attempt)
        if len(attempts) > 1 and attempts[-2].attempt_index > attempt.attempt_index:
            attempts.sort(key=lambda item: item.attempt_index)
        add_trial_usage(self.usage, trial)
        for place, (_, call) in enumerate(trial_calls(trial)):
            model = str(call.get("model") or "unknown")
            met = (attempt.attempt_index, place)
            if model not in self.first_use or met < self.first_use[model]:
                self.first_use[model] = met
        if self.status == "pending":
            self.status = "partial"

    @property
    def models(self) -> list[str]:
        """The task's models in the order seq_k meets them: by attempt, then actor, judge
        calls, critic calls."""
        return sorted(self.first_use, key=self.first_use.__getitem__)

    def status_at(self, metric: str, k: int) -> str:
        """`error` for a task that failed; otherwise `done` when it has what a curve up to k
        needs (`TaskOutcome.is_complete`), `partial` when it has trials short of that,
        `pending` without any."""
        if self.status == "error":
            return "error"
        if self.outcome.is_complete(metric, k):
            return "done"
        return "partial" if self.outcome.attempts else "pending"

    def to_summary(
        self,
        metric: str,
        k: int,
        *,
        pricing_last_updated: str | None = None,
        prices: Mapping[str, Price] | None = None,
    ) -> dict[str, Any]:
        """The task's summary.json: seq_k's fields with its names, types, order and rounding
        (its `_refresh_task_summary`), then Gauntlet's own under names seq_k does not use.
        Price overrides apply as in the run summary."""
        outcome = self.outcome
        usage = apply_prices(self.usage, prices) if prices else self.usage
        complete = outcome.is_complete(metric, k)
        # A curve is only an estimate once the task has what the estimator needs.
        curve_k = k if complete else None
        scores = [attempt.score for attempt in outcome.attempts]
        return {
            "task_id": outcome.task_id,
            "task_index": outcome.task_index,
            "success": outcome.first_success is not None,
            "best_score": max(scores) if scores else None,
            "last_updated": seq_k_now(),
            "attempts": [
                {
                    "attempt": attempt.attempt_index,
                    "success": attempt.success,
                    "score": attempt.score,
                }
                for attempt in outcome.attempts
            ],
            "tokens": tokens_by_model(usage, order=self.models, price_of=price_lookup(prices)),
            "pricing_last_updated": pricing_last_updated,
            "metric": metric,
            "k": k,
            "status": self.status_at(metric, k),
            "error": self.error,
            "first_success": outcome.first_success,
            "metric_at": outcome.metric_curve(metric, curve_k) if curve_k else None,
            "best_score_at": outcome.best_score_curve(metric, curve_k) if curve_k else None,
            "figures": dict(self.figures),
            "usage": usage_to_dict(usage),
            "cost_usd": total_cost(usage),
            "calls": total_calls(usage),
        }

    @classmethod
    def from_summary(cls, data: Mapping[str, Any]) -> TaskStats:
        attempts = [
            AttemptOutcome(
                # `attempt`, as seq_k names it; `attempt_index` in summaries written before.
                attempt_index=int(item.get("attempt", item.get("attempt_index"))),
                success=bool(item.get("success")),
                score=float(item.get("score") or 0.0),
            )
            for item in data.get("attempts") or ()
            if isinstance(item, Mapping)
        ]
        status = str(data.get("status") or "pending")
        error = data.get("error")
        tokens = data.get("tokens")
        return cls(
            outcome=TaskOutcome(
                task_index=int(data["task_index"]),
                task_id=str(data["task_id"]),
                attempts=sorted(attempts, key=lambda item: item.attempt_index),
            ),
            usage=usage_from_dict(data.get("usage")),
            status=status if status in TASK_STATUSES else "partial",
            error=error if isinstance(error, str) else None,
            figures=_figures(data.get("figures")),
            # The summary's `tokens` are listed in the order the task met its models.
            first_use={
                str(model): (0, place)
                for place, model in enumerate(tokens if isinstance(tokens, Mapping) else ())
            },
        )


def models_in_order(stats: Iterable[TaskStats]) -> list[str]:
    """The models of a run in the order seq_k meets them: by task index, then as each task
    does (`TaskStats.models`)."""
    ordered: dict[str, None] = {}
    for task in sorted(stats, key=lambda item: item.outcome.task_index):
        ordered.update(dict.fromkeys(task.models))
    return list(ordered)


def run_summary(
    stats: Iterable[TaskStats],
    *,
    metric: str,
    k: int,
    prices: Mapping[str, Price] | None = None,
    seq_k_tokens: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Curves, standard errors, gain, tokens and cost over the tasks, as summary.json holds them:
    seq_k's fields (`seq_k_curve_fields`, `tokens` per model), then Gauntlet's.

    `seq_k_tokens`: the `tokens` of a summary.json seq_k wrote for these tasks. seq_k prices
    each model over the whole run and rounds that, so its run cost is not the sum of its
    rounded task costs: a model whose token counts equal its entry takes the entry's cost.
    Price overrides still win."""
    stats_list = list(stats)
    usage: Usage = {}
    for task in stats_list:
        merge_usage(usage, task.usage)
    if seq_k_tokens:
        apply_model_costs(usage, seq_k_tokens, replace_costs=True)
    if prices:
        usage = apply_prices(usage, prices)
    curves = run_curves((task.outcome for task in stats_list), metric, k)
    figures: dict[str, list[float]] = {}
    for task in stats_list:
        for name, value in task.figures.items():
            figures.setdefault(name, []).append(value)
    seq_k_fields = seq_k_curve_fields(
        (
            (task.outcome.task_index, [attempt.score for attempt in task.outcome.attempts])
            for task in stats_list
        ),
        metric,
        k,
    )
    tasks_with_an_attempt = seq_k_fields.pop("tasks")
    statuses = [task.status_at(metric, k) for task in stats_list]
    return {
        "tasks": tasks_with_an_attempt,
        "k": k,
        **seq_k_fields,
        "tokens": tokens_by_model(
            usage, order=models_in_order(stats_list), price_of=price_lookup(prices)
        ),
        "curves": curves.to_dict(),
        "harness_view": harness_view(
            ([attempt.score for attempt in task.outcome.attempts] for task in stats_list),
            metric,
            k,
        ),
        "figures": {
            name: {"mean": mean(values), "stderr": standard_error(values), "tasks": len(values)}
            for name, values in sorted(figures.items())
        },
        "task_status": {
            "total": len(stats_list),
            "done": statuses.count("done"),
            "partial": statuses.count("partial"),
            "error": statuses.count("error"),
        },
        "attempts": sum(len(task.outcome.attempts) for task in stats_list),
        "usage": usage_to_dict(usage),
        "cost_usd": total_cost(usage),
        "unpriced_models": unpriced_models(usage),
        "calls": total_calls(usage),
    }
