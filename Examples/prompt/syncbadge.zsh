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
typeset -g _syncbadge_hello=       # HELLO and BADGES of a new connection, sent with the first ask
typeset -g _syncbadge_epoch=       # the daemon's epoch: a new one drops every cached answer
typeset -gi _syncbadge_seq=0       # request tags: o<seq> OBSERVE, s<seq> STATUS, u<seq> UNOBSERVE
typeset -g _syncbadge_dir=         # the directory asked about (wire form); empty: ask again
typeset -g _syncbadge_observed=    # the directory observed (wire form), for UNOBSERVE
typeset -g _syncbadge_state=       # its state (empty: nothing to show)
typeset -g _syncbadge_counts=      # its counts= option
typeset -gi _syncbadge_again=0     # a push asked for a new STATUS
typeset -gA _syncbadge_wire        # $PWD → its wire form, for the directories visited lately
typeset -gA _syncbadge_glyph _syncbadge_ascii _syncbadge_color
typeset -gA _syncbadge_memo        # rendered prompts by what they show; emptied when badges change
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
    _syncbadge_fd= _syncbadge_buf= _syncbadge_dir= _syncbadge_observed= _syncbadge_hello=
    _syncbadge_state= _syncbadge_counts= _syncbadge_again=0
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
                    _syncbadge_glyph=() _syncbadge_ascii=() _syncbadge_color=() _syncbadge_memo=()
                    _syncbadge_state= _syncbadge_counts=
                fi
            done
        else
            _syncbadge_close; return 1
        fi ;;
    (b)
        if [[ $f[2] == BADGE ]]; then
            _syncbadge_memo=()
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
    esac
    return 0
}

