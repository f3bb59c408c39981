# Two commands matter: `make run` (the embedded service) and `make test` (everything CI checks).
# Installs come from uv.lock (exact versions with hashes): `make run` installs the runtime set,
# every other target the dev set; `make lock` refreshes the lock after pyproject.toml changes.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# uv itself, pinned, in a small virtualenv of its own (`uv sync` would remove it from .venv).
UV_VERSION := 0.13.9
TOOLS := .tools
UV := $(TOOLS)/bin/uv
export LITELLM_LOCAL_MODEL_COST_MAP := True
# Python keeps each module compiled (__pycache__), whatever the calling shell prefers: every test
# process, worker and command imports the same thousands of modules, and compiling them again
# in each one doubled the unit tier's CPU time (docs/testing.md).
unexport PYTHONDONTWRITEBYTECODE
export UV_PYTHON := $(PYTHON)
export UV_PYTHON_DOWNLOADS := never

.PHONY: install install-runtime lock run test lint typecheck unit integration screenshots clean

$(UV):
	$(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/python -m pip install -q --disable-pip-version-check 'uv==$(UV_VERSION)'

# The dev set (tests, linters), exactly as locked.
install: $(UV)
	$(UV) sync --locked --extra dev --quiet

# The runtime set only; --inexact keeps dev packages a previous `make install` added.
install-runtime: $(UV)
	$(UV) sync --locked --inexact --quiet

# Re-resolve after a dependency change in pyproject.toml (versions already locked are kept;
# `$(UV) lock --upgrade-package NAME` moves one forward).
lock: $(UV)
	$(UV) lock

run: install-runtime
	$(BIN)/gauntlet run --port $${PORT:-8000}

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: install
	$(BIN)/mypy

# Strict: a test that cannot run (no browser, no service) fails instead of skipping. The order
# is random: pytest-randomly prints its seed, and `pytest --randomly-seed=N` repeats an order.
# Two test processes (TEST_PROCESSES), each taking whole files: most integration tests wait on
# a worker, a browser or a server, so two share the two cores well (docs/testing.md).
TEST_PROCESSES ?= 2
PARALLEL := -n $(TEST_PROCESSES) --dist loadfile
test: install lint typecheck
	./scripts/ensure-test-services.sh
	./scripts/ensure-bubblewrap.sh
	./scripts/ensure-chromium.sh
	GAUNTLET_TEST_STRICT=1 $(BIN)/pytest $(PARALLEL)

# Pure logic, in seconds (two processes, as `make test`): no process, server, socket or
# litellm, which tests/unit/conftest.py refuses. Tests that start processes or servers or
# import litellm (tests/process) and those that need services (tests/integration) are
# `make integration`'s; `make test` runs them all.
unit: install
	$(BIN)/pytest $(PARALLEL) tests/unit

integration: install
	./scripts/ensure-test-services.sh
	./scripts/ensure-bubblewrap.sh
	$(BIN)/pytest $(PARALLEL) tests/integration tests/process

screenshots: install
	./scripts/ensure-test-services.sh
	./scripts/ensure-chromium.sh
	GAUNTLET_SCREENSHOTS_DIR=docs/screenshots $(BIN)/pytest tests/e2e/test_browser.py tests/e2e/test_browser_redblue.py

clean:
	rm -rf $(VENV) $(TOOLS) .gauntlet .mypy_cache .pytest_cache .ruff_cache
