from __future__ import annotations

import asyncio
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import benchmarks.memory_qa as memory_qa
from app.evaluation.commands.variant import load_prices, parse_variant, run_config_from_variant
from app.evaluation.engine.benchmark import AttemptView, Benchmark, Task, use_models
from app.evaluation.engine.feedback import render_feedback
from app.evaluation.engine.llm import LLMClient
from app.evaluation.engine.offline import judge_verdict
from app.evaluation.engine.runner import MemoryRunStore, RunConfig, RunResult, run_benchmark
from app.evaluation.engine.types import ModelSpec, VerifierResult
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
            "judge_votes": 3,
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


def test_slice_names_follow_the_data_version_retrieval_and_seed() -> None:
    assert BENCHMARK.slice_name({}) == "memory_qa-v4-standard"
    assert BENCHMARK.slice_name({"retrieval": "entity_linked"}) == "memory_qa-v4-entity_linked"
    assert BENCHMARK.slice_name({"retrieval": "entity_linked", "seed": 3}) == (
        "memory_qa-v4-entity_linked-seed3"
    )


def is_near_miss(entity: str, other: str) -> bool:
    """Same shape, and the number differs by two swapped digits or one digit."""
    head, _, digits = entity.rpartition("-")
    other_head, _, other_digits = other.rpartition("-")
    if other == entity or head != other_head or len(digits) != len(other_digits):
        return False
    differing = [i for i, (a, b) in enumerate(zip(digits, other_digits, strict=True)) if a != b]
    swapped = (
        len(differing) == 2
        and differing[1] == differing[0] + 1
        and sorted(digits) == sorted(other_digits)
    )
    return len(differing) == 1 or swapped


def test_the_default_haystack_is_realistic_in_size_and_near_misses() -> None:
    memory = generate_memory(7, 2, 1000)
    assert len(memory.notes) >= 1000
    # Routine notes repeat word for word, as in a real log (retrieval dedupes them).
    assert len({item.text for item in memory.notes}) < len(memory.notes)
    ids = {entity for item in memory.notes for entity in item.entities}
    for question in memory.questions:
        for entity in extract_entities(question.question):
            assert any(is_near_miss(entity, other) for other in ids), (question.question_id, entity)
    # Near-miss twins give known wrong answers, worded like the evidence.
    temporal = memory.questions[0]
    assert len(temporal.incorrect_patterns) == 3
    twin_value = temporal.incorrect_patterns[-1]
    assert any(
        twin_value in item.text
        and not set(item.entities) & set(extract_entities(temporal.question))
        for item in memory.notes
    )
    categories = {question.category for question in memory.questions}
    assert {"multi_hop", "multi_entity"} <= categories


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


def test_a_busy_first_hop_does_not_crowd_out_the_next_hops_evidence() -> None:
    """The incident is named in a dozen notes besides its postmortem: taking every note of the
    first hop, then the second hop's, then cutting at the cap would drop the advisory; a share
    of the cap per hop keeps it."""
    question = "Which authd version fixes the flaw exploited in INC-2024-089?"
    chatter = [
        note(f"note-{n}", f"INC-2024-089 status update number {n}: still open.")
        for n in range(1, 13)
    ]
    postmortem = note(
        "note-20", "INC-2024-089 postmortem: CVE-2024-12345 in authd was the flaw exploited."
    )
    advisory = note("note-21", "Advisory CVE-2024-12345: fixed in authd 2.4.2.")
    notes = [*chatter, postmortem, advisory]
    linked = memory_qa.retrieve(question, notes, mode="entity_linked", max_chunks=6, hops=1)
    assert postmortem in linked and advisory in linked
    assert len(linked) == 6


def test_retrieval_drops_a_note_whose_text_repeats_one_taken() -> None:
    repeated = [note(f"note-{n}", "On-call handover: nothing new on SRV-100.") for n in (1, 2, 3)]
    answer = note("note-9", "SRV-100 is operated by the Heron team.")
    notes = [*repeated, answer]
    for mode in ("standard", "entity_linked"):
        found = memory_qa.retrieve(
            "Which team operates SRV-100?", notes, mode=mode, top_n=2, max_chunks=2
        )
        assert answer in found, mode
        assert len({item.text for item in found}) == len(found), mode


