"""A PING client in a process of its own, so the round-trips it measures are the daemon's,
not the harness's (a pinger thread inside the busy harness would mostly measure Python's
GIL). Usage: pinger.py SOCKET INTERVAL. Until SIGTERM it PINGs every INTERVAL seconds; then
prints one line per ping, `<CLOCK_MONOTONIC start> <round-trip seconds>`, or `error <text>`.
Says `ready` on stderr once its HELLO is answered."""

import os
import signal
import sys
import time

# The protocol: the Python client package of this repository (Clients/python).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "Clients", "python"))
import syncbadge as sb  # noqa: E402

stop = False


def on_term(signum, frame):
    global stop
    stop = True


def main():
    signal.signal(signal.SIGTERM, on_term)
    path, interval = sys.argv[1], float(sys.argv[2])
    samples, error = [], None
    try:
        # Waits while the listen backlog is full, as a blocking connect would.
        conn = sb.Connection(path, name="pinger").open(30)
        sys.stderr.write("ready\n")       # the harness starts its flood after this
        sys.stderr.flush()
        while not stop:
            t0 = time.monotonic()
            reply = conn.send("PING")
            if not reply.wait(10):
                raise TimeoutError("PING not answered within 10 s")
            samples.append((t0, time.monotonic() - t0))
            if not reply.ok:
                error = reply.final.raw.decode(errors="replace")
                break
            time.sleep(interval)           # the ping interval, not a wait for a result
    except Exception as e:                 # reported to the harness, which fails the case
        if not stop:
            error = f"{type(e).__name__}: {e}"
    out = [f"{t:.6f} {r:.6f}" for t, r in samples]
    if error:
        out.append(f"error {error}")
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
