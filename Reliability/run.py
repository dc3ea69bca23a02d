#!/usr/bin/env python3
"""The slow reliability suite: crashes, overflows, limits, floods, hostile input, soak.

    SYNCBADGE_BIN=.build/debug python3 Reliability/run.py [--only NAME] [--list] [--quick]

Prints one line per case (PASS/FAIL/SKIP, name, detail), the daemon's log tail under a
failure, and `N passed, M failed, K skipped`; exits 1 if any case failed. Each case starts
its own daemon(s) on a temporary socket and state directory and cleans up after itself.
See docs/RELIABILITY.md for what each case proves and how.
"""

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402
from harness import CaseFail, CaseSkip, Context  # noqa: E402
# Importing a case module registers its cases, in this order.
import crash_storm, overflow, watch_limit, vanished_root, store_trouble, floods, security, soak, soak_inprocess, leaks  # noqa: E402,F401


def compile_helpers(workdir):
    """Builds the C helpers once per run into a temp dir (world-readable: the security case
    runs one as another user)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        sys.exit("run.py: needs a C compiler (cc) for the event generators")
    out = {}
    for name in ("storm",):
        src = os.path.join(harness.HERE, f"{name}.c")
        exe = os.path.join(workdir, name)
        r = subprocess.run([cc, "-O2", "-Wall", "-o", exe, src], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"run.py: compiling {src} failed:\n{r.stderr}")
        out[name] = exe
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", action="append", default=[], help="run only this case (repeatable, or comma-separated)")
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    ap.add_argument("--quick", action="store_true", help="fewer repetitions and events")
    ap.add_argument("--seed", type=int, default=None, help="seed for randomised cases (default: random, printed)")
    args = ap.parse_args()

    if args.list:
        for name, _, summary in harness.CASES:
            print(f"{name:15} {summary}")
        return 0

    wanted = [n for o in args.only for n in o.split(",") if n]
    known = [c[0] for c in harness.CASES]
    for n in wanted:
        if n not in known:
            sys.exit(f"run.py: no case {n!r}; --list shows them")
    bin_dir = os.path.abspath(os.environ.get("SYNCBADGE_BIN") or os.path.join(harness.REPO, ".build", "debug"))
    for exe in ("syncbadged", "syncbadge"):
        if not os.access(os.path.join(bin_dir, exe), os.X_OK):
            sys.exit(f"run.py: {bin_dir}/{exe} missing; set SYNCBADGE_BIN to the directory holding the binaries")

    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 1 << 31)
    built = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(os.path.getmtime(os.path.join(bin_dir, "syncbadged"))))
    print(f"# binaries: {bin_dir} (syncbadged built {built}); seed: {seed}{'; quick' if args.quick else ''}", flush=True)
    helper_dir = tempfile.mkdtemp(prefix="sbrel-bin-")
    os.chmod(helper_dir, 0o755)
    passed = failed = skipped = 0
    try:
        helpers = compile_helpers(helper_dir)
        for name, fn, _ in harness.CASES:
            if wanted and name not in wanted:
                continue
            ctx = Context(name, bin_dir, args.quick, seed, helpers)
            t0 = time.monotonic()
            status, detail, extra = "PASS", "", ""
            try:
                detail = fn(ctx) or ""
            except CaseSkip as e:
                status, detail = "SKIP", str(e)
            except CaseFail as e:
                status, detail = "FAIL", str(e)
                extra = ctx.log_tails()
            except KeyboardInterrupt:
                ctx.cleanup()
                raise
            except Exception as e:   # a harness bug or an unexpected daemon reaction
                status, detail = "FAIL", f"{type(e).__name__}: {e}"
                extra = "    " + traceback.format_exc().replace("\n", "\n    ") + "\n" + ctx.log_tails()
            errors = ctx.cleanup()
            if errors:
                detail += f" [cleanup: {'; '.join(errors)}]"
            if ctx.notes:
                detail += " [" + "; ".join(ctx.notes) + "]"
            print(f"{status} {name}  {detail} ({time.monotonic() - t0:.0f}s)", flush=True)
            if extra:
                print(extra, flush=True)
            passed += status == "PASS"
            failed += status == "FAIL"
            skipped += status == "SKIP"
    finally:
        shutil.rmtree(helper_dir, ignore_errors=True)
        harness._restore_all()
    print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
