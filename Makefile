# Two commands for a new user: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
LINTED := src tests benchmarks examples fuzz

.PHONY: demo test test-fast lint format bench bench-smoke fuzz clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# installing also compiles every kernel once (`tractable warmup`): numba caches the machine code next to the
# package, so that no later first call waits for the compiler
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	$(BIN)/tractable warmup
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[test,ref]"
	$(BIN)/tractable warmup
	touch $(VENV)/.installed $@

demo: $(VENV)/.installed
	$(BIN)/tractable demo

# the whole suite, slow tests included (what CI runs)
test: $(VENV)/.installed-test
	$(BIN)/python -m pytest -q

# the tests not marked slow: the quick loop while editing
test-fast: $(VENV)/.installed-test
	$(BIN)/python -m pytest -q -m "not slow"

# linter and formatter checks (no changes made)
lint: $(VENV)/.installed-test
	$(BIN)/ruff check $(LINTED)
	$(BIN)/ruff format --check $(LINTED)

# apply the formatter
format: $(VENV)/.installed-test
	$(BIN)/ruff format $(LINTED)

# every benchmark at small sizes, results written to a temporary folder (CI's smoke run)
bench-smoke: $(VENV)/.installed-test
	$(BIN)/python benchmarks/run_all.py --quick

bench: $(VENV)/.installed-test
	$(BIN)/python -m pip install --quiet -e ".[bench]"
	$(BIN)/python benchmarks/run_all.py

# coverage-guided fuzzing of every file reader (atheris, the `fuzz` extra), FUZZ_TIME seconds per target;
# crashing inputs go to $TMPDIR/tractable-fuzz/crashes (make each a test in tests/data/fuzz/)
FUZZ_TIME ?= 60
fuzz: $(VENV)/.installed
	$(BIN)/python -m pip install --quiet -e ".[fuzz]"
	$(BIN)/python fuzz/run.py --time $(FUZZ_TIME)

clean:
	rm -rf $(VENV) build src/*.egg-info