def test_on_the_generated_memory_entity_linking_retrieves_every_questions_evidence() -> None:
    linked = BENCHMARK.load_tasks({"retrieval": "entity_linked"})
    standard = BENCHMARK.load_tasks({"retrieval": "standard"})
    assert all(task.metadata["evidence_retrieved"] for task in linked)
    assert all(task.metadata["figures"]["retrieval_recall"] == 1.0 for task in linked)
    missed = [task.task_id for task in standard if not task.metadata["evidence_retrieved"]]
    assert "needle_in_haystack-1" in missed
    # Recall is measured against the evidence notes, a share, not a verdict on the answer.
    recalls = {task.metadata["figures"]["retrieval_recall"] for task in standard}
    assert 0.5 in recalls and 0.0 in recalls
    for task in linked:
        assert task.metadata["entities"] and all(
            entity in task.prompt for entity in task.metadata["entities"]
        )


# Grading


class NoJudge:
    """A model client for a run whose judge must never be asked: any call fails the test."""

    def __init__(self) -> None:
        self.calls = 0

    async def complete(self, spec: ModelSpec, messages: list[Any]) -> Any:
        self.calls += 1
        raise AssertionError(f"the judge was asked: {messages}")


def verify_without_judge_calls(task: Task, output: str) -> VerifierResult:
    client = NoJudge()
    view = AttemptView(output=output, attempt_index=1, prompt=[])

    async def decide() -> VerifierResult:
        return await memory_qa.verify(task, view, judge_model="offline/judge")

    with use_models(client, JUDGE):
        result = asyncio.run(decide())
    assert client.calls == 0
    return result


@pytest.mark.parametrize(
    ("output", "success", "score"),
    [
        # The issue's own example: the old figure on the way to the new one. Correct-first.
        ("The budget increased from $1.2M to $1.4M", True, 1.0),
        ("$1.4M", True, 1.0),
        ("The budget is $1.2M.", False, 0.0),
    ],
)
def test_correct_first_decisions_are_never_sent_to_the_judge(
    output: str, success: bool, score: float
) -> None:
    task = key_task(["$1.4M"], ["$1.2M"])
    result = verify_without_judge_calls(task, output)
    assert (result.success, result.score) == (success, score)
    assert result.details["decided_by"] == "rubric" and not result.calls


def test_a_half_answer_is_decided_by_the_rubric_as_a_fail() -> None:
    half = key_task(["203.0.113.219", "postgres"], ["198.51.100.216"])
    result = verify_without_judge_calls(half, "The top source was 203.0.113.219.")
    assert not result.success and result.score == 0.5
    assert result.details["why"] == "a correct keyword is present"


def test_the_judge_decides_only_what_the_rubric_cannot_with_three_votes() -> None:
    task = key_task(["Carol Diaz"], ["Bob Stone"])
    # No correct keyword, no known wrong answer: a refusal (offline/judge finds no quoted
    # keyword, rates 0).
    unsure = verify(task, "The notes do not say.", judge_model="offline/judge")
    assert unsure.details["decided_by"] == "judge" and not unsure.success
    assert len(unsure.calls) == 3 and unsure.details["judge"]["ratings"] == [0.0, 0.0, 0.0]
    assert "the judge did" in unsure.raw_eval_output
    # A paraphrase the rubric misses: the judge rates it (offline/judge reads quoted keywords,
    # so it stands for a judge that understands "C. Diaz").
    rubric_task = key_task(["Carol Diaz"])
    judged = verify(rubric_task, "Ownership passed to carol  diaz.", judge_model="offline/judge")
    assert judged.details["decided_by"] == "judge"
    assert judged.details["judge"]["pass_threshold"] == 7.0


def test_without_a_judge_model_an_undecided_output_fails_and_says_so() -> None:
    task = key_task(["203.0.113.219", "postgres"])
    result = verify(task, "I could not find it.")
    assert not result.success and result.score == 0.0
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
    # Retrieval recall is reported beside the answer curves, measured on its own.
    assert linked.summary["figures"]["retrieval_recall"]["mean"] == 1.0
    standard_recall = standard.summary["figures"]["retrieval_recall"]
    assert standard_recall["tasks"] == 10 and standard_recall["mean"] < 1.0


def test_seq_k_with_feedback_is_at_least_pass_k() -> None:
    options = {"retrieval": "entity_linked"}
    passk, _ = run(RunConfig("memory_qa", "pass@k", 3, "binary", SIM, judge=JUDGE, options=options))
    seqk, _ = run(RunConfig("memory_qa", "seq@k", 3, "raw", SIM, judge=JUDGE, options=options))
    assert seqk.summary["curves"]["seq_at"][-1] >= passk.summary["curves"]["pass_at"][-1]
    assert seqk.summary["curves"]["seq_at"] != passk.summary["curves"]["pass_at"]
