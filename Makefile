# Two commands for a newcomer: `make demo` and `make test`. Each creates .venv if it is
# missing and installs the project into it; a second run reuses the stamp and takes seconds.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: help setup demo test lint typecheck bench clean

help:
	@echo "make demo   set up, then run the built-in GPU-vs-TPU comparison"
	@echo "make test   set up, then run the whole test suite"
	@echo "make lint   ruff and mypy on src/"
	@echo "make bench  benchmarks (ratios against references measured in the same run)"

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

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis build dist
