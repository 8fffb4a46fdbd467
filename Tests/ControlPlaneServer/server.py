#!/usr/bin/env python3
"""Loopback OFREP control plane for Halyard's integration tests (Python standard library only).

Usage:
    python3 server.py [--flags FILE] [--exposure-path /v1/exposures] [--tls-cert PEM --tls-key PEM]

With ``--tls-cert``/``--tls-key`` the server speaks HTTPS only (transport TLS tests).

Binds 127.0.0.1 on a free port and prints one line, ``PORT <n>``, on stdout once it is listening.
Stops on SIGTERM/SIGINT or when stdin is closed (so a crashed test run does not leave it behind).

Flag sets
---------
The flags file (and ``POST /_admin/flags``) is JSON:

    {"default":  [ <OFREP item>, ... ],            # served when no targetingKey matches
     "contexts": {"user-1": [ <OFREP item>, ... ]}, # by the context's targetingKey
     "metadata": { ... }}                           # optional response-level metadata

An OFREP item is sent as given, e.g. ``{"key": "a", "value": true, "reason": "STATIC"}`` or
``{"key": "b", "errorCode": "FLAG_NOT_FOUND"}``.

``POST /ofrep/v1/evaluate/flags/{key}`` (OFREP single-flag evaluation) answers 200 with the
item for ``key`` alone, or 404 ``{"key", "errorCode": "FLAG_NOT_FOUND"}``.

``POST /ofrep/v1/evaluate/flags`` answers 200 ``{"flags": [...], "metadata": {...}}`` with
``ETag: "<sha1 of the body>"``, or 304 (empty body, ``Content-Length: 0``) when ``If-None-Match``
equals that ETag. A body that is not ``{"context": {...}}`` gets 400.

Exposures
---------
Requests to the exposure path (``--exposure-path``, default ``/v1/exposures``) are passed to
``exposure_endpoint.handle(body: bytes, headers: dict, state: dict) -> (status, headers, body)``
from ``exposure_endpoint.py`` in this folder when that module exists (404 otherwise). ``state`` is
one dict kept for the server's lifetime. Scripted faults with a matching ``"path"`` apply first.
A request whose body ends before its ``Content-Length`` (libcurl may resend a short body after a
reset) is never handled: the connection is dropped and, on the exposure path,
``exposure_endpoint.note_truncated_request(state)`` is called when the module has it.

OTLP logs
---------
Requests to ``/v1/logs`` (``--otlp-path``) go to ``otlp_endpoint.handle(body, headers, state,
fault)`` from ``otlp_endpoint.py`` (a strict OTLP/HTTP JSON receiver, with its own state), after
the fault script like the exposure path (``"process": true`` included). The extra fault
``{"action": "partial", "rejected": k, "message": "..."}`` answers a valid request with a
partial success.

Admin endpoints (never faulted, never logged)
---------------------------------------------
``POST /_admin/script``    body: a JSON list of faults (or ``{"faults": [...]}``), appended to the queue.
``POST /_admin/flags``     body: a flag-set document as above; replaces the flag sets.
``GET  /_admin/requests``  ``{"requests": [{"seq", "time", "method", "path", "headers", "body",
                           "bodyBase64", "fault"}]}`` — every non-admin request in arrival order
                           (``fault`` is the action applied, or null). Headers keep their case.
``POST /_admin/reset``     clears the fault queue and the request log, and calls
                           ``exposure_endpoint.reset(state)`` when the module has it.
``GET  /_admin/exposures[?summary=1]``  ``exposure_endpoint.report(state, include_events=...)``.
``GET  /_admin/otlp[?bodies=1]``  ``otlp_endpoint.report(state, include_bodies=...)``.
``GET  /_admin/health``    200.

Faults
------
Each incoming non-admin request takes the first queued fault whose ``path`` matches (a fault
without ``path`` matches only the OFREP evaluation path); the fault's ``count`` (default 1) is
decremented and the fault removed at 0. Fields:

    {"action": "status",   "status": 503, "headers": {"Retry-After": "2"}, "body": "..."}
    {"action": "delay",    "seconds": 3}             # wait, then answer normally
    {"action": "reset"}                               # close the connection with RST, no answer
    {"action": "truncate", "bytes": 20}               # full Content-Length, only the first N bytes
    {"action": "malformed","body": "{\"flags\": ["}    # 200 with a garbage body (default shown)
    {"action": "oversize", "bytes": 9437184, "declareLength": true}
                                                      # 200 with a huge body; declareLength false
                                                      # sends no Content-Length (Connection: close)
    {"action": "drip",     "interval": 0.2, "chunks": 50}  # the 200 body (never 304), a piece per interval
    {"action": "gzip"}                                # the 200 body (never 304), gzip-compressed
    {"action": "pass"}                                # answer normally (counts as a fault slot)
    {"action": "partial", "rejected": 3}              # OTLP path only: a partial success
    {"action": "gzipbomb", "inflatedBytes": 1073741824, "layers": 1}
                                                      # 200, Content-Encoding: gzip, a body of ~1/1000
                                                      # of inflatedBytes that inflates to that many
                                                      # zero bytes (see gzip_bomb below); layers 2
                                                      # gzips that body once more (a client that
                                                      # decodes the declared encoding still holds
                                                      # a gzip stream)

Every fault also accepts ``"path"``, ``"count"``, ``"headers"`` (added to the answer) and
``"delay"`` (seconds to wait before acting). On the exposure path, ``"process": true`` with
``status`` or ``reset`` hands the upload to the endpoint first (it is recorded), then answers with
the fault: the "delivered, but the answer was lost" case.
"""

