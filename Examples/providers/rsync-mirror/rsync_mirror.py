#!/usr/bin/env python3
"""rsync-mirror: a SyncBadge sync engine that mirrors a root into another directory with rsync.

Usage: rsync_mirror.py [--socket PATH] [--name NAME] [--debounce SECONDS] [--state-dir DIR] ROOT MIRROR

It speaks the wire protocol (docs/PROTOCOL.md) through the syncbadge Python package
(Clients/python; standard library only, like this file), as a `syncbadge.Provider`: claims ROOT,
follows the daemon's change feed, copies what changed with rsync and reports every path's state
(syncing, synced, error, conflict). It logs one line per action to stderr.

Paths are bytes everywhere (os.fsencode), so any Linux file name works: spaces, newlines and
invalid UTF-8 included. The code has two parts: Mirror (rsync runs and the conflict bookkeeping)
and Engine (feed, debounce, actions, reconnects); the package's Provider sends its requests and
hands it the menu actions, over a Connection with a reader thread.
"""
import argparse
import hashlib
import json
import logging
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time


# The syncbadge package that came with this file comes first: ../python as `make install` lays it
# out, or the repository's Clients/python, from this file's real location; else an installed one
# (python3-syncbadge, where Debian's packages put this file among the examples).
_HERE = os.path.dirname(os.path.realpath(__file__))
sys.path[:0] = [os.path.normpath(os.path.join(_HERE, rel)) for rel in ("../python", "../../../Clients/python")]
import syncbadge as sb  # noqa: E402
from syncbadge import req  # noqa: E402
Disconnected, ServerError = sb.Disconnected, sb.ServerError

LARGE = 1 << 20            # files above this get an rsync run of their own, with progress=
MAX_MESSAGE = 1000         # characters of a message= we send: a line holds at most 64 KiB
MAX_BACKOFF = 5.0


def log(*parts):
    """One line per action: tests and people read them."""
    sys.stderr.write("rsync-mirror: " + " ".join(str(p) for p in parts) + "\n")
    sys.stderr.flush()


class _Sigterm:
    """SIGTERM as SystemExit in the main thread, where it interrupts whatever waits (finally
    clauses and `Mirror.rsync` clean up), except while rsync is being spawned: raised inside
    Popen it would leave rsync running, unknown to us, so it waits until Popen has returned."""
    spawning = False
    pending = False

    @classmethod
    def handler(cls, *_):
        if cls.spawning:
            cls.pending = True
        else:
            sys.exit(0)

    @classmethod
    def spawned(cls):
        cls.spawning = False
        if cls.pending:
            sys.exit(0)


def _stop(p, grace=5.0):
    """Stops a child (SIGTERM, SIGKILL after `grace` seconds) and reaps it, even when a second
    signal interrupts the wait."""
    try:
        p.terminate()
        p.wait(grace)
    except subprocess.TimeoutExpired:
        pass
    finally:
        if p.returncode is None:
            p.kill()
            p.wait()


def show(path: bytes) -> str:
    """A path for the log: its wire form, which is always printable UTF-8 on one line."""
    return sb.encode(path).decode("utf-8")


class Fatal(Exception):
    """Nothing a reconnect would fix (the root is not registered, another engine holds it)."""


# ---------------------------------------------------------------------------- the mirror

def _lstat(path):
    try:
        return os.lstat(path)
    except OSError:        # missing, a file where a directory should be, unreadable
        return None


