"""Leased background jobs: rows a worker runs under a lease that it renews while it works.

Attempts, red_blue's self-tests and its matches are such rows. `models` holds their columns
(the `Leased` mixin) and how a table is leased (`LeasedTable`); `repository` every statement
on a lease (claim, renew, release, the sweep's lapsed leases); `service` the rules a run
follows (`hold` before every write, `LeaseLost`); `heartbeat` the thread that renews the lease.
"""
