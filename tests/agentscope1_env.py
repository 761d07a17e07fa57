"""AgentScope 1.0.21's own environment (tests/agentscope1/.venv: it cannot share one with
AgentScope 2.x), driven through a subprocess that imports modelwire from this source tree.

Without the environment the tests skip, except under CI (``CI`` set), where they fail: there
.ci/run makes it, and a missing one is a broken CI, not a skipped check."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent / "agentscope1"
PYTHON = HERE / ".venv" / "bin" / "python"
SRC = Path(__file__).parent.parent / "src"
MAKE = (
    "python3 -m venv tests/agentscope1/.venv && "
    "tests/agentscope1/.venv/bin/pip install -r tests/agentscope1/requirements.txt && "
    "tests/agentscope1/.venv/bin/pip install --no-deps -e ."
)


def python() -> Path:
    """The 1.x environment's python, or a skip (a failure under CI) naming how to make it."""
    if not PYTHON.is_file():
        if os.environ.get("CI"):
            pytest.fail(f"CI makes tests/agentscope1/.venv (.ci/run) and it is missing: {MAKE}")
        pytest.skip(f"needs AgentScope 1.0.21 in tests/agentscope1/.venv ({MAKE})")
    return PYTHON


def run(script: str, data: Any = None, *, timeout: float = 300, env: dict[str, str] | None = None) -> Any:
    """Run ``tests/agentscope1/<script>`` in the 1.x environment with ``data`` as JSON on its
    stdin; its stdout's last line is JSON, returned. A failure shows the script's stderr."""
    done = subprocess.run(
        [str(python()), str(HERE / script)],
        input=json.dumps(data, ensure_ascii=False),
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=timeout,
        env={**os.environ, "PYTHONPATH": str(SRC), "PYTHONIOENCODING": "utf-8", **(env or {})},
        cwd=str(HERE),
    )
    if done.returncode != 0:
        sys.stderr.write(done.stderr)
        raise AssertionError(
            f"{script} in AgentScope 1.x's environment exited {done.returncode}:\n{done.stderr[-4000:]}"
        )
    return json.loads(done.stdout.strip().splitlines()[-1])