class Mirror:
    """The mirror directory: comparisons, rsync runs and conflict bookkeeping.

    Right after each successful sync it records the mirror file's identity (size, mtime_ns,
    inode), in memory and in a JSON file in the state directory. A mirror file whose identity
    moved on since then was changed by someone else: overwriting it would lose their work."""

    def __init__(self, root: bytes, dest: bytes, state_dir: bytes):
        self.root, self.dest = root, dest
        self.prefix = root.rstrip(b"/") + b"/"
        key = hashlib.sha256(root + b"\0" + dest).hexdigest()[:16]
        os.makedirs(state_dir, exist_ok=True)
        self.state_file = os.path.join(state_dir, key.encode() + b".json")
        self.records, self.dirty = {}, False
        try:
            with open(self.state_file, "rb") as f:
                saved = json.load(f)
            self.records = {sb.decode(k.encode()): tuple(v) for k, v in saved.get("files", {}).items()}
        except FileNotFoundError:
            pass
        except ValueError as e:             # not JSON, or a key that is not in wire form
            log("ignoring an unreadable state file", show(self.state_file) + ":", e)

    def rel(self, path: bytes) -> bytes:
        return b"" if path == self.root else path[len(self.prefix):]

    def under(self, path: bytes) -> bool:
        return path == self.root or path.startswith(self.prefix)

    def local(self, rel: bytes) -> bytes:
        return os.path.join(self.root, rel) if rel else self.root

    def remote(self, rel: bytes) -> bytes:
        return os.path.join(self.dest, rel) if rel else self.dest

    def same(self, rel: bytes) -> bool:
        """Same type, and for files the same size and bytes; for links the same target."""
        a, b = _lstat(self.local(rel)), _lstat(self.remote(rel))
        if a is None or b is None:
            return a is None and b is None
        if stat.S_IFMT(a.st_mode) != stat.S_IFMT(b.st_mode):
            return False
        try:
            if stat.S_ISLNK(a.st_mode):
                return os.readlink(self.local(rel)) == os.readlink(self.remote(rel))
            if stat.S_ISREG(a.st_mode):
                return a.st_size == b.st_size and self._same_bytes(self.local(rel), self.remote(rel))
        except OSError:
            return False
        return True

    @staticmethod
    def _same_bytes(x, y):
        with open(x, "rb") as f, open(y, "rb") as g:
            while True:
                a, b = f.read(1 << 20), g.read(1 << 20)
                if a != b:
                    return False
                if not a:
                    return True

    def conflicted(self, rel: bytes) -> bool:
        """The mirror copy changed since our last sync, and not into what we have locally."""
        recorded = self.records.get(rel)
        st = _lstat(self.remote(rel))
        if recorded is None or st is None or stat.S_ISDIR(st.st_mode):
            return False
        return (st.st_size, st.st_mtime_ns, st.st_ino) != recorded and not self.same(rel)

    def remember(self, rel: bytes):
        st = _lstat(self.remote(rel))
        if st is not None and not stat.S_ISDIR(st.st_mode):
            self.records[rel] = (st.st_size, st.st_mtime_ns, st.st_ino)
            self.dirty = True

    def forget(self, rel: bytes):
        inside = rel + b"/"
        for r in [r for r in self.records if r == rel or r.startswith(inside)]:
            del self.records[r]
            self.dirty = True

    def rsync(self, rels, progress=None):
        """Copies local -> mirror; None, or rsync's complaint (first line, whole text).

        `-I`: always copy what we are given (the feed says it changed; rsync's size+mtime quick
        check could skip a same-size edit). No `-r`: a directory listed is made, not filled."""
        cmd = ["rsync", "-a", "-I", "--from0", "--files-from=-"]
        if progress:
            cmd.append("--info=progress2")
        cmd += [self.prefix, self.dest.rstrip(b"/") + b"/"]
        listing = b"".join((r or b".") + b"\0" for r in rels)
        _Sigterm.spawning = True
        try:
            p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stderr=subprocess.PIPE,
                                 stdout=subprocess.PIPE if progress else subprocess.DEVNULL)
        except OSError as e:
            _Sigterm.spawned()
            return "cannot run rsync: %s" % e, str(e)
        except BaseException:
            _Sigterm.spawning = False
            raise
        err = []
        try:
            _Sigterm.spawned()          # in here: a SIGTERM that came meanwhile stops rsync
            # A daemon thread: an exit must never wait on it (rsync is stopped first anyway).
            reader = threading.Thread(target=lambda: err.append(p.stderr.read()), daemon=True)
            reader.start()
            try:
                p.stdin.write(listing)
                p.stdin.close()
            except BrokenPipeError:
                pass
            if progress:
                tail = b""
                while True:
                    chunk = os.read(p.stdout.fileno(), 4096)
                    if not chunk:
                        break
                    *lines, tail = re.split(rb"[\r\n]", tail + chunk)
                    for line in lines:
                        m = re.search(rb"(\d{1,3})%", line)
                        if m:
                            progress(min(100, int(m.group(1))))
                p.stdout.close()
            p.wait()
        except BaseException:
            # SIGTERM (SystemExit) or Ctrl-C mid-copy: stop rsync rather than wait for the copy to
            # end, or for the end of a file list it may never get. SIGTERM first, so that rsync
            # removes its partial file from the mirror.
            _stop(p)
            raise
        reader.join()
        if p.returncode == 0:
            return None
        text = err[0].decode("utf-8", "replace").strip() if err and err[0] else ""
        first = text.splitlines()[0] if text else "rsync exited with status %d" % p.returncode
        return first, text or first

    def delete(self, rel: bytes):
        """Removes the mirror copy (a whole tree for a directory)."""
        path, st = self.remote(rel), _lstat(self.remote(rel))
        if rel and st is not None:
            shutil.rmtree(path) if stat.S_ISDIR(st.st_mode) else os.unlink(path)
        self.forget(rel)

    def restore_local(self, rel: bytes):
        """Copies the mirror over the local path, in place (truncate and write, no temporary
        file and rename), so the daemon sees a write to this path and nothing else."""
        src, dst = self.remote(rel), self.local(rel)
        st, here = _lstat(src), _lstat(dst)
        if st is None or (here is not None and stat.S_IFMT(here.st_mode) != stat.S_IFMT(st.st_mode)):
            if here is not None:
                shutil.rmtree(dst) if stat.S_ISDIR(here.st_mode) else os.unlink(dst)
            if st is None:
                return
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if stat.S_ISREG(st.st_mode):
            shutil.copyfile(src, dst)
            shutil.copystat(src, dst)
        elif stat.S_ISLNK(st.st_mode):
            if _lstat(dst) is not None:
                os.unlink(dst)
            os.symlink(os.readlink(src), dst)
        elif stat.S_ISDIR(st.st_mode):
            os.makedirs(dst, exist_ok=True)

    def save(self):
        """Writes the identities atomically (temporary file, fsync, rename)."""
        if not self.dirty:
            return
        data = {"root": show(self.root), "mirror": show(self.dest),
                "files": {show(k): list(v) for k, v in sorted(self.records.items())}}
        tmp = self.state_file + b".tmp"
        with open(tmp, "w") as f:
            json.dump(data, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.state_file)
        self.dirty = False


