"""The test server's OTLP/HTTP logs receiver (docs/exposures.md, "OTLP exporter").

``server.py`` imports this module for requests to ``/v1/logs`` and calls
``handle(body, headers, state, fault)``; it serves ``report(state)`` at ``GET /_admin/otlp``.

``handle`` checks every export request the way a strict receiver would, without trusting the
client: ``Content-Encoding: gzip`` (or none: ``OTEL_EXPORTER_OTLP_COMPRESSION=none``) and
``Content-Type: application/json`` or ``application/x-protobuf`` (415 otherwise), one complete gzip
member, then the protobuf JSON mapping of ``ExportLogsServiceRequest`` exactly as Halyard writes it
— a binary protobuf body is first decoded into that mapping by ``protobuf_to_json`` below, a
schema-driven decoder of the wire format (standard library only) — (400 with the reason
otherwise): lowerCamelCase field names only, 64-bit
integers as decimal strings, one resource with ``service.name`` and the ``telemetry.sdk.*``
attributes, one scope ``halyard``, 1 to 1,000 log records named ``feature_flag.evaluation`` whose
attributes follow the feature-flag semantic conventions (``feature_flag.result.variant`` or a
typed ``feature_flag.result.value``, a lowercase reason, ``error.type`` exactly when the reason is
``error``).

A fault ``{"action": "partial", "rejected": k, "message": "..."}`` (queued on ``/v1/logs``)
makes the receiver keep all but the last ``k`` records of a valid request and answer 200 with
``{"partialSuccess": {"rejectedLogRecords": "k", "errorMessage": message}}``.

A protobuf request is answered in protobuf (``ExportLogsServiceResponse`` with its
``ExportLogsPartialSuccess``), a JSON one in JSON, as the OTLP/HTTP specification says.

Accepted records are appended to ``state["records"]`` as flat dicts (attribute key -> decoded
value, plus ``timeUnixNano``); every decompressed body (valid or not) to ``state["bodies"]``
(the first 500; a protobuf body as ``{"protobuf": base64}``) for the independent-implementation
test. Standard library only.
"""

import base64
import gzip
import json
import struct
import re
import threading
import zlib

MAX_RECORDS = 1000
MAX_DECOMPRESSED = 64 * 1024 * 1024
RESOURCE_KEYS = ["service.name", "telemetry.sdk.name", "telemetry.sdk.language", "telemetry.sdk.version"]
SCHEMA_URL = re.compile(r"^https://opentelemetry\.io/schemas/1\.[0-9]+\.[0-9]+$")
PIPELINE_ATTRIBUTES = {"halyard.exposure.sample_rate", "halyard.exposure.dedup_window"}
RECORD_FIELDS = {"timeUnixNano", "observedTimeUnixNano", "eventName", "attributes"}
REQUIRED_ATTRIBUTES = {"feature_flag.key", "feature_flag.result.reason", "feature_flag.provider.name",
                       "feature_flag.context.id"}
OPTIONAL_ATTRIBUTES = {"feature_flag.result.variant", "feature_flag.result.value", "error.type",
                       "feature_flag.version", "feature_flag.set.id"}
INT64 = re.compile(r"^-?[0-9]{1,19}$")
UINT64 = re.compile(r"^[0-9]{1,20}$")

_init_lock = threading.Lock()


def _state(state):
    with _init_lock:
        if "otlp_lock" not in state:
            state["otlp_lock"] = threading.Lock()
        state.setdefault("records", [])
        state.setdefault("bodies", [])
        state.setdefault("otlp_rejected", [])
        state.setdefault("otlp_requests", 0)
        state.setdefault("partial_rejected", 0)
        state.setdefault("record_counts", [])
        state.setdefault("otlp_headers", [])
        state.setdefault("otlp_truncated", 0)
    return state


def _answer(status, payload):
    return status, {"Content-Type": "application/json"}, json.dumps(payload, separators=(",", ":")).encode()


