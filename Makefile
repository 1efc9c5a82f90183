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

$(VENV)/.installed-slow: pyproject.toml $(VENV)/.installed-test
	$(PIP) install -q -e '.[test,plot,distributed]'
	touch $@

## test-slow: the slow tests deselected by `make test` (with the dask extra, for the cluster test)
test-slow: $(VENV)/.installed-slow
	$(BIN)/python -m pytest -q -m slow

$(VENV)/.installed-docs: pyproject.toml $(VENV)/.installed
	$(PIP) install -q -e '.[docs]'
	touch $@

## docs: build the HTML documentation into docs/_build/html (warnings are errors)
docs: $(VENV)/.installed-docs
	$(BIN)/python -m sphinx -W --keep-going -q -b html docs docs/_build/html

$(VENV)/.installed-lint: pyproject.toml $(VENV)/.installed-test
	$(PIP) install -q -e '.[lint]'
	touch $@

## lint: ruff on the code, tests, benchmarks and examples; mypy --strict on the package
lint: $(VENV)/.installed-lint
	$(BIN)/ruff check sparsejac tests benchmarks examples
	$(BIN)/mypy sparsejac

## bench: every benchmark in its quick mode (minutes; the full runs are in benchmarks/README.md)
bench: $(VENV)/.installed-test
	$(BIN)/python benchmarks/coloring.py --quick
	$(BIN)/python benchmarks/detection.py --quick --no-asdex
	$(BIN)/python benchmarks/jacobian.py --quick --no-asdex
	$(BIN)/python benchmarks/rules.py --quick
	$(BIN)/python benchmarks/reverse_cost.py
	$(BIN)/python benchmarks/solvers.py --quick
	$(BIN)/python benchmarks/idioms.py --quick
	$(BIN)/python benchmarks/oneoff.py --quick
	$(BIN)/python benchmarks/startup.py --no-compile

## clean: the environment, build leftovers, the built docs and numba's on-disk kernel caches
clean:
	rm -rf $(VENV) build dist *.egg-info sparsejac.egg-info sparsejac_numpy.egg-info \
		.pytest_cache .mypy_cache .ruff_cache .hypothesis docs/_build docs/generated
	find . -name __pycache__ -type d -not -path './.git/*' -prune -exec rm -rf {} +
	find . \( -name '*.nbi' -o -name '*.nbc' \) -not -path './.git/*' -delete
