"""Import cost, in fresh processes: ``import modelwire``, loading one model, and the
official SDKs for comparison. Best of N runs each (milliseconds). Target: ``import
modelwire`` under 100 ms.

    python benchmarks/import_time.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")

CASES = [
    ("python (empty)", "pass"),
    ("import modelwire", "import modelwire"),
    ("import modelwire.message", "import modelwire.message"),
    ("import modelwire.message + .event", "import modelwire.message, modelwire.event"),
    # The floor for any library whose contract is pydantic models: pydantic and one model.
    ("pydantic + one model (floor)", "from pydantic import BaseModel\nclass M(BaseModel):\n    x: int"),
    ("import agentscope.message (baseline)", "import agentscope.message"),
    ("load_model('anthropic:...')", "import modelwire; modelwire.load_model('anthropic:claude-sonnet-4-5', api_key='k')"),
    ("load_model + first request objects", "import modelwire; m = modelwire.load_model('openai:gpt-4.1', api_key='k'); m.transport.client"),
    ("import openai", "import openai"),
    ("import anthropic", "import anthropic"),
]


def run_once(code: str) -> float | None:
    """One fresh process timing ``code``; None when it cannot run (a package not installed)."""
    timer = f"import time\nt0 = time.perf_counter()\n{code}\nprint(time.perf_counter() - t0)"
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run([sys.executable, "-c", timer], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        return None
    return float(out.stdout.strip().splitlines()[-1]) * 1000  # the process ran the import and printed its time


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--check", action="store_true", help="run every case once, check modelwire's imports run, no timings")
    args = parser.parse_args()
    if args.check:
        args.runs = 1
    times: dict[str, list[float]] = {label: [] for label, _ in CASES}
    missing: set[str] = set()
    for _ in range(args.runs):  # interleaved: every case once per round
        for label, code in CASES:
            if label in missing:
                continue
            took = run_once(code)
            if took is None:
                missing.add(label)
            else:
                times[label].append(took)
    print(f"fresh processes, {args.runs} interleaved rounds: best (median)")
    results = {}
    for label, _ in CASES:
        if label in missing:
            print(f"  {label:<38} (not installed)")
            continue
        results[label] = min(times[label])
        print(f"  {label:<38} {results[label]:8.1f} ms ({statistics.median(times[label]):.1f})")
    if args.check:
        broken = sorted(label for label, _ in CASES if label in missing and ("modelwire" in label or "load_model" in label))
        print(f"checked: {'every case ran' if not broken else 'these did not run: ' + ', '.join(broken)}")
        return 1 if broken else 0
    ok = results["import modelwire"] < 100
    real_use = results["import modelwire.message + .event"]
    if real_use >= 100:
        floor = results["pydantic + one model (floor)"]
        print(
            f"MISSED: import modelwire.message and modelwire.event takes {real_use:.0f} ms (target under 100 ms, over by {real_use - 100:.0f});"
            f" pydantic with a single model takes {floor:.0f} ms here, so modelwire's own models add {real_use - floor:.0f} ms"
        )
    ok = ok and real_use < 100
    print(f"\nimport modelwire under 100 ms: {ok}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
