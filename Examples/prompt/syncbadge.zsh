# syncbadge.zsh: the SyncBadge state of the current directory in the zsh prompt.
#
#   source /path/to/syncbadge.zsh
#   setopt prompt_subst
#   PROMPT='$SYNCBADGE_PROMPT %~ %# '      # or RPROMPT='$SYNCBADGE_PROMPT'
#
# Inside a root $SYNCBADGE_PROMPT is the directory's roll-up, e.g. "✗1 ⟳3" (a badge glyph and
# how many entries below are in that state, worst first) or "✓" when everything is synced;
# outside every root, and while no daemon answers, it is empty. It is ready for prompt
# expansion (colours in %{ %}, a % in a glyph doubled); `syncbadge_prompt` prints it.
#
# How: the shell itself holds one connection to the daemon's socket (zsh/net/socket). When
# the directory changed, precmd sends UNOBSERVE/OBSERVE/STATUS in one write and reads until the
# STATUS's final line (one round trip, at most SYNCBADGE_TIMEOUT). While the line editor waits
# for a key, `zle -F` hands whatever the daemon pushes to a handler that updates the counts and
# redraws the prompt with `zle reset-prompt`: the prompt follows changes without a keypress.
# Nothing is forked, ever. When the daemon goes away, the next prompt tries to connect again.
#
# Options (read at every prompt):
#   SYNCBADGE_ASCII=1       the badges' ASCII fallbacks instead of their glyphs
#   SYNCBADGE_COLOR=0       no colours (NO_COLOR also turns them off)
#   SYNCBADGE_TIMEOUT=0.05  the most a prompt waits for the daemon's answer, in seconds
#   SYNCBADGE_SOCKET        the daemon's socket (else $XDG_RUNTIME_DIR/syncbadge/daemon.sock,
#                           else /tmp/syncbadge-$UID/daemon.sock)

(( ${+_syncbadge_loaded} )) && return 0
zmodload zsh/net/socket zsh/system zsh/datetime 2>/dev/null || {
    print -u2 "syncbadge.zsh: needs the zsh/net/socket, zsh/system and zsh/datetime modules"
    return 0
}

typeset -g SYNCBADGE_PROMPT=
typeset -g _syncbadge_fd=          # the connection
typeset -g _syncbadge_buf=         # bytes read after the last complete line
typeset -g _syncbadge_epoch=       # the daemon's epoch: a new one drops every cached answer
typeset -gi _syncbadge_seq=0       # request tags: o<seq> OBSERVE, s<seq> STATUS, u<seq> UNOBSERVE
typeset -g _syncbadge_dir=         # the directory asked about (wire form); empty: ask again
typeset -g _syncbadge_observed=    # the directory observed (wire form), for UNOBSERVE
typeset -g _syncbadge_state=       # its state (empty: nothing to show)
typeset -g _syncbadge_counts=      # its counts= option
typeset -gi _syncbadge_again=0     # a push asked for a new STATUS
typeset -g _syncbadge_pwd=         # $PWD when last encoded, and its wire form
typeset -g _syncbadge_pwdenc=
typeset -gA _syncbadge_glyph _syncbadge_ascii _syncbadge_color
# Used until the daemon's BADGES answer came (the default set).
typeset -gA _syncbadge_defglyph=(error ✗ conflict ⇄ syncing ⟳ pending ⇡ unknown '?' synced ✓ ignored ⊘)
typeset -gA _syncbadge_defascii=(error '!' conflict '#' syncing '~' pending + unknown '?' synced = ignored -)