# --- binary protobuf: the ExportLogsServiceRequest schema Halyard writes, as the JSON mapping ---
# message name -> {field number: (json name, kind, repeated)}; kind is a message name or a scalar.
SCHEMA = {
    "Request": {1: ("resourceLogs", "ResourceLogs", True)},
    "ResourceLogs": {1: ("resource", "Resource", False), 2: ("scopeLogs", "ScopeLogs", True),
                     3: ("schemaUrl", "string", False)},
    "Resource": {1: ("attributes", "KeyValue", True), 2: ("droppedAttributesCount", "uint", False)},
    "ScopeLogs": {1: ("scope", "Scope", False), 2: ("logRecords", "LogRecord", True),
                  3: ("schemaUrl", "string", False)},
    "Scope": {1: ("name", "string", False), 2: ("version", "string", False), 3: ("attributes", "KeyValue", True)},
    "LogRecord": {1: ("timeUnixNano", "fixed64", False), 2: ("severityNumber", "uint", False),
                  3: ("severityText", "string", False), 5: ("body", "AnyValue", False),
                  6: ("attributes", "KeyValue", True), 7: ("droppedAttributesCount", "uint", False),
                  8: ("flags", "fixed32", False), 11: ("observedTimeUnixNano", "fixed64", False),
                  12: ("eventName", "string", False)},
    "KeyValue": {1: ("key", "string", False), 2: ("value", "AnyValue", False)},
    "AnyValue": {1: ("stringValue", "string", False), 2: ("boolValue", "bool", False),
                 3: ("intValue", "int64", False), 4: ("doubleValue", "double", False),
                 5: ("arrayValue", "ArrayValue", False), 6: ("kvlistValue", "KeyValueList", False)},
    "ArrayValue": {1: ("values", "AnyValue", True)},
    "KeyValueList": {1: ("values", "KeyValue", True)},
}
# Proto3 leaves fields at their default out of the wire; the JSON form Halyard writes has them.
DEFAULTS = {"KeyValue": {"key": ""}, "Scope": {"name": "", "version": ""}}


def _varint(data, i):
    value = shift = 0
    while True:
        if i >= len(data) or shift > 63:
            raise ValueError("truncated varint")
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, i
        shift += 7


def protobuf_to_json(data, message="Request"):
    """Decodes a protobuf message of SCHEMA into the dict the JSON mapping parses to (64-bit
    integers as strings, as Halyard writes them); raises ValueError on anything malformed or
    unknown (a field number the schema does not have, a wrong wire type, a repeated singular)."""
    fields = SCHEMA[message]
    out = dict(DEFAULTS.get(message, {}))
    i = 0
    while i < len(data):
        key, i = _varint(data, i)
        number, wire = key >> 3, key & 7
        if number not in fields:
            raise ValueError("%s: unknown field %d" % (message, number))
        name, kind, repeated = fields[number]
        if wire == 0:
            raw, i = _varint(data, i)
            if kind == "bool":
                value = bool(raw)
            elif kind == "int64":
                value = str(raw - (1 << 64) if raw >= 1 << 63 else raw)
            elif kind == "uint":
                value = raw
            else:
                raise ValueError("%s.%s: varint for %s" % (message, name, kind))
        elif wire == 1:
            if i + 8 > len(data):
                raise ValueError("truncated fixed64")
            chunk = data[i:i + 8]
            i += 8
            if kind == "fixed64":
                value = str(struct.unpack("<Q", chunk)[0])
            elif kind == "double":
                value = struct.unpack("<d", chunk)[0]
            else:
                raise ValueError("%s.%s: fixed64 for %s" % (message, name, kind))
        elif wire == 5:
            if i + 4 > len(data) or kind != "fixed32":
                raise ValueError("%s.%s: fixed32" % (message, name))
            value = struct.unpack("<I", data[i:i + 4])[0]
            i += 4
        elif wire == 2:
            length, i = _varint(data, i)
            if i + length > len(data):
                raise ValueError("truncated field")
            chunk = data[i:i + length]
            i += length
            if kind == "string":
                value = chunk.decode("utf-8")
            elif kind in SCHEMA:
                value = protobuf_to_json(chunk, kind)
            else:
                raise ValueError("%s.%s: length-delimited for %s" % (message, name, kind))
        else:
            raise ValueError("%s: wire type %d" % (message, wire))
        if repeated:
            out.setdefault(name, []).append(value)
        elif name in out and name not in DEFAULTS.get(message, {}):
            raise ValueError("%s.%s twice" % (message, name))
        else:
            out[name] = value
        if message == "AnyValue" and len(out) > 1:
            raise ValueError("AnyValue with two members")
    # Proto3 drops an AnyValue's empty array/kvlist members' lists; the JSON form has them.
    if message in ("ArrayValue", "KeyValueList"):
        out.setdefault("values", [])
    return out


