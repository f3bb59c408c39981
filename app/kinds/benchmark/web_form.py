"""The benchmark kind's model-spec form: as typed, and the attempt it asks for, checked as the
API checks it."""

from __future__ import annotations

import math
from dataclasses import dataclass

from pydantic import ValidationError

from app.kinds.api import AttemptCreate
from app.kinds.api.web import FormError
from app.kinds.benchmark.schemas import BenchmarkSubmission


def _max_length(field_name: str) -> int:
    for rule in BenchmarkSubmission.model_fields[field_name].metadata:
        limit = getattr(rule, "max_length", None)
        if isinstance(limit, int):
            return limit
    raise LookupError(f"BenchmarkSubmission.{field_name} has no length limit")


SYSTEM_PROMPT_LIMIT = _max_length("system_prompt")  # the API's limit, as the counter shows it
MODEL_SPEC_FIELDS = {
    "model": "Model",
    "temperature": "Temperature",
    "system_prompt": "System prompt",
}


@dataclass(frozen=True)
class ModelSpecForm:
    """The model-spec form as typed, kept when a submission is refused."""

    model: str = ""
    temperature: str = ""
    system_prompt: str = ""
    error_field: str | None = None


def _temperature(raw: str) -> float | None:
    text = raw.strip().replace(",", ".")
    if not text:
        return None
    problem = FormError(
        "Temperature must be a number from 0 to 2, or blank for the model's default.",
        field="temperature",
    )
    try:
        value = float(text)
    except ValueError as exc:
        raise problem from exc
    if not math.isfinite(value) or not 0 <= value <= 2:
        raise problem
    return value


def model_spec_attempt(form: ModelSpecForm, handle: str) -> AttemptCreate:
    """The attempt a model-spec form asks for, checked as the API checks it."""
    model = form.model.strip()
    if not model:
        raise FormError("Name a model first: a model id such as offline/solver-sim.", field="model")
    temperature = _temperature(form.temperature)
    system_prompt = form.system_prompt if form.system_prompt.strip() else None
    if system_prompt is not None and len(system_prompt) > SYSTEM_PROMPT_LIMIT:
        raise FormError(
            f"The system prompt is {len(system_prompt):,} characters; at most "
            f"{SYSTEM_PROMPT_LIMIT:,} are allowed.",
            field="system_prompt",
        )
    try:
        fields = BenchmarkSubmission(
            model=model, temperature=temperature, system_prompt=system_prompt
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        name = str(first["loc"][0]) if first.get("loc") else "model"
        message = str(first.get("msg", "is not valid")).removeprefix("Value error, ")
        label = MODEL_SPEC_FIELDS.get(name, name)
        raise FormError(
            f"{label}: {message}.", field=name if name in MODEL_SPEC_FIELDS else None
        ) from exc
    return AttemptCreate.of(handle, **fields.model_dump(exclude_none=True))
