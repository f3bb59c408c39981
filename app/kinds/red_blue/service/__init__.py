"""The red_blue kind's rules on the request side: submitting defenses and attacks (limits,
schedule, idempotency), re-running what ended in error, and every read view (what each
reader may see decided in one place, `Reader`). Worker-side rules are in `worker.py`.

The web UI calls these functions as the REST routers do (docs/redblue.md lists them).

One module a concern: `access` (who reads), `entries`, `matches`, `boards`, `public` and
`exports`; every name is imported here, so callers say `service.<name>`.
"""

from __future__ import annotations

from app.kinds.red_blue.service.access import (
    BOARD_SIDES,
    KIND_NAME,
    freeze_cutoff,
    player_at,
    reader_for,
    reader_of,
)
from app.kinds.red_blue.service.boards import (
    Board,
    T,
    board_item,
    board_page_with_ties,
    board_side,
    challenge_standings,
    read_leaderboard,
    read_standings,
)
from app.kinds.red_blue.service.entries import (
    EntrySubmission,
    attack_view,
    check_entry_lengths,
    defense_view,
    entrants,
    entries_left,
    not_red_blue,
    own_defense_text,
    participant_entries,
    players,
    read_attack,
    read_defense,
    rerun_defense,
    submit_attack,
    submit_defense,
)
from app.kinds.red_blue.service.exports import (
    SIDES,
    BoardCursor,
    CreatedCursor,
    attacks_in_order,
    boards_in_order,
    defenses_in_order,
    matches_in_order,
)
from app.kinds.red_blue.service.matches import (
    FailedMatch,
    activity,
    entry_activity,
    list_match_views,
    list_matches,
    match_spend,
    match_summary,
    match_view,
    places,
    read_challenge_match,
    read_match,
    recent_match_errors,
    rerun_match,
)
from app.kinds.red_blue.service.public import (
    list_public_matches,
    read_public_match,
    read_public_standings,
)

__all__ = [
    "BOARD_SIDES",
    "KIND_NAME",
    "SIDES",
    "Board",
    "BoardCursor",
    "CreatedCursor",
    "EntrySubmission",
    "FailedMatch",
    "T",
    "activity",
    "attack_view",
    "attacks_in_order",
    "board_item",
    "board_page_with_ties",
    "board_side",
    "boards_in_order",
    "challenge_standings",
    "check_entry_lengths",
    "defense_view",
    "defenses_in_order",
    "entrants",
    "entries_left",
    "entry_activity",
    "freeze_cutoff",
    "list_match_views",
    "list_matches",
    "list_public_matches",
    "match_spend",
    "match_summary",
    "match_view",
    "matches_in_order",
    "not_red_blue",
    "own_defense_text",
    "participant_entries",
    "places",
    "player_at",
    "players",
    "read_attack",
    "read_challenge_match",
    "read_defense",
    "read_leaderboard",
    "read_match",
    "read_public_match",
    "read_public_standings",
    "read_standings",
    "reader_for",
    "reader_of",
    "recent_match_errors",
    "rerun_defense",
    "rerun_match",
    "submit_attack",
    "submit_defense",
]
