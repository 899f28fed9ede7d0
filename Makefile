# The two commands of the README: `make run` and `make test`. Everything they need is installed
# here, from pyproject.toml (torch is pinned to the CPU build that pip finds locally).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup run test test-fast bench docs screenshots clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# setuptools tells every editable install it is one, as a warning: not news to a user
	PYTHONWARNINGS="ignore:Editable installation" $(BIN)/pip install --quiet -e '.[test,bench,docs]'
	touch $(STAMP)

# Serve the embedded default: generates the synthetic catalogue and trains a model on first start.
run: setup
	$(BIN)/recsys serve

# Install what the tests need (Chromium for the browser test, PostgreSQL for the store's tests,
# nginx for the load balancer's: each starts a throwaway server of its own) and run the suite,
# in 3 processes (pytest-xdist): many tests wait on servers, so 3 beat 2 on a 2-core machine.
# Each test file runs in one process, except the files tests/conftest.py spreads (SPREAD); the
# longest units start first (LONGEST there).
# PYTEST_ARGS come after, so `PYTEST_ARGS="-n 0"` runs it in this process alone.
# Every process the suite starts computes in one thread (BLAS, OpenMP, torch): 3 processes, the
# servers and jobs they start, each with a pool of 2 threads that spin while they wait, outnumber
# 2 cores (the service itself already runs torch in one thread, `torch_threads`).
PYTEST_PARALLEL ?= -n 3 --dist loadfile
ONE_THREAD := OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 NUMBA_NUM_THREADS=1
test: setup
	bash scripts/install_chromium.sh
	bash scripts/postgres.sh install
	bash scripts/lb.sh install
	$(ONE_THREAD) $(BIN)/pytest $(PYTEST_PARALLEL) $(PYTEST_ARGS)

# The suite without tests/system (the `system` marker: real servers, databases, browsers, several
# processes, a fresh clone): what a developer runs while working.
test-fast: setup
	$(ONE_THREAD) $(BIN)/pytest $(PYTEST_PARALLEL) -m "not system" $(PYTEST_ARGS)

bench: setup
	$(BIN)/recsys bench

# The docs site (docs/, mkdocs.yml) into site/; --strict: a broken link or any warning fails it.
# scripts/docs_hooks.py writes the HTTP API, command line and settings pages from the code.
docs: setup
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# Retake the README's screenshots of the web page into docs/: the page as `make run` shows it
# (default catalogue, model trained on first start, in a throwaway folder), never the tests'.
screenshots: setup
	bash scripts/install_chromium.sh
	$(BIN)/python scripts/screenshots.py --out docs

clean:
	rm -rf $(VENV) artifacts data/generated .pytest_cache site
