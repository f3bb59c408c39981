"""The benchmark kind's fragments of the web pages: its facts, the model-spec form, each
attempt's progress and curve, the model and figures of each leaderboard row, and the curve
charts. `BenchmarkPages`, the kind's `WebKind`, is here; the model-spec form is `web_form`'s,
the other fragments `web_fragments`'s, and their public names are imported here, so callers
say `web.<name>`."""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar

from fastapi import APIRouter
from sqlalchemy.orm import Session

from app.kinds.api import (
    AttemptCreate,
    AttemptRead,
    Audience,
    KindConfig,
    Measure,
    ScoringStrategy,
)
from app.kinds.api.evaluation import (
    CRITIC_FEEDBACK_MODES,
    FEEDBACK_MODE_WORDS,
    FEEDBACK_MODES,
    OFFLINE_MODELS,
    Benchmark,
    BenchmarkError,
    installed_benchmarks,
)
from app.kinds.api.services import attempt_runs, sealed_shown
from app.kinds.api.storage import Challenge
from app.kinds.api.web import (
    TASKS_PAGE_SIZE,
    CurveChart,
    StrategyText,
    TaskRow,
    WebKind,
    metric_name_at,
    task_rows,
)
from app.kinds.benchmark.config import BenchmarkConfig
from app.kinds.benchmark.finals import FinalState, final_state
from app.kinds.benchmark.web_form import (
    MODEL_SPEC_FIELDS,
    SYSTEM_PROMPT_LIMIT,
    ModelSpecForm,
    model_spec_attempt,
)
from app.kinds.benchmark.web_fragments import (
    CHART_MODELS,
    BenchmarkContext,
    BenchmarkFacts,
    BenchmarkOutline,
    BenchmarkProgress,
    RunFacts,
    _run_facts,
    attempt_chart,
    benchmark_context,
    benchmark_facts,
    benchmark_outline,
    benchmark_progress,
    leaderboard_chart,
)

__all__ = [
    "CHART_MODELS",
    "MODEL_SPEC_FIELDS",
    "SYSTEM_PROMPT_LIMIT",
    "AttemptDetails",
    "BenchmarkContext",
    "BenchmarkFacts",
    "BenchmarkOutline",
    "BenchmarkPages",
    "BenchmarkProgress",
    "ModelSpecForm",
    "RunFacts",
    "SpecForm",
    "attempt_chart",
    "benchmark_context",
    "benchmark_facts",
    "benchmark_outline",
    "benchmark_progress",
    "feedback_mode_choices",
    "leaderboard_chart",
    "model_spec_attempt",
]


def _config(config: KindConfig) -> BenchmarkConfig:
    if not isinstance(config, BenchmarkConfig):
        raise TypeError(f"a benchmark challenge's configuration, not {type(config).__name__}")
    return config


# The kind's pages -----------------------------------------------------------------------------


@dataclass(frozen=True)
class SpecForm:
    """The model-spec form's state, and what the form says around it."""

    typed: ModelSpecForm
    k: int
    metric_at_k: str
    custom_server: bool
    offline_models: Sequence[str]
    system_prompt_limit: int


@dataclass(frozen=True)
class AttemptDetails:
    """The attempt page below its summary: the curve and a page of the tasks."""

    progress: BenchmarkProgress | None
    chart: CurveChart | None
    tasks: list[TaskRow]
    tasks_total: int
    tasks_page: int
    tasks_pages: int
    # On a split challenge: whether it is marked final, and whether that can change now.
    final: FinalState | None = None


@lru_cache(maxsize=1)
def feedback_mode_choices() -> tuple[tuple[str, str], ...]:
    """The feedback modes a benchmark challenge may name: every benchmark's (the engine's, the
    critic modes, which need a critic model) and those of the installed benchmarks' own, each
    marked with the benchmarks that have it."""
    generic = [
        mode for mode in FEEDBACK_MODE_WORDS if mode in FEEDBACK_MODES | CRITIC_FEEDBACK_MODES
    ]
    choices = [(mode, FEEDBACK_MODE_WORDS[mode]) for mode in generic]
    own: dict[str, list[str]] = {}
    for name in installed_benchmarks():
        try:
            benchmark = Benchmark.load(name)
        except BenchmarkError:
            continue
        for mode in sorted(benchmark.feedback_modes | benchmark.llm_critic_modes):
            if mode not in generic:
                own.setdefault(mode, []).append(name)
    for mode, names in own.items():
        choices.append(
            (mode, f"{mode.replace('_', ' ').capitalize()}: {' and '.join(names)}'s own")
        )
    return tuple(choices)