import argparse
import base64
import gzip
import hashlib
import importlib.util
import json
import os
import signal
import socket
import struct
import sys
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

EVALUATE_PATH = "/ofrep/v1/evaluate/flags"
HERE = os.path.dirname(os.path.abspath(__file__))


class State:
    def __init__(self, flags, exposure_path, otlp_path="/v1/logs"):
        self.lock = threading.Lock()
        self.flags = flags
        self.faults = []
        self.requests = []
        self.seq = 0
        self.exposure_path = exposure_path
        self.exposure_state = {}
        self.exposure_module = None
        self.exposure_module_loaded = False
        self.otlp_path = otlp_path
        self.otlp_state = {}
        self.otlp_module = None
        self.otlp_module_loaded = False

    def take_fault(self, path):
        with self.lock:
            for i, fault in enumerate(self.faults):
                wanted = fault.get("path", EVALUATE_PATH)
                if wanted == path:
                    fault["_remaining"] = fault.get("_remaining", int(fault.get("count", 1))) - 1
                    if fault["_remaining"] <= 0:
                        del self.faults[i]
                    return fault
        return None

    def log(self, method, path, headers, body, fault):
        with self.lock:
            self.seq += 1
            self.requests.append({
                "seq": self.seq,
                "time": time.time(),
                "method": method,
                "path": path,
                "headers": dict(headers.items()),
                "body": body.decode("utf-8", "replace"),
                "bodyBase64": base64.b64encode(body).decode("ascii"),
                "fault": fault.get("action") if fault else None,
            })

    def exposure_handler(self):
        with self.lock:
            if not self.exposure_module_loaded:
                self.exposure_module_loaded = True
                candidate = os.path.join(HERE, "exposure_endpoint.py")
                if os.path.exists(candidate):
                    spec = importlib.util.spec_from_file_location("exposure_endpoint", candidate)
                    module = importlib.util.module_from_spec(spec)
                    spec.loader.exec_module(module)
                    self.exposure_module = module
            return self.exposure_module


    def otlp_handler(self):
        with self.lock:
            if not self.otlp_module_loaded:
                self.otlp_module_loaded = True
                candidate = os.path.join(HERE, "otlp_endpoint.py")
                if os.path.exists(candidate):
                    spec = importlib.util.spec_from_file_location("otlp_endpoint", candidate)
                    module = importlib.util.module_from_spec(spec)
                    spec.loader.exec_module(module)
                    self.otlp_module = module
            return self.otlp_module


# -- gzip bomb (transport tests: the response limit must hold on the inflated size) ----------

_BOMBS = {}