# The daemon's socket, as PROTOCOL.md "Transport" resolves it (an empty or relative
# XDG_RUNTIME_DIR does not count; Tests/Vectors/wire.tsv has the cases).
_syncbadge_socket() {
    emulate -L zsh
    if [[ -n $SYNCBADGE_SOCKET ]]; then REPLY=$SYNCBADGE_SOCKET
    elif [[ $XDG_RUNTIME_DIR == /* ]]; then REPLY=$XDG_RUNTIME_DIR/syncbadge/daemon.sock
    else REPLY=/tmp/syncbadge-$UID/daemon.sock
    fi
}

# $1 percent-encoded as a protocol field (PROTOCOL.md "Framing") into REPLY: the bytes
# 0x00-0x20, %, 0x7F and every byte outside a valid UTF-8 sequence become %XX.
_syncbadge_encode() {
    emulate -L zsh
    setopt nomultibyte
    local s=$1 out= c
    integer i=1 n=${#1} b b1 b2 b3 len
    if [[ $s != *[^\!-\~]* && $s != *%* ]]; then REPLY=$s; return; fi
    while (( i <= n )); do
        c=${s[i]}
        (( b = #c ))
        if (( b < 0x80 )); then
            if (( b <= 0x20 || b == 0x25 || b == 0x7F )); then printf -v c '%%%02X' $b; fi
            out+=$c; (( i++ )); continue
        fi
        b1=-1 b2=-1 b3=-1
        (( i + 1 <= n )) && { c=${s[i+1]}; (( b1 = #c )) }
        (( i + 2 <= n )) && { c=${s[i+2]}; (( b2 = #c )) }
        (( i + 3 <= n )) && { c=${s[i+3]}; (( b3 = #c )) }
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
            out+=${s[i,i+len-1]}; (( i += len ))
        else
            printf -v c '%%%02X' $b; out+=$c; (( i++ ))
        fi
    done
    REPLY=$out
}

# A percent-encoded field decoded into REPLY.
_syncbadge_decode() {
    emulate -L zsh
    local v=${1//\\/\\\\}
    printf -v REPLY '%b' "${v//\%/\\x}"
}

# Closes the connection; the next prompt opens another.
_syncbadge_close() {
    emulate -L zsh
    if [[ -n $_syncbadge_fd ]]; then
        zle -F $_syncbadge_fd 2>/dev/null
        exec {_syncbadge_fd}>&-
    fi
    _syncbadge_fd= _syncbadge_buf= _syncbadge_dir= _syncbadge_observed=
    _syncbadge_state= _syncbadge_counts= _syncbadge_again=0
}

# Writes requests; a daemon that went away closes the connection.
_syncbadge_send() {
    emulate -L zsh
    [[ -n $_syncbadge_fd ]] || return 1
    # A closed socket must not end the shell with SIGPIPE (the trap is restored on return).
    setopt localoptions localtraps
    trap '' PIPE
    syswrite -o $_syncbadge_fd -- "$1" 2>/dev/null && return 0
    _syncbadge_close
    return 1
}

# One line from the daemon: an answer (by its tag) or a push (`*`).
_syncbadge_line() {
    emulate -L zsh
    local -a f=(${(s: :)1})
    local v p
    case $f[1] in
    ('*')
        case $f[2] in
        (ITEM)
            if [[ $f[3] == "$_syncbadge_dir" ]]; then
                _syncbadge_state=$f[4] _syncbadge_counts=
                for v in $f[5,-1]; do [[ $v == counts=* ]] && _syncbadge_counts=${v#counts=}; done
            fi ;;
        (GONE|RESET)
            # The directory (or what we know of it) went away: ask again.
            if [[ $f[3] == "$_syncbadge_dir" ]]; then
                [[ $f[2] == GONE ]] && _syncbadge_observed=
                _syncbadge_again=1
            fi ;;
        (ROOT)
            # A root appeared, changed or went: ask again if it may cover the directory now.
            p=$_syncbadge_dir
            if [[ -n $p && ( $p == "$f[3]" || $p == "$f[3]"/* ) ]] &&
               [[ -z $_syncbadge_state || $_syncbadge_state == outside || $f[4] == removed ]]; then
                _syncbadge_again=1
            fi ;;
        (BYE) _syncbadge_close; return 1 ;;
        esac ;;
    (h)
        if [[ $f[2] == OK ]]; then
            for v in $f[3,-1]; do
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
    (b)
        if [[ $f[2] == BADGE ]]; then
            for v in $f[4,-1]; do
                case $v in
                (glyph=*) _syncbadge_decode ${v#glyph=}; _syncbadge_glyph[$f[3]]=$REPLY ;;
                (ascii=*) _syncbadge_decode ${v#ascii=}; _syncbadge_ascii[$f[3]]=$REPLY ;;
                (color=*) _syncbadge_decode ${v#color=}; _syncbadge_color[$f[3]]=$REPLY ;;
                esac
            done
        fi ;;
    (o*)
        [[ $f[2] == ERR && $f[1] == o$_syncbadge_seq ]] && _syncbadge_observed= ;;
    (s*)
        [[ $f[1] == s$_syncbadge_seq ]] || return 0
        case $f[2] in
        (ITEM)
            _syncbadge_state=$f[4] _syncbadge_counts=
            for v in $f[5,-1]; do [[ $v == counts=* ]] && _syncbadge_counts=${v#counts=}; done ;;
        (ERR) _syncbadge_state= _syncbadge_counts= ;;   # outside, not-found: nothing to show
        esac ;;
    esac
    return 0
}

# Reads what is there (waiting at most $2 seconds for it) and handles every complete line.
# Sets REPLY to 1 when the final line of the answer tagged $1 was among them.
# Returns 1 once the connection is gone.
_syncbadge_take() {
    emulate -L zsh
    local want=$1 chunk data line
    local -a lines
    REPLY=0
    sysread -i $_syncbadge_fd -s 65536 -t $2 chunk
    case $? in
    (0) ;;
    (4) return 0 ;;                   # nothing within the time
    (*) _syncbadge_close; return 1 ;; # end of file or an error: the daemon went away
    esac
    data=$_syncbadge_buf$chunk
    lines=("${(@ps:\n:)data}")
    _syncbadge_buf=$lines[-1]         # what follows the last LF: a line still coming
    # OBSERVE's listing (one ITEM per entry) and the OKs of OBSERVE and UNOBSERVE say nothing
    # the prompt shows: dropped in one pattern match rather than parsed one by one (a zsh
    # function call is what a prompt after a cd spends its time on; PERFORMANCE.md).
    lines=("${(@)${(@)lines[1,-2]}:#(o<-> ITEM *|o<-> OK*|u<-> *)}")
    for line in "${(@)lines}"; do
        line=${line%$'\r'}
        [[ -n $line ]] || continue
        _syncbadge_line "$line" || return 1
        if [[ -n $want && $line == "$want "(OK|ERR)(| *) ]]; then REPLY=1; fi
    done
    return 0
}

# Reads until the final line of the answer tagged $1, for at most SYNCBADGE_TIMEOUT seconds.
_syncbadge_wait() {
    emulate -L zsh
    local -F timeout=${SYNCBADGE_TIMEOUT:-0.05} left
    local -F deadline=$(( EPOCHREALTIME + timeout ))
    while [[ -n $_syncbadge_fd ]]; do
        (( left = deadline - EPOCHREALTIME ))
        (( left > 0 )) || return 1
        _syncbadge_take $1 $left || return 1
        (( REPLY )) && return 0
    done
    return 1
}

# The current directory's wire form into REPLY: its physical path (the daemon never follows
# symbolic links), encoded once per directory.
_syncbadge_here() {
    emulate -L zsh
    if [[ $PWD != "$_syncbadge_pwd" ]]; then
        _syncbadge_encode ${PWD:A}
        _syncbadge_pwd=$PWD _syncbadge_pwdenc=$REPLY
    fi
    REPLY=$_syncbadge_pwdenc
}

# Sends UNOBSERVE (the old directory), OBSERVE and STATUS (the current one) in one write.
# $1: the current directory's wire form, when the caller has it already.
_syncbadge_ask() {
    emulate -L zsh
    local dir=$1 req=
    if (( ! $# )); then _syncbadge_here; dir=$REPLY; fi
    (( _syncbadge_seq++ ))
    [[ -n $_syncbadge_observed && $_syncbadge_observed != "$dir" ]] &&
        req+="u$_syncbadge_seq UNOBSERVE $_syncbadge_observed"$'\n'
    # list=0 (protocol 1.1): the prompt needs the directory, not its listing. A daemon that
    # predates it sends the listing, which _syncbadge_read drops.
    [[ $_syncbadge_observed != "$dir" ]] && req+="o$_syncbadge_seq OBSERVE $dir list=0"$'\n'
    req+="s$_syncbadge_seq STATUS $dir"$'\n'
    _syncbadge_dir=$dir _syncbadge_observed=$dir _syncbadge_again=0
    _syncbadge_send $req
}

# Opens the connection and pipelines HELLO and BADGES (the caller adds the rest).
_syncbadge_connect() {
    emulate -L zsh
    _syncbadge_socket
    local sock=$REPLY
    [[ -S $sock ]] || return 1
    zsocket $sock 2>/dev/null || return 1
    _syncbadge_fd=$REPLY
    _syncbadge_send $'h HELLO proto=1 role=viewer name=zsh-prompt\nb BADGES\n' || return 1
    zle -F $_syncbadge_fd _syncbadge_ready
}

# Appends the badge of state $1 and the count $2 (may be empty) to `out` (the caller's).
_syncbadge_badge() {
    emulate -L zsh
    local g c=$_syncbadge_color[$1]
    if (( ascii )); then g=${_syncbadge_ascii[$1]-${_syncbadge_defascii[$1]-?}}
    else g=${_syncbadge_glyph[$1]-${_syncbadge_defglyph[$1]-?}}
    fi
    g=${g//\%/%%}
    (( bang )) && g=${g//\!/!!}
    [[ -n $out ]] && out+=' '
    if (( color )) && [[ -n $c ]]; then
        out+="%{"$'\e['"$c"m"%}$g$2%{"$'\e[0m'"%}"
    else
        out+=$g$2
    fi
}

# The prompt text for the state and counts we have.
_syncbadge_render() {
    # With PROMPT_BANG a ! in the prompt is the history number: double it (checked before
    # emulate, which resets the options).
    local bang=0
    [[ -o promptbang ]] && bang=1
    emulate -L zsh
    local state=$_syncbadge_state out= s part
    integer ascii=0 color=1 n
    [[ $SYNCBADGE_ASCII == 1 ]] && ascii=1
    [[ $SYNCBADGE_COLOR == 0 || -n $NO_COLOR || $TERM == dumb ]] && color=0
    if [[ -n $state && $state != outside ]]; then
        local -A count
        for part in ${(s:,:)_syncbadge_counts}; do count[${part%%:*}]=${part#*:}; done
        if [[ $state == ignored ]]; then
            _syncbadge_badge ignored ""
        else
            # The directory's own state when nothing below accounts for it (a new directory).
            [[ $state != synced && -z $count[$state] ]] && _syncbadge_badge $state ""
            for s in error conflict syncing pending unknown; do
                n=${count[$s]:-0}
                (( n > 0 )) && _syncbadge_badge $s $n
            done
            [[ -z $out ]] && _syncbadge_badge synced ""
        fi
    fi
    SYNCBADGE_PROMPT=$out
}

# zle -F: the daemon sent something while the line editor waits for a key.
_syncbadge_ready() {
    emulate -L zsh
    local before=$SYNCBADGE_PROMPT
    if [[ $1 == $_syncbadge_fd ]]; then
        _syncbadge_take "" 0
        # A push asked for a new STATUS: send it, its answer comes here too.
        [[ -n $_syncbadge_fd ]] && (( _syncbadge_again )) && _syncbadge_ask
    else
        zle -F $1 2>/dev/null    # not ours any more
    fi
    _syncbadge_render
    if [[ $SYNCBADGE_PROMPT != "$before" ]]; then
        zle reset-prompt
        zle -R
    fi
}

# Before every prompt.
_syncbadge_precmd() {
    emulate -L zsh
    # What the daemon pushed since the last prompt (never waits).
    [[ -n $_syncbadge_fd ]] && _syncbadge_take "" 0
    [[ -n $_syncbadge_fd ]] || _syncbadge_connect
    if [[ -n $_syncbadge_fd ]]; then
        _syncbadge_here
        if [[ $REPLY != "$_syncbadge_dir" ]] || (( _syncbadge_again )); then
            _syncbadge_state= _syncbadge_counts=
            _syncbadge_ask $REPLY && _syncbadge_wait s$_syncbadge_seq
        fi
    fi
    _syncbadge_render
}

# Prints the prompt text (for scripts; in a prompt use $SYNCBADGE_PROMPT, which forks nothing).
syncbadge_prompt() {
    emulate -L zsh
    print -rn -- $SYNCBADGE_PROMPT
}

# Sourced by a script (tests use the functions): no hook.
[[ -o interactive ]] || return 0
typeset -g _syncbadge_loaded=1
autoload -Uz add-zsh-hook
add-zsh-hook precmd _syncbadge_precmd
