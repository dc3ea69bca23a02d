#!/usr/bin/python3
"""A stand-in for rclone's remote control, on loopback only, for the tests of the adapter's
rclone 1.68 path (Debian ships 1.60, which has no vfs/queue).

It answers each rc call (POST /<call>) with the JSON of the current state in the script, a
JSON object: {"states": {NAME: {CALL: ANSWER, ...}, ...}}; the current state is the name in
STATE_FILE, read at each call, so a test switches states by writing that file. A call the
state does not name gets rclone's own 404 answer ("couldn't find method"). Every call is
appended to LOG_FILE as one JSON line ({"call": CALL, "params": {...}, "state": NAME}), so that
a test can tell which calls were made, and when none were. PORT_FILE gets the port it listens
on (127.0.0.1 only), once it listens.

usage: rc-standin.py SCRIPT STATE_FILE PORT_FILE LOG_FILE
"""
import http.server
import json
import os
import sys
import threading

script = json.load(open(sys.argv[1]))
state_file, port_file, log_file = sys.argv[2], sys.argv[3], sys.argv[4]
lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, status, obj):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b"{}"
        params = json.loads(raw or b"{}")
        call = self.path.lstrip("/")
        with lock:
            with open(state_file) as f:
                name = f.read().strip()
            with open(log_file, "a") as log:
                log.write(json.dumps({"call": call, "params": params, "state": name}) + "\n")
            answers = script["states"][name]
        if call in answers:
            return self.answer(200, answers[call])
        self.answer(404, {"error": 'couldn\'t find method "%s"' % call, "input": params, "path": call, "status": 404})


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(port_file + ".tmp", port_file)
server.serve_forever()
