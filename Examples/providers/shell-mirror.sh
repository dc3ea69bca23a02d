#!/usr/bin/env bash
# A sync engine in a dozen lines of shell: mirrors ROOT into DEST with cp and reports every
# path to syncbadged. Usage: shell-mirror.sh ROOT DEST   (ROOT must be a registered root)
set -u
root=$(cd "$1" && pwd) dest=$2
mkdir -p "$dest"
json_gen() { sed -n 's/.*"gen":\([0-9]*\).*/\1/p'; }

# First, everything the daemon has not heard about yet: copy the tree, then report it synced
# with the generation read before copying, so anything changed meanwhile stays pending.
gen=$(syncbadge status --json "$root" | json_gen)
cp -a "$root/." "$dest/" && syncbadge set synced "$root" --recursive --gen "$gen"

# Every pending path now, then each change as it happens, NUL-terminated (any file name works).
# (Fed by process substitution, not a pipe, so the loop runs in this shell: whoever stops the
# engine stops this process, and the feed then finds its reader gone and exits too.)
while IFS= read -r -d '' path; do
  rel=${path#"$root"}; rel=${rel#/}
  # The generation we are about to sync: if the file changes meanwhile, our report is stale
  # (exit 2) and the file stays pending; the feed reports it again.
  gen=$(syncbadge status --json "$path" | json_gen)
  [ -n "$gen" ] || continue
  if [ -z "$rel" ]; then                       # the root directory itself
    syncbadge set synced "$path" --gen "$gen"
  elif [ -d "$path" ] && [ ! -L "$path" ]; then
    # A directory created or moved in arrives as one change: copy it whole.
    mkdir -p "$dest/$rel" && cp -a "$path/." "$dest/$rel/" && syncbadge set synced "$path" --gen "$gen" --recursive
  elif [ -e "$path" ] || [ -L "$path" ]; then
    # Each `syncbadge` call is a connection of its own, gone as soon as it returns: the lease
    # keeps `syncing` for the copy (at 10 MB/s, plus a minute), and if this script dies
    # meanwhile the badge goes back to pending when it runs out.
    size=$(stat -c %s -- "$path" 2>/dev/null || echo 0)
    lease=$(( size / 10000000 + 60 )); [ "$lease" -le 86400 ] || lease=86400
    syncbadge set syncing "$path" --gen "$gen" --lease "$lease"
    if err=$(mkdir -p "$dest/$(dirname "$rel")" && cp -P --preserve=mode,timestamps "$path" "$dest/$rel" 2>&1); then
      syncbadge set synced "$path" --gen "$gen"
    else
      syncbadge set error "$path" --gen "$gen" --message "$err"
    fi
  else                                         # a tombstone: the deletion is synced once mirrored
    rm -rf "${dest:?}/$rel" && syncbadge set synced "$path" --gen "$gen"
  fi
done < <(syncbadge changes --follow -z "$root")
