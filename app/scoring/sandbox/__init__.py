"""The scorer sandbox: plugin code run in pre-started, isolated processes (docs/sandbox.md).

`pool` (the pool and the parent's checks), `launch` (how a sandbox starts), `child` (the
process inside, started as a script), `details` (what a plugin may return) import nothing of
the service, so they run from any interpreter; `service` configures them from the settings.
"""