def _partial_protobuf(rejected, message):
    inner = bytearray()
    if rejected:
        inner += b"\x08" + _encode_varint(rejected)
    if message:
        text = message.encode("utf-8")
        inner += b"\x12" + _encode_varint(len(text)) + text
    return b"\x0a" + _encode_varint(len(inner)) + bytes(inner)


def _encode_varint(value):
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _reject(state, status, reason):
    with state["otlp_lock"]:
        state["otlp_rejected"].append({"status": status, "reason": reason})
    return _answer(status, {"code": 3, "message": reason})


def any_value(value, path):
    """Decodes an AnyValue (raises ValueError with the path on anything unexpected)."""
    if not isinstance(value, dict):
        raise ValueError("%s: AnyValue must be an object" % path)
    if not value:
        return None
    if len(value) != 1:
        raise ValueError("%s: AnyValue must set exactly one field, got %s" % (path, sorted(value)))
    (name, inner), = value.items()
    if name == "stringValue" and isinstance(inner, str):
        return inner
    if name == "boolValue" and isinstance(inner, bool):
        return inner
    if name == "intValue" and isinstance(inner, str) and INT64.match(inner):
        return int(inner)
    if name == "doubleValue" and isinstance(inner, (int, float)) and not isinstance(inner, bool):
        return float(inner)
    if name == "arrayValue" and isinstance(inner, dict) and set(inner) <= {"values"}:
        return [any_value(v, "%s[%d]" % (path, i)) for i, v in enumerate(inner.get("values", []))]
    if name == "kvlistValue" and isinstance(inner, dict) and set(inner) <= {"values"}:
        out = {}
        for i, kv in enumerate(inner.get("values", [])):
            if not isinstance(kv, dict) or set(kv) != {"key", "value"} or not isinstance(kv["key"], str):
                raise ValueError("%s.kvlist[%d]: must be {key, value}" % (path, i))
            out[kv["key"]] = any_value(kv["value"], "%s.%s" % (path, kv["key"]))
        return {"kvlist": out}
    raise ValueError("%s: unexpected AnyValue field %r = %r" % (path, name, inner))


def attributes(items, path):
    if not isinstance(items, list):
        raise ValueError("%s: attributes must be an array" % path)
    out = {}
    for i, kv in enumerate(items):
        if not isinstance(kv, dict) or set(kv) != {"key", "value"} or not isinstance(kv["key"], str):
            raise ValueError("%s[%d]: an attribute must be exactly {key, value}" % (path, i))
        if kv["key"] in out:
            raise ValueError("%s: duplicate attribute %s" % (path, kv["key"]))
        out[kv["key"]] = any_value(kv["value"], "%s.%s" % (path, kv["key"]))
    return out


