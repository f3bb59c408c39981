"""The core's datasets, what a challenge exports unless its kind brings its own: the
leaderboard, the attempts and their trials (docs/exports.md describes every column)."""

from __future__ import annotations

from sqlalchemy.orm import Session

from app.attempt import service as attempts
from app.competition import service as competition
from app.export.formats import Column
from app.export.stream import Batch, Cursor, Dataset, ExportSource, in_batches
from app.leaderboard import service as leaderboards


def _leaderboard(session: Session, source: ExportSource, after: Cursor | None, limit: int) -> Batch:
    records, last = leaderboards.leaderboard_in_order(
        session, source.tenant_id, source.challenge_id, after=after, limit=limit
    )
    return Batch(records, last)


LEADERBOARD = Dataset(
    name="leaderboard",
    title="Leaderboard",
    description="One row per participant (their best attempt by the scoring strategy), best "
    "first: the rows of GET /v1/challenges/{id}/leaderboard as admins read it (the live board, "
    "in a freeze too).",
    columns=(
        Column(
            "rank",
            "1 for the best participant; every participant has its own rank (ties go to the "
            "earlier attempt). A baseline's is where it would place: it takes none.",
        ),
        Column("participant", "The participant's handle, or the team's name."),
        Column(
            "members",
            "A team's members' handles as a JSON list, oldest member first; empty for a "
            "participant playing alone.",
        ),
        Column("baseline", "true for an admin's reference entry (a baseline), false otherwise."),
        Column("attempt_id", "The attempt that holds the row."),
        Column("score", "Its score (custom strategies), empty otherwise."),
        Column("succeeded", "Whether the verifier passed it: true or false."),
        Column("tokens_total", "Actor input and output tokens over all its trials."),
        Column("elapsed_ms", "Actor wall time over all its trials, in milliseconds."),
        Column("rating", "The judge's rating 0-10 (llm_judge verifiers), empty otherwise."),
        Column("created_at", "When the attempt was submitted (ISO 8601, UTC)."),
    ),
    read=_leaderboard,
)

ATTEMPTS = Dataset(
    name="attempts",
    title="Attempts",
    description="Every attempt, oldest first, as GET /v1/challenges/{id}/attempts lists them "
    "(JSON lines without `trials`: they are the trials export).",
    columns=(
        Column("id", "The attempt's id."),
        Column("participant", "The participant's handle, or the team's name."),
        Column("participant_id", "The participant's id (the team's, for a team's entry)."),
        Column(
            "submitted_by",
            "A team's entry: the handle of the member who submitted it; empty for a "
            "participant playing alone.",
        ),
        Column("status", "queued, running, completed or error."),
        # The attempt read's `prompt` and `model_spec`: its stored fields as its kind shows
        # them (`AttemptKind.shown`), so these columns name no kind's storage.
        Column("prompt", "The submitted prompt (prompt challenges)."),
        Column("model", "The submitted model (benchmark challenges).", ("model_spec", "model")),
        Column(
            "temperature", "The submitted temperature (benchmark).", ("model_spec", "temperature")
        ),
        Column(
            "system_prompt",
            "The submitted system prompt (benchmark).",
            ("model_spec", "system_prompt"),
        ),
        Column("kind_fields", "The submitted fields of its kind's own, as JSON."),
        Column("baseline", "true for an admin's reference entry (a baseline)."),
        Column("created_at", "Submitted (ISO 8601, UTC)."),
        Column("started_at", "First started by a worker."),
        Column("finished_at", "Completed or ended in error."),
        Column("succeeded", "Whether it succeeded: true or false.", ("metrics", "succeeded")),
        Column("score", "Its score, when the strategy gives one."),
        Column("tokens_total", "Actor tokens over all trials.", ("metrics", "tokens_total")),
        Column("elapsed_ms", "Actor wall time over all trials.", ("metrics", "elapsed_ms")),
        Column("rating", "The judge's rating 0-10, best trial.", ("metrics", "rating")),
        Column("trials", "How many trials it ran.", ("metrics", "trials")),
        Column("cost_usd", "Model cost of the run (benchmark).", ("metrics", "cost_usd")),
        Column("tasks_total", "Tasks run (benchmark).", ("metrics", "tasks_total")),
        Column("tasks_solved", "Tasks solved (benchmark).", ("metrics", "tasks_solved")),
        Column(
            "metric_at",
            "The pass@t or seq@t curve, t = 1..k (benchmark), as JSON.",
            ("metrics", "metric_at"),
        ),
        Column("kind_metrics", "Measures of its kind's own, as JSON."),
        Column("score_details", "What the scorer said of the score, as JSON."),
        Column("error", "Why it ended in error, as participants read it."),
        Column("error_detail", "The full reason of the error (tenant admins only)."),
        Column("spent_usd", "Model spend charged to it (tenant admins only)."),
    ),
    read=in_batches(attempts.attempts_in_order),
    exclude=frozenset({"trials"}),
)

TRIALS = Dataset(
    name="trials",
    title="Trials",
    description="Every trial of every attempt, attempts oldest first, then by task and index: "
    "the items of GET /v1/attempts/{id}/trials, each with its attempt's id and participant.",
    columns=(
        Column("attempt_id", "The attempt it belongs to."),
        Column("participant", "The attempt's participant."),
        Column("task_index", "0 for prompt attempts; the benchmark task otherwise."),
        Column("task_id", "The benchmark task's id (benchmark)."),
        Column("index", "The trial's index in its task, from 1."),
        Column("success", "Whether the verifier passed it: true or false."),
        Column("score", "The verifier's score, 0 to 1."),
        Column("prompt", "The messages sent to the actor, as JSON.", ("actor", "prompt")),
        Column("output", "The actor's answer.", ("actor", "output")),
        Column("actor", "The whole actor section (model, prompt, output, tokens), as JSON."),
        Column("judge", "The verifier's section, as JSON."),
        Column("critic", "The critic's section (seq@k feedback), as JSON."),
        Column(
            "sealed",
            "true for a trial of the challenge's private part (a split benchmark challenge).",
        ),
        Column("created_at", "When the trial was stored."),
    ),
    read=in_batches(attempts.trials_in_order),
    max_batch=500,
)

CORE_DATASETS = (LEADERBOARD, ATTEMPTS, TRIALS)

RULES_ACCEPTANCES = Dataset(
    name="rules_acceptances",
    title="Rules acceptances",
    description="Who accepted the challenge's rules, when, and which version, oldest first "
    "(every challenge has it; empty for one without rules).",
    columns=(
        Column("participant", "The participant's handle."),
        Column("participant_id", "The participant's id."),
        Column("rules_sha256", "The version accepted: the SHA-256 of the rules' text."),
        Column("current", "true when it is the version the challenge has now."),
        Column("accepted_at", "When it was accepted (ISO 8601, UTC)."),
    ),
    read=in_batches(competition.acceptances_in_order),
)
# Every challenge's, whatever its kind, after the kind's own.
COMMON_DATASETS = (RULES_ACCEPTANCES,)
