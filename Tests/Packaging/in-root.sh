#!/usr/bin/env bash
# in-root.sh DIST COMMAND [ARG...]: runs COMMAND as root in the Debian DIST root of
# debian-root.sh (built first when there is none), in this checkout, which is bound into the root
# at the same path (what COMMAND writes there stays: dist/, the build directories).
#
# The cached root itself never changes: COMMAND runs on an overlay of it whose upper layer is a
# directory of this run in the cache, removed at the end. The overlay, /proc, /sys, /dev, /run,
# /tmp and the checkout are mounted in a mount and PID namespace of this run only (unshare):
# nothing is mounted on the host, every mount goes with the namespace on every path out, and so
# do the processes COMMAND leaves (Xvfb, a session bus, a daemon). The environment is a clean
# one (PATH, HOME=/root, LANG=C.UTF-8) plus CI and every SYNCBADGE_* variable.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
dist=${1:?usage: in-root.sh DIST COMMAND [ARG...]}
shift
[ $# -gt 0 ] || { echo "usage: in-root.sh DIST COMMAND [ARG...]" >&2; exit 2; }
root=$("$here/debian-root.sh" "$dist")
cache=$(dirname "$root")

run=$(mktemp -d "$cache/run-$dist.XXXXXX")
# The namespace's mounts are gone when its last process is; this is for the layer on disk (and a
# mount left by a namespace that somehow outlived us would make rm fail loudly, not silently).
trap 'umount -R "$run/merged" 2> /dev/null || true; rm -rf "$run"' EXIT
mkdir "$run/upper" "$run/work" "$run/merged"

passed=(CI="${CI:-}")
while IFS='=' read -r name _; do
  passed+=("$name=${!name}")
done < <(env | grep -E '^SYNCBADGE_[A-Z0-9_]*=' || true)

unshare --mount --pid --fork --propagation private -- bash -euc '
  root=$1 run=$2 repo=$3; shift 3
  m=$run/merged
  mount -t overlay overlay -o "lowerdir=$root,upperdir=$run/upper,workdir=$run/work" "$m"
  mount -t proc proc "$m/proc"
  mount --rbind /sys "$m/sys"
  mount --rbind /dev "$m/dev"
  mount -t tmpfs -o mode=755 tmpfs "$m/run"
  mount -t tmpfs -o mode=1777 tmpfs "$m/tmp"
  mkdir -p "$m$repo"
  mount --bind "$repo" "$m$repo"
  cp -L /etc/resolv.conf "$m/etc/resolv.conf"
  # apt in the root reaches the archive as the host does (the root is also what apt installs
  # the packages into); machine-id for D-Bus.
  [ -s "$m/etc/machine-id" ] || systemd-id128 new > "$m/etc/machine-id" 2> /dev/null || cat /proc/sys/kernel/random/uuid | tr -d - > "$m/etc/machine-id"
  exec chroot "$m" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LANG=C.UTF-8 "$@"
' in-root "$root" "$run" "$repo" "${passed[@]}" /bin/sh -c 'cd "$0" && exec "$@"' "$repo" "$@"
