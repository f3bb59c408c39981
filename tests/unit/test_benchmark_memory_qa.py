from __future__ import annotations

import asyncio
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import benchmarks.memory_qa as memory_qa
from app.evaluation.benchmark import AttemptView, Benchmark, Task, use_models
from app.evaluation.cli import load_prices, parse_variant, run_config_from_variant
from app.evaluation.feedback import render_feedback
from app.evaluation.llm import LLMClient
from app.evaluation.offline import judge_verdict
from app.evaluation.runner import MemoryRunStore, RunConfig, RunResult, run_benchmark
from app.evaluation.types import ModelSpec, VerifierResult
from benchmarks.memory_qa.data import CATEGORIES, Note, extract_entities, generate_memory

BENCHMARK = Benchmark.load("memory_qa")
SIM = ModelSpec("offline/solver-sim", temperature=0.7)
JUDGE = ModelSpec("offline/judge")


def note(note_id: str, text: str) -> Note:
    return Note(note_id=note_id, day="2024-05-01", text=text, entities=extract_entities(text))


def key_task(correct: list[str], incorrect: list[str] | None = None) -> Task:
    return Task(
        task_id="q",
        canonical_index=1,
        prompt="notes and question",
        answer={
            "correct_keywords": correct,
            "incorrect_patterns": incorrect or [],
            "judge_votes": 1,
            "judge_pass_threshold": 7.0,
        },
        metadata={"question": "Who owns PROJ-456 now?"},
    )


def verify(task: Task, output: str, judge_model: str | None = None) -> VerifierResult:
    view = AttemptView(output=output, attempt_index=1, prompt=[])

    async def decide() -> VerifierResult:
        return await memory_qa.verify(task, view, judge_model=judge_model)

    with use_models(LLMClient(), JUDGE):
        return asyncio.run(decide())


# Data and tasks


def test_entity_ids_of_every_shape_are_extracted_once_and_upper_cased() -> None:
    text = "INC-2024-089 hit srv-789 (CVE-2024-12345, PROJ-456); SRV-789 again. XSRV-1 is no id."
    assert extract_entities(text) == ("INC-2024-089", "SRV-789", "CVE-2024-12345", "PROJ-456")


def test_tasks_have_stable_indices_interleaved_by_category() -> None:
    tasks = BENCHMARK.load_tasks({})
    assert [task.canonical_index for task in tasks] == list(range(1, 11))
    assert [task.metadata["category"] for task in tasks[:5]] == list(CATEGORIES)
    assert [task.task_id for task in tasks[:2]] == [
        "temporal_evolution-1",
        "security_log_analysis-1",
    ]
    assert [task.prompt for task in BENCHMARK.load_tasks({})] == [task.prompt for task in tasks]
    # More questions per category append tasks: the first ten keep their ids and indices.
    more = BENCHMARK.load_tasks({"questions_per_category": 3})
    assert [(task.canonical_index, task.task_id) for task in more[:10]] == [
        (task.canonical_index, task.task_id) for task in tasks
    ]
    assert len(more) == 15
    other_seed = BENCHMARK.load_tasks({"seed": 8})
    assert [task.prompt for task in other_seed] != [task.prompt for task in tasks]


def test_slice_names_follow_retrieval_and_seed() -> None:
    assert BENCHMARK.slice_name({}) == "memory_qa-standard"
    assert BENCHMARK.slice_name({"retrieval": "entity_linked"}) == "memory_qa-entity_linked"
    assert BENCHMARK.slice_name({"retrieval": "entity_linked", "seed": 3}) == (
        "memory_qa-entity_linked-seed3"
    )


