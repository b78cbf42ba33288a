# cnsim — single entry point. Everything the project needs is installed by these targets into
# ./.venv (Python) and ./target (Rust); nothing has to be installed by hand.
SHELL := /bin/bash
VENV  ?= .venv
PY    := $(VENV)/bin/python
PIP   := $(VENV)/bin/pip
CARGO ?= cargo
STAMP := $(VENV)/.deps-installed

.PHONY: help venv build test test-rust test-python test-extensive demo bench reproduce lint clean docs

help:
	@echo "make demo   - install, build, run a seed experiment and write its report"
	@echo "make test   - install, build, run the whole test suite (cargo + pytest)"
	@echo "make bench  - fan-in-4 / fan-in-100 throughput of cnsim vs ns-3 3.44 (PyPI)"

$(STAMP): requirements.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -r requirements.txt
	touch $(STAMP)

venv: $(STAMP)

# Release build of the extension into the venv (editable: python/ is used in place).
build: $(STAMP)
	VIRTUAL_ENV=$(abspath $(VENV)) PATH=$(abspath $(VENV))/bin:$$PATH \
	  $(VENV)/bin/maturin develop --release --quiet

test-rust:
	$(CARGO) test --release -p cnsim-core

test-python: build
	$(PY) -m pytest -q

test: test-rust test-python

test-extensive: build
	$(PY) -m pytest -q -m extensive

demo: build
	$(VENV)/bin/cnsim demo

bench: build
	$(PY) bench/run.py

reproduce: build
	$(VENV)/bin/cnsim reproduce all -j 2

docs: build
	$(VENV)/bin/cnsim docs --out docs/reference

clean:
	rm -rf target $(VENV) results
