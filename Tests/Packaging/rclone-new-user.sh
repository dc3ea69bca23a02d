#!/usr/bin/env bash
# rclone-new-user.sh DEB_DIR [SCREENSHOT]: issue 39's "tried as a new user would", on Debian 12,
# under a real systemd. This machine's own root is booted with systemd-nspawn on a throwaway
# overlay (a tmpfs upper layer in a mount namespace of this run only: nothing reaches the host,
# and every mount goes with the container), /dev/fuse bound in, its own network (loopback only).
# In it: the packages of DEB_DIR installed with apt (syncbadge, syncbadge-rclone,
# python3-syncbadge, nautilus-syncbadge); a new user made with useradd, with a lingering login, so
# systemd runs their user manager; then as that user, what docs/ENGINES.md tells them:
#   rclone config create cloud alias remote=~/CloudStore        (the "cloud": a local directory)
#   rclone mount cloud: ~/cloud --vfs-cache-mode writes --rc --rc-addr 127.0.0.1:5572 --rc-no-auth
#   systemctl --user enable --now syncbadged.socket "syncbadge-rclone@$(systemd-escape --path ~/cloud).service"
# and Nautilus (under Xvfb, on a session bus of its own) on ~/cloud. A file copied into the mount
# must show pending, then syncing, then synced, in Nautilus (the extension's SYNCBADGE_DEBUG
# lines) and in `syncbadge ls`, in that order (collected from `syncbadge watch --json`, the
# daemon's pushes). rclone runs with --bwlimit 2M --transfers 1 only so that an upload lasts long
# enough to be seen: a 24 MB file uploads in about 10 s, and a second file waits behind it.
# With SCREENSHOT, the screen when three files are synced, syncing and pending is saved there.
# SYNCBADGE_RCLONE_ARTIFACTS=DIR keeps the logs (Nautilus's, `syncbadge watch`'s, apt's) there.
# Prints `N passed, M failed`; exits 2 when this machine cannot boot the container.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
debs=$(cd "$repo" && realpath "${1:?usage: rclone-new-user.sh DEB_DIR [SCREENSHOT]}")
shot=${2:-}
[ -n "$shot" ] && shot=$(realpath -m "$shot")

