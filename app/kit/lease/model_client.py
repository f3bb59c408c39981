"""The model client of a leased job's calls (an attempt's run, a self-test, a match)."""

from __future__ import annotations

from app.evaluation.engine.llm import CallBudget, LLMClient
from app.evaluation.engine.types import RetryPolicy
from app.kit.config import Settings
from app.kit.observability import metrics as telemetry


def model_client(settings: Settings, budget: CallBudget) -> LLMClient:
    """Every call by the service's outbound policy, within its concurrency caps, retries and
    answer size, against `budget`, and observed in the metrics. The caller closes it."""
    return LLMClient(
        on_call=telemetry.observe_model_call,
        global_concurrency=settings.model_global_concurrency,
        per_model_concurrency=settings.model_per_model_concurrency,
        retry=RetryPolicy(
            max_attempts=settings.model_max_tries,
            base_delay_s=settings.model_retry_base_delay_seconds,
        ),
        outbound=settings.outbound_policy(),
        max_output_chars=settings.max_output_chars,
        budget=budget,
    )
