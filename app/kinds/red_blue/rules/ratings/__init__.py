"""Bradley-Terry ratings of red and blue participants, with bootstrap 95 % intervals and ranks.

Every judged match is one comparison: the attack's participant (red) against the defense's
participant (blue); red wins when the attack breached at least one category. Red and blue are
rated on one scale, so a red participant's rating against a blue one's gives the chance that
their attack gets through:

    P(red beats blue) = 1 / (1 + 10 ** ((blue_rating - red_rating) / 400))

that is, rating = 1000 + 400 · log10(e) · θ with θ the Bradley-Terry strength in logits
(Elo's scale: 400 points apart, 10 to 1 odds). A participant who plays both sides has a red
rating and a blue rating, fitted as two players.

One module a concern, each readable alone: `scale` (the rating scale, and the types every
module shares), `tally` (the judged matches, summed per pair), `fit` (the strengths, under a
prior fitted to the matches), `intervals` (the bootstrap, each participant's interval, and
the intervals kept between two bootstraps) and `ranks` (each side's rows, ranked, and
`compute_ratings`, the whole way from matches to rows); every public name is imported here,
so callers say `ratings.<name>`.
"""

from __future__ import annotations

from app.kinds.red_blue.rules.ratings.fit import (
    DENSE_PRIOR_PLAYERS,
    PRIOR_PRECISION,
    PRIOR_STEP_TOLERANCE,
    PRIOR_STRENGTH_TOLERANCE,
    PRIOR_TOLERANCE,
    PRIOR_WEIGHT,
    STRENGTH_TOLERANCE,
    Fit,
    PriorSlope,
    fit_strengths,
    prior_slope,
)
from app.kinds.red_blue.rules.ratings.intervals import (
    DEFAULT_RESAMPLES,
    MATCHES_TAIL,
    OPEN_TAIL,
    OUTER_SHARE,
    PRIOR_TAIL,
    REFIT_PAIRS,
    SPLIT_SCALE,
    bootstrap_bounds,
    interval_bounds,
    provisional_bounds,
)
from app.kinds.red_blue.rules.ratings.ranks import (
    ParticipantRating,
    Ratings,
    compute_ratings,
    interval_ranks,
    ratings_of,
)
from app.kinds.red_blue.rules.ratings.scale import (
    POINTS_PER_LOGIT,
    RATING_CENTRE,
    BoolArray,
    FloatArray,
    IntArray,
    Participant,
    RatingFitError,
    Side,
    to_rating,
    to_strength,
    win_probability,
)
from app.kinds.red_blue.rules.ratings.tally import MatchOutcome, PairResults, Tally

__all__ = [
    "DEFAULT_RESAMPLES",
    "DENSE_PRIOR_PLAYERS",
    "MATCHES_TAIL",
    "OPEN_TAIL",
    "OUTER_SHARE",
    "POINTS_PER_LOGIT",
    "PRIOR_PRECISION",
    "PRIOR_STEP_TOLERANCE",
    "PRIOR_STRENGTH_TOLERANCE",
    "PRIOR_TAIL",
    "PRIOR_TOLERANCE",
    "PRIOR_WEIGHT",
    "RATING_CENTRE",
    "REFIT_PAIRS",
    "SPLIT_SCALE",
    "STRENGTH_TOLERANCE",
    "BoolArray",
    "Fit",
    "FloatArray",
    "IntArray",
    "MatchOutcome",
    "PairResults",
    "Participant",
    "ParticipantRating",
    "PriorSlope",
    "RatingFitError",
    "Ratings",
    "Side",
    "Tally",
    "bootstrap_bounds",
    "compute_ratings",
    "fit_strengths",
    "interval_bounds",
    "interval_ranks",
    "prior_slope",
    "provisional_bounds",
    "ratings_of",
    "to_rating",
    "to_strength",
    "win_probability",
]
