"""The scoring strategies a challenge ranks its attempts by."""

from __future__ import annotations

from enum import StrEnum


class Strategy(StrEnum):
    """`first`, `fastest`, `fewest_tokens` and `highest_rating` rank succeeded attempts by one
    of their metrics; `metric_at_k` ranks benchmark runs by their curve at k; `custom` ranks
    every scored attempt by a scorer plugin's score. Which a challenge may use is its kind's
    to say."""

    FIRST = "first"
    FASTEST = "fastest"
    FEWEST_TOKENS = "fewest_tokens"
    HIGHEST_RATING = "highest_rating"
    METRIC_AT_K = "metric_at_k"
    CUSTOM = "custom"
