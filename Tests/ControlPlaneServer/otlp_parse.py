#!/usr/bin/env python3
"""Parses OTLP/HTTP bodies with the OpenTelemetry protobuf definitions (an implementation
independent of Halyard's): ``google.protobuf.json_format.Parse(body, ExportLogsServiceRequest())``
rejects unknown field names, wrong JSON types and malformed 64-bit integers;
``ExportLogsServiceRequest.FromString(body)`` parses a binary protobuf body (and is then checked
to hold no unknown field).

Reads a JSON array on stdin whose items are a JSON body (a string), ``{"protobuf": base64}`` (a
binary body), or ``{"json": string, "protobuf": base64}``: the same batch in both encodings, which
must parse to equal messages (the differential test). Prints one JSON object on stdout:
``{"parsed": n, "records": total log records, "eventNames": [...distinct], "errors": [...]}``.
Exits 0 when every body parsed, 1 otherwise, 2 when the package is missing.

Needs the PyPI package ``opentelemetry-proto`` (``.ci/run`` installs it in .build/otlp-venv).
"""

import base64
import json
import sys

try:
    from google.protobuf import json_format
    from google.protobuf.unknown_fields import UnknownFieldSet
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
except ImportError as error:
    print(json.dumps({"parsed": 0, "records": 0, "eventNames": [], "errors": ["import: %s" % error]}))
    sys.exit(2)


def unknown_fields(message):
    """The names of messages under ``message`` that hold fields their schema does not know."""
    found = []
    if len(UnknownFieldSet(message)) > 0:
        found.append(message.DESCRIPTOR.full_name)
    for descriptor, value in message.ListFields():
        if descriptor.message_type is None:
            continue
        repeated = descriptor.is_repeated if hasattr(descriptor, "is_repeated") else descriptor.label == descriptor.LABEL_REPEATED
        items = value if repeated else [value]
        for item in items:
            found.extend(unknown_fields(item))
    return found


def main():
    bodies = json.load(sys.stdin)
    parsed = 0
    records = 0
    names = set()
    errors = []
    for index, body in enumerate(bodies):
        try:
            request = None
            if isinstance(body, str):
                request = json_format.Parse(body, ExportLogsServiceRequest())
            if isinstance(body, dict) and "protobuf" in body:
                request = ExportLogsServiceRequest.FromString(base64.b64decode(body["protobuf"]))
                unknown = unknown_fields(request)
                if unknown:
                    raise ValueError("unknown fields in the protobuf body: %s" % unknown)
            if isinstance(body, dict) and "json" in body:
                from_json = json_format.Parse(body["json"], ExportLogsServiceRequest())
                if request is not None and from_json != request:
                    raise ValueError("the JSON and protobuf forms differ")
                request = from_json
            if request is None:
                raise ValueError("not a body")
        except (json_format.ParseError, DecodeError, ValueError) as error:
            errors.append("body %d: %s" % (index, error))
            continue
        parsed += 1
        for resource_logs in request.resource_logs:
            for scope_logs in resource_logs.scope_logs:
                for record in scope_logs.log_records:
                    records += 1
                    names.add(record.event_name)
                    if record.time_unix_nano == 0 or record.observed_time_unix_nano == 0:
                        errors.append("body %d: a record without its timestamps" % index)
    print(json.dumps({"parsed": parsed, "records": records, "eventNames": sorted(names), "errors": errors}))
    sys.exit(0 if not errors else 1)


if __name__ == "__main__":
    main()
