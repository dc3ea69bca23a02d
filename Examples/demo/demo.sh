#!/usr/bin/env bash
# The SyncBadge demo: a private daemon, a demo folder, and scripted changes shown live.
# On a terminal `syncbadge watch` redraws in place until Ctrl-C; without one every change is
# printed as a line and the script exits 0 when the story is told.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
bin=${SYNCBADGE_BIN:-$here/.build/debug}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/syncbadge-demo.XXXXXX")
sock=$tmp/run/daemon.sock
demo=$tmp/demo
pids=()

cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 0' INT TERM

sb() { "$bin/syncbadge" "$@" --socket "$sock"; }
say() { printf '\n== %s\n' "$*"; }

"$bin/syncbadged" --socket "$sock" --state-dir "$tmp/state" --badges "$here/Badges" 2>"$tmp/daemon.log" &
pids+=($!)
# The daemon logs "listening" once its socket accepts connections.
for _ in $(seq 100); do grep -q listening "$tmp/daemon.log" 2>/dev/null && break; sleep 0.1; done
grep -q listening "$tmp/daemon.log" || { cat "$tmp/daemon.log"; exit 1; }

mkdir -p "$demo/docs" "$demo/photos"
echo "hello" > "$demo/docs/readme.txt"
echo "notes" > "$demo/notes.txt"
sb add "$demo" >/dev/null

story() {
  local pause=$1
  say "Every entry of a new root starts 'unknown'"; sleep "$pause"
  say "A new file is 'pending' until a sync engine reports it"
  echo "draft" > "$demo/todo.txt"; sleep "$pause"
  say "An edit makes a file 'pending' and rolls up to its directory"
  echo "more" >> "$demo/docs/readme.txt"; sleep "$pause"
  say "A new directory with files: all of it 'pending'"
  mkdir "$demo/photos/2026"; for i in 1 2 3; do echo "$i" > "$demo/photos/2026/img$i.jpg"; done; sleep "$pause"
  say "Editor swap files are 'ignored' by default"
  touch "$demo/.todo.txt.swp"; sleep "$pause"
  say "The root's .syncbadgeignore ignores more ('*.tmp')"
  echo '*.tmp' > "$demo/.syncbadgeignore"; touch "$demo/scratch.tmp"; sleep "$pause"
  say "A rename: a tombstone at the old name, 'pending' at the new"
  mv "$demo/todo.txt" "$demo/tasks.txt"; sleep "$pause"
  say "A deletion leaves a 'pending' tombstone until an engine syncs it"
  rm "$demo/notes.txt"; sleep "$pause"
}

if [ -t 1 ]; then
  ( sleep 2; story 2 >/dev/null ) &
  pids+=($!)
  echo "Starting a live view of $demo; Ctrl-C stops and cleans up."
  sleep 1
  sb watch "$demo" || true
else
  echo "SyncBadge demo (no terminal: plain lines). Daemon socket: $sock"
  sb watch "$demo" &
  pids+=($!)
  sleep 0.5
  story 0.5
  say "syncbadge status (the root rolls up its subtree)"
  sb status "$demo"
  say "syncbadge status of the tombstone"
  sb status "$demo/notes.txt"
  say "syncbadge ls"
  sb ls "$demo"
  say "syncbadge roots"
  sb roots
  echo
  echo "Done: every change above reached the watcher as a push."
fi
