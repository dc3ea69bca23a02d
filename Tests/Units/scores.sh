#!/usr/bin/env bash
# scores.sh: the exposure score of each user unit in Examples/systemd, as this machine's
# `systemd-analyze security --offline=true --user` gives it (docs/PACKAGING.md, "Hardening"),
# and what the user manager of this systemd really applies of it: the same unit without the
# directives it cannot apply. `make unit-scores` runs it here and in the Debian 13 root.
#
# What a user manager cannot apply (Tests/Units/test_units.py shows it):
# - the BPF ones (IPAddressAllow=, IPAddressDeny=, DevicePolicy=, DeviceAllow=): attaching a
#   cgroup BPF program needs privileges no user manager has;
# - before systemd 257, every directive that needs a mount, network, IPC or UTS namespace:
#   252 makes none for a user unit without PrivateUsers=.
set -euo pipefail
units=$(cd "$(dirname "$0")/../../Examples/systemd" && pwd)
version=$(systemd-analyze --version | awk 'NR == 1 { print $2 }')
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export XDG_RUNTIME_DIR=$tmp

bpf='^(IPAddressAllow|IPAddressDeny|DevicePolicy|DeviceAllow)='
namespaces='^(ProtectSystem|ProtectHome|ReadWritePaths|ReadOnlyPaths|PrivateTmp|PrivateNetwork|PrivateIPC|PrivateMounts|ProtectHostname|ProtectKernelTunables|ProtectControlGroups|ProtectProc|ProcSubset)='
score() {
  systemd-analyze security --offline=true --user "$1" 2>&1 | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p'
}

printf '%-32s %8s %8s\n' "unit (systemd $version)" "scored" "applied"
for unit in "$units"/*.service; do
  name=$(basename "$unit")
  mkdir -p "$tmp/scored" "$tmp/applied"
  sed 's|@BINDIR@|/usr/bin|' "$unit" > "$tmp/scored/$name"
  if [ "$version" -lt 257 ]; then drop="$bpf|$namespaces"; else drop=$bpf; fi
  grep -Ev "$drop" "$tmp/scored/$name" > "$tmp/applied/$name"
  printf '%-32s %8s %8s\n' "$name" "$(score "$tmp/scored/$name")" "$(score "$tmp/applied/$name")"
done
