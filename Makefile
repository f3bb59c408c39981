# Two commands matter: `make run` (the embedded service) and `make test` (everything CI checks).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
export LITELLM_LOCAL_MODEL_COST_MAP := True

.PHONY: install run test lint typecheck unit integration screenshots clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

run: install
	$(BIN)/gauntlet run --port $${PORT:-8000}

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: install
	$(BIN)/mypy

# Strict: a test that cannot run (no browser, no service) fails instead of skipping. The order
# is random: pytest-randomly prints its seed, and `pytest --randomly-seed=N` repeats an order.
test: install lint typecheck
	./scripts/ensure-test-services.sh
	./scripts/ensure-chromium.sh
	GAUNTLET_TEST_STRICT=1 $(BIN)/pytest

unit: install
	$(BIN)/pytest tests/unit

integration: install
	./scripts/ensure-test-services.sh
	$(BIN)/pytest tests/integration

screenshots: install
	./scripts/ensure-test-services.sh
	./scripts/ensure-chromium.sh
	GAUNTLET_SCREENSHOTS_DIR=docs/screenshots $(BIN)/pytest tests/e2e/test_browser.py

clean:
	rm -rf $(VENV) .gauntlet .mypy_cache .pytest_cache .ruff_cache
