# SyncBadge: `make demo` and `make test` do all set-up on a fresh Debian machine.
SHELL := /bin/bash
SWIFT ?= swift
# SwiftPM's build directory (another one lets a second checkout of work build alongside).
SCRATCH ?= .build
SWIFT_FLAGS := --scratch-path $(SCRATCH)
# libinotifytools (no pkg-config file), SQLite for GRDB, inotify-tools for comparisons,
# socat for poking at the socket by hand, rsync and python3 for the example engine, tmux and
# the shells and ranger for the terminal clients' tests, syncthing for the Syncthing adapter's.
APT_PACKAGES := libinotifytools0-dev inotify-tools libsqlite3-dev socat rsync python3 tmux zsh fish ranger syncthing
SUDO := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)

PREFIX ?= /usr/local
DESTDIR ?=
# The release binaries carry the Swift runtime, and the CLI is a static executable (Package.swift
# links it so only when SYNCBADGE_STATIC_CLI=1: that flag needs --static-swift-stdlib). Every
# release invocation exports it, so that they all read the manifest the same way.
RELEASE_FLAGS = -c release --static-swift-stdlib $(SWIFT_FLAGS)
release install bench reliability: export SYNCBADGE_STATIC_CLI = 1
BIN := $(DESTDIR)$(PREFIX)/bin
SHARE := $(DESTDIR)$(PREFIX)/share
UNITS := $(DESTDIR)$(PREFIX)/lib/systemd/user

.PHONY: all deps build test test-repeat demo clean release install uninstall bench reliability fuzz

all: build

# Installs only what is missing, so a ready machine pays nothing.
deps:
	@missing=""; for p in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi

build: deps
	$(SWIFT) build $(SWIFT_FLAGS)

test: deps
	$(SWIFT) build --build-tests $(SWIFT_FLAGS)
	$(SWIFT) test --skip-build $(SWIFT_FLAGS)

# The whole suite N times on one debug build: each test that failed at least once, how often,
# then `N passed, M failed` counting runs. Run it before resolving anything that touched tests,
# timing or concurrency: a test that fails once in 20 is a defect.
N ?= 20
test-repeat: deps
	$(SWIFT) build --build-tests $(SWIFT_FLAGS)
	python3 Tests/repeat.py -n $(N) --swift $(SWIFT) --scratch $(SCRATCH)

demo: build
	@Examples/demo/demo.sh

RELEASE_BIN = $$($(SWIFT) build $(RELEASE_FLAGS) --show-bin-path)

# Performance: the in-process figures (ordo-one/benchmark, its own package so that `make test`
# never builds it), then every system figure against its baseline (Benchmarks/README.md).
# BENCH_ARGS=--quick for a smoke run.
BENCH_SCRATCH ?= .build-bench
bench: release
	$(SWIFT) package --package-path Benchmarks --scratch-path $(BENCH_SCRATCH) benchmark --no-progress
	SYNCBADGE_BIN=$(RELEASE_BIN) Benchmarks/run.sh $(BENCH_ARGS)

# The slow fault and load cases, one line each, then `N passed, M failed` (docs/RELIABILITY.md).
# RELIABILITY_ARGS=--quick or --only NAME.
reliability: release
	SYNCBADGE_BIN=$(RELEASE_BIN) python3 Reliability/run.py $(RELIABILITY_ARGS)