class BenchmarkPages(WebKind):
    templates_dir: ClassVar[Path | None] = Path(__file__).resolve().parent / "templates"
    form_fields: ClassVar[tuple[str, ...]] = tuple(MODEL_SPEC_FIELDS)
    # An attempt has tasks times k trials: cards show the run's summary, the attempt page
    # pages through its tasks.
    cards_show_trials: ClassVar[bool] = False
    board_columns: ClassVar[int] = 3
    has_chart: ClassVar[bool] = True
    essential_fields: ClassVar[tuple[str, ...]] = (
        "benchmark.name",
        "benchmark.options",
        "evaluation.metric",
        "evaluation.k",
        "evaluation.feedback_mode",
    )
    model_fields: ClassVar[tuple[str, ...]] = ("benchmark.judge_model", "benchmark.critic_model")

    def form_choices(self) -> Mapping[str, Sequence[tuple[str, str]]]:
        return {
            "benchmark.name": [(name, name) for name in installed_benchmarks()],
            "evaluation.feedback_mode": feedback_mode_choices(),
        }

    def describe_strategy(
        self, strategy: ScoringStrategy, config: KindConfig
    ) -> StrategyText | None:
        # A strategy that ranks by the curve at k is named by the curve.
        if strategy.measure is not Measure.METRIC_AT_K:
            return None
        evaluation = _config(config).evaluation
        metric, k = evaluation.metric, evaluation.k
        name = metric_name_at(metric, str(k))
        tries = "1 try" if k == 1 else f"{k} tries"
        if metric == "seq@k":
            meaning = (
                f"tasks solved within {tries} in sequence, each try seeing the feedback on the "
                "earlier ones"
            )
        elif k == 1:
            meaning = "the chance that a try solves a task"
        else:
            meaning = f"the chance that one of {k} independent tries solves a task"
        return StrategyText(
            strategy.name,
            f"Best {name}",
            name,
            f"Models rank by {name}: {meaning}, averaged over the tasks. Higher first; among "
            "equals, the cheaper run.",
        )

    def facts(self, challenge: Challenge, config: KindConfig) -> Any:
        facts = benchmark_facts(_config(config))
        if facts.public_part is not None and sealed_shown(
            challenge.closes_at, Audience.PARTICIPANT
        ):
            # The challenge page links its private board once it is revealed.
            facts = replace(facts, private_board=f"{challenge.slug}/private-leaderboard")
        return facts

    def web_routers(self) -> Sequence[APIRouter]:
        # Final marks and the private board's page load with the web UI's routes.
        from app.kinds.benchmark.pages import router

        return (router,)

    def form(
        self,
        challenge: Challenge,
        config: KindConfig,
        fields: Mapping[str, str],
        error_field: str | None,
    ) -> Any | None:
        benchmark = _config(config)
        typed = ModelSpecForm(
            model=fields.get("model", ""),
            temperature=fields.get("temperature", ""),
            system_prompt=fields.get("system_prompt", ""),
            error_field=error_field,
        )
        return SpecForm(
            typed=typed,
            k=benchmark.evaluation.k,
            metric_at_k=metric_name_at(benchmark.evaluation.metric, str(benchmark.evaluation.k)),
            custom_server=bool(benchmark.benchmark.actor_api_base),
            offline_models=list(OFFLINE_MODELS),
            system_prompt_limit=SYSTEM_PROMPT_LIMIT,
        )

    def form_submission(
        self, config: KindConfig, fields: Mapping[str, str], handle: str
    ) -> AttemptCreate:
        typed = ModelSpecForm(
            model=fields.get("model", ""),
            temperature=fields.get("temperature", ""),
            system_prompt=fields.get("system_prompt", ""),
        )
        return model_spec_attempt(typed, handle)

    def card_extras(
        self,
        session: Session,
        challenge: Challenge,
        config: KindConfig,
        attempts: Sequence[AttemptRead],
    ) -> Mapping[uuid.UUID, Any]:
        context = benchmark_context(_config(config))
        return {view.id: benchmark_progress(view, context) for view in attempts}

    def card_version(self, extra: Any) -> str:
        return extra.version if isinstance(extra, BenchmarkProgress) else ""

    def board_extras(
        self,
        session: Session,
        challenge: Challenge,
        config: KindConfig,
        attempt_ids: Sequence[uuid.UUID],
    ) -> Mapping[uuid.UUID, Any]:
        found = attempt_runs(session, challenge.tenant_id, attempt_ids)
        return {attempt_id: _run_facts(row) for attempt_id, row in found.items()}

    def board_info(self, challenge: Challenge, config: KindConfig) -> Any:
        """The heading of the measure column: the benchmark's curve at k ("pass@2")."""
        evaluation = _config(config).evaluation
        return metric_name_at(evaluation.metric, str(evaluation.k))

    def chart(
        self,
        challenge: Challenge,
        config: KindConfig,
        rows: Sequence[Any],
        *,
        element_id: str,
    ) -> CurveChart | None:
        return leaderboard_chart(_config(config), rows, element_id=element_id)

    def attempt_details(
        self,
        session: Session,
        challenge: Challenge,
        config: KindConfig,
        card: Any,
        page_number: int,
    ) -> Any:
        progress = card.extra if isinstance(card.extra, BenchmarkProgress) else None
        tasks, total = task_rows(
            session,
            challenge,
            card.view.id,
            limit=TASKS_PAGE_SIZE,
            offset=(page_number - 1) * TASKS_PAGE_SIZE,
        )
        chart = attempt_chart(_config(config), card.view, progress) if progress else None
        return AttemptDetails(
            progress=progress,
            chart=chart,
            tasks=tasks,
            tasks_total=total,
            tasks_page=page_number,
            tasks_pages=max(1, math.ceil(total / TASKS_PAGE_SIZE)),
            final=final_state(session, challenge, card.view),
        )