die() { echo "rclone-new-user.sh: $*" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || die "needs root (systemd-nspawn, and an overlay mount in a namespace of its own)"
for tool in systemd-nspawn unshare nsenter rclone fusermount3 nautilus Xvfb import xdotool dbus-run-session; do
  command -v $tool > /dev/null || die "$tool is not installed here; the container is this machine's root, so it needs what \`make deps\` installs"
done
[ -c /dev/fuse ] || die "/dev/fuse does not exist here: rclone cannot mount over FUSE"
pkgs=()
for p in syncbadge syncbadge-rclone python3-syncbadge nautilus-syncbadge; do
  deb=$(ls "$debs/${p}_"*.deb 2> /dev/null | head -1)
  [ -n "$deb" ] || die "no $p package in $debs (make deb)"
  pkgs+=("/mnt/debs/$(basename "$deb")")
done

. "$here/booted.sh"

work=$(mktemp -d /tmp/syncbadge-rclone-user.XXXXXX)
mkdir -p "$work/merged" "$work/layer" "$work/out"
chmod 777 "$work/out"
USER_NAME=sbnew
USER_ID=4343
H=/home/$USER_NAME
MNT=$H/cloud
as_user() { inside runuser -u "$USER_NAME" -- env XDG_RUNTIME_DIR=/run/user/$USER_ID "$@"; }

cleanup() {
  if [ -n "$init" ] && kill -0 "$init" 2> /dev/null; then
    # rclone unmounts as it ends; a lazy unmount for a mount left by a stuck rclone.
    inside pkill -TERM -u "$USER_NAME" -x rclone 2> /dev/null
    for _ in $(seq 50); do inside grep -qE " $MNT [^ ]+ .* - fuse.rclone " /proc/self/mountinfo 2> /dev/null || break; sleep 0.1; done
    inside fusermount3 -u -z "$MNT" 2> /dev/null
  fi
  boot_stop
  # The overlay and its tmpfs were mounted only in nspawn's mount namespace, gone with it.
  if [ -n "${SYNCBADGE_RCLONE_ARTIFACTS:-}" ]; then
    mkdir -p "$SYNCBADGE_RCLONE_ARTIFACTS" && cp "$work"/out/*.log "$work"/out/*.jsonl "$work"/out/*.png "$work"/out/*.err "$work"/out/threads.log "$work"/*.log "$SYNCBADGE_RCLONE_ARTIFACTS"/ 2> /dev/null
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

finish() {
  if [ "$failed" -ne 0 ]; then
    echo "    --- the adapter's journal:"
    as_user journalctl --user --no-pager -n 40 -u "syncbadge-rclone@*" 2>&1 | sed 's/^/    /'
    echo "    --- rclone's log:"; inside tail -20 "$H/rclone.log" 2>&1 | sed 's/^/    /'
    echo "    --- syncbadge watch:"; tail -30 "$work/out/watch.jsonl" 2>&1 | sed 's/^/    /'
    echo "    --- nautilus:"; grep -v '^$' "$work/out/nautilus.log" 2> /dev/null | tail -30 | sed 's/^/    /'
  fi
  echo
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit
}
# dpkg_idle: no apt or dpkg runs on the host now (their locks are free: tried, never kept) and
# none was left half done.
dpkg_idle() {
  /usr/bin/python3 -c '
import fcntl, os, sys
for name in ("lock-frontend", "lock"):
    with open("/var/lib/dpkg/" + name, "a") as f:
        try:
            fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            sys.exit(1)
sys.exit(1 if os.listdir("/var/lib/dpkg/updates") else 0)'
}

# 1. Boot. The overlay's upper layer is a tmpfs of the namespace. Its lower layer is this live
#    root, so the package database is copied up (touched) while no apt runs on the host, and
#    checked again after: another developer's apt-get on the host must not change the
#    container's dpkg state under it. Then the container gets a machine id of its own, and the
#    services and timers this host enables (a database, apt's timers) are masked: they have
#    nothing to do with a user's session and only slow the boot.
if ! wait_for 1800 dpkg_idle; then
  die "apt or dpkg has been running on this machine for 3 minutes (or was interrupted: /var/lib/dpkg/updates is not empty); the container needs a consistent copy of the package database"
fi
export -f dpkg_idle
unshare --mount --propagation private bash -c '
  set -e
  work=$1 debs=$2 name=$3; m=$work/merged
  mount -t tmpfs -o mode=755 tmpfs "$work/layer"
  mkdir "$work/layer/upper" "$work/layer/work"
  mount -t overlay overlay -o "lowerdir=/,upperdir=$work/layer/upper,workdir=$work/layer/work" "$m"
  for _ in $(seq 600); do
    dpkg_idle || { sleep 0.3; continue; }
    find "$m/var/lib/dpkg" -xdev -exec touch -a -c -h {} +
    dpkg_idle && break
  done
  systemd-id128 new > "$m/etc/machine-id"
  for unit in "$m"/etc/systemd/system/{multi-user,graphical,timers,sleep}.target.wants/*.{service,timer}; do
    [ -e "$unit" ] || [ -L "$unit" ] || continue
    ln -sf /dev/null "$m/etc/systemd/system/$(basename "$unit")"
  done
  # --keep-unit --register=no: PID 1 here is not systemd (no scope unit, no machined).
  exec systemd-nspawn -D "$m" --register=no --keep-unit -M "$name" -b --console=passive \
    --private-network --bind=/dev/fuse --tmpfs=/tmp --bind-ro="$debs:/mnt/debs" \
    --bind="$work/out:/mnt/out" systemd.firstboot=off
' boot "$work" "$debs" "sbrclone-$$" > "$work/nspawn.log" 2>&1 &
nspawn=$!
boot_wait rclone-new-user.sh "$work/nspawn.log"

# 2. The packages, as a user installs them.
if ! inside env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}" > "$work/apt.log" 2>&1; then
  fail "apt-get install of ${pkgs[*]##*/}"
  tail -20 "$work/apt.log" | sed 's/^/    /'
  finish
fi
pass "apt-get install of ${pkgs[*]##*/}"
check "the installed adapter is the package's" bash -c "nsenter -t $init -a dpkg -S /usr/bin/syncbadge-rclone | grep -q '^syncbadge-rclone:'"

# 3. A new user, logged in (lingering: logind starts their user manager as a login would).
inside useradd -m -u "$USER_ID" -s /bin/bash "$USER_NAME"
inside loginctl enable-linger "$USER_NAME"
if ! wait_for 300 bash -c "[ \"\$(nsenter -t $init -a systemctl is-active user@$USER_ID.service)\" = active ]"; then
  fail "the new user's systemd manager runs (user@$USER_ID.service)"
  finish
fi
pass "the new user's systemd manager runs (user@$USER_ID.service)"

# 4. rclone mount, as docs/ENGINES.md says (the remote is a local directory standing for the
#    cloud). `setsid -f` is the doc's `&` for a command that must outlive this shell; not rclone's
#    --daemon, which in 1.60 starts the rc twice (the forked child fails "bind: address already
#    in use" and the mount never comes: "Fatal error: mount not ready").
as_user mkdir -p "$H/CloudStore" "$MNT"
as_user rclone config create cloud alias remote="$H/CloudStore" > /dev/null
as_user setsid -f rclone mount cloud: "$MNT" --vfs-cache-mode writes --rc --rc-addr 127.0.0.1:5572 --rc-no-auth \
  --bwlimit 2M --transfers 1 -v --log-file "$H/rclone.log" < /dev/null > /dev/null 2>&1
if ! wait_for 200 nsenter -t "$init" -a grep -qE " $MNT [^ ]+ .* - fuse.rclone " /proc/self/mountinfo; then
  fail "rclone mounts cloud: on $MNT over FUSE in the container"
  inside tail -20 "$H/rclone.log" | sed 's/^/    /'
  finish
fi
pass "rclone mounts cloud: on $MNT over FUSE in the container"

# 5. The adapter, from the installed templated unit.
instance=$(as_user systemd-escape --path "$MNT")
unit="syncbadge-rclone@$instance.service"
check "systemctl --user enable --now syncbadged.socket $unit" \
  as_user systemctl --user enable --now syncbadged.socket "$unit"
check "$unit is active" wait_for 100 bash -c "[ \"\$(nsenter -t $init -a runuser -u $USER_NAME -- env XDG_RUNTIME_DIR=/run/user/$USER_ID systemctl --user is-active $unit)\" = active ]"
check "the adapter claimed the mount: \`syncbadge roots\` lists it, synced, and \`syncbadge toolbar\` has rclone's item" \
  wait_for 200 bash -c "nsenter -t $init -a runuser -u $USER_NAME -- env XDG_RUNTIME_DIR=/run/user/$USER_ID syncbadge --no-spawn roots | grep -q 'synced *$MNT ' &&
    nsenter -t $init -a runuser -u $USER_NAME -- env XDG_RUNTIME_DIR=/run/user/$USER_ID syncbadge --no-spawn toolbar | grep -q '(rclone)\$'"
as_user syncbadge --no-spawn roots --json | sed 's/^/    syncbadge roots: /'
as_user syncbadge --no-spawn toolbar | sed 's/^/    syncbadge toolbar: /'

# 6. What the user watches: `syncbadge watch` (the daemon's pushes, in order), then Nautilus.
inside runuser -u "$USER_NAME" -- env XDG_RUNTIME_DIR=/run/user/$USER_ID \
  syncbadge --no-spawn watch --json "$MNT" > "$work/out/watch.jsonl" 2> "$work/out/watch.err" &
# watched FILE STATE: `syncbadge watch` has pushed FILE in STATE.
watched() { grep -F "\"$MNT/$1\"" "$work/out/watch.jsonl" | grep -q "\"state\":\"$2\""; }
# drew FILE STATE: Nautilus drew FILE's emblem for STATE: a synced file's is the adapter's
# rclone-local badge (● in a terminal), whose image the extension installed as an emblem.
drew() {
  local emblem=$2
  [ "$2" = synced ] && emblem=rclone-local
  grep -q "^syncbadge: drew $MNT/$1 emblem=emblem-syncbadge-$emblem column=$2" "$work/out/nautilus.log"
}
# seen FILE STATE TENTHS: the state pushed, then drawn by Nautilus and listed by `syncbadge ls`
# (asked once the push came: ls shows what the daemon holds then).
seen() {
  local file=$1 st=$2 tenths=$3
  check "$file: syncbadge watch gets $st" wait_for "$tenths" watched "$file" "$st"
  check "$file: syncbadge ls shows $st" bash -c "nsenter -t $init -a runuser -u $USER_NAME -- env XDG_RUNTIME_DIR=/run/user/$USER_ID syncbadge --no-spawn ls '$MNT' | tee /dev/stderr | grep -E '$st' | grep -qF '$file'"
  check "$file: Nautilus draws the $st emblem" wait_for "$tenths" drew "$file" "$st"
}

# 7. A small file first: it goes through and stays synced (the screenshot's third state). It is
#    there before Nautilus opens the folder, so that what it draws first is this file, and the
#    copies below come once the extension follows the folder (in one run that copied right after
#    the window appeared, Nautilus never asked the extension about any file of the folder).
inside runuser -u "$USER_NAME" -- cp /usr/share/common-licenses/GPL-3 "$MNT/notes.txt"
check "notes.txt: syncbadge watch gets synced" wait_for 300 watched notes.txt synced
inside runuser -u "$USER_NAME" -- Xvfb :5 -screen 0 1100x700x24 -nolisten tcp > /dev/null 2>&1 &
wait_for 100 nsenter -t "$init" -a test -S /tmp/.X11-unix/X5 || { fail "Xvfb starts in the container"; finish; }
# Nautilus 43 is GTK 4: with its default GL renderer on Xvfb's software GL it spent its time in
# llvmpipe and kept showing "Loading..." on a loaded machine; GTK's cairo renderer draws the same.
inside runuser -u "$USER_NAME" -- env XDG_RUNTIME_DIR=/run/user/$USER_ID DISPLAY=:5 SYNCBADGE_DEBUG=1 \
  NO_AT_BRIDGE=1 GIO_USE_VFS=local GSK_RENDERER=cairo dbus-run-session -- nautilus --new-window "$MNT" \
  > "$work/out/nautilus.log" 2>&1 &
check "Nautilus shows the mount through the installed extension" \
  wait_for 300 bash -c "nsenter -t $init -a env DISPLAY=:5 xdotool search --onlyvisible --class nautilus && grep -q '^syncbadge: observing $MNT ' '$work/out/nautilus.log'"

check "notes.txt: Nautilus draws the synced emblem" wait_for 100 drew notes.txt synced ||
  inside sh -c 'DISPLAY=:5 import -window root /mnt/out/nautilus-failed.png
    for t in /proc/[0-9]*/task/*; do u=$(stat -c %U $t 2>/dev/null); [ "$u" = sbnew ] || continue
      echo "$t $(cat $t/comm) $(cat $t/wchan) $(cut -d" " -f1 $t/syscall)"; done > /mnt/out/threads.log 2>&1'
check "the extension installed the adapter's rclone-local badge as an emblem icon" \
  wait_for 100 grep -q "^syncbadge: installed the badge rclone-local from /usr/share/syncbadge/badges/" "$work/out/nautilus.log"

# 8. The file of the issue: copied in, pending while rclone waits (--vfs-write-back, 5 s), syncing
#    while it uploads, synced when it is in the cloud.
head -c 24M /dev/urandom > "$work/out/video.bin"
chmod 644 "$work/out/video.bin"
inside runuser -u "$USER_NAME" -- cp /mnt/out/video.bin "$MNT/video.bin"
seen video.bin pending 100
seen video.bin syncing 200
# Behind it (--transfers 1) a second file waits: all three states on screen at once.
inside runuser -u "$USER_NAME" -- cp /usr/share/common-licenses/Apache-2.0 "$MNT/draft.txt"
check "draft.txt: Nautilus draws the pending emblem while video.bin uploads" wait_for 100 drew draft.txt pending
# colours.py PNG: each emblem's fill colour (Badges/*.svg) is on screen, drawn and not only asked
# for: Nautilus draws a new file's icon a moment after the extension answered for it.
cat > "$work/colours.py" << 'EOF'
import re, subprocess, sys
ppm = subprocess.run(["convert", sys.argv[1], "-depth", "8", "ppm:-"], check=True, capture_output=True).stdout
m = re.match(rb"P6\s+(\d+)\s+(\d+)\s+255\s", ppm)
px = ppm[m.end():]
counts = {}
for i in range(0, len(px) - 2, 3):
    counts[px[i:i + 3]] = counts.get(px[i:i + 3], 0) + 1
want = {"synced": b"\x2e\x9e\x44", "syncing": b"\x15\x91\xb0", "pending": b"\xe0\x9b\x00"}
seen = {k: counts.get(v, 0) for k, v in want.items()}
print(seen)
sys.exit(0 if all(n >= 20 for n in seen.values()) else 1)
EOF
# screen: the Nautilus window (no window manager: the window is all there is) in shot.png while
# video.bin is still syncing (else 2); true once the three emblems are drawn in it.
screen() {
  as_user syncbadge --no-spawn status "$MNT/video.bin" | grep -q syncing || return 2
  inside sh -c 'DISPLAY=:5 import -window "$(DISPLAY=:5 xdotool search --onlyvisible --class nautilus | tail -1)" /mnt/out/shot.png' &&
    /usr/bin/python3 "$work/colours.py" "$work/out/shot.png" > "$work/colours.txt"
}
if [ -n "$shot" ]; then
  rc=1
  deadline=$((SECONDS + 20))
  while [ $SECONDS -lt $deadline ]; do
    screen
    rc=$?
    [ $rc -ne 1 ] && break
    sleep 0.2
  done
  if [ $rc -eq 0 ]; then
    mkdir -p "$(dirname "$shot")" && cp "$work/out/shot.png" "$shot"
    pass "screenshot: notes.txt synced, video.bin syncing, draft.txt pending, each emblem drawn (pixels $(cat "$work/colours.txt")): $shot"
  else
    fail "screenshot with the three emblems drawn while video.bin is still syncing (status $rc; pixels $(cat "$work/colours.txt" 2> /dev/null))"
  fi
fi
seen video.bin synced 400
check "video.bin: the order pushed was pending, syncing, synced" bash -c "
  grep -F '\"$MNT/video.bin\"' '$work/out/watch.jsonl' | grep -o '\"state\":\"[a-z]*\"' | uniq | tr '\n' ' ' |
  grep -q '\"state\":\"pending\" \"state\":\"syncing\" \"state\":\"synced\" \$'"
check "video.bin: the cloud holds what was copied" cmp "$work/out/video.bin" "/proc/$init/root$H/CloudStore/video.bin"
check "draft.txt: synced after video.bin" wait_for 300 watched draft.txt synced

finish
