"""What one reader sees of a red_blue challenge's defenses, attacks and matches: their texts,
and, in a freeze, which of them and how far along (docs/redblue.md, "What readers see";
docs/boards.md, "Freeze").

One `Reader` per request decides both, and every read of entries and matches goes through it:
lists, pages and counts filter by its SQL predicates (`shown_to`, `match_status_for` of the
kind's `RedBlueRepository`), a row read by id is checked by `sees` and every view is cut by
`settled` (the same rule over a loaded row). No route has a freeze rule of its own.

The freeze, for every reader but the challenge's admins, from `freeze_at` until the boards
are revealed (the close, or with a final round the final boards): other people's entries
and matches are as they stood at `freeze_at` (`cutoff`):

- made at or after it: not there (left out of lists and counts; 404 by id);
- made before it, with a result that came at or after it (a self-test ended, a pairing
  made, a match judged or ended in error): shown as they were before it came (pending,
  not paired, a match queued without a result);
- the reader's own (`participant_id`: the participant, or their team, a signed-in visitor
  or a member key reads for) are live: their defenses and attacks, and every match they
  played on either side. A match is both its players' result: red's points in it are blue's
  points lost, so each of the two sees it as it is, and no one else does.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from app.kinds.red_blue.models import Attack, Defense, Match

Entry = Defense | Attack


@dataclass(frozen=True)
class Reader:
    """What a reader may see of defenses, attacks and matches.

    Texts:

    - a tenant admin key: everything, the full reason of errors included;
    - a tenant member key (the tenant's own application): the texts (system prompts, attacks,
      outputs), not the full reasons of errors;
    - a signed-in participant (web UI): the texts of their own entries only (their defense's
      system prompt, their attack, the output of matches they played);
    - the public (a public challenge, no credential): no texts at all, only statuses,
      verdicts, points and the boards.

    `participant_id`: whose entries are the reader's own (the participant, or their team at
    the challenge): a signed-in participant's texts, and in a freeze what stays live.
    `cutoff`: the challenge's `freeze_at` while this reader sees it frozen, else None.
    """

    admin: bool
    all_texts: bool
    participant_id: uuid.UUID | None = None
    cutoff: datetime | None = None

    def sees_texts_of(self, *owners: uuid.UUID) -> bool:
        return self.all_texts or self.owns(*owners)

    def owns(self, *owners: uuid.UUID) -> bool:
        return self.participant_id is not None and self.participant_id in owners

    # Over a loaded row ---------------------------------------------------------------------

    def sees(self, row: Entry | Match) -> bool:
        """Whether the row exists for the reader (`shows`, over one row)."""
        return self.cutoff is None or row.created_at < self.cutoff or self.owns(*_owners(row))

    def settled(self, row: Entry | Match, moment: datetime | None) -> bool:
        """Whether the reader sees what became of the row at `moment` (a match's or a
        self-test's end, a pairing; None: not yet): always outside a freeze and for their
        own rows, else only if it came before the freeze."""
        if self.cutoff is None or self.owns(*_owners(row)):
            return True
        return moment is not None and moment < self.cutoff


def _owners(row: Entry | Match) -> tuple[uuid.UUID, ...]:
    if isinstance(row, Match):
        return (row.red_participant_id, row.blue_participant_id)
    return (row.participant_id,)


PUBLIC_READER = Reader(admin=False, all_texts=False)
