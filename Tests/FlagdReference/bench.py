"""The reference side of halyard-bench-definitions (docs/benchmarks-definitions.md).

Reads one JSON document on stdin: {"definitions": <flagd definitions>, "shapes": {shape: [flag
keys]}, "contexts": [{"targetingKey": str, "attributes": {...}}], "seconds": float}; for each
shape evaluates its flags over the contexts in turn (key and context varying per call, as the
Swift side does) with the reference evaluator (openfeature-flagd-core 1.0.0) for about
`seconds`, in 5 rounds, and writes {shape: median nanoseconds per evaluation} on stdout.
"""
import json
import logging
import statistics
import sys
import time

from openfeature.contrib.tools.flagd.core import FlagdCore
from openfeature.evaluation_context import EvaluationContext


def main() -> None:
    logging.disable(logging.CRITICAL)
    request = json.load(sys.stdin)
    core = FlagdCore()
    core.set_flags(request["definitions"])
    contexts = [EvaluationContext(c["targetingKey"], c["attributes"]) for c in request["contexts"]]
    budget = float(request.get("seconds", 1.0)) / 5
    results = {}
    for shape, keys in request["shapes"].items():
        resolve = core.resolve_string_value if shape == "fractional" else core.resolve_boolean_value
        default = "" if shape == "fractional" else False
        rounds = []
        for _ in range(5):
            calls = 0
            start = time.perf_counter_ns()
            while True:
                for i in range(256):
                    resolve(keys[i % len(keys)], default, contexts[i % len(contexts)])
                calls += 256
                elapsed = time.perf_counter_ns() - start
                if elapsed >= budget * 1e9:
                    break
            rounds.append(elapsed / calls)
        results[shape] = statistics.median(rounds)
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
