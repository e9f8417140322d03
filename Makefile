PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
LOCK := constraints.txt
RUN_STAMP := $(VENV)/.installed-run
DEV_STAMP := $(VENV)/.installed-dev
DOCS_STAMP := $(VENV)/.installed-docs

.PHONY: install demo browser test test-slow docs wheel-demo lint format lock clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# Installs pin every package to the lock, so pip resolves nothing.
$(RUN_STAMP): pyproject.toml $(LOCK) | $(BIN)/python
	$(BIN)/pip install --quiet -c $(LOCK) -e .
	touch $@

$(DEV_STAMP): pyproject.toml $(LOCK) | $(BIN)/python
	$(BIN)/pip install --quiet -c $(LOCK) -e '.[dev]'
	touch $@ $(RUN_STAMP)

$(DOCS_STAMP): pyproject.toml $(LOCK) | $(BIN)/python
	$(BIN)/pip install --quiet -c $(LOCK) -e '.[docs]'
	touch $@ $(RUN_STAMP)

install: $(RUN_STAMP)

demo: $(RUN_STAMP)
	$(BIN)/pulsnar-dask demo --overwrite

# Debian's Chromium renders the report in the browser tests: installed when missing and
# apt-get can (root, as on CI and this machine kind); otherwise those tests are skipped.
browser:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
	  { apt-get install -y -q --no-install-recommends chromium chromium-driver >/dev/null || \
	    { apt-get update -q >/dev/null && \
	      apt-get install -y -q --no-install-recommends chromium chromium-driver >/dev/null; } || \
	  echo "chromium not installed: the report's browser tests will be skipped"; }

test: $(DEV_STAMP) browser
	$(BIN)/ruff check pulsnar_dask tests jobs benchmarks
	$(BIN)/ruff format --check pulsnar_dask tests jobs benchmarks
	$(BIN)/pytest -q

test-slow: $(DEV_STAMP)
	$(BIN)/pytest -q -m slow

# The user guide and API reference, warnings as errors, from a fresh environment each time.
docs: $(DOCS_STAMP)
	$(BIN)/sphinx-build -E -W --keep-going -q -b html docs docs/_build/html
	@echo "docs: docs/_build/html/index.html"

# The package as a user installs it: a wheel, in a clean environment from the lock, and
# its demo run from a folder outside the repository.
WHEEL_DIR := build/wheel-demo
wheel-demo: $(DEV_STAMP)
	rm -rf $(WHEEL_DIR) && mkdir -p $(WHEEL_DIR)
	$(BIN)/python -m build --wheel --outdir $(WHEEL_DIR)/dist . >/dev/null
	$(PYTHON) -m venv $(WHEEL_DIR)/venv
	$(WHEEL_DIR)/venv/bin/pip install --quiet -c $(LOCK) $(WHEEL_DIR)/dist/*.whl
	cd "$$(mktemp -d)" && "$(CURDIR)/$(WHEEL_DIR)/venv/bin/pulsnar-dask" demo --quiet --out demo \
	  | tail -n 1 | "$(CURDIR)/$(WHEEL_DIR)/venv/bin/python" -c \
	  "import json, sys; s = json.loads(sys.stdin.read()); print('wheel demo: alpha', s['alpha'])"
	rm -rf $(WHEEL_DIR)

lint: $(DEV_STAMP)
	$(BIN)/ruff check pulsnar_dask tests jobs benchmarks

format: $(DEV_STAMP)
	$(BIN)/ruff format pulsnar_dask tests jobs benchmarks
	$(BIN)/ruff check --fix pulsnar_dask tests jobs benchmarks

# Re-resolve the newest versions pyproject.toml allows (with the test tools) and pin them.
lock:
	rm -rf .lock-venv
	$(PYTHON) -m venv .lock-venv
	.lock-venv/bin/pip install --quiet --upgrade pip
	.lock-venv/bin/pip install --quiet '.[dev,docs]'
	{ echo '# The resolved dependency set (make demo / make test install from it). Refresh: make lock'; \
	  .lock-venv/bin/pip freeze --exclude-editable | grep -v '^pulsnar-dask'; } > $(LOCK)
	rm -rf .lock-venv build

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .lock-venv docs/_build
