"""Sign-in lockouts and per-address limits, counted where every API process sees them.

- Failed sign-ins per (tenant, handle, address): a lockout with backoff. Five failures lock
  that handle from that address for up to a minute; the tiers behind it (10 in 15 minutes,
  20 in an hour, 50 in a day) make the wait grow as failures pile up. Another address is not
  locked, so an attacker cannot lock the owner out of their account; a success clears the
  counts of that (handle, address).
- Failed sign-ins per address, across handles (participants' and tenant admins', and the
  platform admin's token), stop one client trying many handles or keys; sign-ups per address
  stop one client creating accounts (and paying for password hashes) in bulk, and new tenants
  per address (an organizer's sign-up, "Host a challenge") one client creating tenants.
- Mail an account's pages make others send: password-reset requests per address, and per
  account asked for (so nobody fills a mailbox with reset links), and confirmation mails per
  account (a resend button pressed in a loop sends a few, then waits).
- Addresses are the connection's peer, or the client a trusted proxy names (see
  `client_address` in app/web/auth.py); IPv6 addresses count by their /64 network, which one
  client typically holds whole.

The counts are moving windows kept by the `limits` library: in Redis (production, shared by
every API process; the broker's Redis unless `GAUNTLET_RATE_LIMIT_URL` names another), or in
the process's memory in embedded mode (one API process). If Redis cannot be reached, sign-in
and sign-up are refused (`LimitsUnavailable`) rather than allowed uncounted.
"""

from __future__ import annotations

import hashlib
import math
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from limits import RateLimitItem, parse_many
from limits.errors import StorageError
from limits.storage import MemoryStorage, RedisStorage, Storage
from limits.strategies import MovingWindowRateLimiter

from app.kit.config import get_settings

ACCOUNT_FAILURES = "5/minute;10/15 minutes;20/hour;50/day"
ADDRESS_FAILURES = "30/15 minutes;200/day"
ADDRESS_SIGN_UPS = "30/15 minutes;100/day"
ADDRESS_TENANT_SIGN_UPS = "5/hour;20/day"
ADDRESS_RESET_REQUESTS = "10/15 minutes;50/day"
ACCOUNT_RESET_MAILS = "3/hour;10/day"
ACCOUNT_CONFIRMATION_MAILS = "3/hour;10/day"
REDIS_TIMEOUT_SECONDS = 2.0


class LimitsUnavailable(Exception):
    """The shared counters (Redis) cannot be reached: refuse rather than count nothing."""


@dataclass(frozen=True)
class Refusal:
    message: str
    retry_after_seconds: int


def wait_text(seconds: float) -> str:
    minutes = max(1, math.ceil(seconds / 60))
    if minutes < 120:
        return "1 minute" if minutes == 1 else f"{minutes} minutes"
    return f"{math.ceil(minutes / 60)} hours"


@lru_cache(maxsize=4)
def _storage(url: str, key_prefix: str) -> Storage:
    if url.startswith("memory://"):
        return MemoryStorage()
    return RedisStorage(
        url,
        key_prefix=key_prefix,
        wrap_exceptions=True,
        socket_timeout=REDIS_TIMEOUT_SECONDS,
        socket_connect_timeout=REDIS_TIMEOUT_SECONDS,
    )


def _handle_key(handle: str) -> str:
    # Case-folded like handles in the database; hashed, so a typed handle of any length or
    # content makes a short key.
    folded = handle.strip().casefold().encode("utf-8", "surrogatepass")
    return hashlib.sha256(folded).hexdigest()[:32]


