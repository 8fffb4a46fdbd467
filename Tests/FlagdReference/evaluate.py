"""The reference side of FlagdDifferentialTests (docs/definitions.md, "Conformance").

Reads one JSON document on stdin: {"definitions": <flagd definitions>, "cases": [{"flag": key,
"type": "boolean"|"string"|"integer"|"float"|"object", "default": value, "targetingKey": str
or absent, "attributes": {...}}]}, evaluates every case with the reference evaluator
(openfeature-flagd-core 1.0.0, bucketing v2) and writes one JSON array on stdout: per case
{"value": ..., "variant": str|null, "reason": str, "errorCode": str|null}. An error result
carries the caller's default, reason ERROR and the error's code (GENERAL for an exception that
is not an OpenFeature error, as the OpenFeature SDK maps it).
"""
import json
import logging
import sys

from openfeature.contrib.tools.flagd.core import FlagdCore
from openfeature.evaluation_context import EvaluationContext
from openfeature.exception import OpenFeatureError


def main() -> None:
    # The reference logs every null-returning operator; the comparison needs only the results.
    logging.disable(logging.CRITICAL)
    request = json.load(sys.stdin)
    core = FlagdCore()
    core.set_flags(request["definitions"])
    resolvers = {
        "boolean": core.resolve_boolean_value,
        "string": core.resolve_string_value,
        "integer": core.resolve_integer_value,
        "float": core.resolve_float_value,
        "object": core.resolve_object_value,
    }
    results = []
    for case in request["cases"]:
        context = EvaluationContext(case.get("targetingKey"), case.get("attributes", {}))
        try:
            details = resolvers[case["type"]](case["flag"], case["default"], context)
            reason = details.reason
            results.append({
                "value": details.value,
                "variant": details.variant,
                "reason": getattr(reason, "value", reason),
                "errorCode": None,
            })
        except OpenFeatureError as error:
            results.append({"value": case["default"], "variant": None, "reason": "ERROR",
                            "errorCode": error.error_code.value})
        except Exception:  # noqa: BLE001 - any other failure is GENERAL in the SDK
            results.append({"value": case["default"], "variant": None, "reason": "ERROR",
                            "errorCode": "GENERAL"})
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
