"""Leased jobs: rows a worker runs under a lease that it renews while it works (attempts,
red_blue's self-tests and matches).

`models` holds their columns (the `Leased` and `Metered` mixins) and how a table is leased
(`LeasedTable`); `repository` every statement on a lease (claim, renew, write as the holder,
release, the sweep's lapsed leases) and on a job's own spend; `service` what a run follows
(`hold` before every write, `LeaseLost`); `heartbeat` the thread that renews the lease; `run`
the run's shape (claim → load → execute → complete | fail); `budget` and `model_client` the
cost budgets and the client of its model calls.
"""