# ---------------------------------------------------------------------------- the engine

class Entry:
    """A path waiting to be synced: the newest gen seen (None: ask the daemon), and whether a
    directory must be walked (created or moved in: one CHANGED stands for its whole tree)."""
    def __init__(self, gen=None, deep=False):
        self.gen, self.deep = gen, deep

    def merge(self, gen, deep):
        if gen is not None and (self.gen is None or gen > self.gen):
            self.gen = gen
        self.deep = self.deep or deep


class Engine:
    """Claims the root, reconciles, follows the change feed in debounced batches and answers
    the menu actions; reconnects with backoff when the daemon goes away."""

    def __init__(self, args, mirror: Mirror, socket_path: str):
        self.mirror, self.root, self.socket_path = mirror, mirror.root, socket_path
        self.name, self.debounce = args.name, args.debounce
        self.max_wait = max(5.0, 4 * args.debounce)    # a steady stream of changes still syncs
        self.pending, self.first, self.due, self.paused = {}, None, None, False
        self.held = set()      # pending paths already logged as held while paused
        self.errors = {}       # path -> (gen, first line, whole text)
        self.conflicts = {}    # path -> gen
        self.epoch, self.conn, self.provider = None, None, None

    # -- connection life cycle

    def run(self):
        delay, first = 0.1, True
        # One connection object for every connection: it keeps the daemon's epoch across them.
        self.conn = sb.Connection(self.socket_path, role="provider", name=self.name, threaded=True)
        self.provider = sb.Provider(self.conn)
        for action_id, handler in {"sync.now": self.sync_now, "sync.last-error": self.last_error,
                                   "sync.keep-local": lambda ps: self.resolve(ps, keep_local=True),
                                   "sync.keep-mirror": lambda ps: self.resolve(ps, keep_local=False),
                                   "sync.pause-resume": lambda ps: self.pause_resume()}.items():
            self.provider.on_action(action_id, lambda action, handler=handler: self.action(action, handler))
        while True:
            try:
                self.conn.open()            # connects and says HELLO
            except ServerError as e:        # HELLO refused
                raise Fatal(str(e))
            except OSError as e:            # no daemon (or it went away before answering)
                log("no daemon at %s (%s); retrying in %.1fs" % (self.socket_path, getattr(e, "strerror", None) or e,
                                                                   delay))
                time.sleep(delay)
                delay = min(delay * 2, MAX_BACKOFF)
                continue
            try:
                self.start(first)
                first, delay = False, 0.1
                self.serve()
            except Disconnected as e:
                log("disconnected (%s); reconnecting in %.1fs" % (
                    "BYE " + self.conn.bye_reason if self.conn.bye_reason else e, delay))
            except ServerError as e:        # the root vanished while starting
                raise Fatal(str(e))
            finally:
                self.conn.close()
            time.sleep(delay)
            delay = min(delay * 2, MAX_BACKOFF)

    def start(self, first):
        """CLAIM, SUBSCRIBE-CHANGES (before listing, so nothing is missed) and the UI, pipelined
        after HELLO; then a full reconcile for a new daemon, or CHANGES for the same one."""
        e = self.provider
        epoch = self.conn.epoch
        claim, sub = e.claim(self.root), e.subscribe_changes(self.root)
        ui = [e.define_menu("items", "sync.now", "Sync now"),
              e.define_menu("items", "sync.last-error", "Show last error", states=["error"]),
              e.define_menu("items", "sync.keep-local", "Resolve: keep local", states=["conflict"]),
              e.define_menu("items", "sync.keep-mirror", "Resolve: keep mirror", states=["conflict"]),
              ] + self.define_toolbar()
        try:
            claim.result()
            sub.result()
        except ServerError as e:
            if first or e.code in ("not-found", "outside"):
                hint = " (register it first: syncbadge add ROOT)" if e.code in ("not-found", "outside") else ""
                raise Fatal("cannot claim %s: %s%s" % (show(self.root), e, hint))
            raise Disconnected(str(e))
        for r in ui:
            try:
                r.result()
            except ServerError as e:
                log("warning: the daemon refused %s (%s %s); menus may be missing" % (r.verb, e.code, e.message))
        log("connected to %s epoch=%s as %s, claimed %s" % (self.socket_path, epoch, self.name, show(self.root)))
        if epoch != self.epoch:
            self.epoch = epoch              # a new daemon (or the first): compare everything
            self.reconcile()
        else:
            self.catch_up()

    def define_toolbar(self):
        """The toolbar item and its menu item, named for what a click does now: "Pause sync"
        while mirroring, "Resume sync" while paused (viewers follow the `* TOOLBAR` push)."""
        title = "Resume sync" if self.paused else "Pause sync"
        verb = b"Resume" if self.paused else b"Pause"
        return [self.provider.define_menu("toolbar", "sync.pause-resume", title),
                self.provider.define_toolbar(title, verb + b" mirroring " + self.root + b" to " + self.mirror.dest)]

    def serve(self):
        """The loop: pushes in order; a batch when the debounce deadline passes."""
        while True:
            timeout = None
            if self.due is not None:
                timeout = max(0.0, self.due - time.monotonic())
            m = self.conn.next_push(timeout)     # raises Disconnected once the daemon is gone
            if m is None:                       # the deadline passed
                try:
                    if self.paused:
                        for p in sorted(set(self.pending) - self.held):
                            log("paused: holding", show(p))
                        self.held |= set(self.pending)
                        self.first = self.due = None
                    else:
                        self.flush_pending()
                except ServerError as e:
                    log("unexpected answer:", e)
                continue
            try:
                self.dispatch(m)
            except ServerError as e:      # the daemon refused something: log it, go on
                log("unexpected answer:", e)

    def dispatch(self, m):
        change = sb.Change.from_message(m)
        if change is not None:
            self.note(change.path, change.gen, deep=change.what in ("create", "move"))
            if change.what == "move" and change.from_path is not None and self.mirror.under(change.from_path):
                self.note(change.from_path, None)
        elif m.kind == "RESET-CHANGES":
            log("the daemon dropped changes; asking for CHANGES again")
            self.catch_up()
        elif m.kind == "ACTION":
            if not self.provider.handle_push(m):        # an action with no handler here
                action = sb.Action.from_message(m)
                if action is not None:
                    self.action(action, None)
        elif m.kind == "ROOT" and m.fields[:2] == [self.root, b"removed"]:
            raise Fatal("%s is no longer a root" % show(self.root))

    def note(self, path, gen, deep=False):
        if path in self.pending:
            self.pending[path].merge(gen, deep)
        else:
            self.pending[path] = Entry(gen, deep)
        now = time.monotonic()
        self.first = self.first or now
        self.due = min(now + self.debounce, self.first + self.max_wait)

    def catch_up(self):
        for it in self.provider.changes(self.root).result().items:
            self.note(it.path, it.gen)

    def flush_pending(self):
        entries, self.pending, self.first, self.due = self.pending, {}, None, None
        self.held = set()
        self.sync(entries)

    # -- reconciling

    def reconcile(self):
        """Compares the whole tree with the mirror: what is identical is reported synced
        (recursively where a whole subtree is), everything else makes the first batch."""
        root = self.conn.request(req.status(self.root)).items[0]
        todo, sets = {}, []
        clean, maxgen = self.survey(root, todo, sets)
        if clean and root.state != "synced":
            sets.append((self.root, maxgen, True))
        for it in self.provider.changes(self.root).result().items:
            if it.kind == "gone":
                todo.setdefault(it.path, Entry(it.gen))
        self.report_synced(sets)
        self.mirror.save()
        log("reconciled %s: %d identical report(s), %d path(s) to sync" % (show(self.root), len(sets), len(todo)))
        for p, e in todo.items():
            self.note(p, e.gen, e.deep)
        if not self.paused:
            self.flush_pending()

    def survey(self, item, todo, sets):
        """Walks a directory with LIST (gens read before comparing). Returns whether the whole
        subtree is identical, and the newest gen in it: a recursive SET with that gen covers
        exactly what was compared; anything changed since has a newer gen and stays pending."""
        path, rel = item.path, self.mirror.rel(item.path)
        own = self.mirror.same(rel)
        try:
            children = self.conn.request(req.list_dir(path)).items
        except ServerError:                 # gone or no longer a directory: sync it as it is
            todo[path] = Entry(item.gen)
            return False, item.gen or 0
        clean, maxgen, seen = own, item.gen or 0, []
        for c in children:
            if c.state == "ignored":
                continue
            if c.kind == "dir":
                ok, g = self.survey(c, todo, sets)
            else:
                ok, g = self.mirror.same(self.mirror.rel(c.path)), c.gen or 0
                if ok:
                    self.mirror.remember(self.mirror.rel(c.path))
            maxgen, clean = max(maxgen, g), clean and ok
            seen.append((c, ok, g))
        if clean:
            return True, maxgen
        for c, ok, g in seen:
            if ok and c.state != "synced":
                sets.append((c.path, g, c.kind == "dir"))
            elif not ok and c.kind != "dir":
                todo[c.path] = Entry(c.gen)
        if own:
            sets.append((path, item.gen, False))
        else:
            todo[path] = Entry(item.gen)
        return False, maxgen

    def report_synced(self, sets):
        replies = [(p, g, self.provider.set("synced", p, gen=g, recursive=deep)) for p, g, deep in sets]
        for p, g, r in replies:
            self.outcome(p, g, r, "synced")

    def outcome(self, path, gen, reply, state):
        """Logs a SET's answer; True when it applied (stale: the path changed meanwhile, stays
        pending, and the feed brings it back)."""
        try:
            ok = reply.result().final
        except ServerError as e:
            log("%s %s refused: %s %s" % (state, show(path), e.code, e.message))
            return False
        if ok.opt("stale") == "1":
            log("stale %s gen=%s (changed meanwhile, now gen=%s)" % (show(path), gen, ok.opt("gen")))
            return False
        log("%s %s gen=%s" % (state, show(path), gen if gen is not None else ok.opt("gen")))
        return True

    # -- syncing a batch

    def sync(self, entries):
        """One batch: walk new directories, set conflicts aside, report syncing, rsync (small
        files together, large ones alone with progress), report synced or error; then delete
        what was deleted locally. On a disconnect the batch goes back to pending."""
        try:
            self._sync(dict(entries))
        except Disconnected:
            for p, e in entries.items():
                self.note(p, e.gen, e.deep)
            raise
        finally:
            self.mirror.save()

    def _sync(self, todo):
        c, m = self.provider, self.mirror
        for p, r in [(p, self.conn.send(req.status(p))) for p, e in todo.items() if e.gen is None]:
            try:
                todo[p].gen = r.result().items[0].gen
            except ServerError:
                pass                           # the daemon has no entry: nothing to report
        for p, e in list(todo.items()):
            st = _lstat(m.local(m.rel(p)))
            if e.deep and st is not None and stat.S_ISDIR(st.st_mode):
                del todo[p]
                sets = []
                clean, g = self.survey(sb.Item(p, kind="dir", gen=e.gen), todo, sets)
                self.report_synced(sets + ([(p, g, True)] if clean else []))
        copies, deletes, replies = [], [], []
        for p in sorted(todo):
            e, rel = todo[p], m.rel(p)
            if m.conflicted(rel):
                self.conflict(p, e.gen)
            elif _lstat(m.local(rel)) is None:
                deletes.append((p, e.gen))
            elif e.gen is None:
                log("skipping %s: the daemon has no entry for it" % show(p))
            elif m.same(rel):           # e.g. our own write after "keep mirror": nothing to copy
                m.remember(rel)
                replies.append((p, e.gen, "synced", c.set("synced", p, gen=e.gen)))
            else:
                copies.append((p, e.gen))
        for p, g, r in [(p, g, c.set("syncing", p, gen=g)) for p, g in copies]:
            if not self.outcome(p, g, r, "syncing"):
                copies.remove((p, g))
        small, large = [], []
        for p, g in copies:
            st = _lstat(m.local(m.rel(p)))
            (large if st is not None and stat.S_ISREG(st.st_mode) and st.st_size > LARGE else small).append((p, g))
        results = {}
        if small:
            err = m.rsync([m.rel(p) for p, g in small])
            for p, g in small:   # a failed batch is retried path by path to say which failed
                results[p] = err if err is None or len(small) == 1 else m.rsync([m.rel(p)])
        for p, g in large:
            results[p] = m.rsync([m.rel(p)], progress=self.progress_reporter(p, g))
        for p, g in copies:
            if results[p] is None:
                m.remember(m.rel(p))
                self.errors.pop(p, None)
                self.conflicts.pop(p, None)
                replies.append((p, g, "synced", c.set("synced", p, gen=g)))
            else:
                self.errors[p] = (g, results[p][0], results[p][1])
                log("rsync failed for %s: %s" % (show(p), results[p][0]))
                replies.append((p, g, "error", c.set("error", p, gen=g, message=results[p][0][:MAX_MESSAGE])))
        for p, g in deletes:
            try:
                m.delete(m.rel(p))
                log("deleted %s from the mirror" % show(p))
            except OSError as err:
                self.errors[p] = (g, str(err), str(err))
                if g is not None:
                    replies.append((p, g, "error", c.set("error", p, gen=g, message=str(err)[:MAX_MESSAGE])))
                continue
            self.conflicts.pop(p, None)
            if g is not None:
                replies.append((p, g, "synced", c.set("synced", p, gen=g)))
        for p, g, state, r in replies:
            self.outcome(p, g, r, state)

    def progress_reporter(self, path, gen):
        """progress= updates for a large file, every 10% at most, without waiting for answers."""
        last = [-10]

        def report(pct):
            if pct >= last[0] + 10 or (pct == 100 and last[0] != 100):
                last[0] = pct
                log("progress %s %d%%" % (show(path), pct))
                try:
                    self.provider.set("syncing", path, gen=gen, progress=pct)
                except Disconnected:
                    pass                    # the copy goes on; the batch is retried anyway
        return report

    def conflict(self, path, gen):
        self.conflicts[path] = gen
        msg = ("the mirror copy changed since the last sync; both kept (resolve: keep local or keep mirror)"
               if _lstat(self.mirror.local(self.mirror.rel(path))) is not None else
               "deleted locally, but the mirror copy changed since the last sync; both kept")
        log("conflict %s: %s" % (show(path), msg))
        self.outcome(path, gen, self.provider.set("conflict", path, gen=gen, message=msg), "conflict")

    # -- actions

    def action(self, request, handler):
        """`* ACTION <id> [target=<path>] <path>... from=<client> [reply=<token>]` (an Action,
        from the Provider's dispatch) and its handler (None: not one of ours): results show as
        states and in the log; where the client asked for an answer (reply=), it also gets what
        was done, or failed=1 with what went wrong."""
        action = request.id
        paths = [p for p in request.paths if self.mirror.under(p)]
        target = request.target
        if not paths and target and self.mirror.under(target):
            paths = [target]            # a container menu: the directory itself
        log("action %s from %s on %d path(s)%s" % (action, request.client or "?", len(paths),
                                                  ", answer asked" if request.reply else ""))
        if handler is None:
            log("unknown action", action)
            message, failed = "rsync-mirror has no action %s" % action, True
        else:
            try:
                message, failed = handler(paths)
            except ServerError as e:        # the daemon refused a request on the way
                message, failed = "the daemon refused %s: %s %s" % (e.verb, e.code, e.message), True
                log("unexpected answer:", e)
        if request.reply is not None:
            log("answering %s: %s%s" % (action, "failed: " if failed else "", message))
            self.provider.answer(request, message[:MAX_MESSAGE], failed=failed)

    def gen_of(self, path):
        try:
            return self.conn.request(req.status(path)).items[0]
        except ServerError:
            return None

    def sync_now(self, paths):
        """The given paths now (directories compared in full), even while paused; or, without
        paths, everything pending. Returns the answer: (message, failed)."""
        if not paths:
            self.catch_up()
            count = len(self.pending)
            self.flush_pending()
            return self.answer_for([self.root], "synced %d pending path(s)" % count)
        entries = {}
        for p in paths:
            for q in [q for q in self.pending if q == p or q.startswith(p.rstrip(b"/") + b"/")]:
                entries[q] = self.pending.pop(q)
            it = self.gen_of(p)
            entries[p] = Entry(it.gen if it else None, deep=bool(it) and it.kind == "dir")
        if not self.pending:
            self.first = self.due = None
        self.sync(entries)
        return self.answer_for(paths, "synced %s" % (show(paths[0]) if len(paths) == 1 else "%d paths" % len(paths)))

    def answer_for(self, paths, done):
        """What a sync of `paths` comes to: `done`, or the first error or conflict left there."""
        errors, conflicts = self.matching(self.errors, paths), self.matching(self.conflicts, paths)
        if errors:
            more = " (and %d more)" % (len(errors) - 1) if len(errors) > 1 else ""
            return "rsync failed for %s: %s%s" % (show(errors[0]), self.errors[errors[0]][1], more), True
        if conflicts:
            return "%s is in conflict: resolve it first (keep local or keep mirror)" % show(conflicts[0]), True
        return done, False

    def matching(self, table, paths):
        return sorted({q for p in paths for q in table if q == p or q.startswith(p.rstrip(b"/") + b"/")})

    def last_error(self, paths):
        """Logs the whole rsync complaint for each path (or below it) and puts it in message=."""
        hits = self.matching(self.errors, paths or [self.root])
        if not hits:
            log("no error recorded for", " ".join(show(p) for p in paths))
        replies = []
        for q in hits:
            gen, _, text = self.errors[q]
            log("last error for %s: %s" % (show(q), text.replace("\n", " | ")))
            replies.append((q, gen, self.provider.set("error", q, gen=gen, message=text.replace("\n", " | ")[:MAX_MESSAGE])))
        for q, gen, r in replies:
            self.outcome(q, gen, r, "error")
        if not hits:
            return "no error recorded", False
        return " | ".join("%s: %s" % (show(q), self.errors[q][2].replace("\n", " | ")) for q in hits), False

    def resolve(self, paths, keep_local):
        """keep local: local over mirror, synced with the gen read first. keep mirror: mirror
        over local, then synced without gen, so the engine's own write stays synced (the daemon
        records the identity after the write)."""
        m = self.mirror
        targets = set(self.matching(self.conflicts, paths))
        targets |= {p for p in paths if not (_lstat(p) and stat.S_ISDIR(_lstat(p).st_mode))}
        if not targets:
            return "nothing in conflict there", False
        failures = []
        for p in sorted(targets):
            rel = m.rel(p)
            self.conflicts.pop(p, None)
            if keep_local:
                it = self.gen_of(p)
                gen = it.gen if it else None
                try:
                    if _lstat(m.local(rel)) is None:
                        m.delete(rel)
                        err = None
                    else:
                        err = m.rsync([rel])
                except OSError as e:
                    err = (str(e), str(e))
            else:
                gen = None
                try:
                    m.restore_local(rel)
                    err = None
                except OSError as e:
                    err = (str(e), str(e))
            if err is None:
                m.remember(rel)
                log("resolved %s: kept %s" % (show(p), "local" if keep_local else "mirror"))
                self.outcome(p, gen, self.provider.set("synced", p, gen=gen), "synced")
            else:
                self.errors[p] = (gen, err[0], err[1])
                failures.append("%s: %s" % (show(p), err[0]))
                self.outcome(p, gen, self.provider.set("error", p, gen=gen, message=err[0][:MAX_MESSAGE]), "error")
        m.save()
        if failures:
            return "; ".join(failures), True
        return "kept the %s copy of %d path(s)" % ("local" if keep_local else "mirror", len(targets)), False

    def pause_resume(self):
        self.paused = not self.paused
        said = "paused: changes wait until resumed" if self.paused else "resumed"
        log(said)
        for r in self.define_toolbar():
            r.result()
        if not self.paused and self.pending:
            self.flush_pending()
        return said, False


