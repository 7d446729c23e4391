# Set-up and the two main jobs. `make demo` and `make test` each create .venv and install everything
# on first use (torch==2.13.0 CPU build; see README for GPU installs).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
TORCH_SPEC ?= torch==2.13.0
STAMP := $(VENV)/.mlmprob-installed

.PHONY: install demo test check docs bench wheel-check clean

$(STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q "$(TORCH_SPEC)"
	$(BIN)/python -m pip install -q -e ".[dev]"
	# Sapiens declares fairseq and torch<2.5, neither of which it needs here: install without deps.
	$(BIN)/python -m pip install -q --no-deps "sapiens==1.0.5"
	touch $@

install: $(STAMP)

demo: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/mlmprob demo

# Two pytest processes, each test file whole on one of them (its module fixtures, e.g. a local Ray, made once):
# the suite computes on one thread per process (tests/conftest.py), so the second core was idle. Measured on the
# 2-core machine: 18m50s in one process, 9m47s in two (CHANGELOG.md). `python -m pytest -q` still runs it in one.
test: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q -n 2 --dist loadfile

# The documentation site (mkdocs.yml) into site/, warnings as errors: broken links, missing references.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# The checked habits (CI runs it): lint, formatting and the type checker (configured in pyproject.toml).
check: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

wheel-check: $(STAMP)
	.ci/wheel_smoke.sh

bench: $(STAMP)
	@echo "see bench/README.md for the benchmark commands"

clean:
	rm -rf $(VENV) build dist site src/*.egg-info
