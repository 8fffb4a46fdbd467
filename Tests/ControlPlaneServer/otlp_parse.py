#!/usr/bin/env python3
"""Parses OTLP/HTTP JSON bodies with the OpenTelemetry protobuf definitions (an implementation
independent of Halyard's): ``google.protobuf.json_format.Parse(body, ExportLogsServiceRequest())``
rejects unknown field names, wrong JSON types and malformed 64-bit integers.

Reads a JSON array of bodies (strings) on stdin; prints one JSON object on stdout:
``{"parsed": n, "records": total log records, "eventNames": [...distinct], "errors": [...]}``.
Exits 0 when every body parsed, 1 otherwise, 2 when the package is missing.

Needs the PyPI package ``opentelemetry-proto`` (``.ci/run`` installs it in .build/otlp-venv).
"""

import json
import sys

try:
    from google.protobuf import json_format
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
except ImportError as error:
    print(json.dumps({"parsed": 0, "records": 0, "eventNames": [], "errors": ["import: %s" % error]}))
    sys.exit(2)


def main():
    bodies = json.load(sys.stdin)
    parsed = 0
    records = 0
    names = set()
    errors = []
    for index, body in enumerate(bodies):
        try:
            request = json_format.Parse(body, ExportLogsServiceRequest())
        except json_format.ParseError as error:
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
