# Two commands for a newcomer: `make demo` and `make test`. Each creates .venv if it is
# missing and installs the project into it; a second run reuses the stamp and takes seconds.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: help setup demo test test-slow test-no-numba lint typecheck bench docs clean

help:
	@echo "make demo   set up, then run the built-in GPU-vs-TPU comparison"
	@echo "make test   set up, then run the test suite but the slow tests (~5 min on 2 cores)"
	@echo "make test-slow   the tests marked slow (process pools, Dask clusters, browsers); CI runs both"
	@echo "make test-no-numba   the serving request DES's tests without numba (plain-Python kernel)"
	@echo "make lint   ruff and mypy on src/"
	@echo "make bench  benchmarks (ratios against references measured in the same run)"
	@echo "make docs   the documentation site in docs/_build/html (warnings are errors)"
	@echo "make cli-docs  regenerate docs/cli.md from the accelsim commands"

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade "pip>=25.1"
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(BIN)/accelsim demo

# `make test` leaves out @pytest.mark.slow (spawned process pools, Dask clusters, a browser:
# tens of seconds each, testing executors rather than numbers); `make test-slow` runs only
# them, and CI (.ci/run) runs both.
test: $(STAMP)
	HYPOTHESIS_PROFILE=ci $(BIN)/python -m pytest -q -p no:cacheprovider -m "not slow"

test-slow: $(STAMP)
	HYPOTHESIS_PROFILE=ci $(BIN)/python -m pytest -q -p no:cacheprovider -m slow

# numba is optional (the `fast` extra): the serving request DES's unit, oracle and property
# tests once more with numba made unimportable (tests/no_numba.py), so the plain-Python kernel
# is held to the same rules (~3 min; the long-horizon queueing validations run compiled only).
SERVING_DES_TESTS := tests/unit/test_serving_des*.py tests/properties/test_serving_des_properties.py
test-no-numba: $(STAMP)
	HYPOTHESIS_PROFILE=ci $(BIN)/python -m pytest -q -p no:cacheprovider -p tests.no_numba \
		-m "not slow" $(SERVING_DES_TESTS)

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy

typecheck: lint

bench: $(STAMP)
	$(BIN)/python -m pytest benchmarks -q -p no:cacheprovider -o addopts="" -o testpaths=benchmarks -o python_files="bench_*.py" -s

# Docs tools go into the same .venv; their own stamp keeps a second run fast.
DOCS_STAMP := $(VENV)/.docs-installed

$(DOCS_STAMP): pyproject.toml $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[docs]"
	touch $(DOCS_STAMP)

# The gallery (docs/gallery.md) links to the report of every example, written by the code
# being documented after Sphinx has built the site.
docs: $(DOCS_STAMP)
	$(BIN)/sphinx-build -W --keep-going -q -b html docs docs/_build/html
	$(BIN)/python docs/gallery.py docs/_build/html/gallery

# docs/cli.md is generated from the typer commands; tests/unit/test_report_docs.py fails
# when it is out of date.
cli-docs: $(STAMP)
	$(BIN)/python -m typer accelsim.cli utils docs --name accelsim \
		--title "Command-line reference" --output docs/cli.md

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis build dist docs/_build
