"""Each tenant's share of the API: whose a request is (`requesters`), known before it runs, and
the places of each share, counted across every API process (`shares`). The admission
middleware (`app.kit.middleware.AdmissionControl`) asks both; docs/capacity.md says why."""
