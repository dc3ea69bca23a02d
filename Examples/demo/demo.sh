#!/usr/bin/env bash
# The SyncBadge demo: a private daemon, a demo folder mirrored by the example rsync engine,
# and a scripted story in which every badge appears. On a terminal `syncbadge watch` shows it
# live until Ctrl-C; without one each step is printed as plain lines, every expected state is
# checked, and the script exits 0 once the story is told (1 if a state was not reached).
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
bin=${SYNCBADGE_BIN:-$here/.build/debug}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/syncbadge-demo.XXXXXX")
export SYNCBADGE_SOCKET=$tmp/run/daemon.sock
export XDG_STATE_HOME=$tmp/state
demo=$tmp/demo mirror=$tmp/mirror
pids=()

cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  chmod -R u+w "$tmp" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 0' INT TERM HUP

sb() { "$bin/syncbadge" "$@" --no-spawn; }
say() { printf '\n== %s\n' "$*"; }

# Waits (up to 20 s) until PATH reports STATE; prints the status line.
wait_state() {
  local path=$1 want=$2 line=""
  for _ in $(seq 200); do
    line=$(sb status --porcelain "$path" 2>/dev/null || true)
    [ "${line%%$'\t'*}" = "$want" ] && { [ -t 1 ] || sb status "$path"; return 0; }
    sleep 0.1
  done
  echo "demo: $path did not become $want (last: ${line:-nothing})" >&2
  return 1
}

"$bin/syncbadged" --state-dir "$tmp/state/syncbadge" --badges "$here/Badges" 2>"$tmp/daemon.log" &
pids+=($!)
for _ in $(seq 100); do grep -q listening "$tmp/daemon.log" 2>/dev/null && break; sleep 0.1; done
grep -q listening "$tmp/daemon.log" || { cat "$tmp/daemon.log"; exit 1; }

mkdir -p "$demo/docs" "$demo/photos" "$mirror"
echo "hello" > "$demo/docs/readme.txt"
echo "meeting notes" > "$demo/notes.txt"
echo "holiday" > "$demo/photos/beach.jpg"
# The mirror cannot take a file named "plan.txt": a folder with something in it is in the way
# (rsync will not delete it, and this stops root as surely as anyone, unlike permissions).
mkdir -p "$mirror/plan.txt/drafts"; echo "precious" > "$mirror/plan.txt/drafts/v1"
[ -t 1 ] || echo "SyncBadge demo (no terminal: plain lines). Daemon socket: $SYNCBADGE_SOCKET"
sb add "$demo" >/dev/null
[ -t 1 ] || { say "A new root: every entry starts 'unknown'"; sb ls "$demo"; }

# Started from this shell (exec, after an optional delay) so that cleanup can stop it.
start_engine() {
  ( sleep "$1"; exec "$here/Examples/providers/rsync-mirror/rsync_mirror.py" --debounce 0.3 "$demo" "$mirror" 2>"$tmp/engine.log" ) &
  pids+=($!)
}

story() {
  local pause=$1
  say "The rsync engine reconciles: what the mirror already has is 'synced', the rest is copied"
  wait_state "$demo/docs/readme.txt" synced; sleep "$pause"

  say "A new file is 'pending', then 'syncing', then 'synced'"
  echo "buy milk" > "$demo/todo.txt"
  wait_state "$demo/todo.txt" synced; sleep "$pause"

  say "A large file shows its progress while 'syncing'"
  head -c 40000000 /dev/urandom > "$demo/photos/video.bin"
  wait_state "$demo/photos/video.bin" synced; sleep "$pause"

  say "An edit during a sync: the late report is stale, the file stays 'pending' and syncs again"
  head -c 40000000 /dev/urandom > "$demo/photos/raw.bin"; sleep 0.5; echo "edited" >> "$demo/photos/raw.bin"
  wait_state "$demo/photos/raw.bin" synced; sleep "$pause"

  say "Editor swap files are 'ignored'"
  touch "$demo/.todo.txt.swp"
  wait_state "$demo/.todo.txt.swp" ignored; sleep "$pause"

  say "A conflict: the mirror copy and the local file both changed"
  echo "edited on the mirror" >> "$mirror/notes.txt"
  echo "edited here" >> "$demo/notes.txt"
  wait_state "$demo/notes.txt" conflict; sleep "$pause"

  say "An error: the mirror has a folder where this file must go (rsync's message is shown)"
  echo "the plan" > "$demo/plan.txt"
  wait_state "$demo/plan.txt" error; sleep "$pause"

  say "An action from the menu resolves the conflict"
  sb menu "$demo/notes.txt"
  sb action sync.keep-local "$demo/notes.txt"
  wait_state "$demo/notes.txt" synced; sleep "$pause"
}

if [ -t 1 ]; then
  start_engine 2
  ( sleep 2; story 2 >/dev/null 2>&1 ) &
  pids+=($!)
  echo "Starting a live view of $demo: watch the badges change; Ctrl-C stops and cleans up."
  sleep 1
  sb watch "$demo" || true
else
  # Every push for the demo folder, as a plain line, between the story's steps.
  # (Process substitution: $! is the watch itself, which cleanup must stop; it would
  # otherwise wait for the daemon to come back.)
  ( exec "$bin/syncbadge" watch "$demo" --no-spawn ) > >(sed -u 's/^/  watch: /') &
  pids+=($!)
  sleep 0.3
  start_engine 0
  story 0.3
  say "syncbadge status: the root rolls up its subtree, worst first"
  sb status "$demo"
  say "syncbadge ls"
  sb ls "$demo"
  say "syncbadge roots"
  sb roots
  echo
  echo "Done: every badge appeared (unknown, pending, syncing, synced, ignored, conflict, error)."
fi
