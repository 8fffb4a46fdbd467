"""The test control plane's exposure endpoint (docs/exposures.md).

The control-plane test server imports this module for requests to /v1/exposures and calls
``handle(body, headers, state)``; it serves ``report(state)`` at GET /_admin/exposures.

``handle`` checks an upload the way a strict control plane would:

* ``Content-Encoding: gzip`` (415 otherwise), ``Content-Type: application/json`` (415),
  a non-empty ``Idempotency-Key`` (400);
* the body is one gzip member holding ``{"meta": {...}, "events": [...]}`` with exactly the
  specified members and types, 1 to 1,000 events (400, or 413 above 1,000);
* a batch whose Idempotency-Key was already accepted is answered 200 and not counted again
  (``replays``); one arriving under a known key with a different body is a ``mismatched_replay``
  (the client may have trimmed a requeued batch to stay within its capacity) and is not counted
  either.

Accepted events are appended to ``state["exposures"]`` (each with the batch's idempotency key)
and the batch to ``state["batches"][key]``. Everything is guarded by ``state["lock"]``.

Standard library only.
"""

import gzip
import hashlib
import json
import threading
import zlib

MAX_EVENTS = 1000
MAX_DECOMPRESSED = 16 * 1024 * 1024
META_FIELDS = ("sdk", "version", "appId", "installId")
EVENT_FIELDS = {"kind", "key", "variant", "reason", "contextFingerprint", "creationDate", "count"}

_init_lock = threading.Lock()


def _state(state):
    """Initializes the exposure part of ``state`` once."""
    with _init_lock:
        if "lock" not in state:
            state["lock"] = threading.Lock()
        state.setdefault("exposures", [])
        state.setdefault("batches", {})
        state.setdefault("replays", 0)
        state.setdefault("mismatched_replays", 0)
        state.setdefault("rejected", [])
        state.setdefault("requests", 0)
        state.setdefault("truncated", 0)
    return state


def _json_response(status, payload):
    body = json.dumps(payload, separators=(",", ":")).encode()
    return status, {"Content-Type": "application/json"}, body


def _reject(state, status, reason):
    with state["lock"]:
        state["rejected"].append({"status": status, "reason": reason})
    return _json_response(status, {"error": reason})


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def validate(document):
    """Returns None when ``document`` is a valid upload, else a description of the problem."""
    if not isinstance(document, dict) or set(document) != {"meta", "events"}:
        return "top level must be an object with exactly meta and events"
    meta = document["meta"]
    if not isinstance(meta, dict) or set(meta) != set(META_FIELDS):
        return "meta must have exactly sdk, version, appId, installId"
    for name in META_FIELDS:
        if not isinstance(meta[name], str):
            return "meta.%s must be a string" % name
    events = document["events"]
    if not isinstance(events, list) or not events:
        return "events must be a non-empty array"
    for index, event in enumerate(events):
        where = "events[%d]" % index
        if not isinstance(event, dict) or set(event) != EVENT_FIELDS:
            return where + " must have exactly " + ", ".join(sorted(EVENT_FIELDS))
        if event["kind"] != "exposure":
            return where + ".kind must be exposure"
        if not isinstance(event["key"], str) or not event["key"]:
            return where + ".key must be a non-empty string"
        if event["variant"] is not None and not isinstance(event["variant"], str):
            return where + ".variant must be a string or null"
        if not isinstance(event["reason"], str) or not event["reason"]:
            return where + ".reason must be a non-empty string"
        if not isinstance(event["contextFingerprint"], str):
            return where + ".contextFingerprint must be a string"
        if not _is_int(event["creationDate"]) or event["creationDate"] < 0:
            return where + ".creationDate must be a non-negative integer (Unix seconds)"
        if not _is_int(event["count"]) or event["count"] < 1:
            return where + ".count must be a positive integer"
    return None


