"""Per-process-tree set-up the commands do before anything imports the metrics client.

prometheus-client chooses between in-memory and multiprocess values when it is first imported,
from `PROMETHEUS_MULTIPROC_DIR`. `gauntlet serve`, `worker` and `run` each make a fresh
directory for their tree of processes (uvicorn's workers, Celery's prefork children, and in the
embedded mode the worker started alongside the API, which inherits it) and remove it when they
exit; a directory given in the environment is used as it is, and left alone. No prometheus
import here.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile

MULTIPROCESS_DIR_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"


def prepare_metrics_directory(role: str) -> str:
    """The multiprocess directory of this process tree, made now unless inherited."""
    given = os.environ.get(MULTIPROCESS_DIR_VARIABLE)
    if given:
        os.makedirs(given, exist_ok=True)
        return given
    if "prometheus_client" in sys.modules:
        raise RuntimeError("prometheus_client was imported before its directory was chosen")
    directory = tempfile.mkdtemp(prefix=f"gauntlet-metrics-{role}-")
    os.environ[MULTIPROCESS_DIR_VARIABLE] = directory
    owner = os.getpid()

    def remove() -> None:
        # Forked children inherit this handler; only the process that made it removes it.
        if os.getpid() == owner:
            shutil.rmtree(directory, ignore_errors=True)

    atexit.register(remove)
    return directory
