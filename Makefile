# SyncBadge: `make demo` and `make test` do all set-up on a fresh Debian machine.
SHELL := /bin/bash
SWIFT ?= swift
# libinotifytools (no pkg-config file), SQLite for GRDB, inotify-tools for comparisons,
# socat for poking at the socket by hand.
APT_PACKAGES := libinotifytools0-dev inotify-tools libsqlite3-dev socat
SUDO := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)

.PHONY: all deps build test demo clean

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
	$(SWIFT) build

test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

demo: build
	@Examples/demo/demo.sh

clean:
	rm -rf .build
