"""The broker: how this deployment's Celery messages travel, for those who send them (the API,
scripts) and for the workers that take them.

`configure` gives any Celery app this deployment's broker, queue and message settings (the
worker's app, workers/celery_app.py, is built with it); `sender.send_tasks` sends messages
through a small app of its own that knows no task and imports no challenge kind, so a process
that only sends never builds the worker's app. The transports: Redis with one client per
channel (`redis_transport`), and the embedded mode's folder (`folder_transport`).
"""