# libFuzzer over the line codec and the request parser: SECONDS=N (default 60), or until
# RUNS=N executions when that comes first. Crashes land in $(SCRATCH)/fuzz/crash-*; keep each
# one in Fuzz/regressions/ (replayed by `make test`).
# SANITIZERS=fuzzer drops AddressSanitizer, about five times faster (Swift's own bounds and
# overflow checks stay on under -O): the long runs in docs/RELIABILITY.md use both.
SECONDS ?= 60
RUNS ?= -1
SANITIZERS ?= fuzzer,address
FUZZ_ARGS ?=
FUZZ_DIR = $(SCRATCH)/fuzz
fuzz:
	mkdir -p $(FUZZ_DIR)/corpus
	swiftc -O -sanitize=$(SANITIZERS) -parse-as-library -module-name SyncBadgeFuzz \
	  Sources/SyncBadgeCore/*.swift Fuzz/FuzzChecks.swift Fuzz/FuzzMain.swift -o $(FUZZ_DIR)/fuzz-codec
	$(FUZZ_DIR)/fuzz-codec -max_total_time=$(SECONDS) -runs=$(RUNS) $(FUZZ_ARGS) -print_final_stats=1 -artifact_prefix=$(FUZZ_DIR)/ \
	  $(FUZZ_DIR)/corpus Fuzz/corpus

# Release binaries with the Swift runtime linked in: no shared Swift libraries to load, so
# `syncbadge status` starts fast.
release: deps
	# Our products by name: building every product would also link dependencies' dynamic
	# library products (libGRDB-dynamic.so), which cannot take a static Swift runtime.
	for product in syncbadged syncbadge syncbadge-soak syncbadge-syncthing; do $(SWIFT) build $(RELEASE_FLAGS) --product $$product || exit 1; done
	# A product SwiftPM thought up to date may still be linked against the shared runtime.
	for tool in syncbadge syncbadged; do \
	  bin="$$($(SWIFT) build $(RELEASE_FLAGS) --show-bin-path)/$$tool"; \
	  if ldd "$$bin" | grep -q libswiftCore; then rm -f "$$bin" && $(SWIFT) build $(RELEASE_FLAGS) --product $$tool; fi; \
	  if ldd "$$bin" | grep -q libswiftCore; then echo "$$bin still needs the shared Swift runtime" >&2; exit 1; fi; \
	done
	# swift-argument-parser's manual generator, run on our own release binaries (its plugin
	# would build them a second time).
	$(SWIFT) build $(RELEASE_FLAGS) --product generate-manual
	rm -rf $(SCRATCH)/man && mkdir -p $(SCRATCH)/man
	for tool in syncbadge syncbadged syncbadge-syncthing; do \
	  "$$($(SWIFT) build $(RELEASE_FLAGS) --show-bin-path)/generate-manual" \
	    "$$($(SWIFT) build $(RELEASE_FLAGS) --show-bin-path)/$$tool" --multi-page --output-directory $(SCRATCH)/man; \
	done

install: release
	install -d $(BIN) $(SHARE)/syncbadge/badges $(SHARE)/syncbadge/prompt $(SHARE)/syncbadge/ranger \
	  $(SHARE)/syncbadge/providers $(UNITS) $(SHARE)/man/man1 \
	  $(SHARE)/bash-completion/completions $(SHARE)/zsh/site-functions $(SHARE)/fish/vendor_completions.d
	# Stripped: the debug information is most of a static binary's size.
	install -s -m 755 $$($(SWIFT) build $(RELEASE_FLAGS) --show-bin-path)/syncbadged $(BIN)/syncbadged
	install -s -m 755 $$($(SWIFT) build $(RELEASE_FLAGS) --show-bin-path)/syncbadge $(BIN)/syncbadge
	install -s -m 755 $$($(SWIFT) build $(RELEASE_FLAGS) --show-bin-path)/syncbadge-syncthing $(BIN)/syncbadge-syncthing
	install -m 644 Badges/badges.tsv Badges/*.svg $(SHARE)/syncbadge/badges/
	install -m 644 Examples/prompt/syncbadge.* $(SHARE)/syncbadge/prompt/
	install -m 644 Examples/ranger/syncbadge.py $(SHARE)/syncbadge/ranger/
	install -m 755 Examples/providers/shell-mirror.sh Examples/providers/rsync-mirror/rsync_mirror.py $(SHARE)/syncbadge/providers/
	sed 's|@BINDIR@|$(PREFIX)/bin|' Examples/systemd/syncbadged.service > $(UNITS)/syncbadged.service
	install -m 644 Examples/systemd/syncbadged.socket $(UNITS)/syncbadged.socket
	sed 's|@BINDIR@|$(PREFIX)/bin|' Examples/systemd/syncbadge-syncthing.service > $(UNITS)/syncbadge-syncthing.service
	$(BIN)/syncbadge --generate-completion-script bash > $(SHARE)/bash-completion/completions/syncbadge
	$(BIN)/syncbadge --generate-completion-script zsh > $(SHARE)/zsh/site-functions/_syncbadge
	$(BIN)/syncbadge --generate-completion-script fish > $(SHARE)/fish/vendor_completions.d/syncbadge.fish
	install -m 644 $(SCRATCH)/man/*.1 $(SHARE)/man/man1/
	@echo "installed under $(DESTDIR)$(PREFIX); enable on demand start with: systemctl --user enable --now syncbadged.socket"
	@echo "with Syncthing: systemctl --user enable --now syncbadge-syncthing.service"

uninstall:
	rm -f $(BIN)/syncbadged $(BIN)/syncbadge $(BIN)/syncbadge-syncthing $(UNITS)/syncbadged.service $(UNITS)/syncbadged.socket \
	  $(UNITS)/syncbadge-syncthing.service
	rm -f $(SHARE)/bash-completion/completions/syncbadge $(SHARE)/zsh/site-functions/_syncbadge \
	  $(SHARE)/fish/vendor_completions.d/syncbadge.fish
	rm -f $(SHARE)/man/man1/syncbadge.1 $(SHARE)/man/man1/syncbadge.*.1 $(SHARE)/man/man1/syncbadged.1 \
	  $(SHARE)/man/man1/syncbadged.*.1 $(SHARE)/man/man1/syncbadge-syncthing.1 \
	  $(SHARE)/man/man1/syncbadge-syncthing.*.1
	rm -rf $(SHARE)/syncbadge

clean:
	rm -rf $(SCRATCH)
