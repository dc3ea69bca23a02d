# syncbadge.fish: the SyncBadge state of the current directory in the fish prompt.
#
#   source /path/to/syncbadge.fish          # in ~/.config/fish/config.fish
#   function fish_right_prompt
#       syncbadge_prompt
#   end
#
# Inside a root `syncbadge_prompt` prints the directory's roll-up, e.g. "✗1 ⟳3" (a badge glyph
# and how many entries below are in that state, worst first) or "✓" when everything is
# synced; outside every root, and while no daemon answers, nothing at all.
#
# How: fish cannot open a socket, so each shell runs one background pipeline per connection:
#   tail -f REQUESTS | syncbadge bridge --no-spawn | fish (the reader, _syncbadge_reader)
# An `--on-variable PWD` handler appends UNOBSERVE/OBSERVE/STATUS to the requests file in one
# write. The reader follows the answers and pushes and publishes the directory's state in a
# universal variable of this shell (_syncbadge_s<pid>); a handler on that variable repaints the
# prompt (`commandline -f repaint`), so it follows changes without a keypress. Rendering the
# prompt reads only variables: nothing forks and nothing waits. When the daemon goes away the
# next prompt (or cd) starts a new pipeline, and not again before the socket is a new one.
#
# Options (read at every prompt):
#   SYNCBADGE_ASCII=1   the badges' ASCII fallbacks instead of their glyphs
#   SYNCBADGE_COLOR=0   no colours (NO_COLOR also turns them off)
#   SYNCBADGE_SOCKET    the daemon's socket (else $XDG_RUNTIME_DIR/syncbadge/daemon.sock,
#                       else /tmp/syncbadge-$UID/daemon.sock)
# The reader is a non-interactive `fish -c` and so reads config.fish: keep what is only for
# interactive shells under `if status is-interactive`.

# The daemon's socket, as PROTOCOL.md "Transport" resolves it (an empty or relative
# XDG_RUNTIME_DIR does not count; Tests/Vectors/wire.tsv has the cases).
function _syncbadge_socket
    if set -q SYNCBADGE_SOCKET[1]; and test -n "$SYNCBADGE_SOCKET"
        echo -- $SYNCBADGE_SOCKET
    else if set -q XDG_RUNTIME_DIR[1]; and string match -q -- '/*' "$XDG_RUNTIME_DIR"
        echo -- $XDG_RUNTIME_DIR/syncbadge/daemon.sock
    else
        # fish has no $UID: ask once.
        set -q _syncbadge_uid[1]; or set -g _syncbadge_uid (command id -u)
        echo -- /tmp/syncbadge-$_syncbadge_uid/daemon.sock
    end
end

# $argv[1] percent-encoded as a protocol field (PROTOCOL.md "Framing"): the bytes 0x00-0x20,
# %, 0x7F and every byte outside a valid UTF-8 sequence become %XX. fish keeps a byte that is
# not valid UTF-8 as a character of its own, which URL-escapes to a single %XX, while a valid
# non-ASCII character escapes to two or more.
function _syncbadge_encode
    set -l s $argv[1]
    if not string match -qr '[^!-$&-~]' -- $s
        echo -- $s
        return
    end
    set -l out
    for c in (string split '' -- $s)
        if string match -qr '^[!-$&-~]$' -- $c
            set -a out $c
        else
            set -l e (string escape --style=url -- $c)
            # One %XX: a control character, %, or a byte that is not UTF-8. Past U+10FFFF
            # (F4 90.. and up) is not UTF-8 either, though fish keeps it as one character.
            if test (string length -- $e) -eq 3; or string match -qr '^%F(4%[9AB]|[5-7])' -- $e
                set -a out $e
            else
                set -a out $c
            end
        end
    end
    string join '' -- $out
end

# A percent-encoded field decoded (`string unescape --style=url` refuses non-ASCII text).
function _syncbadge_decode
    if string match -q -- '*%*' $argv[1]
        printf (string replace -a -- '\\' '\\\\' $argv[1] | string replace -ra -- '%([0-9A-Fa-f]{2})' '\\\\x$1' | string replace -a -- % %%)
    else
        printf '%s' $argv[1]
    end
end

