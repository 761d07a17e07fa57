"""The benchmarks' correctness checks (what CI runs; their timings are for people to read).

Each benchmark checks every contender's output before a time counts; ``--check`` runs each
contender once through those checks, so a change that breaks what a benchmark compares
fails here instead of looking like a speed-up there."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.mark.parametrize(
    "script",
    [
        "stream.py",
        "sse.py",
        "append_event.py",
        "format.py",
        "request_build.py",
        "import_time.py",
        "fuzz.py",
        "first_call.py",
        "socket_stream.py",
        "serve_memory.py",
        "serve_scale.py",
        "middleware.py",
        "upload_memory.py",
        "partial_json.py",
    ],
)
def test_a_benchmark_checks_what_it_measures(script):
    env = {k: v for k, v in os.environ.items() if k != "MODELWIRE_DEBUG"}
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), "--check"], capture_output=True, text=True, timeout=300, env=env
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "checked" in done.stdout
