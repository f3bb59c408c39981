"""SQL of the red_blue kind.

Request-side reads and writes are scoped to a tenant (`RedBlueRepository`). Worker-side
statements take ids from the queue and guard every state change of a defense's self-test or
a match with the run token of its lease, through the lease statements (app/lease/).

One module a concern: `rows` (what queries answer with), `scoped` (the request side),
`entries`, `matches`, `ratings`, `boards`, `sweep` and `final_round` (the worker side); every
name is imported here, so callers say `repository.<name>`.
"""

from __future__ import annotations

from app.kinds.red_blue.repository.boards import (
    BoardClaim,
    BoardWrite,
    Landed,
    Landing,
    Pace,
    Pacing,
    Written,
    baseline_players,
    board_after_write,
    claim_board,
    copy_to_frozen,
    handles_of,
    land_matches,
    landed_matches,
    mark_board_dirty_again,
    pace_board,
    release_interval_refresh,
    write_board,
)
from app.kinds.red_blue.repository.entries import (
    active_defenses,
    attacks_of,
    claim_defense,
    defense_if_held,
    get_challenge,
    lock_attack,
    lock_defense,
    newest_active_defense,
    newest_active_defense_text,
)
from app.kinds.red_blue.repository.final_round import (
    board_rated_all,
    claim_final_round,
    final_round_holds_freeze,
    final_round_match_counts,
    final_round_of,
    final_rounds_due,
    insert_matches_in_batches,
    mark_final_round_played,
    pending_defense_count,
    set_final_round_matches,
    unplayed_final_rounds,
)
from app.kinds.red_blue.repository.matches import (
    ClaimedMatch,
    NewMatch,
    challenge_version,
    claim_matches,
    finish_match,
    insert_matches,
    pairs_of,
)
from app.kinds.red_blue.repository.ratings import (
    ratings_of,
    stored_ratings,
)
from app.kinds.red_blue.repository.rows import (
    Activity,
    BoardLine,
    Entry,
    EntryModel,
    Places,
    RatingRow,
    T,
    match_status_for,
    shown_to,
)
from app.kinds.red_blue.repository.scoped import (
    RedBlueRepository,
)
from app.kinds.red_blue.repository.sweep import (
    mark_boards_resent,
    mark_resent,
    stuck_attacks,
    stuck_boards,
    stuck_defenses,
    stuck_matches,
)

__all__ = [
    "Activity",
    "BoardClaim",
    "BoardLine",
    "BoardWrite",
    "ClaimedMatch",
    "Entry",
    "EntryModel",
    "Landed",
    "Landing",
    "NewMatch",
    "Pace",
    "Pacing",
    "Places",
    "RatingRow",
    "RedBlueRepository",
    "T",
    "Written",
    "active_defenses",
    "attacks_of",
    "baseline_players",
    "board_after_write",
    "board_rated_all",
    "challenge_version",
    "claim_board",
    "claim_defense",
    "claim_final_round",
    "claim_matches",
    "copy_to_frozen",
    "defense_if_held",
    "final_round_holds_freeze",
    "final_round_match_counts",
    "final_round_of",
    "final_rounds_due",
    "finish_match",
    "get_challenge",
    "handles_of",
    "insert_matches",
    "insert_matches_in_batches",
    "land_matches",
    "landed_matches",
    "lock_attack",
    "lock_defense",
    "mark_board_dirty_again",
    "mark_boards_resent",
    "mark_final_round_played",
    "mark_resent",
    "match_status_for",
    "newest_active_defense",
    "newest_active_defense_text",
    "pace_board",
    "pairs_of",
    "pending_defense_count",
    "ratings_of",
    "release_interval_refresh",
    "set_final_round_matches",
    "shown_to",
    "stored_ratings",
    "stuck_attacks",
    "stuck_boards",
    "stuck_defenses",
    "stuck_matches",
    "unplayed_final_rounds",
    "write_board",
]
