# SyncBadge: `make demo` and `make test` do all set-up on a fresh Debian machine.
SHELL := /bin/bash
SWIFT ?= swift
# SwiftPM's build directory (another one lets a second checkout of work build alongside).
SCRATCH ?= .build
SWIFT_FLAGS := --scratch-path $(SCRATCH)
# libinotifytools (no pkg-config file), SQLite for GRDB, inotify-tools for comparisons,
# socat for poking at the socket by hand, rsync and python3 for the example engine, tmux and
# the shells and ranger for the terminal clients' tests, syncthing for the Syncthing adapter's,
# openssl for the certificates of its TLS tests, git for the git adapter's,
# rclone and fuse3 for the rclone adapter's (`rclone mount` of a local directory).
APT_PACKAGES := libinotifytools0-dev inotify-tools libsqlite3-dev socat rsync python3 tmux zsh fish ranger syncthing openssl git rclone fuse3
# systemd-nspawn boots a container whose systemd user manager runs the hardened units (test-units).
APT_PACKAGES += systemd-container
# The file managers' tests (Examples/filemanagers): Nautilus, Nemo and Caja with their Python
# extension hosts, Xvfb, a session bus, ImageMagick, xdotool, rsvg-convert (the emblems) and
# notify-send. Installed without their recommends, which would be most of a desktop.
APT_PACKAGES_LEAN := nautilus python3-nautilus nemo nemo-python caja python3-caja xvfb xauth dbus dbus-x11 \
  imagemagick xdotool librsvg2-bin libnotify-bin
# The Dolphin plugins (Clients/dolphin): Dolphin, the KF5/Qt 5 headers, CMake and ECM to build them,
# Breeze (Plasma's icon theme, which has no emblem-default: the tests draw what users see); vifm
# for its column (Examples/vifm).
APT_PACKAGES_LEAN += dolphin libkf5kio-dev extra-cmake-modules qtbase5-dev cmake g++ breeze-icon-theme vifm
# syncbadge-tray (Clients/tray): GLib's Gio for Debian's python3, and xfce4-panel, whose systray
# plugin is the real StatusNotifierItem host of its panel test.
APT_PACKAGES_LEAN += python3-gi gir1.2-glib-2.0 xfce4-panel
SUDO := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)

PREFIX ?= /usr/local
DESTDIR ?=
# The release binaries carry the Swift runtime, and the CLI is a static executable (Package.swift
# links it so only when SYNCBADGE_STATIC_CLI=1: that flag needs --static-swift-stdlib). Every
# release invocation exports it, so that they all read the manifest the same way.
RELEASE_FLAGS = -c release --static-swift-stdlib $(SWIFT_FLAGS)
release install install-files bench bench-fm reliability: export SYNCBADGE_STATIC_CLI = 1
BIN := $(DESTDIR)$(PREFIX)/bin
SHARE := $(DESTDIR)$(PREFIX)/share
UNITS := $(DESTDIR)$(PREFIX)/lib/systemd/user

.PHONY: all deps build test test-python test-filemanagers test-tray screenshot-tray test-repeat demo clean release install uninstall bench reliability fuzz \
  install-filemanagers install-user uninstall-filemanagers uninstall-user screenshots \
  dolphin test-dolphin test-vifm test-units unit-scores install-dolphin uninstall-dolphin install-emblems \
  install-files deb root test-package diagrams install-tray uninstall-tray bench-tray bench-fm bench-fm-deps

all: build

# Installs only what is missing, so a ready machine pays nothing.
deps:
	@missing=""; lean=""; \
	for p in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	for p in $(APT_PACKAGES_LEAN); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || lean="$$lean $$p"; \
	done; \
	if [ -n "$$missing$$lean" ]; then \
	  echo "installing:$$missing$$lean"; \
	  $(SUDO) apt-get update -qq || exit 1; \
	  if [ -n "$$missing" ]; then DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing || exit 1; fi; \
	  if [ -n "$$lean" ]; then DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$lean || exit 1; fi; \
	fi

build: deps
	$(SWIFT) build $(SWIFT_FLAGS)

test: deps
	$(MAKE) test-python
	$(SWIFT) build --build-tests $(SWIFT_FLAGS)
	$(MAKE) test-filemanagers
	$(MAKE) test-dolphin
	$(MAKE) test-vifm
	$(MAKE) test-units
	$(MAKE) test-tray
	$(SWIFT) test --skip-build $(SWIFT_FLAGS)

# Nautilus, Nemo and Caja with the extension, headless, against this build's daemon
# (Examples/filemanagers/tests). Under /usr/bin/python3: the test imports gi, and the file
# managers' embedded Python takes its prefix from the first python3 on the PATH. A missing file
# manager fails the run; SYNCBADGE_FM_SKIP=nemo,caja skips those on purpose. Screenshots of a
# failing run stay in $(SCRATCH)/filemanagers-artifacts.
test-filemanagers: deps
	$(SWIFT) build $(SWIFT_FLAGS) --product syncbadged
	PATH=/usr/bin:$$PATH SYNCBADGED=$$($(SWIFT) build $(SWIFT_FLAGS) --show-bin-path)/syncbadged \
	  SYNCBADGE_FM_ARTIFACTS=$(abspath $(SCRATCH))/filemanagers-artifacts \
	  xvfb-run -a -s '-screen 0 1280x800x24' dbus-run-session -- \
	  /usr/bin/python3 -m unittest discover -s Examples/filemanagers/tests -v

