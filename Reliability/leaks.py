"""leaks: the fast-forward soak under valgrind's memcheck; nothing definitely or indirectly lost.

valgrind 3.19 cannot read the DWARF 5 debug information of a Swift 6 binary, so the case runs
a copy of `syncbadge-soak` with its debug sections stripped (`objcopy --strip-debug`); the
symbol table stays, so reports still name functions. 20,000 synthetic events with observers,
churning clients and a provider: daemon and clients in one process, so both are checked.

Passes when the leak summary says 0 bytes definitely and 0 indirectly lost, and no memcheck
error has a SyncBadge function at the top of its stack. Errors raised inside other libraries
are listed in the detail, not hidden (GRDB's SQL text generation reports "uninitialised value"
at store creation: Swift small strings read a whole word of which only some bytes are set).
"""

import os
import re
import shutil
import subprocess

from harness import REPO, CaseSkip, case, check


@case("leaks", "valgrind memcheck over a 20k-event in-process soak: 0 bytes definitely/indirectly lost")
def run(ctx):
    valgrind = shutil.which("valgrind")
    if not valgrind:
        raise CaseSkip("valgrind is not installed (apt-get install valgrind)")
    exe = os.path.join(ctx.bin, "syncbadge-soak")
    check(os.access(exe, os.X_OK), f"{exe} missing: build the syncbadge-soak product")
    plain = os.path.join(ctx.tmp, "syncbadge-soak")
    subprocess.run(["objcopy", "--strip-debug", exe, plain], check=True)
    log = os.path.join(ctx.tmp, "memcheck.log")
    r = subprocess.run([valgrind, "--leak-check=full", "--show-leak-kinds=definite,indirect", f"--log-file={log}",
                        plain, "--events", "20000", "--dirs", "10", "--files", "20", "--observers", "2",
                        # memcheck is ~50x slower: RSS is not judged, everything else is.
                        "--max-growth", "1000", "--settle", "300", "--badges", os.path.join(REPO, "Badges")],
                       capture_output=True, text=True, timeout=1200, env={**os.environ, "TMPDIR": ctx.tmp})
    text = open(log).read()
    check(r.returncode == 0, f"the soak failed under memcheck: {r.stdout[-400:]} {r.stderr[-400:]}")
    lost = {k: int(v.replace(",", "")) for k, v in re.findall(r"(definitely|indirectly) lost: ([\d,]+) bytes", text)}
    if "All heap blocks were freed -- no leaks are possible" in text:
        lost = {"definitely": 0, "indirectly": 0}
    check(set(lost) == {"definitely", "indirectly"}, f"no leak summary in {log}")
    # Each error: its headline, then "at 0x...: <function>" for the top frame.
    errors = re.findall(r"==\d+== (\S[^\n]*)\n==\d+==    at 0x[0-9A-F]+: (\S+)", text)
    ours = [(what, fn) for what, fn in errors if "SyncBadge" in fn or "syncbadge" in fn.lower()]
    summary = re.search(r"ERROR SUMMARY: (\d+) errors from (\d+) contexts", text)
    check(lost["definitely"] == 0 and lost["indirectly"] == 0,
          f"{lost['definitely']} bytes definitely, {lost['indirectly']} indirectly lost (see {log})")
    check(not ours, f"memcheck errors in SyncBadge code: {ours[:3]}")
    elsewhere = sorted({f"{what} in {fn[:60]}" for what, fn in errors if "lost in loss record" not in what})
    return (f"0 bytes definitely/indirectly lost; {summary.group(1) if summary else '?'} memcheck errors, none in SyncBadge"
            + (f" (elsewhere: {'; '.join(elsewhere)})" if elsewhere else ""))
