"""A tiny standalone loopback server around exposure_endpoint.py, for the exposure tests.

    python3 exposure_test_server.py      # prints the port (bound on 127.0.0.1, port 0) and serves

Routes:
  POST /v1/exposures (any path ending in /exposures)  -> exposure_endpoint.handle, unless a fault
  POST /_admin/faults   body: JSON list of faults appended to the script (consumed one per upload)
  GET  /_admin/exposures[?summary=1]                  -> exposure_endpoint.report
  POST /_admin/reset                                   -> forget everything, clear the script

A request whose body ends before its Content-Length is not handed to the endpoint (counted as
truncatedRequests): libcurl under URLSession may resend a short body after a connection reset.

A fault is an object; any combination of:
  {"delay": 1.5}             sleep first (the client may time out meanwhile)
  {"process": true}          hand the upload to the endpoint anyway (it is recorded), then fail
  {"status": 503, "headers": {"Retry-After": "1"}}   answer with this status instead
  {"reset": true}            close the connection without a response (TCP RST)

Keep-alive HTTP/1.1, Nagle off, Content-Length on every response. Exits when stdin closes.
Standard library only.
"""

import json
import os
import socket
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import exposure_endpoint  # noqa: E402

STATE = {}
SCRIPT = []
SCRIPT_LOCK = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format, *args):  # quiet
        pass

    def _send(self, status, headers, body):
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def _json(self, status, payload):
        self._send(status, {"Content-Type": "application/json"}, json.dumps(payload).encode())

    def _body(self):
        """The request body, or None when the connection ended before Content-Length bytes
        (libcurl can resend a short body after a reset; see docs/exposures.md)."""
        length = int(self.headers.get("Content-Length") or 0)
        if length <= 0:
            return b""
        try:
            body = self.rfile.read(length)
        except OSError:
            return None
        return body if len(body) == length else None

    def _reset(self):
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        self.close_connection = True
        try:
            self.connection.close()
        except OSError:
            pass

    def do_GET(self):
        if self.path.startswith("/_admin/exposures"):
            summary = "summary=1" in self.path
            self._json(200, exposure_endpoint.report(STATE, include_events=not summary))
        else:
            self._json(404, {"error": "not found"})

    def do_POST(self):
        body = self._body()
        if body is None:
            exposure_endpoint.note_truncated_request(STATE)
            self.close_connection = True
            return
        if self.path == "/_admin/faults":
            faults = json.loads(body or b"[]")
            with SCRIPT_LOCK:
                SCRIPT.extend(faults)
            self._json(200, {"scripted": len(SCRIPT)})
            return
        if self.path == "/_admin/reset":
            exposure_endpoint.reset(STATE)
            with SCRIPT_LOCK:
                del SCRIPT[:]
            self._json(200, {})
            return
        if not self.path.endswith("/exposures"):
            self._json(404, {"error": "not found"})
            return
        with SCRIPT_LOCK:
            fault = SCRIPT.pop(0) if SCRIPT else {}
        if fault.get("delay"):
            time.sleep(float(fault["delay"]))
        headers = {k: v for k, v in self.headers.items()}
        if fault.get("process") or not (fault.get("reset") or fault.get("status")):
            status, out_headers, out_body = exposure_endpoint.handle(body, headers, STATE)
        if fault.get("reset"):
            self._reset()
            return
        if fault.get("status"):
            status = int(fault["status"])
            out_headers = dict(fault.get("headers") or {})
            out_body = json.dumps({"error": "injected"}).encode()
        try:
            self._send(status, out_headers, out_body)
        except OSError:
            pass  # the client gave up (timeout)


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        sys.stdin.read()  # until the parent closes stdin (or dies)
    except KeyboardInterrupt:
        pass
    server.shutdown()


if __name__ == "__main__":
    main()
