"""The red_blue kind's statements that cross tenants by design: the worker side's, which take
ids from the queue whatever their tenant (a defense's self-test and a match claimed and
finished under their lease, a pairing's reads and inserts, a board's landings, recompute and
write, a final round made and played) and the sweep's, which finds lost work of every tenant.
The API process never imports them (an import-linter contract, pyproject.toml): the request
side reads through the repositories bound to one tenant (`app.kinds.red_blue.repository`).

Every state change of a defense's self-test or a match is guarded by the run token of its
lease, through the lease statements (app/kit/lease/). One module a concern: `rows`, `entries`,
`matches`, `ratings`, `boards`, `landed`, `final_round` and `sweep`; every name is imported
here, so callers say `cross_tenant.<name>`.
"""

from __future__ import annotations

from app.kinds.red_blue.cross_tenant.boards import (
    BoardClaim,
    BoardWrite,
    Landing,
    Pace,
    Pacing,
    Written,
    board_after_write,
    claim_board,
    copy_to_frozen,
    land_matches,
    mark_board_dirty_again,
    pace_board,
    release_interval_refresh,
    write_board,
)
from app.kinds.red_blue.cross_tenant.entries import (
    active_defenses,
    attacks_of,
    claim_defense,
    defense_if_held,
    get_challenge,
    lock_attack,
    lock_defense,
)
from app.kinds.red_blue.cross_tenant.final_round import (
    claim_final_round,
    final_rounds_due,
    insert_matches_in_batches,
    mark_final_round_played,
    pending_defense_count,
    set_final_round_matches,
    unplayed_final_rounds,
)
from app.kinds.red_blue.cross_tenant.landed import (
    Landed,
    baseline_players,
    handles_of,
    landed_matches,
)
from app.kinds.red_blue.cross_tenant.matches import (
    ClaimedMatch,
    NewMatch,
    challenge_version,
    claim_matches,
    finish_match,
    insert_matches,
    pairs_of,
)
from app.kinds.red_blue.cross_tenant.ratings import ratings_of, stored_ratings
from app.kinds.red_blue.cross_tenant.rows import Entry, RatingRow
from app.kinds.red_blue.cross_tenant.sweep import (
    mark_boards_resent,
    mark_resent,
    stuck_attacks,
    stuck_boards,
    stuck_defenses,
    stuck_matches,
)

__all__ = [
    "BoardClaim",
    "BoardWrite",
    "ClaimedMatch",
    "Entry",
    "Landed",
    "Landing",
    "NewMatch",
    "Pace",
    "Pacing",
    "RatingRow",
    "Written",
    "active_defenses",
    "attacks_of",
    "baseline_players",
    "board_after_write",
    "challenge_version",
    "claim_board",
    "claim_defense",
    "claim_final_round",
    "claim_matches",
    "copy_to_frozen",
    "defense_if_held",
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
    "pace_board",
    "pairs_of",
    "pending_defense_count",
    "ratings_of",
    "release_interval_refresh",
    "set_final_round_matches",
    "stored_ratings",
    "stuck_attacks",
    "stuck_boards",
    "stuck_defenses",
    "stuck_matches",
    "unplayed_final_rounds",
    "write_board",
]