# The reader: runs in the background (`fish -c`), reads the bridge's output on stdin and
# publishes for the shell $argv[1] (connection number $argv[2]):
#   _syncbadge_b<pid>: connection, epoch, then "id glyph ascii color" per badge (encoded)
#   _syncbadge_s<pid>: connection, up|down|fail, ask-again counter, o|s (what to ask again),
#                      last STATUS tag answered, state (- for none), counts (- for none)
function _syncbadge_reader --argument-names ipid n
    set -l var _syncbadge_s$ipid
    set -l bvar _syncbadge_b$ipid
    set -l conn fail
    set -l epoch -
    set -l badges
    set -l dir ''
    set -l st -
    set -l counts -
    set -l answered s0
    set -l again 0
    set -l kind s
    set -l last ''
    while read -L line
        set -l f (string split ' ' -- $line)
        if test "$f[1]" = '*'
            switch $f[2]
                case ITEM
                    if test "$f[3]" = "$dir"
                        set st $f[4]
                        set counts (string replace -rf '^counts=' '' -- $f[5..-1]; or echo -)[1]
                    end
                case GONE RESET
                    # The directory (or what we know of it) went away: the shell asks again.
                    if test "$f[3]" = "$dir"
                        set again (math $again + 1)
                        set kind (test $f[2] = GONE; and echo o; or echo s)
                    end
                case ROOT
                    # A root appeared, changed or went: ask again if it may cover the directory.
                    if test -n "$dir"
                        set -l prefix "$f[3]/"
                        if test "$dir" = "$f[3]"; or test (string sub -l (string length -- $prefix) -- $dir) = $prefix
                            if test "$st" = - -o "$st" = outside -o "$f[4]" = removed
                                set again (math $again + 1)
                                set kind o
                            end
                        end
                    end
                case BYE
                    break
            end
        else
            switch $f[1]
                case h
                    test "$f[2]" = OK; or break
                    set conn up
                    set epoch (string replace -rf '^epoch=' '' -- $f[3..-1]; or echo -)[1]
                case b
                    if test "$f[2]" = BADGE
                        set -l g (string replace -rf '^glyph=' '' -- $f[4..-1])[1]
                        set -l a (string replace -rf '^ascii=' '' -- $f[4..-1])[1]
                        set -l c (string replace -rf '^color=' '' -- $f[4..-1])[1]
                        set -a badges "$f[3] $g $a $c"
                    else
                        set -U $bvar $n $epoch $badges
                    end
                case 's*'
                    set answered $f[1]
                    switch $f[2]
                        case ITEM
                            set dir $f[3]
                            set st $f[4]
                            set counts (string replace -rf '^counts=' '' -- $f[5..-1]; or echo -)[1]
                        case ERR
                            # not-found names the path; nothing to show.
                            set dir (string replace -rf '^message=' '' -- $f[4..-1])[1]
                            set st -
                            set counts -
                    end
            end
        end
        set -l now $n $conn $again $kind $answered $st $counts
        if test "$now" != "$last"
            set last "$now"
            set -U $var $now
        end
    end
    # The bridge ended: the daemon went away (or never answered).
    if test -e /proc/$ipid
        test $conn = up; and set conn down; or set conn fail
        set -U $var $n $conn $again $kind $answered - -
    else
        set -eU $var
        set -eU $bvar
    end
end

status is-interactive; or return 0
set -q _syncbadge_loaded; and return 0
set -g _syncbadge_loaded 1

set -g _syncbadge_script (status current-filename)
set -g _syncbadge_fish (status fish-path 2>/dev/null; or echo fish)
set -g _syncbadge_var _syncbadge_s$fish_pid
set -g _syncbadge_bvar _syncbadge_b$fish_pid
set -g _syncbadge_n 0          # connection number (the reader publishes it with everything)
set -g _syncbadge_conn down    # up (pipeline running), down
set -g _syncbadge_failed ''    # "socket mtime" of a socket on which a connection failed
set -g _syncbadge_tmp ''       # private directory of the requests files
set -g _syncbadge_req ''       # the current requests file
set -g _syncbadge_seq 0
set -g _syncbadge_pwd ''       # $PWD when last asked, and its wire form
set -g _syncbadge_dir ''
set -g _syncbadge_observed ''
set -g _syncbadge_again 0
set -g _syncbadge_state -
set -g _syncbadge_counts -
set -g _syncbadge_epoch ''
set -g _syncbadge_ids
set -g _syncbadge_glyphs
set -g _syncbadge_asciis
set -g _syncbadge_colors

