# tcpeval: build, test, demo and benchmark entry points.
# Only python3 (>= 3.11) and cargo are needed; everything else is installed into .venv.
PY      ?= python3
VENV    := .venv
VPY     := $(VENV)/bin/python
STAMP   := $(VENV)/.tcpeval-setup
RUST_SRC := $(shell find crates -name '*.rs' -o -name Cargo.toml) Cargo.toml pyproject.toml

.PHONY: setup demo test test-rust test-python browser testbed-deps ns2-deps pcap-deps bench crosscheck \
	lint validate validate-studies testbed-grid-page clean bpf bpf-deps bpf-trace wheel wheel-test pip-test

setup: $(STAMP) bpf

# The dependencies are pyproject.toml's (build-system, project and the dev and
# dask extras), read with tomllib; pip is asked only when pyproject.toml changed.
$(VENV)/.deps: pyproject.toml
	$(PY) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(PY) -c 'import tomllib; p = tomllib.load(open("pyproject.toml", "rb")); \
		x = p["project"]["optional-dependencies"]; \
		print(*p["build-system"]["requires"], *p["project"]["dependencies"], *x["dev"], \
		*x["dask"], sep="\n")' | $(VPY) -m pip install -q -r /dev/stdin
	touch $@

$(STAMP): $(VENV)/.deps $(RUST_SRC)
	VIRTUAL_ENV=$(abspath $(VENV)) PATH=$(abspath $(VENV))/bin:$$PATH \
		$(VENV)/bin/maturin develop --release -q
	cargo build --release -q -p tcpeval-delayline
	touch $@

# The testbed's BPF congestion controls (python/tcpeval/testbed/bpf, issue 32):
# built when clang, libbpf-dev and bpftool are there (installed when missing and
# possible: root with apt), against this kernel's BTF; otherwise the testbed
# says which algorithms it cannot offer and why. Up to date, this is a no-op.
BPF_SRC_DIR := python/tcpeval/testbed/bpf
BPF_OUT := target/bpf
BPF_CFLAGS := -O2 -g -Wall -Werror -target bpf -D__TARGET_ARCH_x86 -I $(BPF_OUT) -I $(BPF_SRC_DIR)
BPF_OBJ := $(patsubst $(BPF_SRC_DIR)/%.c,$(BPF_OUT)/%.bpf.o,$(wildcard $(BPF_SRC_DIR)/tcpeval_*.c))

bpf: $(STAMP) bpf-deps
	@if command -v clang >/dev/null && command -v bpftool >/dev/null \
		&& [ -e /usr/include/bpf/bpf_helpers.h ] && [ -r /sys/kernel/btf/vmlinux ]; then \
		$(MAKE) --no-print-directory -s $(BPF_OBJ); \
	else echo "BPF congestion controls not built (needs clang, libbpf-dev, bpftool and /sys/kernel/btf/vmlinux)"; fi

bpf-deps:
	@for t in clang bpftool; do command -v $$t >/dev/null 2>&1 || missing="$$missing $$t"; done; \
	[ -e /usr/include/bpf/bpf_helpers.h ] || missing="$$missing libbpf-dev"; \
	[ -z "$$missing" ] || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
		&& (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		--no-install-recommends $$missing) >/dev/null 2>&1 \
		|| echo "not installed:$$missing (BPF congestion controls will not be built)"; }

$(BPF_OUT)/vmlinux.h:
	@mkdir -p $(BPF_OUT)
	bpftool btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@

# The simulator's parameter defaults; rewritten only when they change.
$(BPF_OUT)/params.h: $(STAMP) $(BPF_SRC_DIR)/gen_params.py
	@mkdir -p $(BPF_OUT)
	$(VPY) -c "import tcpeval._sim as s; print(s.algorithm_params())" \
		| $(PY) $(BPF_SRC_DIR)/gen_params.py > $@.tmp
	@cmp -s $@.tmp $@ && rm $@.tmp && touch $@ || mv $@.tmp $@