def gzip_bomb(inflated_bytes, chunk=1 << 20):
    """A gzip member inflating to ``inflated_bytes`` (rounded down to whole MiB) zero bytes.

    Built without compressing the whole output: one MiB of zeros is deflated once and ended with
    a full flush (byte-aligned, no back-reference across it), so the same segment can be
    repeated; a final empty block and the CRC-32/size trailer close the member. Cached by size."""
    if inflated_bytes not in _BOMBS:
        zeros = bytes(chunk)
        compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
        segment = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
        count = max(1, inflated_bytes // chunk)
        crc = 0
        for _ in range(count):
            crc = zlib.crc32(zeros, crc)
        header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
        trailer = struct.pack("<II", crc, (count * chunk) & 0xFFFFFFFF)
        _BOMBS[inflated_bytes] = header + segment * count + b"\x03\x00" + trailer
    return _BOMBS[inflated_bytes]


def flag_set_for(flags, context):
    key = context.get("targetingKey") if isinstance(context, dict) else None
    contexts = flags.get("contexts", {})
    if isinstance(key, str) and key in contexts:
        return contexts[key]
    return flags.get("default", [])


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server_version = "HalyardTestControlPlane/1"

    def log_message(self, format, *args):  # silence
        pass

    # -- helpers -----------------------------------------------------------------------------

    def read_body(self):
        """The request body, or None when the connection ended before Content-Length bytes
        (libcurl can resend a short body after a reset)."""
        length = int(self.headers.get("Content-Length") or 0)
        if length <= 0:
            return b""
        body = self.rfile.read(length)
        return body if len(body) == length else None

    def send(self, status, body=b"", headers=None, content_type="application/json"):
        self.send_response(status)
        sent = set()
        for name, value in (headers or {}).items():
            self.send_header(name, str(value))
            sent.add(name.lower())
        if body and "content-type" not in sent:
            self.send_header("Content-Type", content_type)
        if "content-length" not in sent:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body:
            self.wfile.write(body)
        self.wfile.flush()

    def reset_connection(self):
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        try:
            self.connection.close()
        except OSError:
            pass
        self.close_connection = True

    # -- routing -----------------------------------------------------------------------------

    def do_GET(self):
        self.route("GET")

    def do_POST(self):
        self.route("POST")

    def route(self, method):
        state = self.server.state
        path, _, query = self.path.partition("?")
        body = self.read_body()
        if body is None:
            # A short body is a transport failure, never a request: drop the connection.
            if path == state.exposure_path:
                module = state.exposure_handler()
                if module is not None and hasattr(module, "note_truncated_request"):
                    module.note_truncated_request(state.exposure_state)
            if path == state.otlp_path:
                module = state.otlp_handler()
                if module is not None:
                    module.note_truncated_request(state.otlp_state)
            self.close_connection = True
            return
        if path.startswith("/_admin/"):
            return self.admin(method, path, body, query)
        fault = state.take_fault(path)
        state.log(method, path, self.headers, body, fault)
        if fault and fault.get("delay"):
            time.sleep(float(fault["delay"]))
        if fault:
            if fault.get("process") and path == state.exposure_path and fault.get("action", "status") in ("status", "reset"):
                # Hand the upload to the endpoint (it is recorded), then answer with the fault.
                module = state.exposure_handler()
                if module is not None:
                    module.handle(body, dict(self.headers.items()), state.exposure_state)
            if fault.get("process") and path == state.otlp_path and fault.get("action", "status") in ("status", "reset"):
                module = state.otlp_handler()
                if module is not None:
                    module.handle(body, dict(self.headers.items()), state.otlp_state)
            if self.apply_fault(fault, path, body):
                return
        self.normal(path, body, fault)

    def admin(self, method, path, body, query=""):
        state = self.server.state
        try:
            if path == "/_admin/script" and method == "POST":
                doc = json.loads(body or b"[]")
                faults = doc.get("faults", []) if isinstance(doc, dict) else doc
                with state.lock:
                    state.faults.extend(faults)
                return self.send(200, json.dumps({"queued": len(state.faults)}).encode())
            if path == "/_admin/flags" and method == "POST":
                doc = json.loads(body)
                with state.lock:
                    state.flags = doc
                return self.send(200, b"{}")
            if path == "/_admin/requests" and method == "GET":
                with state.lock:
                    doc = json.dumps({"requests": state.requests}).encode()
                return self.send(200, doc)
            if path == "/_admin/reset" and method == "POST":
                with state.lock:
                    state.faults = []
                    state.requests = []
                module = state.exposure_handler()
                if module is not None and hasattr(module, "reset"):
                    module.reset(state.exposure_state)
                module = state.otlp_handler()
                if module is not None:
                    module.reset(state.otlp_state)
                return self.send(200, b"{}")
            if path == "/_admin/exposures" and method == "GET":
                module = state.exposure_handler()
                if module is None or not hasattr(module, "report"):
                    return self.send(404, b'{"error": "no exposure endpoint"}')
                summary = "summary=1" in query
                doc = module.report(state.exposure_state, include_events=not summary)
                return self.send(200, json.dumps(doc).encode())
            if path == "/_admin/otlp" and method == "GET":
                module = state.otlp_handler()
                if module is None:
                    return self.send(404, b'{"error": "no OTLP endpoint"}')
                doc = module.report(state.otlp_state, include_bodies="bodies=1" in query)
                return self.send(200, json.dumps(doc).encode())
            if path == "/_admin/health":
                return self.send(200, b"{}")
            return self.send(404, b'{"error": "unknown admin endpoint"}')
        except (ValueError, AttributeError) as error:
            return self.send(400, json.dumps({"error": str(error)}).encode())

    def normal(self, path, body, fault):
        state = self.server.state
        extra = dict(fault.get("headers", {})) if fault else {}
        if path == state.exposure_path:
            module = state.exposure_handler()
            if module is None:
                return self.send(404, b'{"error": "no exposure endpoint"}', extra)
            status, headers, answer = module.handle(body, dict(self.headers.items()), state.exposure_state)
            merged = dict(headers or {})
            merged.update(extra)
            return self.send(int(status), answer or b"", merged)
        if path == state.otlp_path:
            module = state.otlp_handler()
            if module is None:
                return self.send(404, b'{"error": "no OTLP endpoint"}', extra)
            status, headers, answer = module.handle(body, dict(self.headers.items()), state.otlp_state, fault)
            merged = dict(headers or {})
            merged.update(extra)
            return self.send(int(status), answer or b"", merged)
        if path.startswith(EVALUATE_PATH + "/"):
            return self.evaluate_one(path[len(EVALUATE_PATH) + 1:], body, extra)
        if path != EVALUATE_PATH:
            return self.send(404, b'{"error": "not found"}', extra)
        answer, etag = self.evaluate(body)
        if answer is None:
            return self.send(400, b'{"errorCode": "INVALID_CONTEXT"}', extra)
        headers = {"ETag": etag}
        headers.update(extra)
        action = fault.get("action") if fault else None
        if self.headers.get("If-None-Match") == etag and action not in ("gzip", "drip"):
            return self.send(304, b"", headers)
        if fault and fault.get("action") == "gzip":
            headers["Content-Encoding"] = "gzip"
            return self.send(200, gzip.compress(answer), headers)
        if fault and fault.get("action") == "drip":
            return self.drip(answer, headers, float(fault.get("interval", 0.1)), int(fault.get("chunks", 10)))
        return self.send(200, answer, headers)

    def evaluate_one(self, key, body, extra):
        """OFREP single-flag evaluation (``POST /ofrep/v1/evaluate/flags/{key}``): the item
        for ``key`` from the context's flag set, or 404 FLAG_NOT_FOUND (used by the service
        benchmark's per-read peer designs)."""
        try:
            request = json.loads(body)
        except ValueError:
            request = None
        if not isinstance(request, dict) or not isinstance(request.get("context"), dict):
            return self.send(400, b'{"errorCode": "INVALID_CONTEXT"}', extra)
        with self.server.state.lock:
            items = flag_set_for(self.server.state.flags, request["context"])
        for item in items:
            if isinstance(item, dict) and item.get("key") == key:
                return self.send(200, json.dumps(item, sort_keys=True).encode(), extra)
        answer = json.dumps({"key": key, "errorCode": "FLAG_NOT_FOUND"}).encode()
        return self.send(404, answer, extra)

    def evaluate(self, body):
        try:
            request = json.loads(body)
        except ValueError:
            return None, None
        if not isinstance(request, dict) or not isinstance(request.get("context"), dict):
            return None, None
        with self.server.state.lock:
            flags = self.server.state.flags
            items = flag_set_for(flags, request["context"])
            doc = {"flags": items}
            if "metadata" in flags:
                doc["metadata"] = flags["metadata"]
        answer = json.dumps(doc, sort_keys=True).encode()
        return answer, '"' + hashlib.sha1(answer).hexdigest() + '"'

    def drip(self, answer, headers, interval, chunks):
        self.send_response(200)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.flush()
        size = max(1, (len(answer) + chunks - 1) // chunks)
        try:
            for start in range(0, len(answer), size):
                time.sleep(interval)
                self.wfile.write(answer[start:start + size])
                self.wfile.flush()
        except OSError:
            self.close_connection = True

    def apply_fault(self, fault, path, body):
        """Applies a fault; returns True when the request has been answered (or dropped)."""
        action = fault.get("action", "status")
        extra = dict(fault.get("headers", {}))
        try:
            if action == "status":
                payload = fault.get("body", "")
                payload = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
                self.send(int(fault.get("status", 500)), payload, extra)
                return True
            if action == "delay":
                time.sleep(float(fault.get("seconds", 1)))
                return False
            if action == "reset":
                self.reset_connection()
                return True
            if action == "truncate":
                answer, etag = self.evaluate(body)
                answer = answer or b'{"flags": []}'
                cut = int(fault.get("bytes", max(1, len(answer) // 2)))
                self.send_response(200)
                for name, value in extra.items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer[:cut])
                self.wfile.flush()
                self.reset_connection()
                return True
            if action == "malformed":
                payload = fault.get("body", '{"flags": [')
                self.send(200, payload.encode() if isinstance(payload, str) else bytes(payload), extra)
                return True
            if action == "gzipbomb":
                payload = gzip_bomb(int(fault.get("inflatedBytes", 1 << 30)))
                for _ in range(1, int(fault.get("layers", 1))):
                    payload = gzip.compress(payload)
                extra["Content-Encoding"] = "gzip"
                self.send(200, payload, extra)
                return True
            if action == "oversize":
                size = int(fault.get("bytes", 9 * 1024 * 1024))
                filler = b'{"flags": [], "padding": "' + b"x" * max(0, size - 30) + b'"}'
                self.send_response(200)
                for name, value in extra.items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                if fault.get("declareLength", True):
                    self.send_header("Content-Length", str(len(filler)))
                else:
                    self.send_header("Connection", "close")
                    self.close_connection = True
                self.end_headers()
                for start in range(0, len(filler), 65536):
                    self.wfile.write(filler[start:start + 65536])
                self.wfile.flush()
                if not fault.get("declareLength", True):
                    self.reset_connection()
                return True
        except OSError:
            self.close_connection = True
            return True
        return False  # "drip", "gzip", "pass", "partial": answered by normal()


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    # The default listen backlog (5) drops SYNs when a client opens many connections at once
    # (CurlTransport with 64 requests in flight): each drop costs a 1 s retransmit.
    request_queue_size = 128

    def handle_error(self, request, client_address):  # resets and client hang-ups are expected
        pass


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--flags", help="flag-set JSON file")
    parser.add_argument("--exposure-path", default="/v1/exposures")
    parser.add_argument("--otlp-path", default="/v1/logs")
    parser.add_argument("--tls-cert", help="PEM certificate: serve HTTPS (with --tls-key)")
    parser.add_argument("--tls-key", help="PEM private key for --tls-cert")
    args = parser.parse_args()
    flags = {"default": []}
    if args.flags:
        with open(args.flags, "rb") as f:
            flags = json.load(f)
    server = Server(("127.0.0.1", 0), Handler)
    server.state = State(flags, args.exposure_path, args.otlp_path)
    if args.tls_cert:
        import ssl
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.tls_cert, args.tls_key)
        # A failed handshake (an untrusting client) raises in accept(), which socketserver ignores.
        server.socket = context.wrap_socket(server.socket, server_side=True)
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))

    def watch_stdin():
        try:
            while sys.stdin.buffer.read(1024):
                pass
        except (OSError, ValueError):
            pass
        os._exit(0)

    threading.Thread(target=watch_stdin, daemon=True).start()
    sys.stdout.write("PORT %d\n" % server.server_address[1])
    sys.stdout.flush()
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
