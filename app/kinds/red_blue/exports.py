"""What a red_blue challenge exports: both boards, its defenses, attacks and matches
(docs/exports.md describes every column)."""

from __future__ import annotations

from app.kinds.api.exports import Column, Dataset, in_batches
from app.kinds.red_blue import service


def _match_counts() -> tuple[Column, ...]:
    return tuple(
        Column(f"matches_{status}", f"Its matches {status}.", ("matches", status))
        for status in ("queued", "running", "completed", "error")
    )


LEADERBOARD = Dataset(
    name="leaderboard",
    title="Leaderboards (red and blue)",
    description="The red board, then the blue one, as the last ratings recompute stored them: "
    "the rows of GET /v1/challenges/{id}/leaderboard?side=red and ?side=blue as admins read "
    "them (live, in a freeze too), each with its side.",
    columns=(
        Column("side", "red (attackers) or blue (defenders)."),
        Column(
            "rank",
            "1 + the participants of the side whose interval lies wholly above this "
            "one's (several can share a rank; baselines count for no one, and a baseline's "
            "rank is where it would place).",
        ),
        Column("tied", "true when another participant of the side shares this rank."),
        Column("participant", "The participant's handle, or the team's name."),
        Column(
            "members",
            "A team's members' handles as a JSON list, oldest member first; empty for a "
            "participant playing alone.",
        ),
        Column("baseline", "true for an admin's reference entries (a baseline), else false."),
        Column("rating", "Bradley-Terry rating (one decimal)."),
        Column(
            "rating_low",
            "Low end of the 95 % interval of the rating; empty (JSON null) where the interval "
            "is open below: the participant lost every match.",
        ),
        Column(
            "rating_high",
            "High end of that interval; empty (JSON null) where it is open above: the "
            "participant won every match.",
        ),
        Column("points", "Points won on this side."),
        Column("matches", "Judged matches played on this side."),
        Column("wins", "Matches won on this side."),
    ),
    read=in_batches(service.boards_in_order),
)

DEFENSES = Dataset(
    name="defenses",
    title="Defenses",
    description="Every defense, oldest first, as GET /v1/defenses/{id} answers it.",
    columns=(
        Column("id", "The defense's id."),
        Column("participant", "The blue participant's handle, or the team's name."),
        Column(
            "submitted_by",
            "A team's entry: the handle of the member who submitted it; empty for a "
            "participant playing alone.",
        ),
        Column("status", "pending, active (self-test passed), rejected or error."),
        Column("system_prompt", "The defense: the system prompt the target answers behind."),
        Column("reason", "Why it was rejected, or why its self-test failed."),
        Column("error_detail", "The full reason of an error (tenant admins only)."),
        Column("self_test_output", "The target's answer to the self-test prompt."),
        Column("created_at", "Submitted (ISO 8601, UTC)."),
        Column("finished_at", "When its self-test ended."),
        Column("paired", "Whether its matches were made: true or false."),
        Column("baseline", "true for an admin's reference entry (a baseline)."),
        *_match_counts(),
    ),
    read=in_batches(service.defenses_in_order),
)

ATTACKS = Dataset(
    name="attacks",
    title="Attacks",
    description="Every attack, oldest first, as GET /v1/attacks/{id} answers it.",
    columns=(
        Column("id", "The attack's id."),
        Column("participant", "The red participant's handle, or the team's name."),
        Column(
            "submitted_by",
            "A team's entry: the handle of the member who submitted it; empty for a "
            "participant playing alone.",
        ),
        Column("status", "pending until paired, then paired."),
        Column("prompt", "The attack: the user message sent to the target."),
        Column("created_at", "Submitted (ISO 8601, UTC)."),
        Column("paired", "Whether its matches were made: true or false."),
        Column("baseline", "true for an admin's reference entry (a baseline)."),
        *_match_counts(),
    ),
    read=in_batches(service.attacks_in_order),
)

MATCHES = Dataset(
    name="matches",
    title="Matches",
    description="Every match, oldest first, as GET /v1/matches/{id} answers it: the exact "
    "call, the output and every category's verdict.",
    columns=(
        Column("id", "The match's id."),
        Column("attack_id", "Its attack."),
        Column("defense_id", "Its defense."),
        Column("red_participant", "The attacker's handle."),
        Column("blue_participant", "The defender's handle."),
        Column("status", "queued, running, completed or error."),
        Column("breached", "The categories the attack breached, as a JSON list."),
        Column("attack_won", "Whether the attack breached any category: true or false."),
        Column("red_points", "Points to red."),
        Column("blue_points", "Points to blue."),
        Column("system_prompt", "The defense as sent (system message)."),
        Column("user_message", "The attack as sent (user message)."),
        Column("output", "The target's answer."),
        Column(
            "verdicts",
            "Per category: {category, breached, rating, red_points, blue_points, "
            "raw_eval_output}, as a JSON list.",
        ),
        Column("tokens_total", "Tokens of the target call."),
        Column("elapsed_ms", "Wall time of the target call, in milliseconds."),
        Column("cost_usd", "Model cost of the match."),
        Column("error", "Why it ended in error, as participants read it."),
        Column("error_detail", "The full reason of an error (tenant admins only)."),
        Column("run_count", "How many runs it took."),
        Column("created_at", "Made by pairing or by the final round (ISO 8601, UTC)."),
        Column("finished_at", "Judged, or ended in error."),
        Column(
            "final_round",
            "true for a match of the challenge's final round (made at its close), false for "
            "one made by pairing.",
        ),
    ),
    read=in_batches(service.matches_in_order),
)

RED_BLUE_DATASETS = (LEADERBOARD, DEFENSES, ATTACKS, MATCHES)
