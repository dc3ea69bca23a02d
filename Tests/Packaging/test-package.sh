#!/usr/bin/env bash
# `make test-package`: the Debian packages built, checked by lintian, installed on this machine
# with apt (which resolves their dependencies), used as installed, then purged, with nothing of
# theirs left behind. Prints `N passed, M failed` and exits non-zero on any failure.
# It installs and removes system packages, so it runs only when asked: CI=true or
# SYNCBADGE_TEST_PACKAGE=1 (docs/PACKAGING.md, "How the packages are tested").
set -uo pipefail
cd "$(dirname "$0")/../.."

if [ "${CI:-}" != true ] && [ "${SYNCBADGE_TEST_PACKAGE:-}" != 1 ]; then
  echo "test-package installs and purges system packages: run it with SYNCBADGE_TEST_PACKAGE=1 (CI sets CI=true)" >&2
  exit 2
fi
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
MAKE=${MAKE:-make}
SCRATCH=${SCRATCH:-.build}

passed=0
failed=0
pass() { passed=$((passed + 1)); echo "PASS $*"; }
fail() { failed=$((failed + 1)); echo "FAIL $*"; }
check() { # check NAME COMMAND...: passes when the command succeeds
  local name=$1; shift
  local out
  if out=$("$@" 2>&1); then pass "$name"; else fail "$name"; echo "$out" | sed 's/^/    /' | tail -20; fi
}
# check_log NAME PID LOG PATTERN TENTHS: passes when the program started as process group PID
# logs a line matching PATTERN in LOG within TENTHS tenths of a second (its log is the only thing
# to wait on); the program is stopped either way.
check_log() {
  local name=$1 pid=$2 log=$3 pattern=$4 tenths=$5 seen= _
  for _ in $(seq "$tenths"); do
    if grep -q "$pattern" "$log" 2>/dev/null; then seen=1; break; fi
    sleep 0.1
  done
  kill -- -"$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  if [ -n "$seen" ]; then
    pass "$name"
  else
    fail "$name"
    grep -i "syncbadge\|error\|warning" "$log" | tail -20 | sed 's/^/    /'
  fi
}
finish() {
  echo
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit
}

