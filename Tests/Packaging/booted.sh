# Sourced by the scripts that boot a root with systemd-nspawn (booted-units.sh, rclone-new-user.sh):
# the checks' tally, and a booted container's start, wait and stop, written once.
#
#   pass NAME / fail NAME / check NAME COMMAND...   count and print PASS or FAIL
#   wait_for TENTHS COMMAND...                      true once COMMAND succeeds within the deadline
#   boot_wait WHO LOG                               after `systemd-nspawn ... -b ... &` as $nspawn:
#                                                   sets $init (the container's systemd) and waits
#                                                   until it is up; exits 2 when it never came
#   inside COMMAND...                               runs in the container
#   boot_stop                                       powers the container off (cleanup traps)
# This machine's PID 1 is not systemd, so every caller runs nspawn with --register=no
# --keep-unit: without a machined or a scope unit it stays in the caller's cgroup.

passed=0
failed=0
nspawn=
init=
pass() { passed=$((passed + 1)); echo "PASS $*"; }
fail() { failed=$((failed + 1)); echo "FAIL $*"; }
check() {
  local name=$1; shift
  local out
  if out=$("$@" 2>&1); then pass "$name"; else fail "$name"; echo "$out" | sed 's/^/    /' | tail -20; return 1; fi
}
wait_for() {
  local tenths=$1 _; shift
  for _ in $(seq "$tenths"); do "$@" > /dev/null 2>&1 && return 0; sleep 0.1; done
  "$@" > /dev/null 2>&1
}
inside() { nsenter -t "$init" -a "$@"; }

boot_wait() {
  local who=$1 log=$2 _
  for _ in $(seq 300); do
    init=$(pgrep -P "$nspawn" -x systemd | head -1)
    [ -n "$init" ] && break
    kill -0 "$nspawn" 2> /dev/null || break
    sleep 0.1
  done
  if [ -z "$init" ]; then
    echo "$who: systemd-nspawn could not boot here:" >&2
    sed 's/^/    /' "$log" >&2
    exit 2
  fi
  # Booted: the system bus is up and systemd says where it is (running, or degraded for a unit
  # this kind of container cannot run).
  local state=
  for _ in $(seq 600); do
    state=$(inside systemctl is-system-running 2> /dev/null)
    case $state in running | degraded) break ;; esac
    sleep 0.1
  done
  echo "the container's systemd: $(inside systemctl --version | head -1), $state; $(inside sh -c '. /etc/os-release; echo $PRETTY_NAME')"
  [ "$state" = degraded ] && inside systemctl --failed --no-legend --plain | sed 's/^/    failed unit: /'
  check "systemd is PID 1 in the booted container" bash -c "[ \"\$(nsenter -t $init -a cat /proc/1/comm)\" = systemd ]"
}

boot_stop() {
  # What a caller left running through `inside ... &` first: nsenter waits on its child in the
  # container's PID namespace and, once that child is stopped in the power-off, stops itself
  # (as it passes job control on) and never reaps it; the container's last process then waits
  # for that zombie forever, and the nsenter holds whatever descriptors the caller had (a
  # build lock wrapped around `make test-package`). Its child ends with the container.
  [ -n "$init" ] && pkill -KILL -f "^nsenter -t $init -a " 2> /dev/null || true
  if [ -n "$nspawn" ] && kill -0 "$nspawn" 2> /dev/null; then
    kill -TERM "$nspawn" 2> /dev/null   # nspawn asks the container's systemd to power off
    for _ in $(seq 150); do kill -0 "$nspawn" 2> /dev/null || break; sleep 0.1; done
    kill -KILL "$nspawn" 2> /dev/null
    wait "$nspawn" 2> /dev/null
  fi
  return 0
}