# Universal variables of shells that are gone (killed before they could clean up).
for v in (set -Un | string match -r '^_syncbadge_[sb][0-9]+$')
    test -e /proc/(string sub -s 13 -- $v); or set -eU $v
end

# Appends UNOBSERVE (the old directory), OBSERVE and STATUS (this one) to the requests: one
# write, one round trip. $argv[1] = o: observe again even if it is the same directory.
function _syncbadge_ask
    test $_syncbadge_conn = up; or return 1
    if test "$PWD" != "$_syncbadge_pwd"
        set -g _syncbadge_pwd $PWD
        set -g _syncbadge_dir (_syncbadge_encode (path resolve -- $PWD))
    end
    set -l dir $_syncbadge_dir
    set -g _syncbadge_seq (math $_syncbadge_seq + 1)
    set -l q $_syncbadge_seq
    set -l req
    if test -n "$_syncbadge_observed" -a "$_syncbadge_observed" != "$dir"
        set -a req "u$q UNOBSERVE $_syncbadge_observed"
    end
    if test "$_syncbadge_observed" != "$dir" -o "$argv[1]" = o
        # list=0 (protocol 1.1): the prompt needs the directory, not its listing.
        set -a req "o$q OBSERVE $dir list=0"
    end
    set -a req "s$q STATUS $dir"
    set -g _syncbadge_observed $dir
    printf '%s\n' $req >>$_syncbadge_req
end

# Starts a pipeline to the daemon; at most once per socket that failed.
function _syncbadge_connect
    set -l sock (_syncbadge_socket)
    test -S "$sock"; or return 1
    set -l id "$sock "(path mtime -- $sock)
    test "$id" != "$_syncbadge_failed"; or return 1
    if test -z "$_syncbadge_tmp"
        set -g _syncbadge_tmp (command mktemp -d (string join / -- (set -q TMPDIR[1]; and echo $TMPDIR; or echo /tmp) syncbadge-fish.XXXXXX))
        or return 1
    end
    # A tail still following the old requests sees a write to a closed pipe and ends.
    test -n "$_syncbadge_req"; and echo >>$_syncbadge_req
    set -g _syncbadge_n (math $_syncbadge_n + 1)
    set -g _syncbadge_req $_syncbadge_tmp/requests.$_syncbadge_n
    set -g _syncbadge_try $id
    printf '%s\n' 'h HELLO proto=1 role=viewer name=fish-prompt' 'b BADGES' >$_syncbadge_req
    # sh starts the pipeline in the background and exits at once: its processes are not
    # this shell's jobs (no job notices, nothing to reap) and a Ctrl-C at the prompt does
    # not reach them. tail ends with this shell (--pid), the bridge with the daemon, and the
    # reader with the bridge.
    command sh -c 'tail -n +1 -s 1 -f --pid="$1" -- "$2" 2>/dev/null |
        syncbadge bridge --no-spawn --socket "$3" 2>/dev/null |
        "$4" -c "$5" >/dev/null 2>&1 &' sh $fish_pid $_syncbadge_req $sock $_syncbadge_fish \
        "source $(string escape -- $_syncbadge_script); _syncbadge_reader $fish_pid $_syncbadge_n"
    set -g _syncbadge_conn up
    set -g _syncbadge_observed ''
    set -g _syncbadge_pwd ''
    _syncbadge_ask
end

# The directory changed: one round trip (or a new connection).
function _syncbadge_on_pwd --on-variable PWD
    if test $_syncbadge_conn = up
        _syncbadge_ask
    else
        _syncbadge_connect
    end
end

# Before every prompt: connect if there is no connection (only cheap checks when the daemon
# is gone: a socket file test, its mtime).
function _syncbadge_on_prompt --on-event fish_prompt
    test $_syncbadge_conn = up; or _syncbadge_connect
end

