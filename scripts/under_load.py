"""Run a command beside CPU-bound busy loops, several times in a row, and say how each run ended.

The suite must not depend on the machine being idle: a test that waits on a fixed sleep, or on
a deadline that assumes a free core, fails here first. This starts ``--busy`` processes that
spin on a core each, runs the command ``--runs`` times in a row (stopping at the first failure
unless ``--keep-going``), prints each run's exit code, time and the load average, stops the
loops, and exits non-zero if any run failed.

    python scripts/under_load.py -- .venv/bin/python -m pytest
    python scripts/under_load.py --runs 20 -- .venv/bin/python -m pytest -p no:cacheprovider tests/test_agent.py

Each run's output goes to ``--log-dir`` (``under-load-logs/`` by default), one file a run.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path


def _spin() -> None:  # pragma: no cover - runs in a child process
    n = 0
    while True:
        n = (n * 1103515245 + 12345) & 0x7FFFFFFF


def _load() -> str:
    try:
        return "load %.1f %.1f %.1f" % os.getloadavg()
    except OSError:
        return "load ?"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--busy", type=int, default=2, help="CPU-bound processes beside the command (2)")
    parser.add_argument("--runs", type=int, default=1, help="runs in a row (1)")
    parser.add_argument("--keep-going", action="store_true", help="run every round even after a failure")
    parser.add_argument("--log-dir", default="under-load-logs", help="where each run's output goes")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command after --")
    logs = Path(args.log_dir)
    logs.mkdir(parents=True, exist_ok=True)
    loops = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(args.busy)]
    for loop in loops:
        loop.start()
    failed = 0
    try:
        print(f"{args.busy} busy loops started; {_load()}; command: {' '.join(command)}", flush=True)
        for run in range(1, args.runs + 1):
            log = logs / f"run-{run:02d}.log"
            started = time.perf_counter()
            with log.open("wb") as out:
                rc = subprocess.call(command, stdout=out, stderr=subprocess.STDOUT)
            tail = log.read_bytes().decode("utf-8", "replace").strip().splitlines()[-1:]
            took = time.perf_counter() - started
            print(f"run {run}/{args.runs}: rc {rc} in {took:.0f} s; {_load()}; {tail[0] if tail else ''}", flush=True)
            if rc:
                failed += 1
                if not args.keep_going:
                    break
    finally:
        for loop in loops:
            loop.terminate()
        for loop in loops:
            loop.join()
    print(f"{failed} failed run(s)" if failed else "every run passed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
