# The README's two commands: `make demo` and `make test`.
# Both create .venv from the pinned requirements when it is missing.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: test test-all lint docs demo venv clean

venv: $(STAMP)

# requirements.txt pins our direct dependencies; constraints.txt pins every
# transitive one, so a fresh machine gets the stack these tests ran on. The
# project itself is installed editable, so the tools, the tests and a user's
# own script anywhere (`.venv/bin/python ~/work/finetune.py`) import this
# one copy of albert_tf, data_pipeline and albert_common.
$(STAMP): requirements.txt constraints.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt -c constraints.txt
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $(STAMP)

# A newcomer's check of an install: every tool once, the parity checks,
# the import graph, the CLI help. Tests marked `slow` (multi-process runs,
# whole pipelines, kill-and-resume sequences, Keras 3 subprocesses,
# benchmarks) run only in test-all. How long each takes, measured: the
# README's `make test` paragraph (the one place for those figures).
# Both run in TEST_WORKERS pytest-xdist processes, each test file in one of
# them (its module fixtures built once): on 2 cores two workers finish
# sooner than one, much of a test being single-threaded Python (tracing,
# tool start-up). TEST_WORKERS=0 runs everything in this process.
# A test must pass in any order: `make test TEST_DIST=load` spreads single
# tests over the workers, TEST_ORDER=reverse runs the files backwards.
TEST_WORKERS ?= 2
TEST_DIST ?= loadfile
PYTEST := $(PY) -m pytest -q -n $(TEST_WORKERS) --dist $(TEST_DIST)

test: $(STAMP)
	$(PYTEST) -m "not slow" tests

# Everything, slow tests included (what CI runs).
test-all: $(STAMP)
	$(PYTEST) --durations=30 tests

# Lint and import order (configured in pyproject.toml); .ci/run runs it first.
lint: $(STAMP)
	$(VENV)/bin/ruff check .

# The docs site (docs/, mkdocs.yml) into build/site. --strict: a broken link
# or anchor, or a page missing from the nav, fails the build.
# NO_MKDOCS_2_WARNING silences mkdocs-material's end-of-life banner.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir build/site

# The whole pipeline on a corpus built here; 4.1 minutes on a 2-core Intel
# Xeon once the venv exists (13 min 11 s with the venv on a 2-core AMD EPYC).
demo: $(STAMP)
	$(PY) -m tools.demo --output_dir=demo_output

clean:
	rm -rf $(VENV) .pytest_cache build dist *.egg-info