# The reader published badges.
function _syncbadge_on_badges --on-variable $_syncbadge_bvar
    set -l v $$_syncbadge_bvar
    test "$v[1]" = "$_syncbadge_n"; or return
    if test "$v[2]" != "$_syncbadge_epoch"
        # Another daemon: nothing cached holds any more.
        set -g _syncbadge_epoch $v[2]
        set -g _syncbadge_ids
        set -g _syncbadge_glyphs
        set -g _syncbadge_asciis
        set -g _syncbadge_colors
    end
    for b in $v[3..-1]
        set -l p (string split ' ' -- $b)
        set -l i (contains -i -- $p[1] $_syncbadge_ids)
        or begin
            set -a _syncbadge_ids $p[1]
            set i (count $_syncbadge_ids)
        end
        set _syncbadge_glyphs[$i] (_syncbadge_decode $p[2])
        set _syncbadge_asciis[$i] (_syncbadge_decode $p[3])
        set _syncbadge_colors[$i] (_syncbadge_decode $p[4])
    end
    commandline -f repaint
end

# The reader published the directory's state (or that the connection ended).
function _syncbadge_on_state --on-variable $_syncbadge_var
    set -l v $$_syncbadge_var
    test "$v[1]" = "$_syncbadge_n"; or return   # from an older connection
    switch $v[2]
        case up
            set -g _syncbadge_failed ''
            # Only the answer to the last STATUS sent counts.
            if test "$v[5]" = "s$_syncbadge_seq"
                set -g _syncbadge_state $v[6]
                set -g _syncbadge_counts $v[7]
            end
            if test "$v[3]" != "$_syncbadge_again"
                set -g _syncbadge_again $v[3]
                test $v[4] = o; and set -g _syncbadge_observed ''
                _syncbadge_ask $v[4]
            end
        case down fail
            set -g _syncbadge_conn down
            set -g _syncbadge_state -
            set -g _syncbadge_counts -
            set -g _syncbadge_again 0
            if test $v[2] = fail
                set -g _syncbadge_failed $_syncbadge_try
            else if test "$v[5]" != "s$_syncbadge_seq"
                # Asked after the daemon had gone: ask the next one (once).
                _syncbadge_connect
            end
    end
    commandline -f repaint
end

function _syncbadge_on_exit --on-event fish_exit
    set -eU $_syncbadge_var
    set -eU $_syncbadge_bvar
    test -n "$_syncbadge_tmp"; and command rm -rf -- $_syncbadge_tmp
end

# Prints the badge of state $argv[1] with the count $argv[2] (may be empty).
function _syncbadge_badge
    set -l i (contains -i -- $argv[1] $_syncbadge_ids)
    set -l g
    set -l c
    if test -n "$i"
        if test "$SYNCBADGE_ASCII" = 1
            set g $_syncbadge_asciis[$i]
        else
            set g $_syncbadge_glyphs[$i]
        end
        set c $_syncbadge_colors[$i]
    else
        # Before the daemon's BADGES answer: the default set.
        set -l d error ✗ ! conflict ⇄ '#' syncing ⟳ '~' pending ⇡ + unknown '?' '?' synced ✓ = ignored ⊘ -
        set -l j (contains -i -- $argv[1] $d)
        if test -n "$j"
            test "$SYNCBADGE_ASCII" = 1; and set g $d[(math $j + 2)]; or set g $d[(math $j + 1)]
        else
            set g '?'
        end
    end
    if test -n "$c" -a "$SYNCBADGE_COLOR" != 0 -a -z "$NO_COLOR" -a "$TERM" != dumb
        printf '\e[%sm%s%s\e[0m' $c $g $argv[2]
    else
        printf '%s%s' $g $argv[2]
    end
end

# The prompt text: the directory's badges and counts, worst first; nothing outside roots.
function syncbadge_prompt
    set -l state $_syncbadge_state
    test "$state" = - -o "$state" = outside -o -z "$state"; and return 0
    if test $state = ignored
        _syncbadge_badge ignored
        return 0
    end
    set -l names
    set -l values
    if test "$_syncbadge_counts" != -
        for part in (string split , -- $_syncbadge_counts)
            set -l kv (string split : -- $part)
            set -a names $kv[1]
            set -a values $kv[2]
        end
    end
    set -l out
    # The directory's own state when nothing below accounts for it (a new directory).
    if test $state != synced; and not contains -- $state $names
        set -a out (_syncbadge_badge $state)
    end
    for s in error conflict syncing pending unknown
        set -l i (contains -i -- $s $names)
        if test -n "$i"; and test "$values[$i]" -gt 0
            set -a out (_syncbadge_badge $s $values[$i])
        end
    end
    set -q out[1]; or set out (_syncbadge_badge synced)
    echo -n (string join ' ' -- $out)
end

_syncbadge_connect