class AccountLimits:
    def __init__(
        self,
        *,
        account_failures: str = ACCOUNT_FAILURES,
        address_failures: str = ADDRESS_FAILURES,
        address_sign_ups: str = ADDRESS_SIGN_UPS,
        address_tenant_sign_ups: str = ADDRESS_TENANT_SIGN_UPS,
        address_reset_requests: str = ADDRESS_RESET_REQUESTS,
        account_reset_mails: str = ACCOUNT_RESET_MAILS,
        account_confirmation_mails: str = ACCOUNT_CONFIRMATION_MAILS,
        storage: Storage | None = None,
    ) -> None:
        self.account_failures = parse_many(account_failures)
        self.address_failures = parse_many(address_failures)
        self.address_sign_ups = parse_many(address_sign_ups)
        self.address_tenant_sign_ups = parse_many(address_tenant_sign_ups)
        self.address_reset_requests = parse_many(address_reset_requests)
        self.account_reset_mails = parse_many(account_reset_mails)
        self.account_confirmation_mails = parse_many(account_confirmation_mails)
        self._fixed_storage = storage

    @property
    def lockout_after(self) -> int:
        """Failed sign-ins of one handle from one address before the first lockout."""
        return min(item.amount for item in self.account_failures)

    def storage(self) -> Storage:
        """The given storage, or the one the settings name (looked up each time, since tests
        change the settings)."""
        if self._fixed_storage is not None:
            return self._fixed_storage
        settings = get_settings()
        return _storage(
            settings.resolved_rate_limit_url, f"{settings.redis_key_prefix}gauntlet-limits"
        )

    def _limiter(self) -> MovingWindowRateLimiter:
        return MovingWindowRateLimiter(self.storage())

    def _wait(self, items: Sequence[RateLimitItem], *key: str) -> float | None:
        """Seconds until one more event is allowed, or None when it is allowed now."""
        limiter = self._limiter()
        wait = None
        try:
            for item in items:
                if not limiter.test(item, *key):
                    reset_at = limiter.get_window_stats(item, *key).reset_time
                    wait = max(wait or 0.0, reset_at - time.time(), 1.0)
        except StorageError as exc:
            raise LimitsUnavailable(str(exc)) from exc
        return wait

    def _count(self, items: Sequence[RateLimitItem], *key: str) -> None:
        limiter = self._limiter()
        try:
            for item in items:
                limiter.hit(item, *key)
        except StorageError as exc:
            raise LimitsUnavailable(str(exc)) from exc

    @staticmethod
    def _account(tenant_id: uuid.UUID, handle: str, address: str) -> tuple[str, ...]:
        return ("sign-in-account", str(tenant_id), _handle_key(handle), address)

    def check_sign_in(self, tenant_id: uuid.UUID, handle: str, address: str) -> Refusal | None:
        refusal = self.check_address(address)
        if refusal is not None:
            return refusal
        wait = self._wait(self.account_failures, *self._account(tenant_id, handle, address))
        if wait is None:
            return None
        return Refusal(
            "Too many failed sign-in attempts for this handle from your network. "
            f"Try again in {wait_text(wait)}.",
            math.ceil(wait),
        )

    def check_address(self, address: str) -> Refusal | None:
        """The per-address budget of failures alone (the admin sign-in has no handle)."""
        wait = self._wait(self.address_failures, "sign-in-address", address)
        if wait is None:
            return None
        return Refusal(
            f"Too many failed sign-in attempts from your network. Try again in {wait_text(wait)}.",
            math.ceil(wait),
        )

    def sign_in_failed(self, tenant_id: uuid.UUID | None, handle: str | None, address: str) -> None:
        self._count(self.address_failures, "sign-in-address", address)
        if tenant_id is not None and handle is not None:
            self._count(self.account_failures, *self._account(tenant_id, handle, address))

    def sign_in_succeeded(self, tenant_id: uuid.UUID, handle: str, address: str) -> None:
        limiter = self._limiter()
        try:
            for item in self.account_failures:
                limiter.clear(item, *self._account(tenant_id, handle, address))
        except StorageError as exc:
            raise LimitsUnavailable(str(exc)) from exc

    def check_sign_up(self, address: str) -> Refusal | None:
        wait = self._wait(self.address_sign_ups, "sign-up-address", address)
        if wait is None:
            return None
        return Refusal(
            f"Too many new accounts from your network. Try again in {wait_text(wait)}.",
            math.ceil(wait),
        )

    def signed_up(self, address: str) -> None:
        self._count(self.address_sign_ups, "sign-up-address", address)

    def check_tenant_sign_up(self, address: str) -> Refusal | None:
        """New tenants from one address (organizers' sign-ups)."""
        wait = self._wait(self.address_tenant_sign_ups, "tenant-sign-up-address", address)
        if wait is None:
            return None
        return Refusal(
            f"Too many new events from your network. Try again in {wait_text(wait)}.",
            math.ceil(wait),
        )

    def tenant_signed_up(self, address: str) -> None:
        self._count(self.address_tenant_sign_ups, "tenant-sign-up-address", address)

    def check_reset_request(self, address: str) -> Refusal | None:
        """Password-reset requests from one address (whatever they name)."""
        wait = self._wait(self.address_reset_requests, "reset-address", address)
        if wait is None:
            return None
        return Refusal(
            f"Too many password-reset requests from your network. Try again in {wait_text(wait)}.",
            math.ceil(wait),
        )

    def reset_requested(self, address: str) -> None:
        self._count(self.address_reset_requests, "reset-address", address)

    def reset_mail_allowed(self, tenant_id: uuid.UUID, participant_id: uuid.UUID) -> bool:
        """Whether one more reset link may go to this account now. Not a refusal the asker
        sees: the answer to a reset request never tells whether a link went out."""
        return (
            self._wait(self.account_reset_mails, *self._mails("reset", tenant_id, participant_id))
            is None
        )

    def reset_mailed(self, tenant_id: uuid.UUID, participant_id: uuid.UUID) -> None:
        self._count(self.account_reset_mails, *self._mails("reset", tenant_id, participant_id))

    def check_confirmation_mail(
        self, tenant_id: uuid.UUID, participant_id: uuid.UUID
    ) -> Refusal | None:
        key = self._mails("confirm", tenant_id, participant_id)
        wait = self._wait(self.account_confirmation_mails, *key)
        if wait is None:
            return None
        return Refusal(
            f"A confirmation link was sent a few times already. Try again in {wait_text(wait)}.",
            math.ceil(wait),
        )

    def confirmation_mailed(self, tenant_id: uuid.UUID, participant_id: uuid.UUID) -> None:
        self._count(
            self.account_confirmation_mails, *self._mails("confirm", tenant_id, participant_id)
        )

    @staticmethod
    def _mails(what: str, tenant_id: uuid.UUID, participant_id: uuid.UUID) -> tuple[str, ...]:
        return (f"{what}-mails", str(tenant_id), str(participant_id))

    def reset(self) -> None:
        """Forgets every count under this deployment's key prefix (tests)."""
        self.storage().reset()
