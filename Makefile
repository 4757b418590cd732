# The two everyday commands:
#   make run    set up, then compile and run the ads recipe end to end on CPU
#   make test   set up, then run the test suite
# Set-up is a local virtual environment (.venv) with the CPU build of torch pinned,
# plus the node packages (editors/package-lock.json) that test the editor grammar.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PROFILE ?= default
STAMP  := $(VENV)/.installed
NODE_TOOLS := editors/node_modules/.package-lock.json

.PHONY: setup run smoke test clean

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

run: setup
	$(BIN)/craftc compile recipes/ads_analytics.craft -o build/ads_analytics --profile $(PROFILE)
	$(BIN)/craftc run build/ads_analytics --run-dir runs/ads_analytics

smoke:
	$(MAKE) run PROFILE=smoke

test: setup
	$(BIN)/python -m pytest -q

clean:
	rm -rf build runs
