"""The fields of each built-in kind's practice and test runs, and the web form made of them."""

from __future__ import annotations

from app.web.run_forms import run_body, run_fields
from app.web.schema_form import Widget


def test_each_kind_names_the_fields_of_its_unscored_runs() -> None:
    assert [(f.path, f.required, f.widget) for f in run_fields("prompt")] == [
        ("prompt", True, Widget.LONG_TEXT)
    ]
    benchmark = {f.path: f for f in run_fields("benchmark")}
    assert list(benchmark) == ["model", "temperature", "system_prompt", "task_index"]
    assert benchmark["model"].required and not benchmark["task_index"].required
    assert benchmark["task_index"].widget is Widget.NUMBER
    assert benchmark["temperature"].widget is Widget.NUMBER
    # red_blue takes no attempts, yet practice and test runs: an attack, and a defense.
    red_blue = {f.path: f for f in run_fields("red_blue")}
    assert list(red_blue) == ["prompt", "system_prompt"]
    assert red_blue["prompt"].required and not red_blue["system_prompt"].required


def test_the_form_becomes_a_body_with_numbers_read_and_blanks_left_out() -> None:
    sent = {
        "model": "offline/echo",
        "temperature": "0.5",
        "task_index": "3",
        "system_prompt": "  ",
        "csrf_token": "x",
        "unknown": "y",
    }
    assert run_body("benchmark", sent) == {
        "model": "offline/echo",
        "temperature": 0.5,
        "task_index": 3,
    }
    # A number that does not read is passed on as typed, for the service to name.
    assert run_body("benchmark", {"model": "m", "task_index": "three"})["task_index"] == "three"
    assert run_body("prompt", {"prompt": "héllo\r\nwörld"}) == {"prompt": "héllo\nwörld"}
    assert run_body("prompt", {}) == {}
