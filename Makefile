# The two commands: `make demo` and `make test`. Each sets itself up first.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
READY  := $(VENV)/.ready
# nbgrader shells out to alembic: run everything with the venv's bin first on PATH.
export PATH := $(CURDIR)/$(BIN):$(PATH)
export PYTHONDONTWRITEBYTECODE := 1
SHELL := bash
.SHELLFLAGS := -eo pipefail -c

.PHONY: demo test test-fast release check-release gradescope bench setup clean

setup: $(READY)

# The venv, the project (editable: autograder and the student-side nbtest) and its pinned dependencies.
$(READY): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --no-compile -e . 2>&1 | { grep -v "is ignored: it is neither" || true; }
	# jupyter-events pulls in rfc3987-syntax, which jsonschema then imports; it builds some 30 Earley
	# parsers at import: 3 s of CPU in every process that imports nbformat (each nbgrader and course
	# command). No schema installed here uses the "iri" formats it checks.
	$(BIN)/python -m pip uninstall -q -y rfc3987-syntax
	# pip compiles the modules it installs one file at a time (a minute on 2 cores); compileall does it on
	# every core. Its quiet=2 hides, as pip does, the few files written for other Python versions.
	$(BIN)/python -c "import compileall, site; compileall.compile_dir(site.getsitepackages()[0], quiet=2, workers=0)"
	$(BIN)/python -c "import nbgrader, torch, nbtest"
	touch $@

demo: $(READY)
	$(BIN)/python -m autograder demo

# pytest-xdist, one and a half workers per core (tests/conftest.py says why), each module's tests in one
# worker, handed out in tests/conftest.py's order (xdist's own puts the modules with the most tests first,
# whatever they take).
PYTEST := $(BIN)/python -m pytest -n auto --dist loadscope --no-loadscope-reorder

test: $(READY)
	$(PYTEST)

test-fast: $(READY)
	$(PYTEST) -m "not slow"

release: $(READY)
	$(BIN)/python -m autograder release

check-release: $(READY)
	$(BIN)/python -m autograder release --check

# dist/gradescope/ASSIGNMENT/autograder.zip for each assignment (docs/gradescope.md)
gradescope: $(READY)
	$(BIN)/python -m autograder gradescope

# Each figure also as a ratio to a bare `import torch` measured in the same run (benchmarks/baseline.py).
bench: $(READY)
	$(BIN)/python benchmarks/public_tests.py
	$(BIN)/python benchmarks/grade_speed.py
	$(BIN)/python benchmarks/autograde_speed.py
	$(BIN)/python benchmarks/fused_add_norm.py --out dist/bench
	$(BIN)/python benchmarks/timing_check.py --out dist/bench
	$(BIN)/python benchmarks/policy_scaling.py

clean:
	rm -rf $(VENV) dist instructor .pytest_cache
