"""How strong a participant's password and the operator's secrets must be.

Passwords (NIST SP 800-63B's advice): at least 8 characters, at most 256 (hashing cost grows
with the input), not blank, no control characters, not the handle, not one of the 30,000
most common passwords, and not a pattern that a guesser tries early (repeats, sequences,
keyboard walks, a common word with digits). The common-password list and the guess estimate
come from zxcvbn (Dropbox's password-strength estimator, Python port, MIT licence), which
bundles the list: the top 30,000 of Mark Burnett's 10-million-password corpus.

zxcvbn's time grows steeply with the length of hostile input (l33t substitutions are
enumerated: 20 s for 256 random symbols), so it judges a prefix: a password's first 16
characters (at most ~40 ms), a secret's first 64. A prefix that is hard to guess makes the
whole hard to guess; a weak prefix is refused even if strong characters follow it.

Secrets (the platform admin token, the key that signs sessions and CSRF tokens): at least 32
characters and an estimated 100 bits or more (zxcvbn's estimate, which counts a repeat, a
sequence or a dictionary word as the few guesses it takes, and a random character as 10).
`secrets.token_urlsafe(32)` makes a 43-character secret of about 140 estimated bits.
"""

from __future__ import annotations

import math
import unicodedata
from functools import lru_cache
from typing import Any

MIN_PASSWORD_LENGTH = 8
MAX_PASSWORD_LENGTH = 256
# zxcvbn's score 2 and above: a guesser needs at least a million tries (online guessing is
# throttled by the sign-in limits, so this keeps out only what is tried first).
MIN_PASSWORD_GUESSES = 10**6
PASSWORD_ESTIMATE_CHARS = 16

MIN_SECRET_LENGTH = 32
MAX_SECRET_LENGTH = 1024
MIN_SECRET_BITS = 100
SECRET_ESTIMATE_CHARS = 64


def _estimate(value: str, user_inputs: list[str]) -> dict[str, Any]:
    from zxcvbn import zxcvbn  # ~30 ms to import; only sign-up, password change and start-up

    result: dict[str, Any] = zxcvbn(value, user_inputs=user_inputs, max_length=len(value))
    return result


@lru_cache(maxsize=1)
def _common_passwords() -> frozenset[str]:
    # zxcvbn (~30 ms) loads with the first check that needs it, as in `_estimate`.
    from zxcvbn.frequency_lists import FREQUENCY_LISTS

    return frozenset(FREQUENCY_LISTS["passwords"])


def _control_character(value: str) -> str | None:
    """The first control character (or lone surrogate) in the value, as U+XXXX."""
    for character in value:
        if unicodedata.category(character) in ("Cc", "Cs"):
            return f"U+{ord(character):04X}"
    return None


def password_problem(password: str, handle: str = "") -> str | None:
    """Why the password is refused, as a sentence for the person choosing it; None if fine."""
    if not password.strip():
        return "Your password must not be blank."
    control = _control_character(password)
    if control is not None:
        return (
            f"Your password must not contain control characters ({control}, such as a tab, "
            "a line break or NUL)."
        )
    if len(password) < MIN_PASSWORD_LENGTH:
        return f"Your password must be at least {MIN_PASSWORD_LENGTH} characters long."
    if len(password) > MAX_PASSWORD_LENGTH:
        return f"Your password must be at most {MAX_PASSWORD_LENGTH} characters long."
    if handle and password.strip().casefold() == handle.strip().casefold():
        return "Your password must not be your handle."
    if password.casefold() in _common_passwords():
        return (
            "This password is one of the most common passwords, which are tried first. "
            "Choose another one: a few unrelated words make a good one."
        )
    estimate = _estimate(password[:PASSWORD_ESTIMATE_CHARS], [handle] if handle else [])
    if estimate["guesses"] < MIN_PASSWORD_GUESSES:
        warning = str(estimate["feedback"].get("warning") or "").strip()
        reason = f" ({warning.rstrip('.')})" if warning else ""
        return (
            f"This password is too easy to guess{reason}. "
            "Choose another one: a few unrelated words make a good one."
        )
    return None


def secret_bits(value: str) -> float:
    """zxcvbn's estimate of the secret's strength, in bits (log2 of the guesses it needs)."""
    guesses = _estimate(value[:SECRET_ESTIMATE_CHARS], [])["guesses"]
    return math.log2(max(float(guesses), 1.0))


def secret_problem(name: str, value: str | None) -> str | None:
    """Why a production secret is refused (a clause naming the variable); None if strong."""
    how = "generate one with: python3 -c 'import secrets; print(secrets.token_urlsafe(32))'"
    if not value:
        return f"{name} must be set to a random secret of at least {MIN_SECRET_LENGTH} characters"
    if len(value) < MIN_SECRET_LENGTH:
        return f"{name} must be at least {MIN_SECRET_LENGTH} characters long ({how})"
    if len(value) > MAX_SECRET_LENGTH:
        return f"{name} must be at most {MAX_SECRET_LENGTH} characters long"
    if value != value.strip() or _control_character(value) is not None:
        return f"{name} must not contain spaces at its ends or control characters"
    bits = secret_bits(value)
    if bits < MIN_SECRET_BITS:
        return (
            f"{name} is too easy to guess: about {bits:.0f} bits, at least {MIN_SECRET_BITS} "
            f"needed (repeats, sequences and words count for little; {how})"
        )
    return None
