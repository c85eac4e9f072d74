# The two commands of the README; each sets itself up on a fresh machine (Python 3.11 + pip).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test test-fast fuzz lint typecheck format bench-ingest demo clean

# memstream-client (clients/python, the SDK) is installed in the same pip command: it is what
# the dev extra's requirement on it resolves to.
$(STAMP): pyproject.toml clients/python/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e './clients/python[mcp,adk]' -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/memstream up

test: $(STAMP)
	$(BIN)/pytest

# The unit tests alone (no services): the loop to run while editing, under 30 s.
test-fast: $(STAMP)
	$(BIN)/pytest -q tests/unit clients/python/tests

# Deeper, freshly seeded property tests of the gateway (the fuzz test and schemathesis): commit
# what the fuzz test saves under tests/hypothesis-examples, and pin what either finds as a test.
fuzz: $(STAMP)
	MEMSTREAM_HYPOTHESIS_PROFILE=fuzz MEMSTREAM_SCHEMATHESIS_EXAMPLES=$${FUZZ_EXAMPLES:-200} \
	MEMSTREAM_SCHEMATHESIS_SEED=$$(date +%s) $(BIN)/pytest --hypothesis-seed=$$(date +%s) \
		tests/integration/test_gateway_fuzz.py tests/integration/test_openapi_conformance.py

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

demo: $(STAMP)
	$(BIN)/memstream demo

bench-ingest: $(STAMP)
	$(BIN)/python -m bench.ingest

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache *.egg-info
