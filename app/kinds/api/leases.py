"""The leased-run mechanism, for a kind's work on workers: its tables mix in `Leased` (and
`Metered` for spend) and describe themselves with a `LeasedTable`; `claim`, `lock_held`,
`release` and `lapsed` are the claims on them; a `LeasedRun` given to `run_leased` does one
row's work under a renewed lease (given back at once on a transient database error,
`given_back_on_transient_error`), within its cost budget, storing trials through the attempt's
`DatabaseRunStore` and `TrialWriter`."""

from __future__ import annotations

from app.attempt.run_store import DatabaseRunStore
from app.attempt.trial_writer import TrialWriter
from app.kit.lease.budget import CostBudget, RowSpend
from app.kit.lease.heartbeat import Heartbeat
from app.kit.lease.model_client import model_client
from app.kit.lease.models import Leased, LeasedTable, Metered
from app.kit.lease.repository import claim, lapsed, lock_held, release
from app.kit.lease.run import Failure, LeasedRun, failure_of, run_leased, run_on_process_loop
from app.kit.lease.service import (
    TRANSIENT_ERRORS,
    given_back_on_transient_error,
    lease_until,
    renewer,
)
from app.tenant.service import DaySpend

__all__ = [
    "TRANSIENT_ERRORS",
    "CostBudget",
    "DatabaseRunStore",
    "DaySpend",
    "Failure",
    "Heartbeat",
    "Leased",
    "LeasedRun",
    "LeasedTable",
    "Metered",
    "RowSpend",
    "TrialWriter",
    "claim",
    "failure_of",
    "given_back_on_transient_error",
    "lapsed",
    "lease_until",
    "lock_held",
    "model_client",
    "release",
    "renewer",
    "run_leased",
    "run_on_process_loop",
]
