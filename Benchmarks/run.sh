#!/usr/bin/env bash
# Benchmarks/run.sh: the SyncBadge benchmarks (`make bench`).
#
#   SYNCBADGE_BIN=DIR Benchmarks/run.sh [--quick] [--only NAME[,NAME...]] [--base DIR]
#
# SYNCBADGE_BIN is a directory holding release `syncbadged`, `syncbadge` and, for the syncthing, git
# and rclone figures, `syncbadge-syncthing`, `syncbadge-git` and `syncbadge-rclone` (default:
# .build/release in the repository).
# Results go to stdout and, as markdown, to $BENCH_OUT (default Benchmarks/results/latest.md). Names for
# --only: register memory push-latency move-push status-rtt pipelined idle cli-status prompt burst
# million many-observers list-10k startup syncthing git rclone rclone-queue write-burst. --base DIR: another build's
# syncbadged (the commit before a change, say), measured beside SYNCBADGE_BIN's in the same rounds
# by the push-latency, move-push, write-burst and pipelined figures.
#
# This script installs the tools it needs (apt, only what is missing), compiles the C helpers
# into a temp dir, raises the open-file limit, and runs Benchmarks/scripts/bench.py. Whatever
# happens (an error, Ctrl-C, SIGTERM) the trap below stops what was started, shuts down the
# private watchman servers, restores any sysctl raised, and removes the temp tree.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$HERE")
COMMAND="$0${*:+ $*}"
[[ -n ${SYNCBADGE_BIN:-} ]] && COMMAND="SYNCBADGE_BIN=$SYNCBADGE_BIN $COMMAND"

usage() { sed -n '3,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
ARGS=()
BASE= BASE_GIVEN=
while (($#)); do
    case $1 in
    --quick) ARGS+=(--quick) ;;
    --only) [[ $# -ge 2 ]] || { usage >&2; exit 64; }; ARGS+=(--only "$2"); shift ;;
    --only=*) ARGS+=(--only "${1#--only=}") ;;
    --base) [[ $# -ge 2 ]] || { usage >&2; exit 64; }; BASE=$2; BASE_GIVEN=1; shift ;;
    --base=*) BASE=${1#--base=}; BASE_GIVEN=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "run.sh: unknown argument $1" >&2; usage >&2; exit 64 ;;
    esac
    shift
done

BIN=${SYNCBADGE_BIN:-$REPO/.build/release}
BIN=$(cd "$BIN" 2>/dev/null && pwd) || { echo "run.sh: SYNCBADGE_BIN=${SYNCBADGE_BIN:-$REPO/.build/release}: no such directory (build with 'make release', or point SYNCBADGE_BIN at the binaries)" >&2; exit 69; }
for b in syncbadged syncbadge; do
    [[ -x $BIN/$b ]] || { echo "run.sh: $BIN/$b is missing or not executable (SYNCBADGE_BIN must hold release syncbadged and syncbadge)" >&2; exit 69; }
done
if [[ -n $BASE_GIVEN ]]; then
    [[ -n $BASE ]] && BASE_DIR=$(cd "$BASE" 2>/dev/null && pwd) && [[ -x $BASE_DIR/syncbadged ]] \
        || { echo "run.sh: --base $BASE: no executable syncbadged there" >&2; exit 69; }
    ARGS+=(--base "$BASE_DIR")
fi
OUT=${BENCH_OUT:-$REPO/Benchmarks/results/latest.md}
[[ $OUT == /* ]] || OUT=$PWD/$OUT

# Tools: command -> Debian package. Installed only when missing (apt-get update first).
declare -A PKG=([watchman]=watchman [hyperfine]=hyperfine [inotifywait]=inotify-tools
                [zsh]=zsh [bash]=bash [cc]=gcc [python3]=python3 [awk]=gawk [taskset]=util-linux
                [syncthing]=syncthing [git]=git [rclone]=rclone [fusermount3]=fuse3)
missing=()
for cmd in "${!PKG[@]}"; do command -v "$cmd" >/dev/null || missing+=("${PKG[$cmd]}"); done
if ((${#missing[@]})); then
    SUDO=; [[ $(id -u) -eq 0 ]] || SUDO=sudo
    echo "installing: ${missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# 1,000 observing clients need more than the usual 1,024 descriptors, in the daemon (our
# child, so it inherits this) and in the clients.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
if [[ $(ulimit -n) != unlimited && $(ulimit -n) -gt 65536 ]]; then ulimit -n 65536; fi

WORK=$(mktemp -d /tmp/sbbench.XXXXXX)
PY=
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    # bench.py cleans up after itself; this catches what it could not (it was killed, say).
    if [[ -n $PY ]] && kill -0 "$PY" 2>/dev/null; then
        kill -TERM "$PY" 2>/dev/null || true
        # It stops its daemons and watchman servers itself; give it time to (30 s at most).
        for _ in $(seq 300); do kill -0 "$PY" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$PY" 2>/dev/null || true
    fi
    if [[ -f $WORK/watchman-socks ]]; then
        while read -r sock; do
            [[ -S $sock ]] && timeout 10 watchman --sockname "$sock" --no-spawn shutdown-server >/dev/null 2>&1 || true
        done <"$WORK/watchman-socks"
    fi
    if [[ -f $WORK/pids ]]; then
        # Only processes we started that are still there and still ours (their command line
        # names our temp tree or one of our tools).
        while read -r pid; do
            if [[ -r /proc/$pid/cmdline ]] && tr '\0' ' ' </proc/"$pid"/cmdline | grep -qE "$WORK|inotifywait|watchman"; then
                kill -KILL "$pid" 2>/dev/null || true
            fi
        done <"$WORK/pids"
    fi
    # A FUSE mount of the rclone figures whose rclone was killed above: lazily unmounted, or
    # the removal of $WORK below would stop at it.
    awk -v w="$WORK/" 'index($5, w) == 1 { print $5 }' /proc/self/mountinfo | while read -r m; do
        fusermount3 -u -z "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
    done
    if [[ -f $WORK/sysctl-restore ]]; then
        # Put back what we raised, unless someone else changed it meanwhile (it is machine-wide).
        # (Lines are appended on each raise: the last one for a path holds what we set last.)
        tac "$WORK/sysctl-restore" | while read -r path old ours; do
            [[ $(cat "$path" 2>/dev/null) == "$ours" ]] && { echo "$old" >"$path"; } 2>/dev/null || true
        done
    fi
    if [[ -f $WORK/rmdirs ]]; then   # trees made outside $WORK (on tmpfs)
        while read -r d; do [[ $d == /dev/shm/sbbench.* ]] && rm -rf "$d"; done <"$WORK/rmdirs"
    fi
    rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The C helpers, built fresh for this machine.
mkdir -p "$WORK/tools"
for c in echo loadgen observers mkfiles; do
    cc -O2 -o "$WORK/tools/$c" "$HERE/scripts/$c.c"
done

# In the background and waited for, so the INT/TERM traps run at once on Ctrl-C.
python3 "$HERE/scripts/bench.py" --work "$WORK" --tools "$WORK/tools" --bin "$BIN" --out "$OUT" \
    --command "$COMMAND" "${ARGS[@]}" &
PY=$!
wait "$PY"