def validate(document):
    """Returns (records, resource attributes) of a valid request; raises ValueError otherwise."""
    if not isinstance(document, dict) or set(document) != {"resourceLogs"}:
        raise ValueError("top level must be exactly {resourceLogs}")
    resource_logs = document["resourceLogs"]
    if not isinstance(resource_logs, list) or len(resource_logs) != 1:
        raise ValueError("resourceLogs must hold one ResourceLogs")
    rl = resource_logs[0]
    if not isinstance(rl, dict) or set(rl) != {"resource", "scopeLogs", "schemaUrl"}:
        raise ValueError("ResourceLogs must be exactly {resource, scopeLogs, schemaUrl}")
    if not isinstance(rl["schemaUrl"], str) or not SCHEMA_URL.match(rl["schemaUrl"]):
        raise ValueError("ResourceLogs.schemaUrl must name a semantic-conventions version")
    if not isinstance(rl["resource"], dict) or set(rl["resource"]) != {"attributes"}:
        raise ValueError("resource must be exactly {attributes}")
    resource = attributes(rl["resource"]["attributes"], "resource")
    names = list(resource)
    # service.name first, then further attributes in code-point order, then telemetry.sdk.*.
    middle = names[1:-3]
    shape = names[:1] + names[-3:] == RESOURCE_KEYS and middle == sorted(middle) and not any(
        k in RESOURCE_KEYS for k in middle)
    if not shape or not all(isinstance(v, str) for v in resource.values()) or not resource["service.name"]:
        raise ValueError("resource attributes must be %s (others between) as strings, got %s" % (RESOURCE_KEYS, resource))
    if resource["telemetry.sdk.name"] != "halyard" or resource["telemetry.sdk.language"] != "swift":
        raise ValueError("telemetry.sdk.name/language must be halyard/swift")
    scope_logs = rl["scopeLogs"]
    if not isinstance(scope_logs, list) or len(scope_logs) != 1:
        raise ValueError("scopeLogs must hold one ScopeLogs")
    sl = scope_logs[0]
    if not isinstance(sl, dict) or set(sl) != {"scope", "logRecords", "schemaUrl"}:
        raise ValueError("ScopeLogs must be exactly {scope, logRecords, schemaUrl}")
    if sl["schemaUrl"] != rl["schemaUrl"]:
        raise ValueError("ScopeLogs.schemaUrl must be the resource's")
    if not isinstance(sl["scope"], dict) or set(sl["scope"]) != {"name", "version"} or sl["scope"]["name"] != "halyard":
        raise ValueError("scope must be exactly {name: halyard, version}")
    records = sl["logRecords"]
    if not isinstance(records, list) or not records:
        raise ValueError("logRecords must be a non-empty array")
    if len(records) > MAX_RECORDS:
        raise OverflowError("%d log records in one request (at most %d)" % (len(records), MAX_RECORDS))
    out = []
    for i, record in enumerate(records):
        path = "logRecords[%d]" % i
        if not isinstance(record, dict) or set(record) != RECORD_FIELDS:
            raise ValueError("%s: fields must be exactly %s, got %s" % (path, sorted(RECORD_FIELDS), sorted(record)))
        for name in ("timeUnixNano", "observedTimeUnixNano"):
            if not isinstance(record[name], str) or not UINT64.match(record[name]):
                raise ValueError("%s.%s must be a decimal string" % (path, name))
        if record["eventName"] != "feature_flag.evaluation":
            raise ValueError("%s.eventName must be feature_flag.evaluation" % path)
        attrs = attributes(record["attributes"], path)
        missing = (REQUIRED_ATTRIBUTES | PIPELINE_ATTRIBUTES) - set(attrs)
        extra = set(attrs) - REQUIRED_ATTRIBUTES - OPTIONAL_ATTRIBUTES - PIPELINE_ATTRIBUTES
        if missing or extra:
            raise ValueError("%s: missing %s, unexpected %s" % (path, sorted(missing), sorted(extra)))
        for name in REQUIRED_ATTRIBUTES:
            if not isinstance(attrs[name], str):
                raise ValueError("%s: %s must be a string" % (path, name))
        rate = attrs["halyard.exposure.sample_rate"]
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate <= 1:
            raise ValueError("%s: halyard.exposure.sample_rate must be a double in [0, 1]" % path)
        window = attrs["halyard.exposure.dedup_window"]
        if isinstance(window, bool) or not isinstance(window, int) or window < 0:
            raise ValueError("%s: halyard.exposure.dedup_window must be a non-negative int" % path)
        for name in ("feature_flag.version", "feature_flag.set.id"):
            if name in attrs and not isinstance(attrs[name], str):
                raise ValueError("%s: %s must be a string" % (path, name))
        if "feature_flag.result.variant" in attrs and "feature_flag.result.value" in attrs:
            raise ValueError("%s: variant and value both set" % path)
        reason = attrs["feature_flag.result.reason"]
        if reason != reason.lower():
            raise ValueError("%s: reason %r is not lowercase" % (path, reason))
        if attrs["feature_flag.provider.name"] != "Halyard":
            raise ValueError("%s: provider name" % path)
        if ("error.type" in attrs) != (reason == "error"):
            raise ValueError("%s: error.type must be present exactly when the reason is error" % path)
        attrs["timeUnixNano"] = int(record["timeUnixNano"])
        out.append(attrs)
    return out, resource


