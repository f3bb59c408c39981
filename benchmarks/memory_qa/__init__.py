"""`memory_qa`: long-horizon memory questions over a log of notes about entities.

The memory is a generated log of over 1,000 dated operations notes about incidents
(INC-2024-089), vulnerabilities (CVE-2024-12345), projects (PROJ-456) and servers (SRV-789),
with near-miss twins of every question's entities (PROJ-465 beside PROJ-456) whose values are
wrong answers; see `benchmarks.memory_qa.data` for the categories (temporal evolution, security
log analysis, multi-hop, needle in a haystack, multi-entity). The actor never sees the whole
memory: each task's prompt holds the notes that retrieval brings back for its question, then
the question.

Retrieval (option `retrieval`); both drop a note whose text repeats one already taken (routine
notes repeat word for word, and a repeat would only take a place from evidence):

- `standard`: keyword overlap. The question and every note are cut into lowercase words
  (entity ids split at their dashes, stopwords dropped, one common suffix such as -s or -ed
  cut); a note scores the number of distinct
  question words it holds; the `top_n` best (ties: earlier note first) with a score above 0.
  It misses a note worded unlike the question even when that note names the question's
  entity, and it cannot tell an id from its near-miss twin (they share every word).
- `entity_linked`: the entity ids of the question are extracted (regexes for the four id
  shapes) and ALL notes are searched for each of them, each entity on its own, so a question
  naming two entities retrieves both; with `entity_hops` > 0, the ids named by the notes found
  are searched in turn (for multi-hop questions: the incident's note names the CVE whose note
  holds the answer). Each entity's notes are ranked by keyword overlap with the question's
  other words (not its ids, which every one of those notes shares or merely lists). The
  cap `max_chunks` is shared out so that no hop's evidence is crowded out: each hop gets an
  equal share (a hop that needs less passes the rest on), taken round robin over its entities
  (so a two-entity question's second entity is reached), and what is left at the end goes to
  the best remaining notes, hop by hop. A question with no entity id falls back to `standard`.

Grading, correct-first (app.evaluation.engine.verifiers.RubricVerifier, with the question's correct
keywords and known wrong answers): a correct keyword present in the output decides, whatever
else the output says (the rubric's score is the share of correct keywords found, and the task
passes when all are found: "It moved from X to Y" passes for Y, a half answer to a two-part
question fails at 0.5); failing that, a known wrong answer present decides (a fail). Only when
the rubric cannot decide, no correct keyword and no known wrong answer in the output (a
paraphrase, a refusal), does the LLM judge decide (app.evaluation.engine.verifiers.LLMJudgeVerifier
through the run's judge model: `judge_votes` votes, 3 by default, the median rating against
`judge_pass_threshold`), with a rubric that quotes the correct keywords (so `offline/judge`,
which rates the share of quoted phrases found, can grade it) and names the known wrong answers
unquoted. Without a judge model such an output fails, and the details say so.

Retrieval is measured on its own, not through the answers: each task's metadata holds
`figures.retrieval_recall`, the share of its evidence notes that reached the prompt, which the
run summary and `gauntlet eval metrics` report beside (never inside) the answer curves.

Options: `retrieval` (`standard`), `top_n` (6), `max_chunks` (10), `entity_hops` (1), `seed`
(7; also seeds the offline simulated solvers), `questions_per_category` (2, so 10 tasks),
`haystack` (filler notes, 1000), `judge_votes` (3), `judge_pass_threshold` (7.0).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from app.evaluation.engine import simulated
from app.evaluation.engine.benchmark import AttemptView, Task, run_model_client
from app.evaluation.engine.types import VerifierResult
from app.evaluation.engine.verifiers import (
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
# The judge decides only what the rubric cannot, but it can decide: the judge model is a
# setting of the run.
USES_JUDGE_MODEL = True
FEEDBACK_MODES: set[str] = set()
LLM_CRITIC_MODES: set[str] = set()

RETRIEVAL_MODES = ("standard", "entity_linked")
DEFAULT_SEED = 7
# The version of the data and of its grading, in the slice name: a run folder of other data,
# or graded otherwise, is another folder, never resumed into this one. v3: keywords are
# matched as whole tokens (v2 found PROJ-456 inside PROJ-4567). v4: a `.` or `,` between
# digits belongs to the number (v3 found 1.4 inside 1.4.2 and 400 inside 3,400).
DATA_VERSION = "v4"

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


_SUFFIXES = ("ing", "ed", "es", "s", "e")


def _stem(word: str) -> str:
    """A light stem, so "operates", "operated" and "operate" meet: one common suffix cut."""
    if any(character.isdigit() for character in word):
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


@functools.lru_cache(maxsize=8192)
def keywords(text: str) -> frozenset[str]:
    """The words keyword-overlap retrieval compares: lowercase, ids split, no stopwords,
    lightly stemmed."""
    return frozenset(
        _stem(word)
        for word in _WORD.findall(text.lower())
        if len(word) > 1 and word not in _STOPWORDS
    )


def _content_key(note: Note) -> str:
    return " ".join(note.text.lower().split())


def _ranked(question_words: frozenset[str], notes: Iterable[Note]) -> list[tuple[int, Note]]:
    scored = [(len(question_words & keywords(note.text)), note) for note in notes]
    # sorted() is stable: equal scores keep the memory's (date) order.
    return sorted(scored, key=lambda item: -item[0])


def retrieve_standard(question: str, notes: Sequence[Note], *, top_n: int) -> list[Note]:
    selected: list[Note] = []
    seen: set[str] = set()
    for score, note in _ranked(keywords(question), notes):
        if score <= 0 or len(selected) >= top_n:
            break
        if _content_key(note) not in seen:
            seen.add(_content_key(note))
            selected.append(note)
    return selected


class _Selection:
    """Notes taken so far, deduplicated by id and by content."""

    def __init__(self) -> None:
        self.notes: list[Note] = []
        self._ids: set[str] = set()
        self._contents: set[str] = set()

    def fresh(self, note: Note) -> bool:
        return note.note_id not in self._ids and _content_key(note) not in self._contents

    def take(self, note: Note) -> None:
        self._ids.add(note.note_id)
        self._contents.add(_content_key(note))
        self.notes.append(note)


def _round_robin(groups: list[list[Note]], selection: _Selection, budget: int) -> list[Note]:
    """Up to `budget` fresh notes, the best of each group in turn; taken from the groups."""
    taken: list[Note] = []
    while len(taken) < budget and any(groups):
        for group in groups:
            while group and not selection.fresh(group[0]):
                group.pop(0)
            if group and len(taken) < budget:
                note = group.pop(0)
                selection.take(note)
                taken.append(note)
    return taken


def retrieve_entity_linked(
    question: str, notes: Sequence[Note], *, max_chunks: int, hops: int, top_n: int
) -> list[Note]:
    wanted = list(extract_entities(question))
    if not wanted:
        return retrieve_standard(question, notes, top_n=top_n)
    # Within an entity's notes its id says nothing, and another id of the question would only
    # favour notes that list ids together: the notes are ranked on the question's other words.
    question_words = keywords(question) - keywords(" ".join(wanted))
    by_entity: dict[str, list[Note]] = {}
    for note in notes:
        for entity in note.entities:
            by_entity.setdefault(entity, []).append(note)
    selection = _Selection()
    searched: set[str] = set()
    leftovers: list[list[Note]] = []
    frontier = wanted
    levels = hops + 1
    for level in range(levels):
        groups = [
            [note for _, note in _ranked(question_words, by_entity.get(entity, ()))]
            for entity in frontier
        ]
        searched.update(frontier)
        # This hop's share of what is left, so a busy entity of one hop cannot fill the cap
        # before the next hop's evidence is reached.
        remaining = max_chunks - len(selection.notes)
        share = -(-remaining // (levels - level))
        found = _round_robin(groups, selection, share)
        leftovers.extend(groups)
        frontier = list(
            dict.fromkeys(
                entity for note in found for entity in note.entities if entity not in searched
            )
        )
        if not frontier:
            break
    _round_robin(leftovers, selection, max_chunks - len(selection.notes))
    return selection.notes


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
    name = f"memory_qa-{DATA_VERSION}-{options.get('retrieval', 'standard')}"
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
    haystack: int = 1000,
    judge_votes: int = 3,
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
        found = set(question.evidence) & set(retrieved)
        recall = len(found) / len(question.evidence)
        answerable = recall == 1.0
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
                # Whether every evidence note reached the prompt: retrieval's own score, kept
                # apart from the answer's grade.
                "evidence_retrieved": answerable,
                "figures": {"retrieval_recall": recall},
                "memory_notes": len(memory.notes),
            },
        )


# Grading


def rubric_decides(details: dict[str, Any]) -> str | None:
    """Why the correct-first rubric decides an output (a correct keyword is present, else a
    known wrong answer is), or None when it cannot and the judge decides."""
    if details["found_keywords"]:
        return "a correct keyword is present"
    if details["incorrect_patterns_found"]:
        return "a known wrong answer is present and no correct keyword"
    return None


def judge_rubric(correct: Sequence[str], incorrect: Sequence[str]) -> str:
    """The judge's rubric: correct keywords quoted (offline/judge reads quoted phrases),
    known wrong answers unquoted."""
    quoted = ", ".join(f'"{keyword}"' for keyword in correct)
    rubric = f"A correct answer states all of: {quoted}, possibly in other words."
    if incorrect:
        rubric += (
            " These are known wrong answers and must not be given as the answer: "
            + "; ".join(incorrect)
            + "."
        )
    return rubric


async def verify(task: Task, attempt: AttemptView, *, judge_model: str | None) -> VerifierResult:
    key: dict[str, Any] = task.answer
    rubric = await RubricVerifier(
        RubricConfig(
            correct_keywords=key["correct_keywords"],
            incorrect_patterns=key["incorrect_patterns"],
            # Its near-miss entities differ from the right ones by a digit or a prefix.
            match="token",
        )
    ).verify(attempt.output)
    reason = rubric_decides(rubric.details)
    if reason is not None:
        rubric.details.update({"decided_by": "rubric", "why": reason})
        return rubric
    undecided = "no correct keyword and no known wrong answer in the output"
    if judge_model is None:
        rubric.details.update(
            {"decided_by": "rubric", "why": undecided, "judge": "no judge model configured"}
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
            f"{rubric.raw_eval_output}; the rubric could not decide, so the judge did: "
            f"{verdict.raw_eval_output}"
        ),
        details={
            "decided_by": "judge",
            "why": undecided,
            "rubric": rubric.details,
            "rubric_score": rubric.score,
            "judge": verdict.details,
        },
        rating=verdict.rating,
        feedback=verdict.feedback,
        calls=verdict.calls,
    )