def handle(body, headers, state):
    """Handles one upload: returns (status, headers, body)."""
    _state(state)
    with state["lock"]:
        state["requests"] += 1
    lowered = {str(k).lower(): str(v) for k, v in headers.items()}
    if lowered.get("content-encoding", "").strip().lower() != "gzip":
        return _reject(state, 415, "Content-Encoding must be gzip")
    if lowered.get("content-type", "").split(";")[0].strip().lower() != "application/json":
        return _reject(state, 415, "Content-Type must be application/json")
    key = lowered.get("idempotency-key", "").strip()
    if not key:
        return _reject(state, 400, "Idempotency-Key is required")
    try:
        decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)
        raw = decoder.decompress(body, MAX_DECOMPRESSED)
        if decoder.unconsumed_tail or not decoder.eof or decoder.unused_data:
            return _reject(state, 400, "body must be exactly one complete gzip member")
    except zlib.error:
        return _reject(state, 400, "body is not valid gzip")
    try:
        document = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return _reject(state, 400, "body is not valid UTF-8 JSON")
    problem = validate(document)
    if problem is not None:
        return _reject(state, 400, problem)
    events = document["events"]
    if len(events) > MAX_EVENTS:
        return _reject(state, 413, "at most %d events per request" % MAX_EVENTS)
    digest = hashlib.sha256(raw).hexdigest()
    with state["lock"]:
        known = state["batches"].get(key)
        if known is not None:
            if known["digest"] == digest:
                state["replays"] += 1
            else:
                state["mismatched_replays"] += 1
            return _json_response(200, {"accepted": 0, "replay": True})
        state["batches"][key] = {"count": len(events), "digest": digest, "meta": document["meta"]}
        for event in events:
            recorded = dict(event)
            recorded["idempotencyKey"] = key
            state["exposures"].append(recorded)
    return _json_response(202, {"accepted": len(events)})


def report(state, include_events=True):
    """What the endpoint has seen, for GET /_admin/exposures."""
    _state(state)
    with state["lock"]:
        result = {
            "requests": state["requests"],
            "events": len(state["exposures"]),
            "batches": len(state["batches"]),
            "batchCounts": {k: v["count"] for k, v in state["batches"].items()},
            "replays": state["replays"],
            "mismatchedReplays": state["mismatched_replays"],
            "rejected": list(state["rejected"]),
            "truncatedRequests": state["truncated"],
        }
        if include_events:
            result["exposures"] = list(state["exposures"])
    return result


def note_truncated_request(state):
    """Counts a request whose body ended before its Content-Length (the connection dropped
    mid-body). Such a body never reaches handle(): it is a transport failure, not an upload."""
    _state(state)
    with state["lock"]:
        state["truncated"] += 1


def reset(state):
    """Forgets everything recorded."""
    _state(state)
    with state["lock"]:
        state["exposures"] = []
        state["batches"] = {}
        state["replays"] = 0
        state["mismatched_replays"] = 0
        state["rejected"] = []
        state["requests"] = 0
        state["truncated"] = 0


if __name__ == "__main__":
    # Self-check: python3 exposure_endpoint.py
    s = {}
    doc = {"meta": {"sdk": "s", "version": "1", "appId": "a", "installId": "i"},
           "events": [{"kind": "exposure", "key": "k", "variant": None, "reason": "STATIC",
                       "contextFingerprint": "f", "creationDate": 1, "count": 1}]}
    good = gzip.compress(json.dumps(doc).encode())
    hdr = {"Content-Encoding": "gzip", "Content-Type": "application/json", "Idempotency-Key": "b1"}
    assert handle(good, hdr, s)[0] == 202
    assert handle(good, hdr, s)[0] == 200
    assert report(s)["events"] == 1 and report(s)["replays"] == 1
    assert handle(good, dict(hdr, **{"Idempotency-Key": ""}), s)[0] == 400
    assert handle(json.dumps(doc).encode(), dict(hdr, **{"Content-Encoding": "identity"}), s)[0] == 415
    assert handle(b"not gzip", dict(hdr, **{"Idempotency-Key": "b2"}), s)[0] == 400
    bad = dict(doc, events=[dict(doc["events"][0], count=True)])
    assert handle(gzip.compress(json.dumps(bad).encode()), dict(hdr, **{"Idempotency-Key": "b3"}), s)[0] == 400
    many = dict(doc, events=doc["events"] * 1001)
    assert handle(gzip.compress(json.dumps(many).encode()), dict(hdr, **{"Idempotency-Key": "b4"}), s)[0] == 413
    print("ok")