# docs/images/{nautilus,nemo,caja,dolphin}.png, taken by the same test runs.
screenshots:
	$(MAKE) test-filemanagers SYNCBADGE_FM_SCREENSHOTS=$(abspath docs/images)
	$(MAKE) test-dolphin SYNCBADGE_DOLPHIN_SCREENSHOTS=$(abspath docs/images)
	$(MAKE) screenshot-tray

# docs/images/dataflow.svg from docs/dataflow.dot (docs/ARCHITECTURE.md's picture), committed so
# that the doc shows it; ArchitectureDocTests fails when the SVG lacks a node or edge of the source.
# Graphviz comes through deps, as the Debian packages' tools do, only for this target.
APT_PACKAGES_DIAGRAMS := graphviz
diagrams:
	$(MAKE) deps APT_PACKAGES="$(APT_PACKAGES_DIAGRAMS)" APT_PACKAGES_LEAN=
	dot -Tsvg docs/dataflow.dot -o docs/images/dataflow.svg

# The Dolphin plugins (Clients/dolphin), built with CMake in $(DOLPHIN_BUILD).
DOLPHIN_BUILD := $(SCRATCH)/dolphin
# KF6/Qt 6 when CMake finds KF6's KIO, else KF5/Qt 5; DOLPHIN_QT=5 or 6 on the command line forces
# either (an empty QT_MAJOR_VERSION puts CMake's choice back).
DOLPHIN_CMAKE := cmake -S Clients/dolphin -B $(DOLPHIN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -Wno-dev \
  -DQT_MAJOR_VERSION=$(if $(filter command line,$(origin DOLPHIN_QT)),$(DOLPHIN_QT))
MULTIARCH := $(shell gcc -print-multiarch 2>/dev/null)
dolphin: deps
	$(DOLPHIN_CMAKE) > /dev/null
	cmake --build $(DOLPHIN_BUILD) -j2

# The C++ codec against Tests/Vectors/wire.tsv and the overlay cache's logic (QtTest: each prints
# its Totals line), then Dolphin under Xvfb with the plugins as `make install-user` puts them,
# against this build's daemon. Screenshots of a failing run stay in $(SCRATCH)/dolphin-artifacts.
test-dolphin: dolphin
	@for t in test_wire test_cache; do \
	  out=$$($(DOLPHIN_BUILD)/bin/$$t 2>&1) || { echo "$$out"; exit 1; }; echo "$$t: $$(echo "$$out" | grep '^Totals:')"; \
	done
	$(SWIFT) build $(SWIFT_FLAGS) --product syncbadged
	PATH=/usr/bin:$$PATH SYNCBADGED=$$($(SWIFT) build $(SWIFT_FLAGS) --show-bin-path)/syncbadged \
	  SYNCBADGE_DOLPHIN_ARTIFACTS=$(abspath $(SCRATCH))/dolphin-artifacts SYNCBADGE_SCRATCH=$(abspath $(SCRATCH)) \
	  xvfb-run -a -s '-screen 0 1280x800x24' dbus-run-session -- \
	  /usr/bin/python3 -m unittest discover -s Clients/dolphin/tests -p 'test_*.py' -v

# vifm's SyncBadge column (Examples/vifm) in tmux, against this build's daemon.
test-vifm: deps
	$(SWIFT) build $(SWIFT_FLAGS) --product syncbadged
	SYNCBADGED=$$($(SWIFT) build $(SWIFT_FLAGS) --show-bin-path)/syncbadged \
	  python3 -m unittest discover -s Examples/vifm/tests -v

# The systemd user units (Examples/systemd) with their sandboxes, under a real systemd user
# manager: a container of this machine's own tree, booted by systemd-nspawn (root: through sudo
# where needed), runs this build's daemon by socket activation and both adapters
# (Tests/Units; docs/PACKAGING.md, "Hardening").
UNIT_PRODUCTS := syncbadged syncbadge syncbadge-git syncbadge-syncthing
# DIST=trixie boots the Debian 13 root of `make root` instead, with its systemd 257.
# SYNCBADGE_UNITS_EXTRA='Directive=...' adds lines to the daemon's unit, to try one.
test-units: deps
	for p in $(UNIT_PRODUCTS); do $(SWIFT) build $(SWIFT_FLAGS) --product $$p || exit 1; done
	$(if $(DIST),$(MAKE) root DIST=$(DIST))
	$(SUDO) env SYNCBADGE_BIN=$$($(SWIFT) build $(SWIFT_FLAGS) --show-bin-path) \
	  $(if $(DIST),SYNCBADGE_UNITS_TREE=$$(Tests/Packaging/debian-root.sh $(DIST))) \
	  SYNCBADGE_UNITS_EXTRA="$$SYNCBADGE_UNITS_EXTRA" python3 -m unittest discover -s Tests/Units -v

# The units' exposure scores, as written and as each release's user manager applies them
# (docs/PACKAGING.md, "Hardening"): Debian 12's systemd here, Debian 13's in its root.
unit-scores:
	Tests/Units/scores.sh
	$(MAKE) root DIST=trixie
	Tests/Packaging/in-root.sh trixie Tests/Units/scores.sh
# syncbadge-tray (Clients/tray/tests): its model alone, then the tray on a session bus of its
# own against this build's daemon and an engine, with a StatusNotifierWatcher, a notification
# server and a file manager played by the test, then under Xvfb in a real xfce4-panel.
# Under /usr/bin/python3, which has gi.
test-tray: deps
	$(SWIFT) build $(SWIFT_FLAGS) --product syncbadged
	SYNCBADGED=$$($(SWIFT) build $(SWIFT_FLAGS) --show-bin-path)/syncbadged \
	  SYNCBADGE_TRAY_ARTIFACTS=$(abspath $(SCRATCH))/tray-artifacts \
	  xvfb-run -a -s '-screen 0 900x560x24' dbus-run-session -- \
	  /usr/bin/python3 -m unittest discover -s Clients/tray/tests -v

# docs/images/tray.png: xfce4-panel with the tray's icon and its menu open, taken by test-tray's
# panel test.
screenshot-tray:
	$(MAKE) test-tray SYNCBADGE_TRAY_SCREENSHOT=$(abspath docs/images/tray.png)

# The Python client package (Clients/python), and the shell prompts' and the C helpers' codecs,
# against Tests/Vectors/wire.tsv and a fake daemon: standard library unittest, any python3 >= 3.9,
# no Swift build. A shell that is not installed is skipped (and says so).
test-python:
	cd Clients/python && python3 -m unittest discover -s tests -v

# The whole suite N times on one debug build: each test that failed at least once, how often,
# then `N passed, M failed` counting runs. Run it before resolving anything that touched tests,
# timing or concurrency: a test that fails once in 20 is a defect.
N ?= 20
test-repeat: deps
	$(SWIFT) build --build-tests $(SWIFT_FLAGS)
	python3 Tests/repeat.py -n $(N) --swift $(SWIFT) --scratch $(SCRATCH) --also test-python --also test-filemanagers \
	  --also test-dolphin --also test-vifm --also test-units --also test-tray

# The demo installs only what it uses: the libraries the Swift build links, git (SwiftPM fetches
# the dependencies with it) and the example engine's rsync and python3; no file manager, X
# server or KDE (make test installs those). What the Swift toolchain itself needs (a C library
# and linker, as its install instructions list) comes with it.
APT_PACKAGES_DEMO := libinotifytools0-dev libsqlite3-dev git rsync python3
demo:
	$(MAKE) deps APT_PACKAGES="$(APT_PACKAGES_DEMO)" APT_PACKAGES_LEAN=
	$(SWIFT) build $(SWIFT_FLAGS)
	@Examples/demo/demo.sh

# The release binaries' directory; `make deb DIST=trixie` names the host's to debian/rules in its root.
RELEASE_BIN ?= $$($(SWIFT) build $(RELEASE_FLAGS) --show-bin-path)

# Performance: the in-process figures (ordo-one/benchmark, its own package so that `make test`
# never builds it), then every system figure against its baseline (Benchmarks/README.md).
# BENCH_ARGS=--quick for a smoke run.
BENCH_SCRATCH ?= .build-bench
bench: release
	$(SWIFT) package --package-path Benchmarks --scratch-path $(BENCH_SCRATCH) benchmark --no-progress
	SYNCBADGE_BIN=$(RELEASE_BIN) Benchmarks/run.sh $(BENCH_ARGS)
	$(MAKE) bench-fm SYNCBADGED=$(RELEASE_BIN)/syncbadged

# The file managers side by side (Benchmarks/filemanagers, issue 40): Nautilus, Nemo, Caja and Dolphin
# (--fm dolphin for it alone) under Xvfb with SyncBadge's extension against the real daemon, Nextcloud's extension against a stand-in
# for its client's socket, and no extension, in the same run; the table on stdout, rows as JSON and
# the stall timeline's plot in Benchmarks/results (fm-latest.{md,json}, fm-stalls.png). QUICK=1:
# one run, 20,000 files and the 10,000-file tree in icon view, shorter trickle. BENCH_FM_ARGS passes
# more (--fm nautilus --sizes 20000 --views list --runs 5 --plot docs/images/fm-stalls.png --keep).
# The daemon: SYNCBADGED, else this checkout's release build, built (or found up to date) first:
# a release binary left from an older commit would be measured as this one.
# matplotlib draws the plot, perf splits CPU by library with --perf (APT_PACKAGES_BENCH, out of make
# test's list). Nextcloud's extensions
# come out of Debian's nautilus-nextcloud, nemo-nextcloud and caja-nextcloud .debs (apt-get
# download, dpkg-deb -x into $(NEXTCLOUD_EXT)): installing them would pull nextcloud-desktop, which
# Nautilus would then start over D-Bus for every side.
APT_PACKAGES_BENCH := python3-matplotlib linux-perf
NEXTCLOUD_DEBS := nautilus-nextcloud nemo-nextcloud caja-nextcloud
# Dolphin's (Benchmarks/filemanagers/dolphinfm.py): its plugins, found through each side's own
# QT_PLUGIN_PATH, and their helper library.
NEXTCLOUD_DEBS += dolphin-nextcloud
NEXTCLOUD_EXT := $(SCRATCH)/nextcloud-ext
bench-fm-deps: deps
	$(MAKE) deps APT_PACKAGES="$(APT_PACKAGES_BENCH)" APT_PACKAGES_LEAN=
	@if [ ! -f $(NEXTCLOUD_EXT)/usr/share/caja-python/extensions/syncstate-Nextcloud.py ] || \
	    [ ! -f $(NEXTCLOUD_EXT)/usr/share/nemo-python/extensions/syncstate-Nextcloud.py ] || \
	    [ ! -f $(NEXTCLOUD_EXT)/usr/share/nautilus-python/extensions/syncstate-Nextcloud.py ] || \
	    [ -z "$$(ls $(NEXTCLOUD_EXT)/usr/lib/*/qt*/plugins/kf*/overlayicon/nextclouddolphinoverlayplugin.so 2>/dev/null)" ]; then \
	  rm -rf $(SCRATCH)/nextcloud-debs && mkdir -p $(SCRATCH)/nextcloud-debs $(NEXTCLOUD_EXT) && \
	  (cd $(SCRATCH)/nextcloud-debs && { apt-get download $(NEXTCLOUD_DEBS) 2>/dev/null || \
	    { $(SUDO) apt-get update -qq && apt-get download $(NEXTCLOUD_DEBS); }; }) || exit 1; \
	  for deb in $(SCRATCH)/nextcloud-debs/*.deb; do dpkg-deb -x $$deb $(NEXTCLOUD_EXT) || exit 1; done; \
	  echo "Nextcloud's extensions in $(NEXTCLOUD_EXT)"; \
	fi

bench-fm: bench-fm-deps
	@bin="$(SYNCBADGED)"; \
	if [ -z "$$bin" ]; then $(SWIFT) build $(RELEASE_FLAGS) --product syncbadged || exit 1; \
	  bin=$$($(SWIFT) build $(RELEASE_FLAGS) --show-bin-path)/syncbadged; fi; \
	PATH=/usr/bin:$$PATH SYNCBADGED=$$bin NEXTCLOUD_EXT=$(abspath $(NEXTCLOUD_EXT)) \
	  xvfb-run -a -s '-screen 0 1280x800x24' /usr/bin/python3 Benchmarks/filemanagers/fm_bench.py \
	  $(if $(filter 1,$(QUICK)),--quick) $(BENCH_FM_ARGS)

# syncbadge-tray at scale and at idle (Benchmarks/scripts/tray_bench.py): a root of 1,001,000
# files with 1,000 conflicts, spread and clustered; the tray's CPU and RSS for its walk, then its
# wake-ups over an idle minute. TRAY_BENCH_ARGS=--top 1 --sub 9 --files 100 --problems 10 --idle 5
# for a smoke run.
bench-tray: deps
	$(SWIFT) build $(SWIFT_FLAGS) --product syncbadged
	SYNCBADGED=$$($(SWIFT) build $(SWIFT_FLAGS) --show-bin-path)/syncbadged \
	  dbus-run-session -- /usr/bin/python3 Benchmarks/scripts/tray_bench.py $(TRAY_BENCH_ARGS)

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
	  $$(find Sources/SyncBadgeProtocol Sources/SyncBadgeCore -name "*.swift" | sort) Fuzz/FuzzChecks.swift Fuzz/FuzzMain.swift -o $(FUZZ_DIR)/fuzz-codec
	$(FUZZ_DIR)/fuzz-codec -max_total_time=$(SECONDS) -runs=$(RUNS) $(FUZZ_ARGS) -print_final_stats=1 -artifact_prefix=$(FUZZ_DIR)/ \
	  $(FUZZ_DIR)/corpus Fuzz/corpus

# Release binaries with the Swift runtime linked in: no shared Swift libraries to load, so
# `syncbadge status` starts fast.
release: deps
	# Our products by name: building every product would also link dependencies' dynamic
	# library products (as GRDB's libGRDB-dynamic.so did), which cannot take a static Swift runtime.
	for product in syncbadged syncbadge syncbadge-soak syncbadge-syncthing syncbadge-git syncbadge-rclone; do $(SWIFT) build $(RELEASE_FLAGS) --product $$product || exit 1; done
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
	for tool in syncbadge syncbadged syncbadge-syncthing syncbadge-git syncbadge-rclone; do \
	  "$$($(SWIFT) build $(RELEASE_FLAGS) --show-bin-path)/generate-manual" \
	    "$$($(SWIFT) build $(RELEASE_FLAGS) --show-bin-path)/$$tool" --multi-page --output-directory $(SCRATCH)/man; \
	done

install: release
	$(MAKE) install-files

# What `install` copies, from the release build already made (debian/rules runs it with
# PREFIX=/usr DESTDIR=debian/tmp FM_ALL=1, docs/PACKAGING.md).
install-files:
	install -d $(BIN) $(SHARE)/syncbadge/badges $(SHARE)/syncbadge/prompt $(SHARE)/syncbadge/ranger \
	  $(SHARE)/syncbadge/providers $(SHARE)/syncbadge/python/syncbadge $(UNITS) $(SHARE)/man/man1 \
	  $(SHARE)/bash-completion/completions $(SHARE)/zsh/site-functions $(SHARE)/fish/vendor_completions.d
	# Stripped: the debug information is most of a static binary's size.
	install -s -m 755 $(RELEASE_BIN)/syncbadged $(BIN)/syncbadged
	install -s -m 755 $(RELEASE_BIN)/syncbadge $(BIN)/syncbadge
	install -s -m 755 $(RELEASE_BIN)/syncbadge-syncthing $(BIN)/syncbadge-syncthing
	install -s -m 755 $(RELEASE_BIN)/syncbadge-git $(BIN)/syncbadge-git
	install -s -m 755 $(RELEASE_BIN)/syncbadge-rclone $(BIN)/syncbadge-rclone
	install -m 644 Badges/badges.tsv Badges/*.svg $(SHARE)/syncbadge/badges/
	install -D -m 644 Badges/rclone/cloud.svg $(SHARE)/syncbadge/rclone/cloud.svg
	install -m 644 Examples/prompt/syncbadge.* $(SHARE)/syncbadge/prompt/
	install -m 644 Examples/ranger/syncbadge.py $(SHARE)/syncbadge/ranger/
	# The Python client package, which the ranger plugin and the engine find at ../python.
	install -m 644 Clients/python/syncbadge/*.py $(SHARE)/syncbadge/python/syncbadge/
	install -m 755 Examples/providers/shell-mirror.sh Examples/providers/rsync-mirror/rsync_mirror.py $(SHARE)/syncbadge/providers/
	sed 's|@BINDIR@|$(PREFIX)/bin|' Examples/systemd/syncbadged.service > $(UNITS)/syncbadged.service
	install -m 644 Examples/systemd/syncbadged.socket $(UNITS)/syncbadged.socket
	sed 's|@BINDIR@|$(PREFIX)/bin|' Examples/systemd/syncbadge-syncthing.service > $(UNITS)/syncbadge-syncthing.service
	sed 's|@BINDIR@|$(PREFIX)/bin|' Examples/systemd/syncbadge-git.service > $(UNITS)/syncbadge-git.service
	sed 's|@BINDIR@|$(PREFIX)/bin|' Examples/systemd/syncbadge-rclone@.service > $(UNITS)/syncbadge-rclone@.service
	$(BIN)/syncbadge --generate-completion-script bash > $(SHARE)/bash-completion/completions/syncbadge
	$(BIN)/syncbadge --generate-completion-script zsh > $(SHARE)/zsh/site-functions/_syncbadge
	$(BIN)/syncbadge --generate-completion-script fish > $(SHARE)/fish/vendor_completions.d/syncbadge.fish
	install -m 644 $(SCRATCH)/man/*.1 $(SHARE)/man/man1/
	$(MAKE) install-filemanagers PREFIX=$(PREFIX) DESTDIR=$(DESTDIR)
	$(MAKE) install-dolphin PREFIX=$(PREFIX) DESTDIR=$(DESTDIR)
	$(MAKE) install-vifm VIFM_SHARE=$(SHARE)
	$(MAKE) install-tray PREFIX=$(PREFIX) DESTDIR=$(DESTDIR)
	@echo "installed under $(DESTDIR)$(PREFIX); enable on demand start with: systemctl --user enable --now syncbadged.socket"
	@echo "with Syncthing: systemctl --user enable --now syncbadge-syncthing.service"
	@echo "with git: syncbadge-git add DIR, then systemctl --user enable --now syncbadge-git.service"
	@echo "with an rclone mount at DIR: systemctl --user enable --now syncbadge-rclone@\$$(systemd-escape --path DIR).service"

# The file-manager extension: the file and the Python package under $(SHARE)/syncbadge, a link in
# the extension directory of each file manager on this machine (Nemo and Caja read only
# /usr/share and the user's own ~/.local/share, Nautilus every $$XDG_DATA_DIRS entry), and the
# badges as emblem icons `emblem-syncbadge-<id>`: the SVG plus PNGs rendered by rsvg-convert.
FM_SHARE ?= $(SHARE)
FM_EXT_SHARE ?= $(if $(filter $(HOME)/%,$(PREFIX)),$(FM_SHARE),$(if $(filter /usr,$(PREFIX)),$(FM_SHARE),$(DESTDIR)/usr/share))
EMBLEM_SIZES := 16 22 24 32 48 64
# The icon cache of a theme directory that has one (/usr/share/icons/hicolor): GTK ignores a
# cache older than its directory, so a directory without an index.theme gets none.
ICON_CACHE = @if command -v gtk-update-icon-cache >/dev/null && [ -f $(FM_SHARE)/icons/hicolor/index.theme ]; then \
	  gtk-update-icon-cache -q -f $(FM_SHARE)/icons/hicolor; fi
install-filemanagers:
	install -d $(FM_SHARE)/syncbadge/filemanagers $(FM_SHARE)/syncbadge/python/syncbadge
	install -m 644 Examples/filemanagers/syncbadge_fm.py $(FM_SHARE)/syncbadge/filemanagers/
	install -m 644 Clients/python/syncbadge/*.py $(FM_SHARE)/syncbadge/python/syncbadge/
	@for fm in nautilus nemo caja; do \
	  if command -v $$fm >/dev/null 2>&1 || [ -n "$(FM_ALL)" ]; then \
	    if [ $$fm = nautilus ]; then dir=$(FM_SHARE)/nautilus-python/extensions; else dir=$(FM_EXT_SHARE)/$$fm-python/extensions; fi; \
	    install -d $$dir && ln -sfn "$$(realpath -m --relative-to=$$dir $(FM_SHARE)/syncbadge/filemanagers/syncbadge_fm.py)" $$dir/syncbadge_fm.py && \
	    echo "extension for $$fm: $$dir/syncbadge_fm.py"; \
	  fi; \
	done
	$(MAKE) install-emblems FM_SHARE=$(FM_SHARE)
	@echo "emblems in $(FM_SHARE)/icons/hicolor; restart the file manager (nautilus -q, nemo --quit, caja -q)"

# The badges as emblem icons emblem-syncbadge-<id> in $(FM_SHARE)/icons/hicolor (GTK and Dolphin).
install-emblems:
	@command -v rsvg-convert >/dev/null || { echo "rsvg-convert is missing (apt-get install librsvg2-bin)" >&2; exit 1; }
	install -d $(FM_SHARE)/icons/hicolor/scalable/emblems
	@grep -v "^#" Badges/badges.tsv | while IFS='	' read -r id label glyph ascii color image; do \
	  [ -n "$$id" ] || continue; \
	  install -m 644 Badges/$$image $(FM_SHARE)/icons/hicolor/scalable/emblems/emblem-syncbadge-$$id.svg || exit 1; \
	  for size in $(EMBLEM_SIZES); do \
	    install -d $(FM_SHARE)/icons/hicolor/$${size}x$${size}/emblems; \
	    rsvg-convert -w $$size -h $$size -o $(FM_SHARE)/icons/hicolor/$${size}x$${size}/emblems/emblem-syncbadge-$$id.png Badges/$$image || exit 1; \
	  done; \
	done
	$(ICON_CACHE)

# The Dolphin plugins into $(DOLPHIN_PLUGINDIR)/kfN/{overlayicon,kfileitemaction}, N the KDE
# Frameworks CMake builds against (KF6 when found, else KF5: Clients/dolphin/CMakeLists.txt): Qt's own plugin directory (`qtpaths --plugin-dir`, qtpaths6
# for Qt 6, or qmake's answer where qtpaths is not installed), or
# $(PREFIX)/lib/<multiarch>/qtN/plugins for a prefix in your home (QT_PLUGIN_PATH finds it,
# README.md). Without the KDE Frameworks development files this says so and installs nothing.
# What CMake chose, asked once (it configures the build directory) and only when needed.
DOLPHIN_QT = $(eval DOLPHIN_QT := $$(shell $$(DOLPHIN_CMAKE) > /dev/null 2>&1 && cat $$(DOLPHIN_BUILD)/qt-major))$(DOLPHIN_QT)
DOLPHIN_QT_SUFFIX = $(if $(filter 6,$(DOLPHIN_QT)),6)
DOLPHIN_PLUGINDIR ?= $(if $(filter $(HOME)/%,$(PREFIX)),$(DESTDIR)$(PREFIX)/lib/$(MULTIARCH)/qt$(DOLPHIN_QT)/plugins,$(DESTDIR)$(shell \
  qtpaths$(DOLPHIN_QT_SUFFIX) --plugin-dir 2>/dev/null || qmake$(DOLPHIN_QT_SUFFIX) -query QT_INSTALL_PLUGINS 2>/dev/null))
KF := kf$(DOLPHIN_QT)
install-dolphin:
	@mkdir -p $(SCRATCH); \
	if ! $(DOLPHIN_CMAKE) > $(SCRATCH)/dolphin-cmake.log 2>&1 || [ -z "$(DOLPHIN_QT)" ] || [ -z "$(DOLPHIN_PLUGINDIR)" ]; then \
	  echo "Dolphin plugins skipped: no KDE Frameworks development files (apt-get install libkf5kio-dev extra-cmake-modules qtbase5-dev cmake g++, on Debian 13 libkf6kio-dev qt6-base-dev; $(SCRATCH)/dolphin-cmake.log says more)"; \
	  exit 0; \
	fi; \
	cmake --build $(DOLPHIN_BUILD) -j2 > $(SCRATCH)/dolphin-build.log 2>&1 || { cat $(SCRATCH)/dolphin-build.log; exit 1; }; \
	install -d $(DOLPHIN_PLUGINDIR)/$(KF)/overlayicon $(DOLPHIN_PLUGINDIR)/$(KF)/kfileitemaction && \
	install -s -m 644 $(DOLPHIN_BUILD)/bin/$(KF)/overlayicon/syncbadge_overlay.so $(DOLPHIN_PLUGINDIR)/$(KF)/overlayicon/ && \
	install -s -m 644 $(DOLPHIN_BUILD)/bin/$(KF)/kfileitemaction/syncbadge_actions.so $(DOLPHIN_PLUGINDIR)/$(KF)/kfileitemaction/ && \
	echo "Dolphin plugins ($(KF)) in $(DOLPHIN_PLUGINDIR)/$(KF)/{overlayicon,kfileitemaction}; restart Dolphin"

uninstall-dolphin:
	rm -f $(DOLPHIN_PLUGINDIR)/$(KF)/overlayicon/syncbadge_overlay.so $(DOLPHIN_PLUGINDIR)/$(KF)/kfileitemaction/syncbadge_actions.so

# vifm's column (Examples/vifm): the plugin and its helper under $(VIFM_SHARE)/syncbadge/vifm
# (the helper finds the Python package at ../../python); README there says how vifm loads it.
VIFM_SHARE ?= $(SHARE)
install-vifm:
	install -d $(VIFM_SHARE)/syncbadge/vifm/syncbadge $(VIFM_SHARE)/syncbadge/python/syncbadge
	install -m 644 Examples/vifm/syncbadge/init.lua $(VIFM_SHARE)/syncbadge/vifm/syncbadge/
	install -m 755 Examples/vifm/syncbadge/syncbadge-vifm $(VIFM_SHARE)/syncbadge/vifm/syncbadge/
	install -m 644 Clients/python/syncbadge/*.py $(VIFM_SHARE)/syncbadge/python/syncbadge/

# syncbadge-tray (Clients/tray): the program in $(BIN), its modules under $(SHARE)/syncbadge/tray
# (it finds them, and the Python package at ../share/syncbadge/python or installed, from its own
# place), the man page, and the XDG autostart entry in $(SYSCONFDIR)/xdg/autostart, which starts
# it at every user's login.
SYSCONFDIR ?= /etc
install-tray:
	install -d $(BIN) $(SHARE)/syncbadge/tray/syncbadge_tray $(SHARE)/man/man1 $(DESTDIR)$(SYSCONFDIR)/xdg/autostart
	install -m 755 Clients/tray/syncbadge-tray $(BIN)/syncbadge-tray
	install -m 644 Clients/tray/syncbadge_tray/*.py $(SHARE)/syncbadge/tray/syncbadge_tray/
	install -m 644 Clients/tray/syncbadge-tray.1 $(SHARE)/man/man1/
	install -m 644 Clients/tray/syncbadge-tray.desktop $(DESTDIR)$(SYSCONFDIR)/xdg/autostart/

uninstall-tray:
	rm -f $(BIN)/syncbadge-tray $(SHARE)/man/man1/syncbadge-tray.1 $(DESTDIR)$(SYSCONFDIR)/xdg/autostart/syncbadge-tray.desktop
	rm -rf $(SHARE)/syncbadge/tray

# The extension and the emblems into your own ~/.local/share, the Dolphin plugins into
# $(USER_PREFIX)/lib/<multiarch>/qtN/plugins (~/.local unless PREFIX=P is given; the emblems also go
# to P/share then) and vifm's column: nothing else (no Swift build).
USER_SHARE := $(or $(XDG_DATA_HOME),$(HOME)/.local/share)
USER_PREFIX := $(if $(filter command line,$(origin PREFIX)),$(PREFIX),$(HOME)/.local)
install-user:
	$(MAKE) install-filemanagers FM_SHARE=$(USER_SHARE) FM_EXT_SHARE=$(USER_SHARE)
	$(MAKE) install-dolphin DOLPHIN_PLUGINDIR=$(USER_PREFIX)/lib/$(MULTIARCH)/qt$(DOLPHIN_QT)/plugins
	@if [ "$(abspath $(USER_PREFIX)/share)" != "$(abspath $(USER_SHARE))" ]; then $(MAKE) install-emblems FM_SHARE=$(USER_PREFIX)/share; fi
	$(MAKE) install-vifm VIFM_SHARE=$(USER_SHARE)

uninstall-user:
	$(MAKE) uninstall-filemanagers FM_SHARE=$(USER_SHARE) FM_EXT_SHARE=$(USER_SHARE)
	$(MAKE) uninstall-dolphin DOLPHIN_PLUGINDIR=$(USER_PREFIX)/lib/$(MULTIARCH)/qt$(DOLPHIN_QT)/plugins
	rm -rf $(USER_SHARE)/syncbadge/vifm
	@# The Python package too, unless `make install` put more there (the ranger plugin uses it).
	@if [ "$$(ls $(USER_SHARE)/syncbadge 2>/dev/null)" = python ]; then rm -rf $(USER_SHARE)/syncbadge; fi

uninstall-filemanagers:
	rm -f $(FM_SHARE)/nautilus-python/extensions/syncbadge_fm.py $(FM_EXT_SHARE)/nemo-python/extensions/syncbadge_fm.py \
	  $(FM_EXT_SHARE)/caja-python/extensions/syncbadge_fm.py
	rm -f $(FM_SHARE)/icons/hicolor/*/emblems/emblem-syncbadge-*
	rm -rf $(FM_SHARE)/syncbadge/filemanagers
	$(ICON_CACHE)

uninstall: uninstall-filemanagers uninstall-dolphin uninstall-tray
	rm -f $(BIN)/syncbadged $(BIN)/syncbadge $(BIN)/syncbadge-syncthing $(UNITS)/syncbadged.service $(UNITS)/syncbadged.socket \
	  $(UNITS)/syncbadge-syncthing.service $(BIN)/syncbadge-git $(UNITS)/syncbadge-git.service \
	  $(BIN)/syncbadge-rclone $(UNITS)/syncbadge-rclone@.service
	rm -f $(SHARE)/bash-completion/completions/syncbadge $(SHARE)/zsh/site-functions/_syncbadge \
	  $(SHARE)/fish/vendor_completions.d/syncbadge.fish
	rm -f $(SHARE)/man/man1/syncbadge.1 $(SHARE)/man/man1/syncbadge.*.1 $(SHARE)/man/man1/syncbadged.1 \
	  $(SHARE)/man/man1/syncbadged.*.1 $(SHARE)/man/man1/syncbadge-syncthing.1 \
	  $(SHARE)/man/man1/syncbadge-syncthing.*.1 $(SHARE)/man/man1/syncbadge-git.1 $(SHARE)/man/man1/syncbadge-git.*.1 \
	  $(SHARE)/man/man1/syncbadge-rclone.1 $(SHARE)/man/man1/syncbadge-rclone.*.1
	rm -rf $(SHARE)/syncbadge

# Debian packages into dist/ (docs/PACKAGING.md): dpkg-buildpackage and debhelper over the same
# `make release` and `make install-files` as `make install`, in $(SCRATCH), so a release build
# made there before is reused. The Swift toolchain must be on the PATH (Debian has none).
# Dolphin's package is built when Clients/dolphin is there, the git adapter's when
# `make release` builds syncbadge-git (build profiles pkg.syncbadge.dolphin, pkg.syncbadge.git).
# DIST=trixie: the packages for Debian 13 into dist/trixie, built by dpkg-buildpackage in the
# Debian 13 root of `make root` (KF6 Dolphin plugins compiled there, dpkg-shlibdeps against its
# libraries), with the Swift binaries of this machine's `make release` (static Swift runtime: they
# need only glibc, SQLite and libinotifytools, which Debian 13 has).
APT_PACKAGES_DEB := debhelper dh-python dpkg-dev fakeroot lintian python3 librsvg2-bin
DEB_PROFILES = $(subst $(eval) ,$(comma),$(strip \
  $(if $(wildcard Clients/dolphin/CMakeLists.txt),pkg.syncbadge.dolphin) \
  $(if $(shell sed -n '/^release:/,/^$$/p' Makefile | grep syncbadge-git),pkg.syncbadge.git)))
comma := ,
DIST ?=
DEB_DIR = dist$(if $(DIST),/$(DIST))
# In the root: the host's release binaries and man pages (the checkout is at the same path there),
# the Dolphin plugins in a build directory of their own (the host's is KF5).
DEB_RULES_ARGS = $(if $(DIST),RELEASE_BIN=$(abspath $(shell $(SWIFT) build $(RELEASE_FLAGS) --show-bin-path)) DOLPHIN_BUILD=$(SCRATCH)/dolphin-$(DIST))
DPKG_BUILDPACKAGE = dpkg-buildpackage -b -us -uc $(if $(DEB_PROFILES),-P$(DEB_PROFILES)) \
  --buildinfo-option=-u$(DEB_DIR) --buildinfo-file=$(DEB_DIR)/syncbadge.buildinfo \
  --changes-option=-u$(DEB_DIR) --changes-file=$(DEB_DIR)/syncbadge.changes \
  --rules-file='debian/rules SCRATCH=$(SCRATCH) DEB_DIR=$(DEB_DIR) $(DEB_RULES_ARGS)'
# deps first: dpkg-buildpackage checks the build dependencies before debian/rules runs.
deb:
ifeq ($(DIST),)
	$(MAKE) deps
	$(MAKE) deps APT_PACKAGES="$(APT_PACKAGES_DEB)" APT_PACKAGES_LEAN=
	rm -f dist/*.deb dist/syncbadge.buildinfo dist/syncbadge.changes && mkdir -p dist
	$(DPKG_BUILDPACKAGE)
else
	$(MAKE) release
	$(MAKE) root DIST=$(DIST)
	rm -rf $(DEB_DIR) && mkdir -p $(DEB_DIR)
	Tests/Packaging/in-root.sh $(DIST) $(DPKG_BUILDPACKAGE)
endif
	@ls -l $(DEB_DIR)/*.deb

# A minimal Debian root of release DIST (default trixie, Debian 13) with what `make deb DIST=...`
# and `make test-package DIST=...` need in it (Tests/Packaging/$(DIST).packages), built by
# mmdebstrap from the archive this machine's apt configuration names, cached in
# /var/cache/syncbadge and rebuilt only when that list changes (Tests/Packaging/debian-root.sh).
APT_PACKAGES_ROOT := mmdebstrap
root:
	$(MAKE) deps APT_PACKAGES="$(APT_PACKAGES_ROOT)" APT_PACKAGES_LEAN=
	Tests/Packaging/debian-root.sh $(or $(DIST),trixie)

# The packages installed with apt, used, and purged (Tests/Packaging/test-package.sh): it changes
# the system's packages, so it runs only with CI=true or SYNCBADGE_TEST_PACKAGE=1.
# DIST=trixie: `make deb DIST=trixie`, then the same test in a throwaway overlay of the Debian 13
# root (nothing of the host's packages changes, so it needs neither), with the file managers' own
# tests against the installed packages under Xvfb there, whose windows become
# docs/images/dolphin-kf6.png and nautilus-48.png; then the user units under a real systemd in the
# root booted by systemd-nspawn (Tests/Packaging/booted-units.sh; SYNCBADGE_NO_BOOT=1 skips that
# on a machine that cannot boot one).
# Without DIST, after that: issue 39's "as a new user would" (Tests/Packaging/rclone-new-user.sh):
# this machine's root booted by systemd-nspawn on a throwaway overlay, the packages installed there,
# a new user's rclone mount and syncbadge-rclone@ unit, a copied file pending, syncing and synced
# in `syncbadge ls` and in Nautilus, whose window becomes docs/images/rclone-nautilus.png.
test-package:
ifeq ($(DIST),)
	SCRATCH=$(SCRATCH) MAKE="$(MAKE)" Tests/Packaging/test-package.sh
	$(if $(SYNCBADGE_NO_BOOT),@echo "SYNCBADGE_NO_BOOT: the rclone adapter as a new user has it not tested",$(SUDO) Tests/Packaging/rclone-new-user.sh $(DEB_DIR) docs/images/rclone-nautilus.png)
else
	$(MAKE) deb DIST=$(DIST)
	rm -rf $(SCRATCH)/screenshots-$(DIST) && mkdir -p $(SCRATCH)/screenshots-$(DIST)
	SYNCBADGE_TEST_PACKAGE=1 SYNCBADGE_DEB_DIR=$(DEB_DIR) SYNCBADGE_TEST_GUI=1 \
	  SYNCBADGE_SCREENSHOTS=$(abspath $(SCRATCH))/screenshots-$(DIST) \
	  Tests/Packaging/in-root.sh $(DIST) env SCRATCH=$(SCRATCH) Tests/Packaging/test-package.sh
	$(if $(SYNCBADGE_NO_BOOT),@echo "SYNCBADGE_NO_BOOT: the units under a booted systemd not tested",Tests/Packaging/booted-units.sh $(DIST) $(DEB_DIR))
	$(if $(filter trixie,$(DIST)),cp $(SCRATCH)/screenshots-$(DIST)/dolphin.png docs/images/dolphin-kf6.png && \
	  cp $(SCRATCH)/screenshots-$(DIST)/nautilus.png docs/images/nautilus-48.png)
endif

clean:
	rm -rf $(SCRATCH)
