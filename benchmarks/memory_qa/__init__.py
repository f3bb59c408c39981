"""`memory_qa`: long-horizon memory questions over a log of notes about entities.

The memory is a generated log of dated operations notes about incidents (INC-2024-089),
vulnerabilities (CVE-2024-12345), projects (PROJ-456) and servers (SRV-789); see
`benchmarks.memory_qa.data` for the categories (temporal evolution, security log analysis,
multi-hop, needle in a haystack, multi-entity). The actor never sees the whole memory: each
task's prompt holds the notes that retrieval brings back for its question, then the question.

Retrieval (option `retrieval`):

- `standard`: keyword overlap. The question and every note are cut into lowercase words
  (entity ids split at their dashes, stopwords dropped); a note scores the number of distinct
  question words it holds; the `top_n` best (ties: earlier note first) with a score above 0.
  It misses a note worded unlike the question even when that note names the question's
  entity, since words shared with near-miss notes outweigh one id.
- `entity_linked`: the entity ids of the question are extracted (regexes for the four id
  shapes) and ALL notes are searched for each of them, each entity on its own, so a question
  naming two entities retrieves both; the per-entity results are interleaved (each ranked by
  keyword overlap with the question) and deduplicated, up to `max_chunks` notes. With
  `entity_hops` > 0, the ids named by the notes found are searched in turn (for multi-hop
  questions: the incident's note names the CVE whose note holds the answer). A question with
  no entity id falls back to `standard`.

Grading: the correct-first rubric (app.evaluation.verifiers.RubricVerifier) with the
question's correct keywords and known wrong answers (incorrect patterns). The rubric decides,
except when its verdict is ambiguous:

- some but not all correct keywords are found (a half answer), or
- a correct keyword and a known wrong answer are both found (e.g. an old value mentioned on the
  way to the latest one).

Then the LLM judge decides (app.evaluation.verifiers.LLMJudgeVerifier, through the run's judge
model, `judge_votes` votes, pass at `judge_pass_threshold`), with a rubric that quotes the
correct keywords (so `offline/judge`, which rates the share of quoted phrases found, can grade
it) and names the known wrong answers unquoted. Without a judge model the rubric's verdict
stands, and the details say so.

Options: `retrieval` (`standard`), `top_n` (6), `max_chunks` (10), `entity_hops` (1), `seed`
(7; also seeds the offline simulated solvers), `questions_per_category` (2, so 10 tasks),
`haystack` (filler notes, 120), `judge_votes` (1), `judge_pass_threshold` (7.0).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from app.evaluation import simulated
from app.evaluation.benchmark import AttemptView, Task, run_model_client
from app.evaluation.types import VerifierResult
from app.evaluation.verifiers import (
    LLMJudgeConfig,
    LLMJudgeVerifier,
    RubricConfig,
    RubricVerifier,
)
from benchmarks.memory_qa.data import (
    DIFFICULTY,
    NOT_IN_NOTES,
    Memory,
    Note,
    Question,
    extract_entities,
    generate_memory,
)

VERIFIER = "rubric+llm"
FEEDBACK_MODES: set[str] = set()
LLM_CRITIC_MODES: set[str] = set()

RETRIEVAL_MODES = ("standard", "entity_linked")
DEFAULT_SEED = 7

_WORD = re.compile(r"[a-z0-9]+")
# fmt: off
_STOPWORDS = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "by", "did", "do", "does", "for", "from", "has",
    "have", "how", "in", "is", "it", "its", "made", "of", "on", "or", "the", "that", "this",
    "to", "was", "were", "what", "when", "where", "which", "who", "whom", "why", "with",
))
# fmt: on


class MemoryQaError(ValueError):
    """An option out of range."""


# Retrieval


def keywords(text: str) -> frozenset[str]:
    """The words keyword-overlap retrieval compares: lowercase, ids split, no stopwords."""
    return frozenset(
        word for word in _WORD.findall(text.lower()) if len(word) > 1 and word not in _STOPWORDS
    )


def _ranked(question_words: frozenset[str], notes: Iterable[Note]) -> list[tuple[int, Note]]:
    scored = [(len(question_words & keywords(note.text)), note) for note in notes]
    # sorted() is stable: equal scores keep the memory's (date) order.
    return sorted(scored, key=lambda item: -item[0])


def retrieve_standard(question: str, notes: Sequence[Note], *, top_n: int) -> list[Note]:
    ranked = _ranked(keywords(question), notes)
    return [note for score, note in ranked[:top_n] if score > 0]


def retrieve_entity_linked(
    question: str, notes: Sequence[Note], *, max_chunks: int, hops: int, top_n: int
) -> list[Note]:
    wanted = list(extract_entities(question))
    if not wanted:
        return retrieve_standard(question, notes, top_n=top_n)
    question_words = keywords(question)
    selected: dict[str, Note] = {}
    searched: set[str] = set()
    frontier = wanted
    for _ in range(hops + 1):
        per_entity = [
            [
                note
                for _, note in _ranked(question_words, (n for n in notes if entity in n.entities))
            ]
            for entity in frontier
        ]
        searched.update(frontier)
        found: list[Note] = []
        # Round robin over the entities, so a cap never starves the second entity of a
        # two-entity question.
        for rank in range(max((len(matches) for matches in per_entity), default=0)):
            for matches in per_entity:
                if rank < len(matches) and matches[rank].note_id not in selected:
                    selected[matches[rank].note_id] = matches[rank]
                    found.append(matches[rank])
        frontier = [entity for note in found for entity in note.entities if entity not in searched]
        frontier = list(dict.fromkeys(frontier))
        if not frontier:
            break
    return list(selected.values())[:max_chunks]


def retrieve(
    question: str,
    notes: Sequence[Note],
    *,
    mode: str,
    top_n: int = 6,
    max_chunks: int = 10,
    hops: int = 1,
) -> list[Note]:
    """The notes retrieval `mode` brings back for `question`, in rank order."""
    if mode == "standard":
        return retrieve_standard(question, notes, top_n=top_n)
    if mode == "entity_linked":
        return retrieve_entity_linked(
            question, notes, max_chunks=max_chunks, hops=hops, top_n=top_n
        )
    raise MemoryQaError(f"retrieval must be one of {', '.join(RETRIEVAL_MODES)}, got {mode!r}")


# Tasks


def slice_name(options: dict[str, Any]) -> str:
    name = f"memory_qa-{options.get('retrieval', 'standard')}"
    seed = options.get("seed", DEFAULT_SEED)
    return f"{name}-seed{seed}" if seed != DEFAULT_SEED else name


def _format_note(note: Note) -> str:
    body = note.text.replace("\n", "\n    ")
    return f"[{note.note_id}, {note.day}] {body}"


def build_prompt(question: str, notes: Sequence[Note]) -> str:
    listed = "\n".join(_format_note(note) for note in notes) or "(no notes were retrieved)"
    return (
        "You are an operations assistant with a long-term memory of notes. The notes below "
        "were retrieved from that memory for this question; they may be incomplete, out of "
        "order or beside the point.\n\n"
        f"Notes:\n{listed}\n\n"
        f"Question: {question}\n"
        "Answer in one or two sentences. If the notes do not hold the answer, say so."
    )


def _check_int(name: str, value: Any, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise MemoryQaError(f"{name} must be an int from {low} to {high}, got {value!r}")
    return value


def _register_simulation(prompt: str, question: Question, answerable: bool, seed: int) -> None:
    # Without the evidence, a reader of these notes can only guess or give up.
    wrong = (
        (*question.wrong_replies, NOT_IN_NOTES)
        if answerable
        else (NOT_IN_NOTES, *question.wrong_replies)
    )
    simulated.register_task(
        prompt,
        correct=question.correct_replies,
        wrong=tuple(dict.fromkeys(wrong)),
        difficulty=DIFFICULTY[question.category],
        answerable=answerable,
        seed=seed,
    )


def load_tasks(
    retrieval: str = "standard",
    top_n: int = 6,
    max_chunks: int = 10,
    entity_hops: int = 1,
    seed: int = DEFAULT_SEED,
    questions_per_category: int = 2,
    haystack: int = 120,
    judge_votes: int = 1,
    judge_pass_threshold: float = 7.0,
) -> Iterator[Task]:
    if retrieval not in RETRIEVAL_MODES:
        raise MemoryQaError(
            f"retrieval must be one of {', '.join(RETRIEVAL_MODES)}, got {retrieval!r}"
        )
    _check_int("top_n", top_n, 1, 100)
    _check_int("max_chunks", max_chunks, 1, 200)
    _check_int("entity_hops", entity_hops, 0, 5)
    _check_int("seed", seed, -(2**63), 2**63 - 1)
    _check_int("questions_per_category", questions_per_category, 1, 200)
    _check_int("haystack", haystack, 0, 20_000)
    # Validated here, so a bad value stops the run before any call rather than at a judge.
    judge = LLMJudgeConfig(
        model="judge", rubric="r", votes=judge_votes, pass_threshold=judge_pass_threshold
    )
    memory: Memory = generate_memory(seed, questions_per_category, haystack)
    for index, question in enumerate(memory.questions, 1):
        notes = retrieve(
            question.question,
            memory.notes,
            mode=retrieval,
            top_n=top_n,
            max_chunks=max_chunks,
            hops=entity_hops,
        )
        retrieved = [note.note_id for note in notes]
        answerable = set(question.evidence) <= set(retrieved)
        prompt = build_prompt(question.question, notes)
        _register_simulation(prompt, question, answerable, seed)
        yield Task(
            task_id=question.question_id,
            canonical_index=index,
            prompt=prompt,
            answer={
                "correct_keywords": list(question.correct_keywords),
                "incorrect_patterns": list(question.incorrect_patterns),
                "judge_votes": judge.votes,
                "judge_pass_threshold": judge.pass_threshold,
            },
            metadata={
                "category": question.category,
                "question": question.question,
                "retrieval": retrieval,
                "entities": list(extract_entities(question.question)),
                "retrieved_notes": retrieved,
                # Whether every evidence note reached the prompt: retrieval's own score.
                "evidence_retrieved": answerable,
                "memory_notes": len(memory.notes),
            },
        )


# Grading


def ambiguity(details: dict[str, Any]) -> str | None:
    """Why a rubric verdict is ambiguous (the judge then decides), or None when it is clear."""
    found = details["found_keywords"]
    missing = details["missing_keywords"]
    incorrect = details["incorrect_patterns_found"]
    if found and missing:
        return "some but not all correct keywords found"
    if found and incorrect:
        return "a correct keyword and a known wrong answer both found"
    return None


def judge_rubric(correct: Sequence[str], incorrect: Sequence[str]) -> str:
    """The judge's rubric: correct keywords quoted (offline/judge reads quoted phrases),
    known wrong answers unquoted."""
    quoted = ", ".join(f'"{keyword}"' for keyword in correct)
    rubric = f"A correct answer states all of: {quoted}."
    if incorrect:
        rubric += (
            " These are known wrong answers and must not be given as the answer: "
            + "; ".join(incorrect)
            + ". Mentioning one as an earlier or rejected value is fine."
        )
    return rubric


async def verify(task: Task, attempt: AttemptView, *, judge_model: str | None) -> VerifierResult:
    key: dict[str, Any] = task.answer
    rubric = await RubricVerifier(
        RubricConfig(
            correct_keywords=key["correct_keywords"],
            incorrect_patterns=key["incorrect_patterns"],
        )
    ).verify(attempt.output)
    reason = ambiguity(rubric.details)
    if reason is None:
        rubric.details["decided_by"] = "rubric"
        return rubric
    if judge_model is None:
        rubric.details.update(
            {"decided_by": "rubric", "ambiguous": reason, "judge": "no judge model configured"}
        )
        return rubric
    judge = LLMJudgeVerifier(
        LLMJudgeConfig(
            model=judge_model,
            rubric=judge_rubric(key["correct_keywords"], key["incorrect_patterns"]),
            votes=key["judge_votes"],
            pass_threshold=key["judge_pass_threshold"],
        ),
        goal=str(task.metadata.get("question") or task.prompt),
        llm=run_model_client,
    )
    verdict = await judge.verify(attempt.output)
    return VerifierResult(
        success=verdict.success,
        score=verdict.score,
        raw_eval_output=(
            f"{rubric.raw_eval_output}; ambiguous, so the judge decided: {verdict.raw_eval_output}"
        ),
        details={
            "decided_by": "judge",
            "ambiguous": reason,
            "rubric": rubric.details,
            "rubric_score": rubric.score,
            "judge": verdict.details,
        },
        rating=verdict.rating,
        feedback=verdict.feedback,
        calls=verdict.calls,
    )
