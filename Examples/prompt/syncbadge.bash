# syncbadge.bash: the SyncBadge state of the current directory in the bash prompt.
#
#   source /path/to/syncbadge.bash
#   PS1='$SYNCBADGE_PROMPT\w\$ '        # or: PS1='${SYNCBADGE_PROMPT:+$SYNCBADGE_PROMPT }\w\$ '
#
# Inside a root $SYNCBADGE_PROMPT is the directory's roll-up, e.g. "✗1 ⟳3" (a badge glyph and
# how many entries below are in that state, worst first) or "✓" when everything is synced;
# outside every root, and while no daemon answers, it is empty.
#
# How: one coprocess per shell, `syncbadge bridge --no-spawn`, relays the protocol to the
# daemon's socket. PROMPT_COMMAND sends one STATUS for the directory and reads until its final
# line: one round trip, at most SYNCBADGE_TIMEOUT seconds. It does not OBSERVE (zsh does, to
# redraw without a keypress): bash reads a pipe one byte per system call, and the listing that
# OBSERVE answers made a `cd` cost 4 ms, where a prompt with one STATUS costs 1.5 ms
# (docs/PERFORMANCE.md). Nothing is forked per prompt; the bridge is started again only after
# the daemon went away (or after a long backlog of pushes), at a later prompt.
#
# Options (read at every prompt):
#   SYNCBADGE_ASCII=1      the badges' ASCII fallbacks instead of their glyphs
#   SYNCBADGE_COLOR=0      no colours (NO_COLOR also turns them off)
#   SYNCBADGE_TIMEOUT=0.05 the most a prompt waits for the daemon's answer, in seconds
#   SYNCBADGE_SOCKET       the daemon's socket (else $XDG_RUNTIME_DIR/syncbadge/daemon.sock,
#                          else /tmp/syncbadge-$UID/daemon.sock)
#   SYNCBADGE_PROMPT_HOOK=0  do not add the hook to PROMPT_COMMAND (call _syncbadge_precmd yourself)

[[ -n ${_syncbadge_loaded-} ]] && return 0
(( BASH_VERSINFO[0] >= 5 )) || { echo "syncbadge.bash needs bash 5 or later" >&2; return 0; }

SYNCBADGE_PROMPT=
_syncbadge_in=         # our copy of the coprocess's stdout (read end)
_syncbadge_out=        # our copy of its stdin (write end)
_syncbadge_pid=
_syncbadge_epoch=      # the daemon's epoch: a new one drops every cached answer
_syncbadge_retry=0     # EPOCHREALTIME before which no new connection is tried
_syncbadge_seq=0       # request tags: s<seq> STATUS
_syncbadge_dir=        # the directory asked about (wire form)
_syncbadge_state=      # its state (empty: nothing to show)
_syncbadge_counts=     # its counts= option
_syncbadge_partial=    # a line read only in part when a read timed out
_syncbadge_pwd=        # $PWD when last encoded, and its wire form
_syncbadge_pwdenc=
declare -gA _syncbadge_glyph=() _syncbadge_ascii=() _syncbadge_color=()
_syncbadge_pipetrap=0  # the user has a PIPE trap: leave it alone
# Used until the daemon's BADGES answer came (the default set).
declare -gA _syncbadge_defglyph=([error]=✗ [conflict]=⇄ [syncing]=⟳ [pending]=⇡ [unknown]='?' [synced]=✓ [ignored]=⊘)
declare -gA _syncbadge_defascii=([error]='!' [conflict]='#' [syncing]='~' [pending]='+' [unknown]='?' [synced]='=' [ignored]='-')

