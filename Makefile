# Set-up and the two main jobs; each creates .venv on first use and installs what it needs:
# - `make demo`: torch, the package without extras (its runtime dependencies, AntiBERTy's wheel) and nothing else;
# - `make test` (and install, check, docs, wheel-check): the same, plus the `dev` extra (pytest, Ray, gradio, mypy,
#   the documentation tools, ...) and Sapiens' wheel (the tests use sapiens-vh). `make demo` then `make test` in one
#   .venv adds the rest. Each step has its stamp file in .venv, so nothing is installed twice.
# TORCH_INDEX: the wheel index torch comes from, empty (PyPI) by default. On Linux x86-64 PyPI's torch==2.13.0 is the
# CUDA build (several GB with its NVIDIA libraries); for the CPU wheel (about 190 MB):
#   make demo TORCH_INDEX=https://download.pytorch.org/whl/cpu
# and for a CUDA build of your choice: TORCH_INDEX=https://download.pytorch.org/whl/cu124 (see docs/getting-started.md).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
TORCH_SPEC ?= torch==2.13.0
TORCH_INDEX ?=
STAMP := $(VENV)/.mlmprob-installed
DEV_STAMP := $(VENV)/.mlmprob-dev-installed

.PHONY: install demo test check docs bench wheel-check clean

$(STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q "$(TORCH_SPEC)" $(if $(TORCH_INDEX),--index-url "$(TORCH_INDEX)")
	$(BIN)/python -m pip install -q -e .
	touch $@

$(DEV_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q -e ".[dev]"
	# Sapiens declares fairseq and torch<2.5, neither of which it needs here: install without deps.
	$(BIN)/python -m pip install -q --no-deps "sapiens==1.0.5"
	touch $@

install: $(DEV_STAMP)

demo: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/mlmprob demo

# Two pytest processes, each test file whole on one of them (its module fixtures, e.g. a local Ray, made once):
# the suite computes on one thread per process (tests/conftest.py), so the second core was idle. Measured on the
# 2-core machine: 18m50s in one process, 9m47s in two (CHANGELOG.md). `python -m pytest -q` still runs it in one.
test: $(DEV_STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q -n 2 --dist loadfile

# The documentation site (mkdocs.yml) into site/, warnings as errors: broken links, missing references.
docs: $(DEV_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# The checked habits (CI runs it): lint, formatting and the type checker (configured in pyproject.toml).
check: $(DEV_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

wheel-check: $(DEV_STAMP)
	.ci/wheel_smoke.sh

bench: $(DEV_STAMP)
	@echo "see bench/README.md for the benchmark commands"

clean:
	rm -rf $(VENV) build dist site src/*.egg-info
