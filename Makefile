# cnsim — single entry point. Everything the project needs is installed by these targets into
# ./.venv (Python) and ./target (Rust); nothing has to be installed by hand.
SHELL := /bin/bash
VENV  ?= .venv
PY    := $(VENV)/bin/python
PIP   := $(VENV)/bin/pip
CARGO ?= cargo
STAMP := $(VENV)/.deps-installed

.PHONY: help venv build browser test test-rust test-python test-extensive demo bench instructions reproduce lint lint-code lint-format stubtest clean docs

help:
	@echo "make demo   - install, build, run a seed experiment and write its report"
	@echo "make test   - install, build, lint, run the test suite (cargo + pytest, about 3 minutes)"
	@echo "make lint   - clippy (warnings are errors), ruff check, stubtest of _core.pyi, cargo fmt and ruff format checks"
	@echo "make test-extensive - the long statistical and reproduction checks (tens of minutes)"
	@echo "make bench  - cnsim run / API / engine vs ns-3 3.44 (PyPI) on fan-in-4/100/1000 and a k = 8 fat tree"
	@echo "make instructions - engine instruction counts (valgrind) against bench/instructions.json, +5 % fails"

$(STAMP): requirements.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -r requirements.txt
	touch $(STAMP)

venv: $(STAMP)

# Headless Chromium for the report test (offline rendering check). Installed from Debian's
# packages when missing and we are root with apt-get; otherwise that one test skips with a reason.
browser:
	@if command -v chromium >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing chromium (Debian package) for the report test"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	    || echo "chromium could not be installed; the browser test will skip"; \
	else echo "no chromium and not root: the browser test will skip"; fi

# Release build of the extension into the venv (editable: python/ is used in place).
# The package is installed editable (python/ in place), so nothing byte-compiles it: where
# PYTHONDONTWRITEBYTECODE is set every command would compile cnsim's modules again (~0.1 s of a
# 1-ms run), hence compileall; `-f` rewrites them all, since its check (the source's mtime to the
# second, and its size) misses an edit of the same size within the second of the last build.
# (`+`: cargo takes its jobs from make's jobserver, so `make test`'s two builds share the two cores.)
build: $(STAMP)
	+VIRTUAL_ENV=$(abspath $(VENV)) PATH=$(abspath $(VENV))/bin:$$PATH \
	  $(VENV)/bin/maturin develop --release --quiet
	$(PY) -m compileall -q -f python/cnsim

# The Rust tests run in the debug profile: with overflow checks on, an arithmetic overflow on a
# hand-made IR (the random-IR test) panics there instead of wrapping silently as in release, and the
# engine's debug checks (Little's law on every queue) run. The extension is built in release by
# `build`. So `make test` compiles the engine once per profile, both at once: the release build runs
# its thin LTO in one codegen unit, i.e. on one core, and the debug build takes the other (each
# profile has its own build lock under target/).
test-rust:
	+$(CARGO) test -p cnsim-core

# pytest in two worker processes (pytest-xdist), a test file per worker at a time: module-scoped
# fixtures (a reproduction, a sweep) are made once.
PYTEST := $(PY) -m pytest -q -n 2 --dist loadfile

test-python: build browser
	$(PYTEST)

# Lint first (what needs no build), then the builds and the Rust tests, then the stub check (needs the
# extension) and pytest.
test: $(STAMP)
	$(MAKE) --no-print-directory lint-code lint-format
	$(MAKE) --no-print-directory -j 2 --output-sync=target test-rust build browser
	$(MAKE) --no-print-directory stubtest
	$(PYTEST)

# Lint, as CI runs it (inside `make test`). Code checks: clippy on every target with warnings as errors (the
# lints allowed for the engine, with their reasons, are in Cargo.toml [workspace.lints]), ruff check (rules in
# pyproject.toml [tool.ruff]) and mypy on the typed modules ([tool.mypy]). Format checks: cargo fmt
# (rustfmt.toml) and ruff format, which change nothing and fail on a difference (`cargo fmt --all` and
# `ruff format` apply them). stubtest checks python/cnsim/_core.pyi against the built extension
# (`make build` first).
RUFF := $(VENV)/bin/ruff

lint: lint-code lint-format stubtest

lint-code: $(STAMP)
	$(CARGO) clippy --all-targets --quiet -- -D warnings
	$(RUFF) check --quiet .
	$(PY) -m mypy

lint-format: $(STAMP)
	$(CARGO) fmt --all --check
	$(RUFF) format --check --quiet .

# (no `build` prerequisite: build's recipe runs even under `make -n`; `make test` builds before it)
stubtest: $(STAMP)
	@ls python/cnsim/_core*.so >/dev/null 2>&1 || { echo "stubtest: the extension is not built (make build)"; exit 1; }
	$(PY) -m mypy.stubtest cnsim._core

# Long statistical and reproduction checks (pytest marker `extensive`; `.ci/run` runs them too).
test-extensive: build browser
	$(PYTEST) -m extensive

# Reproduce seed 000 (BCN vs BECN/FECN, Bergamasco 2007) in its reduced configuration and write
# the report: published numbers beside cnsim's, with plots.
demo: build
	$(VENV)/bin/cnsim reproduce seed-000 --quick -j 2 -o results/demo --no-progress
	@echo "report: $(abspath results/demo/report/report.html)"

bench: build
	$(PY) bench/run.py

# Instruction counts of the engine on the bench workloads against bench/instructions.json (+5 % fails;
# valgrind; steady where wall time on this VM is not). `make instructions ARGS=--update` stores new ones.
instructions: build
	$(PY) bench/instructions.py $(ARGS)

reproduce: build
	$(VENV)/bin/cnsim reproduce all -j 2

docs: build
	$(VENV)/bin/cnsim docs --out docs/reference

clean:
	rm -rf target $(VENV) results
