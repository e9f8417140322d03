PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test test-slow lint format clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/pulsnar-dask demo

test: $(STAMP)
	$(BIN)/ruff check pulsnar_dask tests jobs
	$(BIN)/ruff format --check pulsnar_dask tests jobs
	$(BIN)/pytest -q

test-slow: $(STAMP)
	$(BIN)/pytest -q -m slow

lint: $(STAMP)
	$(BIN)/ruff check pulsnar_dask tests jobs

format: $(STAMP)
	$(BIN)/ruff format pulsnar_dask tests jobs
	$(BIN)/ruff check --fix pulsnar_dask tests jobs

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
