"""Seeing the service run: request and attempt ids in JSON logs, Prometheus metrics, health.

Nothing here is imported on the request path beyond `context` and `metrics`, both light.
"""