work=$(mktemp -d /tmp/syncbadge-test-package.XXXXXX)
daemon_pid=
installed=
cleanup() {
  [ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null
  # A run cut short leaves no package behind: an installed extension would be loaded beside
  # the one the file-manager tests install.
  if [ -n "$installed" ]; then
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get purge -y -qq $installed > /dev/null 2>&1
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# 1. Build. A failed build fails everything after it. SYNCBADGE_DEB_DIR=DIR: the packages are
#    in DIR, built before (`make test-package DIST=trixie` builds them with `make deb DIST=trixie`
#    on the host, then runs this in the Debian 13 root).
deb_dir=${SYNCBADGE_DEB_DIR:-dist}
if [ -z "${SYNCBADGE_DEB_DIR:-}" ]; then
  if ! $MAKE deb SCRATCH="$SCRATCH"; then
    fail "make deb"
    finish
  fi
  pass "make deb"
fi
echo "testing the packages of $deb_dir on $(. /etc/os-release; echo "$PRETTY_NAME")"
version=$(dpkg-parsechangelog -S Version)
mapfile -t debs < <(ls "$deb_dir"/*.deb)
packages=()
for deb in "${debs[@]}"; do packages+=("$(dpkg-deb -f "$deb" Package)"); done
echo "packages: ${packages[*]} (version $version)"
for want in syncbadge syncbadge-syncthing syncbadge-rclone python3-syncbadge syncbadge-tray nautilus-syncbadge nemo-syncbadge caja-syncbadge; do
  check "package $want is built" bash -c "printf '%s\n' ${packages[*]} | grep -qx '$want'"
done
if [ -f Clients/dolphin/CMakeLists.txt ]; then
  check "package dolphin-syncbadge is built (Clients/dolphin exists)" bash -c "printf '%s\n' ${packages[*]} | grep -qx dolphin-syncbadge"
fi
if sed -n '/^release:/,/^$/p' Makefile | grep -q syncbadge-git; then
  check "package syncbadge-git is built (make release builds it)" bash -c "printf '%s\n' ${packages[*]} | grep -qx syncbadge-git"
fi

# 2. Lintian: no error. Warnings are listed (docs/PACKAGING.md says why each is kept).
lintian_out=$(lintian --tag-display-limit 0 "${debs[@]}" 2>&1)
echo "$lintian_out" | sed 's/^/    lintian: /'
if echo "$lintian_out" | grep -q '^E: '; then fail "lintian reports no error"; else pass "lintian reports no error"; fi

# 3. Installed-Size is what the package holds (within 2%, and at least the files' bytes), and
#    the syncbadge package stays within 40 MB (issue 27).
for deb in "${debs[@]}"; do
  declared=$(dpkg-deb -f "$deb" Installed-Size)
  actual=$(dpkg-deb --fsys-tarfile "$deb" | tar -tv | awk '{ s += $3 } END { printf "%d", s / 1024 }')
  check "$(basename "$deb"): Installed-Size $declared KiB holds its $actual KiB of files" \
    bash -c "[ $declared -ge $actual ] && [ $declared -le $((actual + actual / 50 + 64)) ]"
done
size=$(dpkg-deb -f "$deb_dir"/syncbadge_*.deb Installed-Size)
check "syncbadge Installed-Size $size KiB is at most 40 MB" test "$size" -le 40000

# 4. Install them all, as a user would: apt resolves the dependencies. Leftovers of an earlier
#    run go first.
installed_before=$(dpkg-query -W -f='${Package} ${Status}\n' "${packages[@]}" 2>/dev/null | awk '/ installed$/ { print $1 }')
if [ -n "$installed_before" ]; then
  echo "purging what an earlier run left: $installed_before"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get purge -y -qq $installed_before > /dev/null
fi
if ! DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${debs[@]/#/./}" > "$work/apt-install.log" 2>&1; then
  fail "apt-get install ./$deb_dir/*.deb"
  tail -30 "$work/apt-install.log" | sed 's/^/    /'
  installed=$(dpkg-query -W -f='${Package} ${Status}\n' "${packages[@]}" 2>/dev/null | awk '/ installed$/ { print $1 }')
  finish
fi
pass "apt-get install ./$deb_dir/*.deb"
installed="${packages[*]}"
for p in "${packages[@]}"; do dpkg -L "$p" > "$work/files-$p"; done

# 5. What each package put where.
for tool in syncbadged syncbadge syncbadge-syncthing syncbadge-rclone $( [ -e /usr/bin/syncbadge-git ] && echo syncbadge-git ); do
  check "/usr/bin/$tool --version says $version" bash -c "[ \"\$(/usr/bin/$tool --version)\" = '$version' ]"
done
check "Depends of syncbadge come from dpkg-shlibdeps (libsqlite3-0, libinotifytools0)" \
  bash -c "dpkg-query -W -f='\${Depends}' syncbadge | grep -q libsqlite3-0 && dpkg-query -W -f='\${Depends}' syncbadge | grep -q libinotifytools0"
check "python3 (Debian's) imports syncbadge from dist-packages" \
  bash -c "/usr/bin/python3 -c 'import syncbadge, sys; sys.exit(0 if syncbadge.__file__.startswith(\"/usr/lib/python3/dist-packages/syncbadge/\") else 1)'"
check "python3 syncbadge.__version__ is $version" /usr/bin/python3 -c "import syncbadge, sys; sys.exit(0 if syncbadge.__version__ == '$version' else 1)"
for fm in nautilus nemo caja; do
  check "$fm-syncbadge: the extension in /usr/share/$fm-python/extensions" test -f /usr/share/$fm-python/extensions/syncbadge_fm.py
done
check "emblem icons in /usr/share/icons/hicolor" bash -c "ls /usr/share/icons/hicolor/scalable/emblems/emblem-syncbadge-*.svg /usr/share/icons/hicolor/48x48/emblems/emblem-syncbadge-*.png"
check "badges, prompt scripts and the ranger plugin under /usr/share/syncbadge" \
  test -f /usr/share/syncbadge/badges/badges.tsv -a -f /usr/share/syncbadge/prompt/syncbadge.zsh -a -f /usr/share/syncbadge/ranger/syncbadge.py
check "man pages" test -f /usr/share/man/man1/syncbadge.1.gz -a -f /usr/share/man/man1/syncbadged.1.gz -a -f /usr/share/man/man1/syncbadge-syncthing.1.gz -a -f /usr/share/man/man1/syncbadge-rclone.1.gz
check "syncbadge-rclone: its templated user unit" test -f "/usr/lib/systemd/user/syncbadge-rclone@.service"
check "completions (bash, zsh, fish)" test -f /usr/share/bash-completion/completions/syncbadge -a -f /usr/share/zsh/vendor-completions/_syncbadge -a -f /usr/share/fish/vendor_completions.d/syncbadge.fish
check "syncbadge-tray: the program, its modules, its man page and the autostart entry" \
  test -x /usr/bin/syncbadge-tray -a -f /usr/share/syncbadge/tray/syncbadge_tray/model.py \
    -a -f /usr/share/man/man1/syncbadge-tray.1.gz -a -f /etc/xdg/autostart/syncbadge-tray.desktop
check "syncbadge-tray depends on python3-gi and python3-syncbadge" \
  bash -c "dpkg-query -W -f='\${Depends}' syncbadge-tray | grep -q python3-gi && dpkg-query -W -f='\${Depends}' syncbadge-tray | grep -q python3-syncbadge"
if printf '%s\n' "${packages[@]}" | grep -qx dolphin-syncbadge; then
  # Where this release's Dolphin loads plugins from: qt5/plugins/kf5 for Dolphin on Qt 5 (Debian
  # 12), qt6/plugins/kf6 on Qt 6 (Debian 13).
  qt=$(ldd /usr/bin/dolphin 2>/dev/null | grep -o 'libQt[56]Core' | head -1 | tr -dc 56)
  plugins=/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/qt${qt:-5}/plugins/kf${qt:-5}
  check "dolphin-syncbadge: the plugins in $plugins, where this Dolphin (Qt ${qt:-?}) loads them" \
    ls "$plugins/overlayicon/syncbadge_overlay.so" "$plugins/kfileitemaction/syncbadge_actions.so"
  check "dolphin-syncbadge depends on KIO ${qt:-5} (dpkg-shlibdeps)" \
    bash -c "dpkg-query -W -f='\${Depends}' dolphin-syncbadge | grep -q 'libkf${qt:-5}kio'"
fi

# 6. The user units: enabled for every user (the socket), and valid. `systemd-analyze --user`
#    needs a user manager; without one (a container, CI) the units are verified as system units,
#    which checks their syntax and that the binaries they run exist.
check "syncbadged.socket is enabled for every user (/etc/systemd/user/sockets.target.wants)" \
  test -L /etc/systemd/user/sockets.target.wants/syncbadged.socket
check "the adapters' services are not enabled for every user" \
  bash -c "! ls /etc/systemd/user/default.target.wants/syncbadge-*.service 2>/dev/null | grep -q ."
units=$(ls /usr/lib/systemd/user/syncbadge*.service /usr/lib/systemd/user/syncbadge*.socket)
if systemd-analyze --user verify $units > "$work/verify.log" 2>&1; then
  pass "systemd-analyze --user verify of the installed units"
elif grep -q "Failed to initialize manager\|Failed to lookup RuntimeDirectory\|Failed to connect" "$work/verify.log"; then
  echo "    (no user manager here: verifying as system units)"
  mkdir -p "$work/units"
  cp $units "$work/units/"
  check "systemd-analyze verify of the installed units" \
    bash -c "out=\$(systemd-analyze verify $work/units/* 2>&1); echo \"\$out\"; ! echo \"\$out\" | grep -v 'sockets.target\|Unit is bound to inactive unit\|default.target' | grep -q ."
else
  fail "systemd-analyze --user verify of the installed units"
  sed 's/^/    /' "$work/verify.log"
fi

# 7. The installed daemon through socket activation, on the path the installed socket unit
#    names (%t is $XDG_RUNTIME_DIR), run as its service unit runs it; the installed CLI asks it.
runtime="$work/run"
mkdir -m 700 -p "$runtime" "$work/state" "$work/root/sub"
echo hello > "$work/root/sub/file.txt"
listen=$(sed -n 's/^ListenStream=//p' /usr/lib/systemd/user/syncbadged.socket)
socket=${listen//%t/$runtime}
exec_start=$(sed -n 's/^ExecStart=//p' /usr/lib/systemd/user/syncbadged.service)
mkdir -m 700 -p "$(dirname "$socket")"
# systemd-socket-activate hands the daemon only the variables named with -E: without them it kept
# its roots in root's own ~/.local/state from run to run.
systemd-socket-activate -E XDG_RUNTIME_DIR="$runtime" -E XDG_STATE_HOME="$work/state" -l "$socket" $exec_start \
  > "$work/daemon.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 100); do [ -S "$socket" ] && break; sleep 0.05; done
export XDG_RUNTIME_DIR=$runtime XDG_STATE_HOME=$work/state
check "the installed CLI adds a root through the socket-activated daemon" /usr/bin/syncbadge --no-spawn add "$work/root"
check "the installed CLI asks STATUS" bash -c "/usr/bin/syncbadge --no-spawn status '$work/root/sub/file.txt' | grep -q unknown"
check "the daemon was started by the socket (LISTEN_FDS), as systemd starts it" \
  bash -c "tr '\0' '\n' < /proc/$daemon_pid/environ | grep -qx LISTEN_FDS=1"
check "HELLO says server=syncbadge/$version" /usr/bin/python3 - "$socket" "$version" <<'EOF'
import sys
from syncbadge import Connection
with Connection(sys.argv[1]).open() as c:
    server = c.server
sys.exit(0 if server == "syncbadge/" + sys.argv[2] else "HELLO said server=%r" % (server,))
EOF

# 7b. Nautilus as a user has it after installing: the extension from its installed place,
#     importing the installed module, against the installed daemon, draws a synced file's
#     emblem. Headless (Xvfb, a session bus of its own), in a home of its own.
if command -v nautilus > /dev/null && command -v xvfb-run > /dev/null; then
  file="$work/root/sub/file.txt"
  /usr/bin/syncbadge --no-spawn set synced "$file" > /dev/null
  home="$work/home"
  mkdir -p "$home/.config" "$home/.cache"
  (cd "$work" && exec setsid env HOME="$home" XDG_CONFIG_HOME="$home/.config" XDG_CACHE_HOME="$home/.cache" \
    XDG_DATA_HOME="$home/.local/share" SYNCBADGE_DEBUG=1 GIO_USE_VFS=local GSETTINGS_BACKEND=keyfile \
    GSK_RENDERER=cairo NO_AT_BRIDGE=1 PATH=/usr/bin:/bin \
    xvfb-run -a -s '-screen 0 1280x800x24' dbus-run-session -- nautilus --new-window "$work/root/sub" \
    > "$work/nautilus.log" 2>&1) &
  check_log "Nautilus draws the synced emblem through the installed extension and daemon" $! \
    "$work/nautilus.log" "^syncbadge: drew $file emblem=emblem-syncbadge-synced" 600
fi

# 7c. The installed tray, as the autostart entry starts it (its Exec line), on a session bus of
#     its own, follows the installed daemon: its log says it walked the root.
if command -v dbus-run-session > /dev/null; then
  tray_exec=$(sed -n 's/^Exec=//p' /etc/xdg/autostart/syncbadge-tray.desktop)
  (cd "$work" && exec setsid dbus-run-session -- $tray_exec --verbose > "$work/tray.log" 2>&1) &
  check_log "the installed syncbadge-tray (the autostart entry's Exec) follows the installed daemon" $! \
    "$work/tray.log" "followed: 1 roots, 0 problems, [0-9]* directories observed ($work/root)" 300
fi

kill "$daemon_pid" 2>/dev/null
wait "$daemon_pid" 2>/dev/null
daemon_pid=
unset XDG_RUNTIME_DIR XDG_STATE_HOME

# 7c. SYNCBADGE_TEST_GUI=1: the file managers' own tests (Examples/filemanagers/tests,
#     Clients/dolphin/tests) against what the packages installed: the installed daemon, the
#     installed extension in Nautilus, Nemo and Caja, the installed plugins in Dolphin and the
#     installed emblems (SYNCBADGE_TEST_INSTALLED=1: the tests install nothing of their own).
#     SYNCBADGE_SCREENSHOTS=DIR keeps each window as DIR/<file manager>.png.
if [ "${SYNCBADGE_TEST_GUI:-}" = 1 ]; then
  gui_env=(PATH=/usr/bin:/bin SYNCBADGED=/usr/bin/syncbadged SYNCBADGE_TEST_INSTALLED=1
    SYNCBADGE_FM_ARTIFACTS="$SCRATCH/package-artifacts" SYNCBADGE_DOLPHIN_ARTIFACTS="$SCRATCH/package-artifacts")
  if [ -n "${SYNCBADGE_SCREENSHOTS:-}" ]; then
    gui_env+=(SYNCBADGE_FM_SCREENSHOTS="$SYNCBADGE_SCREENSHOTS" SYNCBADGE_DOLPHIN_SCREENSHOTS="$SYNCBADGE_SCREENSHOTS")
  fi
  for suite in Examples/filemanagers/tests Clients/dolphin/tests; do
    name=$(basename "$(dirname "$suite")")
    if env "${gui_env[@]}" xvfb-run -a -s '-screen 0 1280x800x24' dbus-run-session -- \
        /usr/bin/python3 -m unittest discover -s "$suite" -p 'test_*.py' -v > "$work/gui-$name.log" 2>&1; then
      pass "$name: $(grep -o '^Ran [0-9]* tests\?' "$work/gui-$name.log"), OK, with the installed packages"
    else
      fail "$name: the file managers' tests with the installed packages (artifacts in $SCRATCH/package-artifacts)"
      tail -40 "$work/gui-$name.log" | sed 's/^/    /'
    fi
  done
fi

# 8. Purge every package: none of their files is left, nor the links enabling the socket.
if DEBIAN_FRONTEND=noninteractive $SUDO apt-get purge -y -qq "${packages[@]}" > "$work/apt-purge.log" 2>&1; then
  installed=
  pass "apt-get purge of every package"
else
  fail "apt-get purge of every package"
  tail -20 "$work/apt-purge.log" | sed 's/^/    /'
fi
left=""
for p in "${packages[@]}"; do
  while read -r f; do
    # Directories other packages share (/usr, /usr/share/man/man1, ...) stay; our own must go.
    if [ -d "$f" ] && [ ! -L "$f" ]; then
      case "$f" in */syncbadge|*/syncbadge/*) [ -e "$f" ] && left="$left $f" ;; esac
    elif [ -e "$f" ] || [ -L "$f" ]; then
      left="$left $f"
    fi
  done < "$work/files-$p"
done
check "no file of the packages is left after the purge" bash -c "[ -z '$left' ] || { echo 'left:$left'; exit 1; }"
check "the socket's enabling links are gone" bash -c "! ls /etc/systemd/user/*/syncbadge* 2>/dev/null | grep -q ."
check "no byte-compiled syncbadge module is left" test ! -e /usr/lib/python3/dist-packages/syncbadge
check "dpkg knows none of the packages any more" \
  bash -c "! dpkg-query -W -f='\${Package} \${Status}\n' ${packages[*]} 2>/dev/null | grep -v 'not-installed\$' | grep -q ."

finish
