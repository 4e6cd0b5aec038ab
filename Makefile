# Two commands for a newcomer: `make demo` and `make test`. Each creates .venv if it is
# missing and installs the project into it; a second run reuses the stamp and takes seconds.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: help setup demo test lint typecheck bench docs clean

help:
	@echo "make demo   set up, then run the built-in GPU-vs-TPU comparison"
	@echo "make test   set up, then run the whole test suite"
	@echo "make lint   ruff and mypy on src/"
	@echo "make bench  benchmarks (ratios against references measured in the same run)"
	@echo "make docs   the documentation site in docs/_build/html (warnings are errors)"

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade "pip>=25.1"
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(BIN)/accelsim demo

test: $(STAMP)
	HYPOTHESIS_PROFILE=ci $(BIN)/python -m pytest -q -p no:cacheprovider

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

docs: $(DOCS_STAMP)
	$(BIN)/sphinx-build -W --keep-going -q -b html docs docs/_build/html

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis build dist docs/_build
