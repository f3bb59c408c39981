"""Every code an error of the API can carry (`error.code`), each with its HTTP status and what
it means: the one table of them (docs/errors.md shows it, a test keeps the two equal).

A code names the condition, so a client can act on it without reading the message:
`challenge_closed` (stop submitting), `slug_taken` (choose another), `team_full` (join
another). A 422 has one code, `validation_error`: its `details` name each field at fault and
what is wrong with it (their `type`), which is where a client looks.

Each operation declares the codes it may answer (`raises`, its `responses=`); the OpenAPI
document lists them on each error response (`x-error-codes`, and in its description). The
codes every operation may answer for its status (`GENERAL`: a missing credential, a closed
tenant, a busy service) are listed wherever that status is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

# The OpenAPI extension on an error response that lists its codes.
CODES_EXTENSION = "x-error-codes"
# How the warning begins that an operation answered a code it does not declare.
UNDECLARED_ERROR_CODE = "undeclared error code:"


class ErrorCode(str):
    """An error's code: the text `error.code` says, knowing its HTTP status and meaning, and
    whether only the web pages meet it (they show its message beside the form; no operation
    of the API answers it)."""

    status: int
    meaning: str
    pages_only: bool

    def __new__(cls, code: str, status: int, meaning: str, pages_only: bool = False) -> ErrorCode:
        made = super().__new__(cls, code)
        made.status = status
        made.meaning = meaning
        made.pages_only = pages_only
        return made


# Every code, by its text, in the order the table shows them.
ERROR_CODES: dict[str, ErrorCode] = {}


def _code(code: str, status: int, meaning: str, *, pages_only: bool = False) -> ErrorCode:
    if code in ERROR_CODES:
        raise ValueError(f"error code {code!r} is declared twice")
    made = ERROR_CODES[code] = ErrorCode(code, status, meaning, pages_only)
    return made


# The request as such.
BAD_REQUEST = _code("bad_request", 400, "The request cannot be served as sent.")
UNAUTHORIZED = _code(
    "unauthorized", 401, "No credential, or one that is not valid (`Authorization: Bearer`)."
)
FORBIDDEN = _code(
    "forbidden", 403, "The credential may not do this (the wrong kind of key, or role)."
)
TENANT_PENDING = _code(
    "tenant_pending", 403, "The tenant waits for the platform admin's approval: nothing opens."
)
TENANT_SUSPENDED = _code(
    "tenant_suspended", 403, "The platform admin suspended the tenant: its doors are closed."
)
NOT_FOUND = _code(
    "not_found", 404, "Nothing with this id or slug that the caller may see (another tenant's)."
)
METHOD_NOT_ALLOWED = _code("method_not_allowed", 405, "The path takes no such method.")
PAYLOAD_TOO_LARGE = _code(
    "payload_too_large",
    413,
    "The body is larger than the server takes (GAUNTLET_MAX_REQUEST_BYTES).",
)
UNSUPPORTED_MEDIA_TYPE = _code("unsupported_media_type", 415, "The body's type is not JSON.")
VALIDATION_ERROR = _code(
    "validation_error",
    422,
    "A parameter, header or the body is not valid: `details` names each field and what is wrong.",
)

# A challenge's state and schedule.
CHALLENGE_DRAFT = _code(
    "challenge_draft", 409, "The challenge is a draft: it takes submissions once published."
)
CHALLENGE_UPCOMING = _code(
    "challenge_upcoming", 409, "The challenge has not opened yet (`opens_at` is ahead)."
)
CHALLENGE_CLOSED = _code(
    "challenge_closed", 409, "The challenge has closed: it takes no submissions, finals are fixed."
)
CHALLENGE_ARCHIVED = _code(
    "challenge_archived",
    409,
    "The challenge is archived: it takes no submissions, and only its state may change.",
)
CHALLENGE_NOT_LIVE = _code(
    "challenge_not_live", 409, "The challenge is a draft or archived: teams form on live ones."
)
KIND_TAKES_NO_ATTEMPTS = _code(
    "kind_takes_no_attempts", 409, "The challenge's kind takes entries of its own, no attempts."
)
NO_UNSCORED_RUNS = _code(
    "no_unscored_runs", 409, "The challenge's kind has no practice or test runs."
)
PRACTICE_OFF = _code(
    "practice_off", 409, "The challenge allows no practice runs (`max_practice_per_day` is 0)."
)
SPLIT_FROZEN = _code(
    "split_frozen",
    409,
    "The challenge has submissions: its benchmark and split no longer change (`details` names "
    "the field).",
)

# Names that must be unique.
SLUG_TAKEN = _code(
    "slug_taken", 409, "A tenant or challenge has this slug already: choose another (`slug`)."
)
HANDLE_TAKEN = _code(
    "handle_taken",
    409,
    "A participant of the tenant has this handle (in any case): signing up, choose another.",
    pages_only=True,
)
TEAM_NAME_TAKEN = _code(
    "team_name_taken", 409, "A participant or a team of the tenant has this name."
)
PLUGIN_ID_TAKEN = _code("plugin_id_taken", 409, "A scorer with this plugin id is registered.")
IDEMPOTENCY_KEY_REUSED = _code(
    "idempotency_key_reused",
    409,
    "The Idempotency-Key was used for a different request: use a new key for a new one.",
)

# Limits and quotas.
TOTAL_LIMIT_REACHED = _code(
    "total_limit_reached",
    409,
    "The participant has made as many submissions as the challenge allows in all.",
)
DAILY_LIMIT_REACHED = _code(
    "daily_limit_reached",
    429,
    "The participant's submissions for the day are spent: retry after `Retry-After` seconds.",
)
QUOTA_MAX_CHALLENGES = _code(
    "quota_max_challenges", 409, "The tenant has as many challenges as its quota allows."
)
QUOTA_MAX_PARTICIPANTS = _code(
    "quota_max_participants",
    409,
    "The tenant has as many participants (accounts, handles, teams) as its quota allows.",
)
QUOTA_MAX_ATTEMPTS_PER_DAY = _code(
    "quota_max_attempts_per_day",
    429,
    "The tenant's entries for the day are spent: retry after `Retry-After` seconds.",
)
QUEUE_SHARE_FULL = _code(
    "queue_share_full",
    429,
    "The tenant has as many attempts queued or running as its share of the workers' queue: "
    "retry after `Retry-After` seconds (`RateLimit-*` say the share).",
)

# Teams.
TEAMS_NOT_ALLOWED = _code(
    "teams_not_allowed", 409, "The challenge is played individually (no `max_team_size`)."
)
ALREADY_IN_TEAM = _code(
    "already_in_team", 409, "The participant is in a team of this challenge already."
)
HAS_OWN_ENTRIES = _code(
    "has_own_entries", 409, "The participant has entries of their own here, so joins no team."
)
TEAM_FULL = _code("team_full", 409, "The team has as many members as the challenge allows.")
TEAM_HAS_ENTRIES = _code(
    "team_has_entries",
    409,
    "The team has entries in this challenge: its members stay, and (unless the challenge "
    "allows it) no one joins.",
)

# Re-runs and final submissions.
NOT_IN_ERROR = _code(
    "not_in_error", 409, "Only what ended in error is run again; this did not (its status says)."
)
ATTEMPT_NOT_COMPLETED = _code(
    "attempt_not_completed", 409, "Only a completed submission can be marked final."
)
BASELINE_NOT_FINAL = _code(
    "baseline_not_final", 409, "A baseline is no participant's submission: it cannot be final."
)
FINAL_PICKS_EXHAUSTED = _code(
    "final_picks_exhausted",
    409,
    "The participant has marked as many final submissions as allowed: unmark one first.",
)

# Rules.
RULES_NOT_ACCEPTED = _code(
    "rules_not_accepted",
    409,
    "The challenge has rules the participant has not accepted: accept them "
    "(`POST /v1/challenges/{id}/rules/acceptance`), then submit again.",
)
NO_RULES = _code("no_rules", 409, "The challenge has no rules to accept.")

# Scorers and tenants.
SCORER_IN_USE = _code(
    "scorer_in_use", 409, "Challenges use the scorer: disable it instead of removing it."
)
STATUS_CHANGE_REFUSED = _code(
    "status_change_refused", 409, "The tenant cannot go to this status from its own (to pending)."
)
ORGANIZER_UNCONFIRMED = _code(
    "organizer_unconfirmed",
    409,
    "The pending tenant is approved once an organizer's email address is confirmed.",
)
ADMIN_NEEDS_ACCOUNT = _code(
    "admin_needs_account",
    409,
    "Only a participant who signed up on the web (an account) can have the admin role.",
    pages_only=True,
)
LAUNCH_NOT_READY = _code(
    "launch_not_ready",
    409,
    "The console opens or publishes a challenge once its launch checklist's required items "
    "are done (the page names those that are not).",
    pages_only=True,
)

# The service.
RATE_LIMITED = _code(
    "rate_limited", 429, "Too many requests at once: retry after `Retry-After` seconds."
)
INTERNAL_ERROR = _code("internal_error", 500, "Something went wrong on the server's side.")
UNAVAILABLE = _code(
    "unavailable",
    503,
    "The database (or, saving a challenge, the DNS resolver) is unavailable: retry after "
    "`Retry-After` seconds.",
)

# Why a challenge takes no submission now (attempts and entries alike).
NOT_OPEN = (CHALLENGE_DRAFT, CHALLENGE_UPCOMING, CHALLENGE_CLOSED, CHALLENGE_ARCHIVED)

# What any operation that answers the status may say with it: its declared codes add to these.
GENERAL: Mapping[int, tuple[ErrorCode, ...]] = {
    401: (UNAUTHORIZED,),
    403: (FORBIDDEN, TENANT_PENDING, TENANT_SUSPENDED),
    404: (NOT_FOUND,),
    413: (PAYLOAD_TOO_LARGE,),
    422: (VALIDATION_ERROR,),
    429: (RATE_LIMITED,),
    503: (UNAVAILABLE,),
}


def raises(
    *codes: ErrorCode, also: Mapping[int | str, Mapping[str, Any]] | None = None
) -> dict[int | str, dict[str, Any]]:
    """An operation's `responses=`: the codes it may answer beyond `GENERAL`'s, each under its
    status (the document says what each means), with the other responses it declares (`also`:
    a 304, or a description of its own for a status)."""
    responses: dict[int | str, dict[str, Any]] = {
        status: dict(response) for status, response in (also or {}).items()
    }
    for code in codes:
        listed = responses.setdefault(code.status, {}).setdefault(CODES_EXTENSION, [])
        if code not in listed:
            listed.append(str(code))
    return responses


def declared_codes(responses: Mapping[int | str, Any], status: int) -> list[ErrorCode]:
    """The codes an operation with these `responses=` may answer with the status."""
    response = responses.get(status) or responses.get(str(status)) or {}
    general = GENERAL.get(status, ())
    declared = [ERROR_CODES[code] for code in response.get(CODES_EXTENSION, ())]
    return [*general, *(code for code in declared if code not in general)]


def codes_described(codes: Iterable[ErrorCode]) -> str:
    """An error response's description: each of its codes with its meaning."""
    return "\n".join(f"- `{code}`: {code.meaning}" for code in codes)


def code_table() -> str:
    """The table of every code, as docs/errors.md shows it (a test keeps the two equal)."""
    rows = ["| Code | Status | Meaning |", "|---|---|---|"]
    for code in ERROR_CODES.values():
        where = " (web pages only)" if code.pages_only else ""
        rows.append(f"| `{code}` | {code.status} | {code.meaning}{where} |")
    return "\n".join(rows)
