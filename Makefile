# tcpeval: build, test, demo and benchmark entry points.
# Only python3 (>= 3.11) and cargo are needed; everything else is installed into .venv.
PY      ?= python3
VENV    := .venv
VPY     := $(VENV)/bin/python
STAMP   := $(VENV)/.tcpeval-setup
RUST_SRC := $(shell find crates -name '*.rs' -o -name Cargo.toml) Cargo.toml pyproject.toml

.PHONY: setup demo test test-rust test-python browser testbed-deps bench lint validate validate-studies clean

setup: $(STAMP)

$(VENV)/.deps: pyproject.toml
	$(PY) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q "maturin>=1.5,<2" numpy pandas pyarrow "pydantic>=2.5" typer rich matplotlib \
		pytest hypothesis jsonschema ruff "dask[distributed]"
	touch $@

$(STAMP): $(VENV)/.deps $(RUST_SRC)
	VIRTUAL_ENV=$(abspath $(VENV)) PATH=$(abspath $(VENV))/bin:$$PATH \
		$(VENV)/bin/maturin develop --release -q
	cargo build --release -q -p tcpeval-delayline
	touch $@

demo: setup
	$(VENV)/bin/tcpeval demo

test: setup browser testbed-deps test-rust test-python

# The delay line's namespace tests (cargo) and the testbed tests (pytest) need
# testbed-deps; both skip with the reason where it could not be installed.
test-rust: testbed-deps
	cargo test --workspace --exclude tcpeval-py -q

test-python: setup browser testbed-deps
	$(VENV)/bin/pytest python/tests

# Reports are checked in headless Chromium (Debian's package). Installed when
# missing and possible (root with apt); otherwise those tests skip and say why.
browser:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
		&& (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) \
		>/dev/null 2>&1 || echo "chromium not installed: browser tests will skip"; }

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

# Engine scenarios, criterion benchmarks, then start-up (median wall times of
# `tcpeval --help` and a short run, next to its simulation time).
bench: setup
	cargo run --release -q -p tcpeval-sim --example bench
	cargo bench -p tcpeval-sim --bench scenarios
	$(VPY) benches/startup.py

lint: setup
	cargo clippy --workspace --all-targets -- -D warnings
	$(VENV)/bin/ruff check python

# Full validation of every algorithm against its analytic response function;
# rewrites docs/validation.md and docs/validation/*.png (several minutes).
validate: setup
	$(VPY) -m tcpeval.validation --workers 2

# Headline qualitative results of the studies on their quick profiles (minutes).
validate-studies: setup
	$(VENV)/bin/pytest python/validate_studies

clean:
	rm -rf target $(VENV)
