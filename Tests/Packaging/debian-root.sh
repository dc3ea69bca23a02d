#!/usr/bin/env bash
# debian-root.sh DIST: a minimal Debian root of release DIST (trixie) built by mmdebstrap from the
# Debian archive this machine's apt configuration names, with the packages of
# Tests/Packaging/DIST.packages (without recommends). Prints the root's path.
#
# The root is cached in $SYNCBADGE_ROOT_CACHE (/var/cache/syncbadge), outside the checkout, in a
# directory named by a hash of its package list, the mirror and this script: it is built once per
# machine and rebuilt only when one of those changes (older roots stay: see the end). It is
# built in DIR.tmp and renamed when complete, so an interrupted build is never used. mmdebstrap
# runs in a mount namespace of its own: whatever it mounts in the root goes when it ends, on
# every path out, and nothing on the host outside the cache changes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dist=${1:?usage: debian-root.sh DIST}
list="$here/$dist.packages"
cache=${SYNCBADGE_ROOT_CACHE:-/var/cache/syncbadge}

die() { echo "debian-root.sh: cannot build the Debian $dist root: $*" >&2; exit 1; }
[ -f "$list" ] || die "no package list $list"
[ "$(id -u)" -eq 0 ] || die "mmdebstrap needs root here (it mounts /proc and /dev in the root)"
command -v mmdebstrap > /dev/null || die "mmdebstrap is not installed (make deps APT_PACKAGES=mmdebstrap)"

# The Debian archive of this machine's apt sources (not its security archive), as apt sees them.
mirror=$(apt-get indextargets --format '$(REPO_URI) $(ORIGIN)' 'Created-By: Packages' 2>/dev/null |
  awk '$2 == "Debian" && $1 !~ /security/ { print $1; exit }')
if [ -z "$mirror" ]; then
  mirror=$(apt-get indextargets --format '$(REPO_URI)' 'Created-By: Packages' 2>/dev/null | grep -v security | head -1)
fi
[ -n "$mirror" ] || die "this machine's apt configuration names no Debian archive (apt-get update first?)"

packages=$(sed 's/#.*//' "$list" | xargs)
# How the root is made, beside its package list and mirror, in its cache key: change this line
# with mmdebstrap's options below.
recipe="mmdebstrap --variant=apt --mode=root --skip=cleanup/apt/lists no-recommends"
key=$( { echo "$packages"; echo "$mirror"; echo "$recipe"; } | sha256sum | cut -c1-12)
root="$cache/$dist-root-$key"
if [ -f "$root/.syncbadge-root" ]; then
  echo "$root"
  exit 0
fi

mkdir -p "$cache"
# One build at a time (another `make` may be building the same root): wait for it, then use its.
exec 9> "$cache/$dist-root.lock"
flock 9
if [ -f "$root/.syncbadge-root" ]; then
  echo "$root"
  exit 0
fi
tmp="$root.tmp"
log="$cache/$dist-root-$key.log"
rm -rf "$tmp"
trap 'rm -rf "$tmp"' EXIT
echo "debian-root.sh: building the Debian $dist root in $root from $mirror (log: $log)" >&2
start=$(date +%s)
# The apt lists stay (apt in the root resolves ./dist/*.deb against them); the trixie keys come
# from Debian 12's debian-archive-keyring. --include's packages without their recommends, as the
# host's APT_PACKAGES_LEAN.
if ! unshare --mount --propagation private \
  mmdebstrap --variant=apt --mode=root --skip=cleanup/apt/lists \
    --keyring=/usr/share/keyrings/debian-archive-keyring.gpg \
    --aptopt='APT::Install-Recommends "false"' \
    --include="${packages// /,}" \
    "$dist" "$tmp" "deb $mirror $dist main" > "$log" 2>&1; then
  tail -25 "$log" | sed 's/^/    /' >&2
  die "mmdebstrap failed (the whole log: $log)"
fi
echo "built $(date -u +%FT%TZ) in $(( $(date +%s) - start )) s: $packages" > "$tmp/.syncbadge-root"
mv "$tmp" "$root"
trap - EXIT
echo "debian-root.sh: built in $(( $(date +%s) - start )) s, $(du -sh --one-file-system "$root" | cut -f1)" >&2
# Older roots (other package lists) are left alone: something may still run in one (a booted
# container of another checkout's tests). Say which, for whoever wants the space back.
for old in "$cache/$dist-root-"*; do
  case $old in "$root" | *.log | *.lock | *.tmp) continue ;; esac
  echo "debian-root.sh: $old is an older root, no longer used by this checkout (rm -rf it to free $(du -sh --one-file-system "$old" | cut -f1))" >&2
done
echo "$root"