# The daemon's socket, as PROTOCOL.md "Transport" resolves it (an empty or relative
# XDG_RUNTIME_DIR does not count; Tests/Vectors/wire.tsv has the cases).
_syncbadge_socket() {
    if [[ -n ${SYNCBADGE_SOCKET-} ]]; then REPLY=$SYNCBADGE_SOCKET
    elif [[ ${XDG_RUNTIME_DIR-} == /* ]]; then REPLY=$XDG_RUNTIME_DIR/syncbadge/daemon.sock
    else REPLY=/tmp/syncbadge-$UID/daemon.sock
    fi
}

# $1 percent-encoded as a protocol field (PROTOCOL.md "Framing") into REPLY: the bytes
# 0x00-0x20, %, 0x7F and every byte outside a valid UTF-8 sequence become %XX.
_syncbadge_encode() {
    local LC_ALL=C
    local s=$1 out= c b b1 b2 b3 len i=0 n=${#1}
    if [[ $s != *[![:graph:]]* && $s != *%* ]]; then REPLY=$s; return; fi
    while (( i < n )); do
        c=${s:i:1}
        printf -v b %d "'$c"
        if (( b < 0x80 )); then
            if (( b <= 0x20 || b == 0x25 || b == 0x7F )); then printf -v c %%%02X "$b"; fi
            out+=$c; (( i++ )); continue
        fi
        b1=-1 b2=-1 b3=-1
        (( i + 1 < n )) && printf -v b1 %d "'${s:i+1:1}"
        (( i + 2 < n )) && printf -v b2 %d "'${s:i+2:1}"
        (( i + 3 < n )) && printf -v b3 %d "'${s:i+3:1}"
        len=0
        if (( b >= 0xC2 && b <= 0xDF )); then
            (( b1 >= 0x80 && b1 <= 0xBF )) && len=2
        elif (( b == 0xE0 )); then
            (( b1 >= 0xA0 && b1 <= 0xBF && b2 >= 0x80 && b2 <= 0xBF )) && len=3
        elif (( (b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF )); then
            (( b1 >= 0x80 && b1 <= 0xBF && b2 >= 0x80 && b2 <= 0xBF )) && len=3
        elif (( b == 0xED )); then
            (( b1 >= 0x80 && b1 <= 0x9F && b2 >= 0x80 && b2 <= 0xBF )) && len=3
        elif (( b == 0xF0 )); then
            (( b1 >= 0x90 && b1 <= 0xBF && b2 >= 0x80 && b2 <= 0xBF && b3 >= 0x80 && b3 <= 0xBF )) && len=4
        elif (( b >= 0xF1 && b <= 0xF3 )); then
            (( b1 >= 0x80 && b1 <= 0xBF && b2 >= 0x80 && b2 <= 0xBF && b3 >= 0x80 && b3 <= 0xBF )) && len=4
        elif (( b == 0xF4 )); then
            (( b1 >= 0x80 && b1 <= 0x8F && b2 >= 0x80 && b2 <= 0xBF && b3 >= 0x80 && b3 <= 0xBF )) && len=4
        fi
        if (( len )); then
            out+=${s:i:len}; (( i += len ))
        else
            printf -v c %%%02X "$b"; out+=$c; (( i++ ))
        fi
    done
    REPLY=$out
}

# A percent-encoded field decoded into REPLY.
_syncbadge_decode() {
    local v=${1//\\/\\\\}
    printf -v REPLY %b "${v//%/\\x}"
}

# Closes the connection; the next prompt may open another.
_syncbadge_close() {
    [[ -n $_syncbadge_out ]] && exec {_syncbadge_out}>&-
    [[ -n $_syncbadge_in ]] && exec {_syncbadge_in}<&-
    [[ -n $_syncbadge_pid ]] && kill "$_syncbadge_pid" 2>/dev/null
    _syncbadge_in= _syncbadge_out= _syncbadge_pid= _syncbadge_partial=
    _syncbadge_dir= _syncbadge_state= _syncbadge_counts=
}

# One line from the daemon: an answer (by its tag) or a push (`*`).
_syncbadge_line() {
    local - IFS=' '
    set -f
    local f=($1) k v
    case ${f[0]} in
    '*')
        case ${f[1]} in
        BYE) _syncbadge_close; return 1 ;;
        esac ;;
    h)
        if [[ ${f[1]} == OK ]]; then
            for v in "${f[@]:2}"; do
                if [[ $v == epoch=* && ${v#epoch=} != "$_syncbadge_epoch" ]]; then
                    # Another daemon: nothing cached holds any more.
                    _syncbadge_epoch=${v#epoch=}
                    _syncbadge_glyph=() _syncbadge_ascii=() _syncbadge_color=()
                    _syncbadge_state= _syncbadge_counts=
                fi
            done
        else
            _syncbadge_close; return 1
        fi ;;
    b)
        if [[ ${f[1]} == BADGE ]]; then
            k=${f[2]}
            for v in "${f[@]:3}"; do
                case $v in
                glyph=*) _syncbadge_decode "${v#glyph=}"; _syncbadge_glyph[$k]=$REPLY ;;
                ascii=*) _syncbadge_decode "${v#ascii=}"; _syncbadge_ascii[$k]=$REPLY ;;
                color=*) _syncbadge_decode "${v#color=}"; _syncbadge_color[$k]=$REPLY ;;
                esac
            done
        fi ;;
    s*)
        [[ ${f[0]} == "s$_syncbadge_seq" ]] || return 0
        case ${f[1]} in
        ITEM)
            _syncbadge_state=${f[3]} _syncbadge_counts=
            for v in "${f[@]:4}"; do [[ $v == counts=* ]] && _syncbadge_counts=${v#counts=}; done ;;
        ERR) _syncbadge_state= _syncbadge_counts= ;;   # outside, not-found: nothing to show
        esac ;;
    esac
    return 0
}

# Reads and handles lines: until the final line of the answer tagged $1 (with $1 empty: only
# what is there already) or until $2 microseconds passed. Returns 1 once the connection is gone.
_syncbadge_read() {
    local want=$1 deadline line left rc n=0
    deadline=$(( ${EPOCHREALTIME/[.,]/} + $2 ))
    while [[ -n $_syncbadge_in ]]; do
        if [[ -z $want ]]; then
            read -t 0 -u "$_syncbadge_in" || return 0
            # A backlog of pushes (`* ROOT` while the shell sat idle and roots changed): a new
            # bridge costs less than reading it a byte per system call.
            if (( ++n > 64 )); then
                _syncbadge_close
                return 1
            fi
            left=0.001
        else
            left=$(( deadline - ${EPOCHREALTIME/[.,]/} ))
            (( left > 0 )) || return 0
            printf -v left %d.%06d $(( left / 1000000 )) $(( left % 1000000 ))
        fi
        IFS= read -r -t "$left" -u "$_syncbadge_in" line
        rc=$?
        if (( rc > 128 )); then            # timed out: keep what came of the line
            _syncbadge_partial+=$line
            [[ -z $want ]] && return 0
            continue
        fi
        if (( rc != 0 )); then             # end of file: the bridge ended, so did the daemon
            _syncbadge_close
            return 1
        fi
        line=$_syncbadge_partial$line _syncbadge_partial=
        _syncbadge_line "$line" || return 1
        if [[ -n $want && $line == "$want "* ]]; then
            case ${line#"$want "} in OK|OK\ *|ERR|ERR\ *) return 0 ;; esac
        fi
    done
    return 1
}

# Writes requests; a bridge that went away closes the connection.
_syncbadge_send() {
    [[ -n $_syncbadge_out ]] || return 1
    local ok=1
    # Writing to a bridge that just ended would kill the shell with SIGPIPE: ignore the
    # signal for the moment of the write (nothing is started meanwhile, so nothing inherits
    # it), unless the user has a PIPE trap of their own.
    if (( _syncbadge_pipetrap )); then
        kill -0 "$_syncbadge_pid" 2>/dev/null && printf %s "$1" >&"$_syncbadge_out" 2>/dev/null && ok=0
    else
        trap '' PIPE
        printf %s "$1" >&"$_syncbadge_out" 2>/dev/null && ok=0
        trap - PIPE
    fi
    (( ok == 0 )) && return 0
    _syncbadge_close
    return 1
}

# SYNCBADGE_TIMEOUT in microseconds.
_syncbadge_timeout() {
    local u
    if [[ ${SYNCBADGE_TIMEOUT-} =~ ^([0-9]*)(\.([0-9]*))?$ && -n ${SYNCBADGE_TIMEOUT} ]]; then
        u=${BASH_REMATCH[3]}000000
        REPLY=$(( 10#${BASH_REMATCH[1]:-0} * 1000000 + 10#${u:0:6} ))
    else
        REPLY=50000
    fi
}

# Starts the bridge and says HELLO (the caller pipelines the rest behind it).
_syncbadge_connect() {
    local now=${EPOCHREALTIME/[.,]/}
    (( now >= _syncbadge_retry )) || return 1
    _syncbadge_socket
    local sock=$REPLY
    # No socket, no daemon: nothing to start (the daemon removes its socket when it stops).
    [[ -S $sock ]] || return 1
    # After a failure, wait 5 seconds before starting another bridge.
    _syncbadge_retry=$(( now + 5000000 ))
    local -
    set +m   # no job notices for the coprocess ("[1]+ Done ...")
    coproc _SYNCBADGE_BRIDGE { exec syncbadge bridge --no-spawn --socket "$sock" 2>/dev/null; }
    _syncbadge_pid=$_SYNCBADGE_BRIDGE_PID
    # Our own copies (close-on-exec, like the originals): bash closes the coprocess's
    # descriptors as soon as it has reaped it, possibly before we read its last lines. Closing
    # the originals by redirection also tells bash the coprocess is done with, so the next one
    # starts without "coproc still exists" and nothing leaks.
    local r=${_SYNCBADGE_BRIDGE[0]} w=${_SYNCBADGE_BRIDGE[1]}
    exec {_syncbadge_in}<&"$r" {_syncbadge_out}>&"$w"
    exec {r}<&- {w}>&-
    disown "$_syncbadge_pid" 2>/dev/null
    # roots=0 (protocol 1.1): the prompt asks STATUS every time, so `* ROOT` pushes would only
    # pile up between prompts. A daemon that predates it ignores the option.
    _syncbadge_send $'h HELLO proto=1 role=viewer name=bash-prompt roots=0\nb BADGES\n'
}

# Appends the badge of state $1 and the count $2 (may be empty) to `out` (the caller's).
_syncbadge_badge() {
    local g c=${_syncbadge_color[$1]-}
    if (( ascii )); then g=${_syncbadge_ascii[$1]-${_syncbadge_defascii[$1]-?}}
    else g=${_syncbadge_glyph[$1]-${_syncbadge_defglyph[$1]-?}}
    fi
    [[ -n $out ]] && out+=' '
    if (( color )) && [[ -n $c ]]; then
        # \001 and \002 tell readline what takes no room on the screen.
        out+=$'\001\e['"$c"$'m\002'"$g$2"$'\001\e[0m\002'
    else
        out+=$g$2
    fi
}

# The prompt text for the state and counts we have.
_syncbadge_render() {
    SYNCBADGE_PROMPT=
    local state=$_syncbadge_state
    [[ -n $state && $state != outside ]] || return 0
    local ascii=${SYNCBADGE_ASCII:-0} color=1 s n out= g c part
    [[ $ascii == 1 ]] || ascii=0
    [[ ${SYNCBADGE_COLOR:-1} == 0 || -n ${NO_COLOR-} || $TERM == dumb ]] && color=0
    local -A count=()
    local IFS=,
    for part in $_syncbadge_counts; do count[${part%%:*}]=${part#*:}; done
    local states=(error conflict syncing pending unknown)
    if [[ $state == ignored ]]; then
        _syncbadge_badge ignored ""
    else
        # The directory's own state when nothing below accounts for it (a new directory).
        [[ $state != synced && -z ${count[$state]-} ]] && _syncbadge_badge "$state" ""
        for s in "${states[@]}"; do
            n=${count[$s]-0}
            (( n > 0 )) && _syncbadge_badge "$s" "$n"
        done
        [[ -z $out ]] && _syncbadge_badge synced ""
    fi
    SYNCBADGE_PROMPT=$out
}

# Run before every prompt.
_syncbadge_precmd() {
    local rc=$? timeout
    local -
    set +u
    _syncbadge_timeout; timeout=$REPLY
    # What the daemon pushed since the last prompt (`* ROOT`, `* BYE`; never waits).
    [[ -n $_syncbadge_in ]] && _syncbadge_read "" 0
    local fresh=0
    if [[ -z $_syncbadge_in ]]; then
        _syncbadge_connect && fresh=1
    fi
    if [[ -n $_syncbadge_in ]]; then
        # The logical $PWD: bash cannot resolve symbolic links without forking (with
        # `set -o physical`, $PWD is the physical path).
        if [[ $PWD != "$_syncbadge_pwd" ]]; then
            _syncbadge_encode "$PWD"
            _syncbadge_pwd=$PWD _syncbadge_pwdenc=$REPLY
        fi
        local dir=$_syncbadge_pwdenc
        # Another directory shows nothing until its answer came (a late answer for the
        # directory before is cleared here; older ones are ignored by their tag).
        [[ $dir != "$_syncbadge_dir" ]] && _syncbadge_dir=$dir _syncbadge_state= _syncbadge_counts=
        (( _syncbadge_seq++ ))
        if _syncbadge_send "s$_syncbadge_seq STATUS $dir"$'\n'; then
            # A fresh bridge first has to start: give it longer, it exits at once
            # (end of file) when no daemon answers.
            (( fresh )) && timeout=1000000
            _syncbadge_read "s$_syncbadge_seq" "$timeout"
        fi
        [[ -n $_syncbadge_in ]] && _syncbadge_retry=0
    fi
    _syncbadge_render
    return $rc
}

# Sourced by a script (tests use the functions): no hook.
[[ $- == *i* ]] || return 0
_syncbadge_loaded=1
[[ -n $(trap -p PIPE) ]] && _syncbadge_pipetrap=1
if [[ ${SYNCBADGE_PROMPT_HOOK:-1} != 0 ]]; then
    if [[ ${PROMPT_COMMAND@a} == *a* ]]; then
        PROMPT_COMMAND=(_syncbadge_precmd "${PROMPT_COMMAND[@]}")
    else
        PROMPT_COMMAND="_syncbadge_precmd${PROMPT_COMMAND:+; $PROMPT_COMMAND}"
    fi
fi
