#!/usr/bin/env bash
# booted-units.sh DIST DEB_DIR: the packages' user units under a real systemd. The Debian DIST root
# of debian-root.sh is booted with systemd-nspawn (systemd as PID 1, on a throwaway overlay:
# --volatile=overlay), the packages of DEB_DIR are installed in it with apt, a user is made with a
# lingering login (so systemd starts their user manager), and as that user: syncbadged.socket is
# enabled and listening, the first `syncbadge` command starts syncbadged.service through it, and
# the daemon answers. Prints `N passed, M failed`; exits 2 when this machine cannot boot one.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
dist=${1:?usage: booted-units.sh DIST DEB_DIR}
debs=$(cd "$repo" && realpath "${2:?usage: booted-units.sh DIST DEB_DIR}")
root=$("$here/debian-root.sh" "$dist") || exit 1

. "$here/booted.sh"
finish() { echo; echo "$passed passed, $failed failed"; [ "$failed" -eq 0 ]; exit; }

log=$(mktemp /tmp/syncbadge-booted.XXXXXX)
cleanup() {
  boot_stop
  rm -f "$log"
}
trap cleanup EXIT

systemd-nspawn -D "$root" --volatile=overlay --register=no --keep-unit -M "sbpkg-$$" -b \
  --console=passive --bind-ro="$debs:/mnt/debs" > "$log" 2>&1 &
nspawn=$!
boot_wait booted-units.sh "$log"
as_user() { inside runuser -u sbpkg -- env XDG_RUNTIME_DIR=/run/user/4242 "$@"; }
if ! inside bash -c 'DEBIAN_FRONTEND=noninteractive apt-get install -y -qq /mnt/debs/*.deb' > /dev/null 2>&1; then
  fail "apt-get install of the packages in the booted root"
  finish
fi
pass "apt-get install of the packages in the booted root"
# A user as adduser would make one (the minimal root has no passwd package, so by hand).
inside sh -c 'echo "sbpkg:x:4242:4242::/home/sbpkg:/bin/bash" >> /etc/passwd &&
  echo "sbpkg:x:4242:" >> /etc/group && echo "sbpkg:!:20000::::::" >> /etc/shadow &&
  mkdir -p /home/sbpkg && chown 4242:4242 /home/sbpkg'
inside loginctl enable-linger sbpkg
for _ in $(seq 300); do
  [ "$(inside systemctl is-active user@4242.service 2> /dev/null)" = active ] && break
  sleep 0.1
done
check "the user's systemd manager runs (user@4242.service, a lingering login)" \
  bash -c "[ \"\$(nsenter -t $init -a systemctl is-active user@4242.service)\" = active ]"
check "syncbadged.socket is enabled for the user" bash -c "[ \"\$(nsenter -t $init -a runuser -u sbpkg -- env XDG_RUNTIME_DIR=/run/user/4242 systemctl --user is-enabled syncbadged.socket)\" = enabled ]"
check "syncbadged.socket is listening, syncbadged.service not started yet" bash -c "
  [ \"\$(nsenter -t $init -a runuser -u sbpkg -- env XDG_RUNTIME_DIR=/run/user/4242 systemctl --user is-active syncbadged.socket)\" = active ] &&
  [ \"\$(nsenter -t $init -a runuser -u sbpkg -- env XDG_RUNTIME_DIR=/run/user/4242 systemctl --user is-active syncbadged.service)\" != active ]"
inside runuser -u sbpkg -- mkdir -p /home/sbpkg/Sync
inside runuser -u sbpkg -- sh -c 'echo hello > /home/sbpkg/Sync/file.txt'
check "the user's first syncbadge command reaches the daemon through the socket" \
  as_user syncbadge --no-spawn add /home/sbpkg/Sync
check "systemd started syncbadged.service for it" \
  bash -c "[ \"\$(nsenter -t $init -a runuser -u sbpkg -- env XDG_RUNTIME_DIR=/run/user/4242 systemctl --user is-active syncbadged.service)\" = active ]"
check "the daemon answers STATUS" bash -c "nsenter -t $init -a runuser -u sbpkg -- env XDG_RUNTIME_DIR=/run/user/4242 syncbadge --no-spawn status /home/sbpkg/Sync/file.txt | grep -q unknown"
as_user systemctl --user --no-pager status syncbadged.socket syncbadged.service 2>&1 | sed 's/^/    /' | head -30
finish
