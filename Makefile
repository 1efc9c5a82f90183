# sparsejac developer commands. Everything runs inside .venv, created on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip --disable-pip-version-check

.PHONY: demo test test-slow lint bench docs clean

$(BIN)/python:
	$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "sparsejac needs Python 3.11 or newer")'
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(PIP) install -q -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml $(VENV)/.installed
	$(PIP) install -q -e '.[test,plot]'
	touch $@

## demo: create .venv, install sparsejac, run it on the bundled example
demo: $(VENV)/.installed
	$(BIN)/python examples/demo.py

## test: install the test extras and run the whole suite (unit tests, doctests, examples)
test: $(VENV)/.installed-test
	$(BIN)/python -m pytest -q

## test-slow: the slow tests deselected by `make test`
test-slow: $(VENV)/.installed-test
	$(BIN)/python -m pytest -q -m slow

$(VENV)/.installed-docs: pyproject.toml $(VENV)/.installed
	$(PIP) install -q -e '.[docs]'
	touch $@

## docs: build the HTML documentation into docs/_build/html (warnings are errors)
docs: $(VENV)/.installed-docs
	$(BIN)/python -m sphinx -W --keep-going -q -b html docs docs/_build/html

lint: $(VENV)/.installed-test
	$(PIP) install -q -e '.[lint]'
	$(BIN)/ruff check sparsejac tests benchmarks examples
	$(BIN)/mypy sparsejac

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache
