#!/usr/bin/env python3
"""Loopback OFREP control plane for Halyard's integration tests (Python standard library only).

Usage:
    python3 server.py [--flags FILE] [--exposure-path /v1/exposures] [--tls-cert PEM --tls-key PEM]
                      [--stream MODE] [--stream-advertise SHAPE]

Event streams (SSE, issue 23): see the "Event streams" block just above ``class Server``.

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

Latency and counters (benchmarks: ``halyard-bench-fleet``)
---------------------------------------------------------
``POST /_admin/settings``  body: ``{"evaluateDelay": 0.02, "logRequests": false}`` (either key),
                           merged into the settings; answers them. ``evaluateDelay`` (default 0):
                           seconds every answer of the bulk path (``POST /ofrep/v1/evaluate/flags``)
                           waits before it is sent (faulted requests excepted). ``logRequests``
                           (default true): false stops recording requests in ``/_admin/requests``
                           and bulk requests in ``/_admin/streams`` (a long run's memory).
``GET  /_admin/counters``  ``{"evaluate", "conditional", "ok", "notModified", "distinctContexts"}``:
                           bulk requests received, those with ``If-None-Match``, 200 and 304
                           answers, distinct ``targetingKey`` values asked for. Kept whatever
                           ``logRequests`` says; ``POST /_admin/reset`` zeroes them.

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
        # Latency and counters (see the module docstring).
        self.evaluate_delay = 0.0
        self.log_requests = True
        self.reset_counters()

    def reset_counters(self):
        self.counters = {"evaluate": 0, "conditional": 0, "ok": 0, "notModified": 0}
        self.counted_keys = set()

    def count_evaluate(self, headers, body):
        """Counts a bulk request (any answer) and its targeting key."""
        try:
            context = json.loads(body).get("context")
            key = context.get("targetingKey") if isinstance(context, dict) else None
        except (ValueError, AttributeError):
            key = None
        with self.lock:
            self.counters["evaluate"] += 1
            if headers.get("If-None-Match") is not None:
                self.counters["conditional"] += 1
            if isinstance(key, str):
                self.counted_keys.add(key)

    def count_answer(self, name):
        with self.lock:
            self.counters[name] += 1

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
            if not self.log_requests:
                return
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
        if stream_route(self, method, path, query, body):  # event streams (issue 23)
            return
        if path.startswith("/_admin/"):
            return self.admin(method, path, body, query)
        fault = state.take_fault(path)
        state.log(method, path, self.headers, body, fault)
        if path == EVALUATE_PATH:
            state.count_evaluate(self.headers, body)
        stream_note_request(self, method, path, query)  # event streams (issue 23)
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
                    state.reset_counters()
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
            if path == "/_admin/settings" and method == "POST":
                doc = json.loads(body or b"{}")
                with state.lock:
                    if "evaluateDelay" in doc:
                        state.evaluate_delay = max(0.0, float(doc["evaluateDelay"]))
                    if "logRequests" in doc:
                        state.log_requests = bool(doc["logRequests"])
                    settings = {"evaluateDelay": state.evaluate_delay, "logRequests": state.log_requests}
                return self.send(200, json.dumps(settings).encode())
            if path == "/_admin/counters" and method == "GET":
                with state.lock:
                    doc = dict(state.counters)
                    doc["distinctContexts"] = len(state.counted_keys)
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
        with state.lock:
            delay = state.evaluate_delay
        if delay > 0:
            time.sleep(delay)
        answer, etag = self.evaluate(body)
        if answer is None:
            return self.send(400, b'{"errorCode": "INVALID_CONTEXT"}', extra)
        headers = {"ETag": etag}
        headers.update(extra)
        action = fault.get("action") if fault else None
        if self.headers.get("If-None-Match") == etag and action not in ("gzip", "drip"):
            state.count_answer("notModified")
            return self.send(304, b"", headers)
        state.count_answer("ok")
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
        stream_advertise(self, doc)  # event streams (issue 23)
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
                # Without a length the body ends where the connection closes: closed cleanly
                # (close_connection above), never reset, since a reset can discard the bytes still
                # in flight and the client then sees a network error before it has the bytes
                # that exceed its limit (URLSession did, once, in a full parallel run).
                return True
        except OSError:
            self.close_connection = True
            return True
        return False  # "drip", "gzip", "pass", "partial": answered by normal()


# == Event streams (issue 23, SPEC §14) =========================================================
# Everything below, down to "== end of event streams ==", serves OFREP event streams (ADR-0008)
# for the stream tests. Three one-line hooks call into it: ``stream_route`` (first thing in
# ``Handler.route``), ``stream_note_request`` (after ``State.log``) and ``stream_advertise`` (when
# ``Handler.evaluate`` builds a bulk response). Off by default: until a test configures it the
# bulk response advertises nothing (the stream path is served, in "flagd" mode by default).
#
# Configuration (``--stream MODE``, ``--stream-advertise SHAPE`` on the command line, or
# ``POST /_admin/stream`` with a JSON object merged into the current one; ``{"reset": true}``
# first restores the defaults). Keys:
#
#     "advertise": "none" | "endpoint" | "endpoint-origin" | "url"      (default "none")
#         endpoint:        {"type": "sse", "endpoint": {"requestUri": <path>}}       (flagd's shape)
#         endpoint-origin: {"type": "sse", "endpoint": {"origin": <origin>, "requestUri": <path>}}
#         url:             {"type": "sse", "url": <origin><path>}                     (Flipt's shape)
#     "path": "/ofrep/v1/sse"          the stream's path (its query string is kept in "url" shapes)
#     "query": ""                      appended to the advertised stream URL as "?<query>"
#     "origin": null                   the origin advertised in "endpoint-origin"/"url"
#                                      (default: this server, http://127.0.0.1:<port>)
#     "inactivityDelaySec": null       added to the advertised entry when not null
#     "extraEntries": []               raw entries appended to eventStreams (unknown types, ...)
#     "mode": "flagd"                  how GET <path> answers (below)
#     "keepAlive": 5.0                 seconds between ":keep-alive" comments (0: none)
#     "dropEvery": 2.0                 "drop" mode: seconds a connection lives
#     "trickleInterval": 1.0           "trickle" mode: seconds between bytes
#     "oversizeBytes": 70000           "oversize" mode: the size of the event's data
#     "redirectTo": null               "redirect" mode: the Location (default: the same path on
#                                      http://localhost:<port>, another origin)
#     "status": 500                    "status" mode: the status answered
#
# Modes (a stream request's query may override: ``GET <path>?mode=silent&keepAlive=0``):
#     flagd     200 text/event-stream; each event "id: <n>\nevent: message\ndata: <json>\n\n"
#               with numeric ids; ":keep-alive" comments every keepAlive seconds.
#     flipt     406 unless "Accept: text/event-stream"; events are "data: <json>\n\n" only (no
#               event: or id: line); a refetchEvaluation is sent right after connecting.
#     wrapped   like flagd, but every event's data is wrapped in an unknown type:
#               {"type": "configurationChange", "data": <the event>} (a client must ignore it).
#     drop      like flagd, and each connection is closed (cleanly) after dropEvery seconds.
#     garbage   200 text/event-stream, then 128 KiB of printable bytes without a line ending
#               (the parser's line limit ends it), then the connection closes.
#     trickle   like flagd, but every byte is written alone, one per trickleInterval seconds
#               (keep-alive comments included).
#     oversize  like flagd, preceded by one event whose data is oversizeBytes long.
#     silent    200 text/event-stream and then nothing at all (inactivity timeouts).
#     chunks    writes the request's "chunk" query values (repeatable, percent-encoded) one per
#               "interval" seconds (default 0.05), then stays open (or closes with close=1).
#     redirect  302 to redirectTo (or ?location=...); "sameOrigin=1" redirects to the same path on
#               this server with mode=flagd instead (mode=<target> with "target=<mode>").
#     404       404 on the stream URL.
#     cycle     a deployed server's life, per caller (its Authorization header): connects 1, 4, 7,
#               ... are "drop" (the stream ends cleanly after dropEvery seconds), 2, 5, ... are a
#               503, and 3, 6, ... a same-origin 302 to a "drop" stream (the stream soak).
#     status    answers "status" with a small body.
# Streams use chunked transfer encoding (as Go servers do); "drop" and "chunks&close=1" end it with
# the final chunk; a server-initiated "/_admin/stream/drop" resets the connections.
#
# Control interface (admin endpoints, never faulted or logged in /_admin/requests):
#     POST /_admin/stream          configure (above); answers the resulting configuration.
#     POST /_admin/stream/event    {"type": "refetchEvaluation", "etag": "\"v7\"", "lastModified":
#                                  1771622898} (any JSON object: sent as the data) or {"raw":
#                                  "<bytes as text>"}: written to every open stream now.
#                                  Answers {"delivered": <number of open streams>}.
#     POST /_admin/stream/change   {"flags": <flag-set document>, "etag"?, "lastModified"?,
#                                  "notify"?: true}: replaces the flag sets (like /_admin/flags)
#                                  and, unless notify is false, sends refetchEvaluation with etag
#                                  "\"v<n>\"" (n counts changes) and lastModified = Unix seconds,
#                                  unless given. Answers {"version", "etag", "lastModified",
#                                  "delivered"}.
#     POST /_admin/stream/drop     resets every open stream connection; answers {"dropped": n}.
#     GET  /_admin/streams         {"open": n, "connects": n, "bulk": [{"seq", "time", "query",
#                                  "flagConfigEtag", "flagConfigLastModified", "ifNoneMatch"}],
#                                  "streams": [{"seq", "time", "path", "query", "headers",
#                                  "status"}]} — every bulk request's query string (decoded
#                                  parameters, null when absent) and every stream request's
#                                  headers (their case kept), in arrival order ("seq" is shared
#                                  with /_admin/requests). POST /_admin/reset clears them too.

import queue as _queue
import urllib.parse as _urlparse

STREAM_DEFAULTS = {
    "advertise": "none",
    "path": "/ofrep/v1/sse",
    "query": "",
    "origin": None,
    "inactivityDelaySec": None,
    "extraEntries": [],
    "mode": "flagd",
    "keepAlive": 5.0,
    "dropEvery": 2.0,
    "trickleInterval": 1.0,
    "oversizeBytes": 70000,
    "redirectTo": None,
    "status": 500,
}


class StreamState:
    def __init__(self):
        self.config = dict(STREAM_DEFAULTS)
        self.listeners = []  # (queue, handler) of the open streams
        self.connects = 0
        self.cycles = {}  # "cycle" mode: stream requests so far, by Authorization header
        self.bulk = []
        self.streams = []
        self.event_id = 0
        self.version = 0


def stream_state(state):
    with state.lock:
        if not hasattr(state, "stream"):
            state.stream = StreamState()
        return state.stream


def _server_origin(handler):
    return "http://127.0.0.1:%d" % handler.server.server_address[1]


def stream_advertise(handler, doc):
    """Adds ``eventStreams`` to a bulk response document when configured."""
    streams = stream_state(handler.server.state)
    with handler.server.state.lock:
        config = dict(streams.config)
    shape = config.get("advertise", "none")
    entries = []
    target = config["path"] + ("?" + config["query"] if config.get("query") else "")
    origin = config.get("origin") or _server_origin(handler)
    if shape == "endpoint":
        entries.append({"type": "sse", "endpoint": {"requestUri": target}})
    elif shape == "endpoint-origin":
        entries.append({"type": "sse", "endpoint": {"origin": origin, "requestUri": target}})
    elif shape == "url":
        entries.append({"type": "sse", "url": origin + target})
    if entries and config.get("inactivityDelaySec") is not None:
        entries[0]["inactivityDelaySec"] = config["inactivityDelaySec"]
    entries.extend(config.get("extraEntries") or [])
    if entries:
        doc["eventStreams"] = entries


def stream_note_request(handler, method, path, query):
    """Records bulk requests' query parameters (stream requests are recorded by the stream)."""
    state = handler.server.state
    if path != EVALUATE_PATH:
        return
    params = _urlparse.parse_qs(query, keep_blank_values=True)
    streams = stream_state(state)
    with state.lock:
        if not state.log_requests:
            return
        streams.bulk.append({
            "seq": state.seq,
            "time": time.time(),
            "query": query,
            "flagConfigEtag": params.get("flagConfigEtag", [None])[0],
            "flagConfigLastModified": params.get("flagConfigLastModified", [None])[0],
            "ifNoneMatch": handler.headers.get("If-None-Match"),
        })


def _event_bytes(mode, data, event_id):
    payload = json.dumps(data, sort_keys=True) if not isinstance(data, str) else data
    if mode == "wrapped":
        payload = json.dumps({"type": "configurationChange", "data": data}, sort_keys=True)
    if mode == "flipt":
        return ("data: %s\n\n" % payload).encode()
    return ("id: %d\nevent: message\ndata: %s\n\n" % (event_id, payload)).encode()


def stream_broadcast(state, data=None, raw=None):
    """Queues an event (a JSON object) or raw bytes on every open stream; returns how many."""
    streams = stream_state(state)
    with state.lock:
        listeners = list(streams.listeners)
        streams.event_id += 1
        event_id = streams.event_id
    for q, _ in listeners:
        q.put(("raw", raw) if raw is not None else ("event", data, event_id))
    return len(listeners)


def stream_admin(handler, method, path, body):
    """The stream admin endpoints; returns True when ``path`` was one of them."""
    state = handler.server.state
    streams = stream_state(state)
    if path == "/_admin/stream" and method == "POST":
        doc = json.loads(body or b"{}")
        with state.lock:
            if doc.pop("reset", False):
                streams.config = dict(STREAM_DEFAULTS)
            streams.config.update(doc)
            config = dict(streams.config)
        handler.send(200, json.dumps(config).encode())
        return True
    if path == "/_admin/stream/event" and method == "POST":
        doc = json.loads(body or b"{}")
        if isinstance(doc, dict) and "raw" in doc:
            count = stream_broadcast(state, raw=str(doc["raw"]).encode())
        else:
            count = stream_broadcast(state, data=doc)
        handler.send(200, json.dumps({"delivered": count}).encode())
        return True
    if path == "/_admin/stream/change" and method == "POST":
        doc = json.loads(body or b"{}")
        with state.lock:
            if "flags" in doc:
                state.flags = doc["flags"]
            streams.version += 1
            version = streams.version
        etag = doc.get("etag", '"v%d"' % version)
        last_modified = doc.get("lastModified", int(time.time()))
        count = 0
        if doc.get("notify", True):
            count = stream_broadcast(state, data={"type": "refetchEvaluation", "etag": etag, "lastModified": last_modified})
        answer = {"version": version, "etag": etag, "lastModified": last_modified, "delivered": count}
        handler.send(200, json.dumps(answer).encode())
        return True
    if path == "/_admin/stream/drop" and method == "POST":
        with state.lock:
            listeners = list(streams.listeners)
        for q, _ in listeners:
            q.put(("reset",))
        handler.send(200, json.dumps({"dropped": len(listeners)}).encode())
        return True
    if path == "/_admin/streams" and method == "GET":
        with state.lock:
            doc = {"open": len(streams.listeners), "connects": streams.connects,
                   "bulk": list(streams.bulk), "streams": list(streams.streams)}
        handler.send(200, json.dumps(doc).encode())
        return True
    if path == "/_admin/reset" and method == "POST":
        with state.lock:
            streams.bulk = []
            streams.streams = []
            streams.connects = 0
            streams.cycles = {}
        return False  # the server's own reset answers
    return False


def stream_route(handler, method, path, query, body):
    """Serves the stream admin endpoints and ``GET <stream path>``; True when it answered."""
    if path.startswith("/_admin/"):
        try:
            return stream_admin(handler, method, path, body)
        except (ValueError, AttributeError) as error:
            handler.send(400, json.dumps({"error": str(error)}).encode())
            return True
    state = handler.server.state
    streams = stream_state(state)
    with state.lock:
        config = dict(streams.config)
    if method != "GET" or path != config["path"]:
        return False
    params = _urlparse.parse_qs(query, keep_blank_values=True)
    for key in ("mode", "keepAlive", "dropEvery", "trickleInterval", "oversizeBytes", "status"):
        if key in params:
            value = params[key][0]
            config[key] = value if key == "mode" else float(value)
    mode = config["mode"]
    if mode == "cycle":
        caller = handler.headers.get("Authorization") or ""
        with state.lock:
            turn = streams.cycles.get(caller, 0)
            streams.cycles[caller] = turn + 1
        mode = ("drop", "status", "redirect")[turn % 3]
        if mode == "status":
            config["status"] = 503
        elif mode == "redirect":
            params = dict(params)
            params["sameOrigin"] = ["1"]
            params["target"] = ["drop"]
    with state.lock:
        state.seq += 1
        record = {"seq": state.seq, "time": time.time(), "path": path, "query": query,
                  "headers": dict(handler.headers.items()), "status": 200}
        streams.streams.append(record)
    try:
        _serve_stream(handler, state, streams, config, mode, params, record)
    except OSError:
        pass
    handler.close_connection = True
    return True


def _set_status(state, record, status):
    with state.lock:
        record["status"] = status


def _serve_stream(handler, state, streams, config, mode, params, record):
    if mode == "404":
        _set_status(state, record, 404)
        return handler.send(404, b'{"error": "not found"}', {"Connection": "close"})
    if mode == "status":
        status = int(config.get("status", 500))
        _set_status(state, record, status)
        return handler.send(status, b'{"error": "scripted"}', {"Connection": "close"})
    if mode == "redirect":
        port = handler.server.server_address[1]
        if params.get("sameOrigin", ["0"])[0] == "1":
            target = params.get("target", ["flagd"])[0]
            location = "http://127.0.0.1:%d%s?mode=%s" % (port, config["path"], target)
        else:
            location = params.get("location", [None])[0] or config.get("redirectTo") or (
                "http://localhost:%d%s?mode=flagd" % (port, config["path"]))
        _set_status(state, record, 302)
        return handler.send(302, b"", {"Location": location, "Connection": "close"})
    if mode == "flipt" and "text/event-stream" not in (handler.headers.get("Accept") or ""):
        _set_status(state, record, 406)
        return handler.send(406, b'{"error": "Accept: text/event-stream required"}', {"Connection": "close"})

    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.send_header("Cache-Control", "no-cache")
    handler.send_header("Transfer-Encoding", "chunked")
    handler.end_headers()
    handler.wfile.flush()

    trickle = mode == "trickle"
    interval = float(config.get("trickleInterval", 1.0))

    def write(data):
        if not data:
            return
        pieces = [data[i:i + 1] for i in range(len(data))] if trickle else [data]
        for piece in pieces:
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            handler.wfile.flush()
            if trickle:
                time.sleep(interval)

    def finish():
        handler.wfile.write(b"0\r\n\r\n")
        handler.wfile.flush()

    if mode == "garbage":
        alphabet = b"abcdefghijklmnopqrstuvwxyz{}[]:,0123456789 "
        write(bytes(alphabet[(i * 7919) % len(alphabet)] for i in range(128 << 10)))
        return finish()
    if mode == "chunks":
        gap = float(params.get("interval", ["0.05"])[0])
        for chunk in params.get("chunk", []):
            write(chunk.encode("utf-8", "surrogateescape"))
            time.sleep(gap)
        if params.get("close", ["0"])[0] == "1":
            return finish()

    q = _queue.Queue()
    with state.lock:
        streams.listeners.append((q, handler))
        streams.connects += 1
    try:
        if mode == "oversize":
            size = int(config.get("oversizeBytes", 70000))
            write(b"event: message\ndata: {\"type\": \"refetchEvaluation\", \"pad\": \"" + b"x" * size + b"\"}\n\n")
        if mode == "flipt":
            with state.lock:
                streams.event_id += 1
                event_id = streams.event_id
            write(_event_bytes(mode, {"type": "refetchEvaluation"}, event_id))
        keep_alive = float(config.get("keepAlive", 5.0))
        opened = time.monotonic()
        next_ping = opened + keep_alive if keep_alive > 0 else None
        deadline = opened + float(config.get("dropEvery", 2.0)) if mode == "drop" else None
        while True:
            if mode in ("silent", "chunks"):
                wait = 0.5
            else:
                moments = [m for m in (next_ping, deadline) if m is not None]
                wait = max(0.0, min(moments) - time.monotonic()) if moments else 0.5
            try:
                item = q.get(timeout=min(wait, 0.5))
            except _queue.Empty:
                item = None
            now = time.monotonic()
            if item is not None:
                if item[0] == "reset":
                    handler.reset_connection()
                    return
                if mode in ("silent",):
                    continue
                if item[0] == "raw":
                    write(item[1])
                else:
                    write(_event_bytes(mode, item[1], item[2]))
            if deadline is not None and now >= deadline:
                return finish()
            if next_ping is not None and now >= next_ping and mode not in ("silent", "chunks"):
                write(b":keep-alive\n\n")
                next_ping = now + keep_alive
    finally:
        with state.lock:
            streams.listeners = [entry for entry in streams.listeners if entry[0] is not q]

# == end of event streams ========================================================================


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
    parser.add_argument("--stream", help="event-stream mode (issue 23; see the event streams block)")
    parser.add_argument("--stream-advertise", help="eventStreams shape: none, endpoint, endpoint-origin, url")
    args = parser.parse_args()
    flags = {"default": []}
    if args.flags:
        with open(args.flags, "rb") as f:
            flags = json.load(f)
    server = Server(("127.0.0.1", 0), Handler)
    server.state = State(flags, args.exposure_path, args.otlp_path)
    if args.stream or args.stream_advertise:  # event streams (issue 23)
        config = stream_state(server.state).config
        config["mode"] = args.stream or config["mode"]
        config["advertise"] = args.stream_advertise or "endpoint"
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
