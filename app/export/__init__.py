"""Exports: a challenge's boards and submissions as CSV or JSON Lines, streamed in batches
each read in its own short session, for tenant admins (docs/exports.md).

The mechanism (`formats.py`: cells and lines; `stream.py`: datasets, columns, batches) is
shared; what a challenge offers is its kind's (`export_kind.py`): the core's leaderboard, attempts
and trials (`datasets.py`) unless the kind brings its own.
"""
