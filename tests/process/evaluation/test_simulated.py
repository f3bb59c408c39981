"""The simulated benchmark models in a new process, as a worker loads them (the models
themselves are tests/unit/evaluation/test_simulated.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


ROOT = Path(__file__).resolve().parents[3]
WRONG = ("The answer is WRONG-A.", "The answer is WRONG-B.", "The answer is WRONG-C.")


def test_a_new_process_registers_the_tasks_it_loads_like_a_worker_does() -> None:
    # A Celery worker loads the benchmark's tasks in the process that then calls the model;
    # nothing is shared with the process that started the run.
    code = textwrap.dedent(
        """
        import asyncio, os
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        from app.evaluation.engine.benchmark import Benchmark
        from app.evaluation.engine.llm import LLMClient
        from app.evaluation.engine.simulated import UNREGISTERED_REPLY
        from app.evaluation.engine.types import ModelSpec

        task = Benchmark.load("arcagi2").load_tasks({})[0]
        spec = ModelSpec("offline/solver-sim", temperature=0.0)
        record = asyncio.run(
            LLMClient().complete(spec, [{"role": "user", "content": task.prompt}])
        )
        assert record.output != UNREGISTERED_REPLY, record.output
        print("grid" if "[" in record.output or "rule" in record.output else record.output)
        """
    )
    finished = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert finished.returncode == 0, finished.stderr[-2000:]
    assert finished.stdout.strip() == "grid"
