#!/usr/bin/env python3
"""`make test-repeat N=20`: the whole test suite N times on one debug build, to catch flakes.

Each round runs `swift test --skip-build`, then each `--also` make target (the Makefile passes
test-python and test-filemanagers, so a round is what `make test` runs after its build).

Each run's output and xUnit reports stay in SCRATCH/test-repeat/run-K.*. At the end: each test
that failed at least once with its failure count, then `N passed, M failed` counting runs.
A run fails when `swift test` exits non-zero, whatever the reports say (a crashed test process
leaves no report for the tests it did not reach).
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections import Counter

# Swift Testing's console lines, for a run whose xUnit report is missing or incomplete.
FAILED_LINE = re.compile(r"^\S+ Test (?!run with)(.+?) (?:failed after|recorded an issue)")
XCTEST_FAILED_LINE = re.compile(r"^Test Case '(.+)' failed")


def failures_from_reports(prefix):
    """Failed test ids from every xUnit file of one run: `Suite/test()`."""
    failed = set()
    for path in glob.glob(prefix + "*.xml"):
        try:
            root = ET.parse(path).getroot()
        except ET.ParseError:
            continue
        for case in root.iter("testcase"):
            if case.find("failure") is not None or case.find("error") is not None:
                suite = case.get("classname", "").rsplit(".", 1)[-1]
                failed.add(f"{suite}/{case.get('name', '?')}" if suite else case.get("name", "?"))
    return failed


def failures_from_output(text):
    failed = set()
    for line in text.splitlines():
        m = FAILED_LINE.match(line) or XCTEST_FAILED_LINE.match(line)
        if m:
            failed.add(m.group(1))
    return failed


UNITTEST_FAILED = re.compile(r"^(?:FAIL|ERROR): (\S+) \((\S+)\)")


def failures_from_unittest(text):
    """`FAIL: test_x (module.Class.test_x)` lines of Python's unittest."""
    return {m.group(2) for m in map(UNITTEST_FAILED.match, text.splitlines()) if m}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=20, help="how many runs")
    ap.add_argument("--swift", default="swift")
    ap.add_argument("--scratch", default=".build")
    ap.add_argument("--filter", help="passed on to swift test --filter")
    ap.add_argument("--also", action="append", default=[], metavar="TARGET",
                    help="a make target run in each round too (test-python, test-filemanagers); "
                         "its failure counts as a failed test named after it")
    args = ap.parse_args()

    out_dir = os.path.join(args.scratch, "test-repeat")
    os.makedirs(out_dir, exist_ok=True)
    for old in glob.glob(os.path.join(out_dir, "run-*")):
        os.remove(old)

    counts = Counter()
    passed = failed = 0
    for k in range(1, args.n + 1):
        prefix = os.path.join(out_dir, f"run-{k}")
        cmd = [args.swift, "test", "--skip-build", "--scratch-path", args.scratch,
               "--xunit-output", prefix + ".xml"]
        if args.filter:
            cmd += ["--filter", args.filter]
        start = time.monotonic()
        with open(prefix + ".log", "w") as log:
            rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL).returncode
        with open(prefix + ".log", errors="replace") as log:
            text = log.read()
        names = failures_from_reports(prefix) or failures_from_output(text)
        for target in args.also:
            with open(f"{prefix}.{target}.log", "w") as log:
                extra = subprocess.run(["make", "--no-print-directory", target, f"SCRATCH={args.scratch}"],
                                       stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL).returncode
            if extra != 0:
                rc = rc or extra
                with open(f"{prefix}.{target}.log", errors="replace") as log:
                    failed_here = failures_from_unittest(log.read())
                names |= {f"{target}: {n}" for n in failed_here} or {f"{target} (exit {extra}; see {prefix}.{target}.log)"}
        took = time.monotonic() - start
        if rc == 0 and not names:
            passed += 1
            print(f"run {k}/{args.n}: passed in {took:.0f} s", flush=True)
            continue
        failed += 1
        if not names:
            names = {f"(swift test exited {rc} with no failed test named; see {prefix}.log)"}
        counts.update(names)
        print(f"run {k}/{args.n}: FAILED in {took:.0f} s: {', '.join(sorted(names))} (log: {prefix}.log)", flush=True)

    if counts:
        print("\nfailed at least once:")
        for name, n in counts.most_common():
            print(f"  {n:3d}  {name}")
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