def handle(body, headers, state, fault=None):
    _state(state)
    lowered = {k.lower(): v for k, v in headers.items()}
    with state["otlp_lock"]:
        state["otlp_requests"] += 1
        state["otlp_headers"].append({k: v for k, v in lowered.items() if k not in ("content-length", "host")})
    encoding = lowered.get("content-encoding", "").lower()
    if encoding not in ("gzip", ""):
        return _reject(state, 415, "Content-Encoding must be gzip or absent")
    content_type = lowered.get("content-type", "").split(";")[0].strip().lower()
    if content_type not in ("application/json", "application/x-protobuf"):
        return _reject(state, 415, "Content-Type must be application/json or application/x-protobuf")
    protobuf = content_type == "application/x-protobuf"
    raw = body
    if encoding == "gzip":
        try:
            decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
            raw = decompressor.decompress(body, MAX_DECOMPRESSED)
            if decompressor.unconsumed_tail or not decompressor.eof or decompressor.unused_data:
                return _reject(state, 400, "not exactly one complete gzip member")
        except zlib.error as error:
            return _reject(state, 400, "gzip: %s" % error)
    with state["otlp_lock"]:
        state.setdefault("content_types", []).append(content_type)
        if len(state["bodies"]) < 500:
            if protobuf:
                state["bodies"].append({"protobuf": base64.b64encode(raw).decode("ascii")})
            else:
                state["bodies"].append(raw.decode("utf-8", "replace"))
    try:
        document = protobuf_to_json(raw) if protobuf else json.loads(raw)
        records, _ = validate(document)
    except OverflowError as error:
        return _reject(state, 413, str(error))
    except (ValueError, TypeError, KeyError) as error:
        return _reject(state, 400, str(error))
    rejected = 0
    message = None
    if fault and fault.get("action") == "partial":
        rejected = min(len(records), int(fault.get("rejected", 1)))
        message = fault.get("message")
    kept = records[:len(records) - rejected]
    with state["otlp_lock"]:
        state["records"].extend(kept)
        state["record_counts"].append(len(records))
        state["partial_rejected"] += rejected
    if protobuf:
        answer = _partial_protobuf(rejected, message) if rejected or message else b""
        return 200, {"Content-Type": "application/x-protobuf"}, answer
    if rejected or message:
        partial = {"rejectedLogRecords": str(rejected)}
        if message:
            partial["errorMessage"] = message
        return _answer(200, {"partialSuccess": partial})
    return _answer(200, {})


def note_truncated_request(state):
    _state(state)
    with state["otlp_lock"]:
        state["otlp_truncated"] += 1


def reset(state):
    _state(state)
    with state["otlp_lock"]:
        state["records"] = []
        state["bodies"] = []
        state["otlp_rejected"] = []
        state["otlp_requests"] = 0
        state["partial_rejected"] = 0
        state["record_counts"] = []
        state["otlp_headers"] = []
        state["otlp_truncated"] = 0
        state["content_types"] = []


def report(state, include_bodies=False):
    _state(state)
    with state["otlp_lock"]:
        doc = {
            "records": list(state["records"]),
            "requests": state["otlp_requests"],
            "rejected": list(state["otlp_rejected"]),
            "recordCounts": list(state["record_counts"]),
            "partialRejected": state["partial_rejected"],
            "headers": list(state["otlp_headers"]),
            "truncatedRequests": state["otlp_truncated"],
            "contentTypes": list(state.get("content_types", [])),
        }
        if include_bodies:
            doc["bodies"] = list(state["bodies"])
    return doc
