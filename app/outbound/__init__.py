"""Outbound calls by policy: where workers may connect, with which credentials, for which models.

Pure policy (no web, database or litellm imports), shared by the API (checks when a challenge or
an attempt is saved) and the evaluation engine (checks again before every call):

- `urls`: base URLs parsed into scheme, host, port and path, and the operator's allow-list
  (`GAUNTLET_ALLOWED_API_BASES`) matched on those parts.
- `addresses`: host names resolved and non-public addresses refused, unless the operator named
  that destination explicitly.
- `providers`: litellm provider prefixes the operator allows (by default every provider whose
  default base is not local), from a catalog derived from litellm's own data.
- `policy`: the whole decision for one call: its destination and the credential bound to it.
- `transport`: the HTTP transport that enforces the decision on the wire (pinned address,
  headers rebuilt, the bound credential only).

docs/outbound.md describes what the policy guarantees and what it does not.
"""
