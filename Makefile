# The two commands of the README; each sets itself up on a fresh machine (Python 3.11 + pip).
# Python 3.11 exactly (pyproject.toml: >=3.11,<3.12): python3.11, else a python3 that is 3.11, or
# make PYTHON=/path/to/python3.11. Anything else stops before a virtual environment is made.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test test-fast fuzz lint typecheck format bench-ingest demo clean chromium

# memstream-client (clients/python, the SDK) is installed in the same pip command: it is what
# the dev extra's requirement on it resolves to.
$(STAMP): pyproject.toml clients/python/pyproject.toml
	@found=$$($(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null); \
	if [ "$$found" != 3.11 ]; then \
		echo "memstream needs Python 3.11 (found $${found:-no Python}$(if $(PYTHON), at $(PYTHON))):" \
			"install python3.11, or run make PYTHON=/path/to/python3.11" >&2; \
		exit 1; \
	fi
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e './clients/python[mcp,adk]' -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/memstream up

test: $(STAMP) chromium
	$(BIN)/pytest

# The browser tests of the memory explorer (tests/browser) drive the system's Chromium: as root,
# it is installed here; otherwise they skip, saying so (CI sets MEMSTREAM_BROWSER_TESTS=required,
# which makes a missing browser a failure).
CHROMIUM ?= $(or $(MEMSTREAM_CHROMIUM),/usr/bin/chromium)
chromium:
	@if [ ! -x "$(CHROMIUM)" ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
				|| echo "make: could not install Chromium (apt-get failed): the browser tests will not run"; \
		else \
			echo "make: the browser tests will not run: no Chromium at $(CHROMIUM) (sudo apt-get install -y chromium, or set MEMSTREAM_CHROMIUM)"; \
		fi; \
	fi

# The unit tests alone (no services): the loop to run while editing, under 30 s. The slow ones
# (the privacy filter's hang detector) run in `make test`.
# On every core (pytest-xdist): the unit tests hold no state between them, and their examples
# are pinned, so each worker collects the same tests.
test-fast: $(STAMP)
	$(BIN)/pytest -q -n auto -m "not slow" tests/unit clients/python/tests

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