def test_the_memory_is_a_dated_log_whose_answers_are_consistent() -> None:
    for seed in range(5):
        memory = generate_memory(seed, 2, 120)
        days = [item.day for item in memory.notes]
        assert days == sorted(days)
        note_ids = {item.note_id for item in memory.notes}
        for question in memory.questions:
            assert set(question.evidence) <= note_ids
            for text in question.correct_replies:
                assert all(keyword in text for keyword in question.correct_keywords)
            for keyword in question.correct_keywords:
                assert keyword not in question.question
            for wrong in question.wrong_replies:
                assert not all(keyword in wrong for keyword in question.correct_keywords)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"retrieval": "bm25"}, "retrieval must be one of"),
        ({"top_n": 0}, "top_n"),
        ({"entity_hops": 9}, "entity_hops"),
        ({"seed": "7"}, "seed"),
        ({"judge_votes": 2}, "odd"),
    ],
)
def test_bad_options_are_named(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        BENCHMARK.load_tasks(options)


# Retrieval


NEEDLE = note("note-9", "SRV-812 change window: the break-glass token is ORCHID-7731.")
DECOYS = [
    note(f"note-{n}", f"The emergency access code issued for SRV-10{n} is in the vault.")
    for n in range(1, 4)
]
QUESTION = "What emergency access code was issued for SRV-812?"


def test_entity_linking_finds_the_needle_that_keyword_overlap_misses() -> None:
    notes = [*DECOYS, NEEDLE]
    standard = memory_qa.retrieve(QUESTION, notes, mode="standard", top_n=3)
    assert NEEDLE not in standard and len(standard) == 3
    linked = memory_qa.retrieve(QUESTION, notes, mode="entity_linked", max_chunks=3)
    assert linked == [NEEDLE]


def test_multi_entity_questions_retrieve_each_entity_deduplicated() -> None:
    busy = [note(f"note-{n}", f"SRV-100 disk usage at {60 + n}%.") for n in range(1, 6)]
    both = note("note-20", "SRV-100 and SRV-200 share a rack.")
    other = note("note-30", "SRV-200 is operated by the Heron team.")
    notes = [*busy, both, other]
    linked = memory_qa.retrieve(
        "Which teams operate SRV-100 and SRV-200?", notes, mode="entity_linked", max_chunks=3
    )
    # A cap of three still reaches the second entity, and the shared note comes once.
    assert other in linked
    assert len(linked) == len({item.note_id for item in linked}) == 3
    everything = memory_qa.retrieve(
        "Which teams operate SRV-100 and SRV-200?", notes, mode="entity_linked", max_chunks=50
    )
    assert sorted(item.note_id for item in everything) == sorted(item.note_id for item in notes)


def test_hops_follow_the_ids_of_the_notes_found() -> None:
    postmortem = note("note-1", "INC-2024-089 postmortem: attackers used CVE-2024-12345.")
    advisory = note("note-2", "Advisory CVE-2024-12345: fixed in authd 2.4.2.")
    question = "Which authd version fixes the flaw exploited in INC-2024-089?"
    notes = [postmortem, advisory]
    no_hop = memory_qa.retrieve(question, notes, mode="entity_linked", hops=0)
    assert no_hop == [postmortem]
    one_hop = memory_qa.retrieve(question, notes, mode="entity_linked", hops=1)
    assert one_hop == [postmortem, advisory]


def test_a_question_without_ids_falls_back_to_keyword_overlap() -> None:
    notes = [*DECOYS, NEEDLE]
    question = "Where is the emergency access code kept?"
    assert memory_qa.retrieve(question, notes, mode="entity_linked", top_n=2) == (
        memory_qa.retrieve(question, notes, mode="standard", top_n=2)
    )
    with pytest.raises(ValueError, match="retrieval must be"):
        memory_qa.retrieve(question, notes, mode="vector")


def test_on_the_generated_memory_entity_linking_retrieves_every_questions_evidence() -> None:
    linked = BENCHMARK.load_tasks({"retrieval": "entity_linked"})
    standard = BENCHMARK.load_tasks({"retrieval": "standard"})
    assert all(task.metadata["evidence_retrieved"] for task in linked)
    missed = [task.task_id for task in standard if not task.metadata["evidence_retrieved"]]
    assert "needle_in_haystack-1" in missed
    for task in linked:
        assert task.metadata["entities"] and all(
            entity in task.prompt for entity in task.metadata["entities"]
        )


# Grading


def test_ambiguity_is_defined_by_the_rubric_details() -> None:
    def details(found: list[str], missing: list[str], incorrect: list[str]) -> dict[str, Any]:
        return {
            "found_keywords": found,
            "missing_keywords": missing,
            "incorrect_patterns_found": incorrect,
        }

    assert memory_qa.ambiguity(details(["a"], [], [])) is None
    assert memory_qa.ambiguity(details([], ["a"], ["x"])) is None
    assert memory_qa.ambiguity(details([], ["a", "b"], [])) is None
    assert (
        memory_qa.ambiguity(details(["a"], ["b"], [])) == "some but not all correct keywords found"
    )
    assert "both found" in (memory_qa.ambiguity(details(["a"], [], ["x"])) or "")


def test_clear_verdicts_come_from_the_rubric_alone() -> None:
    task = key_task(["Carol Diaz"], ["Bob Stone"])
    right = verify(task, "The current owner is Carol Diaz.", judge_model="offline/judge")
    assert right.success and right.details["decided_by"] == "rubric" and not right.calls
    wrong = verify(task, "Bob Stone owns it.", judge_model="offline/judge")
    assert not wrong.success and "known incorrect answer" in wrong.raw_eval_output
    assert not wrong.calls


def test_ambiguous_verdicts_go_to_the_judge() -> None:
    task = key_task(["Carol Diaz"], ["Bob Stone"])
    # An old value on the way to the latest one: offline/judge rates the quoted keyword found.
    moved = verify(task, "Bob Stone handed it to Carol Diaz.", judge_model="offline/judge")
    assert moved.success and moved.details["decided_by"] == "judge"
    assert moved.rating == 10.0 and len(moved.calls) == 1
    assert "judge decided" in moved.raw_eval_output

    half = key_task(["203.0.113.219", "postgres"], ["198.51.100.216"])
    partial = verify(half, "The top source was 203.0.113.219.", judge_model="offline/judge")
    assert not partial.success and partial.rating == 5.0
    assert partial.details["ambiguous"] == "some but not all correct keywords found"


def test_without_a_judge_model_the_rubric_verdict_stands() -> None:
    task = key_task(["203.0.113.219", "postgres"])
    result = verify(task, "203.0.113.219")
    assert not result.success and result.score == 0.5
    assert result.details["judge"] == "no judge model configured"


def test_the_judge_rubric_quotes_only_correct_keywords() -> None:
    rubric = memory_qa.judge_rubric(["Carol Diaz"], ["Bob Stone", "Alice Moreau"])
    assert '"Carol Diaz"' in rubric and '"Bob Stone"' not in rubric
    assert judge_verdict(rubric, "Bob Stone, then Carol Diaz")["passed"]
    assert not judge_verdict(rubric, "Bob Stone")["passed"]


def test_feedback_never_reveals_the_answer_key() -> None:
    outputs = ["I don't know.", "Bob Stone owns it.", "The top source was 203.0.113.219."]
    for task in BENCHMARK.load_tasks({"retrieval": "entity_linked"}):
        keywords = task.answer["correct_keywords"]
        for output in [*outputs, *task.answer["incorrect_patterns"]]:
            if any(keyword in output for keyword in keywords):
                continue
            result = verify(task, output, judge_model="offline/judge")
            for mode in ("binary", "raw", "compact", "judge"):
                text = render_feedback(mode, result)
                assert not any(keyword in text for keyword in keywords), (mode, text)
        half = verify(task, keywords[0], judge_model="offline/judge")
        if len(keywords) > 1:
            for mode in ("raw", "compact", "judge"):
                text = render_feedback(mode, half)
                assert not any(keyword in text for keyword in keywords[1:]), (mode, text)


# Runs on the simulated solver


def run(config: RunConfig) -> tuple[RunResult, MemoryRunStore]:
    store = MemoryRunStore()
    result = asyncio.run(run_benchmark(BENCHMARK, config, store, LLMClient()))
    return result, store


@pytest.mark.parametrize("variant", BENCHMARK.variants(), ids=lambda path: path.name)
def test_each_variant_runs_end_to_end_on_offline_models(variant: Path) -> None:
    import yaml

    parsed = parse_variant(yaml.safe_load(variant.read_text()), source=str(variant))
    config = run_config_from_variant(
        parsed, benchmark="memory_qa", prices=load_prices(parsed.prices), allow_continue=False
    )
    assert config.actor.model.startswith("offline/")
    result, store = run(replace(config, k=2, max_tasks=5))
    assert result.status == "complete" and result.tasks_run == 5
    assert all(trials for trials in store.trials.values())


def test_retrieval_shows_in_the_simulated_results() -> None:
    standard, standard_store = run(
        RunConfig(
            "memory_qa", "pass@k", 3, "binary", SIM, judge=JUDGE, options={"retrieval": "standard"}
        )
    )
    linked, _ = run(
        RunConfig(
            "memory_qa",
            "pass@k",
            3,
            "binary",
            SIM,
            judge=JUDGE,
            options={"retrieval": "entity_linked"},
        )
    )
    # Where standard retrieval missed the evidence, the simulation can only answer wrongly.
    tasks = {task.canonical_index: task for task in BENCHMARK.load_tasks({"retrieval": "standard"})}
    for index, trials in standard_store.trials.items():
        if not tasks[index].metadata["evidence_retrieved"]:
            assert not any(trial.success for trial in trials.values())
    assert linked.summary["curves"]["pass_at"][-1] > standard.summary["curves"]["pass_at"][-1]


def test_seq_k_with_feedback_is_at_least_pass_k() -> None:
    options = {"retrieval": "entity_linked"}
    passk, _ = run(RunConfig("memory_qa", "pass@k", 3, "binary", SIM, judge=JUDGE, options=options))
    seqk, _ = run(RunConfig("memory_qa", "seq@k", 3, "raw", SIM, judge=JUDGE, options=options))
    assert seqk.summary["curves"]["seq_at"][-1] >= passk.summary["curves"]["pass_at"][-1]
    assert seqk.summary["curves"]["seq_at"] != passk.summary["curves"]["pass_at"]
