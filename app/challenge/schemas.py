"""Challenge bodies and views.

A body has the fields every challenge has, and the sections of its kind (`target`,
`verifier`, `benchmark`, ...), which ride along as extra fields: the service validates them
with the kind's own model (`app.challenge.challenge_kind`), naming the field on error, an
unknown one included. Two read shapes exist: `ChallengeRead` (tenant admins: everything) and
`ChallengePublic` (participants and member keys: what the kind hides removed).
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from app.challenge.config import (
    ChallengePages,
    ChallengePagesUpdate,
    ChallengeState,
    ChallengeStatus,
    LimitsConfig,
    Visibility,
)
from app.challenge.reference import ChallengeSlug
from app.challenge.registry import KindNotFound, find_kind
from app.kit.schemas import BoundedDatetime, InputSchema, Name, OutputSchema
from app.scoring.schemas import ENTRYPOINT_PATTERN, ScoringConfig
from app.scoring.strategies import Strategy

# The original challenge body's flat scoring fields, accepted beside `scoring` and mapped onto it
# by app/challenge/flat_scoring.py (scorers/README.md has the table). Never stored or returned.
FLAT_SCORING_FIELDS = (
    "scoring_strategy",
    "scoring_plugin_id",
    "scoring_entrypoint",
    "scoring_config",
)
_FLAT = "The original flat form (give either `scoring` or the flat fields): "
FlatScoringStrategy = Annotated[
    Strategy | None,
    Field(
        exclude=True,
        description=_FLAT + "`scoring.strategy`; 'custom' when only a plugin is named.",
    ),
]
FlatScoringPluginId = Annotated[
    str | None, Field(exclude=True, max_length=100, description=_FLAT + "`scoring.plugin_id`.")
]
FlatScoringEntrypoint = Annotated[
    str | None,
    Field(
        exclude=True,
        max_length=500,
        pattern=ENTRYPOINT_PATTERN,
        description=_FLAT + "checked, never stored: must equal the entrypoint that the plugin "
        "named by `scoring_plugin_id` was registered with.",
    ),
]
FlatScoringConfig = Annotated[
    dict[str, Any] | None, Field(exclude=True, description=_FLAT + "`scoring.config`.")
]


def refuse_both_scoring_forms(data: Any) -> Any:
    """`scoring` and the flat fields spell the same thing; given both, neither can win."""
    if isinstance(data, dict) and data.get("scoring") is not None:
        flat = [name for name in FLAT_SCORING_FIELDS if data.get(name) is not None]
        if flat:
            raise PydanticCustomError(
                "scoring_forms_conflict",
                "give the scoring either as 'scoring' or as the flat fields, not both: "
                "'scoring' conflicts with {fields}",
                {"fields": ", ".join(f"'{name}'" for name in flat)},
            )
    return data


def registered_kind(name: str) -> str:
    try:
        find_kind(name)
    except KindNotFound as error:
        raise ValueError(str(error)) from None
    return name


# A registered kind's name (the registry says which exist: app/challenge/registry.py).
KindName = Annotated[
    str,
    StringConstraints(max_length=16),
    AfterValidator(registered_kind),
    Field(description="The challenge's kind: 'prompt', 'benchmark', or another registered one."),
]

# A kind's sections are extra fields of the body; the service validates them (see above).
_WITH_SECTIONS = ConfigDict(extra="allow", allow_inf_nan=False)


def _when(moment: datetime) -> str:
    shape = "%Y-%m-%d %H:%M" if moment.second == 0 else "%Y-%m-%d %H:%M:%S"
    return f"{moment.astimezone(UTC).strftime(shape)} UTC"


def check_closes_at(closes_at: datetime | None, opens_at: datetime | None) -> None:
    """A challenge closes after it opens; the message names both dates."""
    if closes_at is not None and opens_at is not None and closes_at <= opens_at:
        raise ValueError(
            f"must be after opens_at: it is {_when(closes_at)}, and opens_at is {_when(opens_at)}"
        )


def check_freeze_at(
    freeze_at: datetime | None, opens_at: datetime | None, closes_at: datetime | None
) -> None:
    """A freeze ends at the close, so it needs one, and begins while the challenge is open."""
    if freeze_at is None:
        return
    if closes_at is None:
        raise ValueError("needs closes_at: a freeze lasts until the close")
    if freeze_at >= closes_at:
        raise ValueError(f"must be before closes_at ({_when(closes_at)}): it is {_when(freeze_at)}")
    if opens_at is not None and freeze_at <= opens_at:
        raise ValueError(f"must be after opens_at ({_when(opens_at)}): it is {_when(freeze_at)}")


class ChallengeCreate(InputSchema):
    model_config = _WITH_SECTIONS

    template: str | None = Field(
        default=None,
        exclude=True,
        max_length=100,
        description="Start from a template (`GET /v1/challenge-templates`): its body, with this "
        "body's fields laid over it as a JSON merge patch (RFC 7386: an object merges field by "
        "field, anything else replaces, null removes). Never stored.",
        examples=["prompt-injection"],
    )
    slug: ChallengeSlug | None = Field(
        default=None,
        description="Lowercase letters, digits and hyphens; not given: made from the title "
        "('Make it say PWNED' makes make-it-say-pwned; -2, -3... when it is taken).",
    )
    title: Name
    goal: str = Field(default="", max_length=20_000)
    pages: ChallengePages = Field(
        default_factory=ChallengePages,
        description="Its pages, shown as tabs on the challenge page: overview, rules, data, "
        "evaluation (Markdown, sanitized when shown).",
    )
    kind: KindName = "prompt"
    scoring: ScoringConfig = Field(default_factory=ScoringConfig)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    opens_at: BoundedDatetime | None = None
    closes_at: BoundedDatetime | None = None
    freeze_at: BoundedDatetime | None = Field(
        default=None,
        description="Optional, before `closes_at` (and after `opens_at`): from then until the "
        "close, public boards show what they showed then to everyone but the challenge's "
        "admins; participants still see their own results.",
    )
    visibility: Visibility = Visibility.PRIVATE
    state: ChallengeState = Field(
        default=ChallengeState.LIVE,
        description="`draft`: seen by the tenant's admins only, never listed or playable, "
        "until set `live`; `archived` (by an update): hidden from lists and read-only, its "
        "pages, boards and exports kept.",
    )
    scoring_strategy: FlatScoringStrategy = None
    scoring_plugin_id: FlatScoringPluginId = None
    scoring_entrypoint: FlatScoringEntrypoint = None
    scoring_config: FlatScoringConfig = None

    @model_validator(mode="before")
    @classmethod
    def _one_scoring_form(cls, data: Any) -> Any:
        return refuse_both_scoring_forms(data)

    # Field validators (not one on the model), so that these errors name their field and come
    # with every other error of the body; the dates before them are in `info.data` when valid.
    @field_validator("closes_at")
    @classmethod
    def _closes_after_opening(cls, value: datetime | None, info: ValidationInfo) -> datetime | None:
        check_closes_at(value, info.data.get("opens_at"))
        return value

    @field_validator("freeze_at")
    @classmethod
    def _freezes_while_open(cls, value: datetime | None, info: ValidationInfo) -> datetime | None:
        if "closes_at" not in info.data:
            return value  # closes_at is not valid: its own error says why
        check_freeze_at(value, info.data.get("opens_at"), info.data["closes_at"])
        return value

    @property
    def sections(self) -> dict[str, Any]:
        """The kind's sections as given (unvalidated: the kind validates them). A null counts
        as not given, as clients that send every field (the other kinds' too) do."""
        return {
            name: value for name, value in (self.model_extra or {}).items() if value is not None
        }


class ChallengeUpdate(InputSchema):
    """Fields to change, a kind's sections included; the result is validated again as a
    whole."""

    model_config = _WITH_SECTIONS

    title: Name | None = None
    goal: str | None = Field(default=None, max_length=20_000)
    pages: ChallengePagesUpdate | None = Field(
        default=None,
        description="The pages to change (those not named stay). Changing the rules makes a "
        "new version: participants who accepted an earlier one keep playing.",
    )
    scoring: ScoringConfig | None = None
    limits: LimitsConfig | None = None
    opens_at: BoundedDatetime | None = None
    closes_at: BoundedDatetime | None = None
    freeze_at: BoundedDatetime | None = Field(
        default=None,
        description="Optional, before `closes_at` (and after `opens_at`): from then until the "
        "close, public boards show what they showed then to everyone but the challenge's "
        "admins; participants still see their own results.",
    )
    visibility: Visibility | None = None
    state: ChallengeState | None = Field(
        default=None,
        description="`live` publishes a draft or unarchives; `archived` hides the challenge "
        "from lists and makes it read-only (only `state` may change then); `draft` takes it "
        "back to its admins.",
    )
    scoring_strategy: FlatScoringStrategy = None
    scoring_plugin_id: FlatScoringPluginId = None
    scoring_entrypoint: FlatScoringEntrypoint = None
    scoring_config: FlatScoringConfig = None

    @model_validator(mode="before")
    @classmethod
    def _one_scoring_form(cls, data: Any) -> Any:
        return refuse_both_scoring_forms(data)


class ChallengePublic(OutputSchema):
    """What a participant or a member key sees: no system prompt, no judge rubric, no answer
    keys, no server addresses (`challenge_view` decides). The sections of kinds other than
    the built-in ones follow as fields of their own names."""

    model_config = ConfigDict(from_attributes=True, extra="allow")

    id: uuid.UUID
    slug: str
    title: str
    goal: str
    pages: ChallengePages
    # The version of the rules participants accept (SHA-256 of their text); null: no rules.
    rules_sha256: str | None
    kind: str
    target: dict[str, Any] | None
    verifier: dict[str, Any] | None
    benchmark: dict[str, Any] | None
    evaluation: dict[str, Any]
    scoring: dict[str, Any]
    limits: LimitsConfig
    opens_at: datetime | None
    closes_at: datetime | None
    freeze_at: datetime | None
    visibility: Visibility
    state: ChallengeState
    status: ChallengeStatus
    created_at: datetime


class ChallengeRead(ChallengePublic):
    """What a tenant admin sees: everything."""

    updated_at: datetime
    # Set on a deleted challenge only (the list of deleted challenges).
    deleted_at: datetime | None = None


class ChallengeRestore(InputSchema):
    """Restoring a deleted challenge: under its own slug, or under this one when a challenge
    took its slug since it was deleted."""

    slug: ChallengeSlug | None = None


class ChallengeList(OutputSchema):
    items: list[ChallengeRead | ChallengePublic]
    total: int
    # The page asked for: `limit` items at most, after `offset`.
    limit: int
    offset: int
