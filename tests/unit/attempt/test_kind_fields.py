"""How a kind's stored submission fields (an attempt's `kind_fields`) are read back by its
model and shown on the attempt's read: the API's `prompt` and `model_spec` answers as they
were when the built-in kinds had columns for them."""

from __future__ import annotations

from typing import Any

import pytest

from app.attempt.attempt_kind import AttemptKind, ShownFields, stored_fields
from app.evaluation.engine.types import InfrastructureError
from app.kinds.benchmark import KIND as BENCHMARK
from app.kinds.benchmark.config import StoredFields, shown_fields
from app.kinds.prompt import KIND as PROMPT
from app.kinds.prompt.schemas import PromptSubmission
from app.kinds.red_blue import KIND as RED_BLUE


@pytest.mark.parametrize("stored", [None, {}])
def test_nothing_stored_shows_nothing(stored: dict[str, Any] | None) -> None:
    for kind in (AttemptKind(), PROMPT, BENCHMARK, RED_BLUE):
        assert kind.shown(stored) == ShownFields()


def test_a_kind_shows_its_fields_as_kind_fields_unless_it_says_otherwise() -> None:
    stored = {"prompt": "hi", "colour": "blue"}
    assert AttemptKind().shown(stored) == ShownFields(kind_fields=stored)


def test_a_prompt_is_shown_apart_from_the_kinds_other_fields() -> None:
    stored = {"prompt": "Sag PWNED ✓ 😀", "system_prompt": "Never."}
    shown = ShownFields.prompt_apart(stored)
    assert shown == ShownFields(prompt="Sag PWNED ✓ 😀", kind_fields={"system_prompt": "Never."})
    assert stored == {"prompt": "Sag PWNED ✓ 😀", "system_prompt": "Never."}  # not changed
    assert ShownFields.prompt_apart({"prompt": "x"}) == ShownFields(prompt="x")
    assert ShownFields.prompt_apart({"attack": "x"}, field="attack") == ShownFields(prompt="x")
    assert PROMPT.shown({"prompt": "PWNED"}) == ShownFields(prompt="PWNED")
    assert RED_BLUE.shown(stored) == shown


def test_a_benchmark_model_spec_shows_every_key_null_when_not_given() -> None:
    assert BENCHMARK.shown({"model": "offline/echo"}) == ShownFields(
        model_spec={"model": "offline/echo", "temperature": None, "system_prompt": None}
    )
    practice = {"model": "m", "temperature": 0.0, "system_prompt": "Grid.", "task_index": 4}
    assert shown_fields(practice) == ShownFields(
        model_spec={"model": "m", "temperature": 0.0, "system_prompt": "Grid."},
        kind_fields={"task_index": 4},
    )
    # A document without a model shows no model spec, and is never refused on a read.
    assert shown_fields({"task_index": 2}) == ShownFields(kind_fields={"task_index": 2})


def test_a_kind_reads_its_stored_fields_with_its_own_model() -> None:
    spec = stored_fields({"model": "m", "task_index": 3}, StoredFields)
    assert (spec.model, spec.temperature, spec.system_prompt, spec.task_index) == (
        "m",
        None,
        None,
        3,
    )
    assert stored_fields({"prompt": "hi"}, PromptSubmission).prompt == "hi"
    # A document that does not fit ends the run in error, as the machinery's failure.
    for broken in (None, {}, {"prompt": "  "}, {"prompt": "hi", "other": 1}):
        with pytest.raises(InfrastructureError, match="submitted fields do not load") as raised:
            stored_fields(broken, PromptSubmission)
        assert "PromptSubmission" in (raised.value.detail or "")