# Reads what is there and handles every complete line; with a tag in $1, goes on reading until
# the final line of the answer tagged $1 or the time $2 (an EPOCHREALTIME; 0: never waits).
# Sets REPLY to 1 when that final line came. Returns 1 once the connection is gone.
_syncbadge_take() {
    emulate -L zsh
    local want=$1 chunk data line v
    local -a lines f
    local -F left
    integer late=0
    REPLY=0
    while true; do
        (( left = $2 - EPOCHREALTIME ))
        if (( left <= 0 )); then
            # Past the deadline: one last look at what is there, then no more, however fast
            # the daemon keeps pushing.
            (( late++ )) && return 0
            left=0
        fi
        sysread -i $_syncbadge_fd -s 65536 -t $left chunk
        case $? in
        (0) ;;
        (4) return 0 ;;                   # nothing within the time
        (*) _syncbadge_close; return 1 ;; # end of file or an error: the daemon went away
        esac
        data=$_syncbadge_buf$chunk
        lines=("${(@ps:\n:)data}")
        _syncbadge_buf=$lines[-1]         # what follows the last LF: a line still coming
        # OBSERVE's listing (one ITEM per entry) and the OKs of OBSERVE and UNOBSERVE say nothing
        # the prompt shows: dropped in one pattern match rather than parsed one by one. The
        # answer to the current STATUS is read here, not in a call per line: a zsh function
        # call is what a prompt after a cd spends its time on (PERFORMANCE.md).
        lines=("${(@)${(@)lines[1,-2]}:#(o<-> ITEM *|o<-> OK*|u<-> *)}")
        for line in "${(@)lines}"; do
            line=${line%$'\r'}
            case $line in
            ('') ;;
            ("s$_syncbadge_seq ITEM "*)
                f=(${(s: :)line})
                _syncbadge_state=$f[4] _syncbadge_counts=
                for v in $f[5,-1]; do [[ $v == counts=* ]] && _syncbadge_counts=${v#counts=}; done ;;
            ("s$_syncbadge_seq ERR"(| *))
                _syncbadge_state= _syncbadge_counts= ;|  # outside, not-found: nothing to show
            ("s$_syncbadge_seq "(OK|ERR)(| *))
                [[ $want == s$_syncbadge_seq ]] && REPLY=1 ;;
            (s<->\ *) ;;                  # an older STATUS's answer
            (*) _syncbadge_line "$line" || return 1 ;;
            esac
        done
        [[ -z $want ]] || (( REPLY )) && return 0
    done
}

# The current directory's wire form into REPLY: its physical path (the daemon never follows
# symbolic links), encoded once per directory (precmd reads the cache itself: a call costs).
# A symbolic link on the way that is retargeted later shows once the cache is emptied (64
# directories) or in a new shell.
_syncbadge_here() {
    emulate -L zsh
    REPLY=$_syncbadge_wire[$PWD]
    [[ -n $REPLY ]] && return
    REPLY=${PWD:A}
    # Most paths are their own wire form: no call to find that out.
    [[ $REPLY == *[^\!-\~]* || $REPLY == *%* ]] && _syncbadge_encode $REPLY
    (( ${#_syncbadge_wire} < 64 )) || _syncbadge_wire=()
    _syncbadge_wire[$PWD]=$REPLY
}

# Sends UNOBSERVE (the old directory), OBSERVE and STATUS (the current one) in one write,
# after a new connection's HELLO and BADGES; a daemon that went away closes the connection.
# $1: the current directory's wire form, when the caller has it already.
_syncbadge_ask() {
    emulate -L zsh
    [[ -n $_syncbadge_fd ]] || return 1
    # A closed socket must not end the shell with SIGPIPE (the trap is restored on return).
    setopt localoptions localtraps
    trap '' PIPE
    local dir=$1 req=$_syncbadge_hello
    if (( ! $# )); then _syncbadge_here; dir=$REPLY; fi
    (( _syncbadge_seq++ ))
    [[ -n $_syncbadge_observed && $_syncbadge_observed != "$dir" ]] &&
        req+="u$_syncbadge_seq UNOBSERVE $_syncbadge_observed"$'\n'
    # list=0 (protocol 1.1): the prompt needs the directory, not its listing. A daemon that
    # predates it sends the listing, which _syncbadge_take drops.
    [[ $_syncbadge_observed != "$dir" ]] && req+="o$_syncbadge_seq OBSERVE $dir list=0"$'\n'
    req+="s$_syncbadge_seq STATUS $dir"$'\n'
    _syncbadge_dir=$dir _syncbadge_observed=$dir _syncbadge_again=0 _syncbadge_hello=
    syswrite -o $_syncbadge_fd -- "$req" 2>/dev/null && return 0
    _syncbadge_close
    return 1
}

# Opens the connection; HELLO and BADGES go with the first ask, in the same write.
_syncbadge_connect() {
    emulate -L zsh
    _syncbadge_socket
    local sock=$REPLY
    [[ -S $sock ]] || return 1
    zsocket $sock 2>/dev/null || return 1
    _syncbadge_fd=$REPLY
    _syncbadge_hello=$'h HELLO proto=1 role=viewer name=zsh-prompt\nb BADGES\n'
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
    # The same state, counts and options make the same text: cd back and forth costs no
    # rendering.
    local key="$state $_syncbadge_counts $ascii$color$bang"
    if (( ${+_syncbadge_memo[$key]} )); then
        SYNCBADGE_PROMPT=$_syncbadge_memo[$key]
        return
    fi
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
    (( ${#_syncbadge_memo} < 64 )) || _syncbadge_memo=()
    _syncbadge_memo[$key]=$out
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

# Before every prompt. In the same directory it only reads what the daemon pushed since the
# last prompt (never waiting); in another it asks, and the wait for the answer (at most
# SYNCBADGE_TIMEOUT) reads the pushes too. A connection found gone is opened again once.
_syncbadge_precmd() {
    emulate -L zsh
    local dir=$_syncbadge_wire[$PWD]
    [[ -n $dir ]] || { _syncbadge_here; dir=$REPLY }
    integer try
    for try in 1 2; do
        [[ -n $_syncbadge_fd ]] || _syncbadge_connect || break
        if [[ $dir == "$_syncbadge_dir" ]] && (( ! _syncbadge_again )); then
            _syncbadge_take "" 0 || continue
            [[ $dir == "$_syncbadge_dir" ]] && (( ! _syncbadge_again )) && break
        fi
        _syncbadge_state= _syncbadge_counts=
        _syncbadge_ask $dir || continue
        _syncbadge_take s$_syncbadge_seq $(( EPOCHREALTIME + ${SYNCBADGE_TIMEOUT:-0.05} )) || continue
        break
    done
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
