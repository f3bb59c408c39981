"""For a kind's web fragments (its `WebKind` hooks and `templates/macros.html`): the values
those hooks return, form errors, number formatting, charts, and the web UI's readings of
attempts and boards."""

from __future__ import annotations

from app.web.attempts.service import TASKS_PAGE_SIZE, TaskRow, actor_tokens, task_rows
from app.web.charts import CurveChart, CurveInput, curve_chart, metric_name_at
from app.web.formatting import detail_text, float_or_none, floats, format_percent, int_or_none
from app.web.forms import FormError, error_field
from app.web.visitors import board_audience
from app.web.web_kind import (
    BaselineForm,
    BaselineSubmitted,
    Count,
    Entrant,
    ListStanding,
    RunVerdict,
    Spend,
    StrategyText,
    WebKind,
)

__all__ = [
    "TASKS_PAGE_SIZE",
    "BaselineForm",
    "BaselineSubmitted",
    "Count",
    "CurveChart",
    "CurveInput",
    "Entrant",
    "FormError",
    "ListStanding",
    "RunVerdict",
    "Spend",
    "StrategyText",
    "TaskRow",
    "WebKind",
    "actor_tokens",
    "board_audience",
    "curve_chart",
    "detail_text",
    "error_field",
    "float_or_none",
    "floats",
    "format_percent",
    "int_or_none",
    "metric_name_at",
    "task_rows",
]