def main(argv=None):
    ap = argparse.ArgumentParser(description="Mirror a SyncBadge root into a directory with rsync.")
    ap.add_argument("--socket", help="the daemon's socket (default: as PROTOCOL.md says)")
    ap.add_argument("--name", default="rsync-mirror", help="the engine's name shown by the daemon")
    ap.add_argument("--debounce", type=float, default=0.3, help="seconds of quiet before a batch (default 0.3)")
    ap.add_argument("--state-dir", help="where sync identities are kept (default $XDG_STATE_HOME/syncbadge-rsync-mirror)")
    ap.add_argument("root")
    ap.add_argument("mirror")
    args = ap.parse_args(argv)
    root, dest = os.path.abspath(os.fsencode(args.root)), os.path.abspath(os.fsencode(args.mirror))
    if not os.path.isdir(root):
        ap.error("%s is not a directory" % args.root)
    if dest == root or dest.startswith(root.rstrip(b"/") + b"/") or root.startswith(dest.rstrip(b"/") + b"/"):
        ap.error("the mirror and the root must not contain each other")
    if shutil.which("rsync") is None:
        ap.error("rsync is not installed")
    state = os.environ.get("XDG_STATE_HOME", "")
    state = state if state.startswith("/") else os.path.expanduser("~/.local/state")
    state_dir = os.fsencode(args.state_dir or os.path.join(state, "syncbadge-rsync-mirror"))
    os.makedirs(dest, exist_ok=True)
    # A parent may have left signals blocked (Foundation's Process does): SIGTERM must work,
    # for us and for the rsync we run.
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    signal.signal(signal.SIGTERM, _Sigterm.handler)
    logging.basicConfig(format="rsync-mirror: %(message)s")   # the package's warnings
    try:
        Engine(args, Mirror(root, dest, state_dir), sb.socket_path(args.socket)).run()
    except Fatal as e:
        log(e)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