$(BPF_OUT)/%.bpf.o: $(BPF_SRC_DIR)/%.c $(wildcard $(BPF_SRC_DIR)/*.h) $(BPF_OUT)/vmlinux.h $(BPF_OUT)/params.h
	clang $(BPF_CFLAGS) -c $< -o $@

# The same BPF programs built to print their state to the kernel's trace buffer
# (-DTCPE_TRACE=N: the first N samples of each socket and every congestion
# indication; TCP-LP, HSTCP-LP, Illinois, Vegas and FAST). Run the testbed with
# TCPEVAL_BPF_DIR=target/bpf-trace and read /sys/kernel/tracing/trace.
BPF_TRACE_OUT := target/bpf-trace
bpf-trace: bpf
	@mkdir -p $(BPF_TRACE_OUT)
	for src in $(BPF_SRC_DIR)/tcpeval_*.c; do \
		clang $(BPF_CFLAGS) -DTCPE_TRACE=40 -c $$src \
			-o $(BPF_TRACE_OUT)/$$(basename $$src .c).bpf.o || exit 1; done

demo: setup
	$(VENV)/bin/tcpeval demo

# A wheel (abi3, Python >= 3.11) that installs without cargo: the engine is
# compiled into it. `make wheel-test` installs it into a fresh venv (PATH
# without cargo) and runs `tcpeval demo` there (a few minutes: not in make test).
WHEEL_DIR := target/wheels
# Its own cargo target directory: maturin build and develop pass different
# settings, and sharing target/ would make each rebuild after the other.
wheel: $(VENV)/.deps
	rm -f $(WHEEL_DIR)/tcpeval-*.whl
	CARGO_TARGET_DIR=target/wheel-build $(VENV)/bin/maturin build --release -q -o $(WHEEL_DIR)

wheel-test: wheel
	TCPEVAL_WHEEL_TEST=1 $(VENV)/bin/pytest python/tests/test_wheel.py

# `pip install .` of this checkout into a fresh venv (maturin through
# pyproject's build backend, its own cargo target directory), then `tcpeval
# --version` and a tiny run there: minutes, so not in make test.
pip-test: $(VENV)/.deps
	TCPEVAL_PIP_TEST=1 $(VENV)/bin/pytest python/tests/test_pip_install.py

test: setup browser testbed-deps ns2-deps pcap-deps test-rust test-python

# The delay line's namespace tests (cargo) and the testbed tests (pytest) need
# testbed-deps; both skip with the reason where it could not be installed. The
# ns-2 tests (a tiny cross-check cell) need ns2-deps, and skip likewise.
test-rust: testbed-deps
	cargo test --workspace --exclude tcpeval-py -q

test-python: setup browser testbed-deps ns2-deps pcap-deps
	$(VENV)/bin/pytest python/tests

# Reports are checked in headless Chromium (Debian's package). Installed when
# missing and possible (root with apt); otherwise those tests skip and say why.
browser:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
		&& (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) \
		>/dev/null 2>&1 || echo "chromium not installed: browser tests will skip"; }

# The pcap tests read the capture files with tshark and tcptrace (Debian
# packages). Installed when missing and possible (root with apt); otherwise
# those tests skip and say why.
pcap-deps:
	@for t in tshark tcptrace; do command -v $$t >/dev/null 2>&1 || missing="$$missing $$t"; done; \
	[ -z "$$missing" ] || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
		&& (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		--no-install-recommends $$missing) >/dev/null 2>&1 \
		|| echo "not installed:$$missing (the pcap tests will skip)"; }

# The kernel testbed needs ethtool (TSO/GSO off) and iptables (loss, NFQUEUE);
# the delay line's tests use ping (Debian package iputils-ping). Installed when
# missing and possible (root with apt); otherwise testbed runs refuse.
testbed-deps:
	@for t in ethtool iptables ping; do command -v $$t >/dev/null 2>&1 \
		|| missing="$$missing $$( [ $$t = ping ] && echo iputils-ping || echo $$t)"; done; \
	[ -z "$$missing" ] || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
		&& (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		--no-install-recommends $$missing) >/dev/null 2>&1 \
		|| echo "not installed:$$missing (testbed runs will refuse)"; }

# ns-2.35 with TCP-Linux (Debian package ns2), the peer of the speed bench and
# the cross-check. Installed when missing and possible (root with apt);
# otherwise those skip and say why.
ns2-deps:
	@command -v ns >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
		&& (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ns2) \
		>/dev/null 2>&1 || echo "ns2 not installed: the ns-2 bench and cross-check will skip"; }

# Engine scenarios, criterion benchmarks, start-up (median wall times of
# `tcpeval --help` and a short run, next to its simulation time), then tcpeval
# against ns-2 end to end (skipped with the reason when ns is missing).
bench: setup ns2-deps
	cargo run --release -q -p tcpeval-sim --example bench
	cargo bench -p tcpeval-sim --bench scenarios
	$(VPY) benches/startup.py
	$(VPY) benches/ns2_speed.py

# The grid of docs/crosscheck.md on tcpeval and ns-2 (30-60 minutes on 2 cores);
# rewrites that page's generated table. `make crosscheck CROSSCHECK_ARGS=--quick`
# runs the issue's cells only.
CROSSCHECK_ARGS ?=
crosscheck: setup ns2-deps
	@if command -v ns >/dev/null 2>&1; then $(VPY) -m tcpeval.ns2 crosscheck $(CROSSCHECK_ARGS); \
	else echo "crosscheck skipped: ns-2 is not installed (Debian package ns2; needs root and apt)"; fi

lint: setup
	cargo clippy --workspace --all-targets -- -D warnings
	$(VENV)/bin/ruff check python

# Full validation of every algorithm against its analytic response function;
# rewrites docs/validation.md and docs/validation/*.png (several minutes).
validate: setup
	$(VPY) -m tcpeval.validation --workers 2

# Headline results and statements of the studies: on the full profile's stored
# results where TCPEVAL_FULL_STORES=DIR holds DIR/<study> (no run), on the quick
# profile otherwise (minutes); the summary says which (python/validate_studies/stores.py).
validate-studies: setup
	$(VENV)/bin/pytest python/validate_studies

# The simulator-vs-kernel grid's page from its stored comparisons (no runs;
# docs/testbed-grid/*.jsonl are `python -m tcpeval.testbed grid --raw` output).
testbed-grid-page: setup
	$(VPY) -m tcpeval.testbed grid --page docs/testbed-grid > docs/testbed-grid.md.tmp
	mv docs/testbed-grid.md.tmp docs/testbed-grid.md

clean:
	rm -rf target $(VENV)
