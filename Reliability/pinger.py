"""A PING client in a process of its own, so the round-trips it measures are the daemon's,
not the harness's (a pinger thread inside the busy harness would mostly measure Python's
GIL). Usage: pinger.py SOCKET INTERVAL. Until SIGTERM it PINGs every INTERVAL seconds; then
prints one line per ping, `<CLOCK_MONOTONIC start> <round-trip seconds>`, or `error <text>`.
Says `ready` on stderr once its HELLO is answered."""

import signal
import socket
import sys
import time

stop = False


def on_term(signum, frame):
    global stop
    stop = True


def main():
    signal.signal(signal.SIGTERM, on_term)
    path, interval = sys.argv[1], float(sys.argv[2])
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)                        # blocking: waits if the listen backlog is full
    s.settimeout(10)
    f = s.makefile("rb")
    samples, error = [], None

    def ask(line, tag):
        s.sendall(line)
        while True:
            got = f.readline()
            if not got:
                raise EOFError("connection closed")
            if got.startswith(tag + b" "):
                return got
    try:
        ask(b"h HELLO proto=1 role=viewer name=pinger\n", b"h")
        sys.stderr.write("ready\n")       # the harness starts its flood after this
        sys.stderr.flush()
        n = 0
        while not stop:
            n += 1
            tag = b"p%d" % n
            t0 = time.monotonic()
            got = ask(tag + b" PING\n", tag)
            samples.append((t0, time.monotonic() - t0))
            if not got.startswith(tag + b" OK"):
                error = got.decode(errors="replace").strip()
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
