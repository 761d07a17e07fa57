"""AgentScope 1.0.21's own tests that take a model, run on modelwire's 1.x model (not part of
CI: AgentScope's tests are not in its package; they are read from its repository).

    tests/agentscope1/.venv/bin/python scripts/agentscope1_suite/run.py PATH/TO/agentscope [--keep DIR]

``PATH/TO/agentscope`` is a clone of agentscope-ai/agentscope with its tags: the tests are
read at tag ``v1.0.21`` (``git show``), so the checkout may be at any branch. Run in the 1.x
environment (tests/agentscope1/, plus ``pip install pytest``).

The tests whose agents take a model (``react_agent_test.py``, ``hook_test.py``,
``memory_compression_test.py``, ``plan_test.py``, ``session_test.py``) and 1.x's formatter
tests run twice: once as written, once with ``served.py`` as their ``conftest.py``, which puts
every ``ReActAgent``'s model on modelwire (the test's own scripted answers served over a local
socket, read back by ``ModelwireChatModel``, the memory read by modelwire) and gives 1.x's own
formatters every history as modelwire reads and writes it back; the second run once per
protocol. It prints each run's result, how many model calls went through modelwire, and the
tests that pass as written but not on modelwire.

Not run, and why: ``model_*_test.py`` test 1.x's own provider classes with their SDK clients
mocked (modelwire's model does not use those SDKs; its providers are checked against recorded
streams in modelwire's own suite); ``formatter_a2a_test.py`` needs the ``a2a`` package (1.x's
``a2a`` extra); the realtime, TTS, RAG, MCP, tracing and token-counting tests take no chat model.
``session_test.py``'s Redis test needs ``fakeredis``, which 1.x's package does not install: it
fails in both runs alike.

Run on 2026-12-07: as written 53 passed, 1 failed (the Redis test); on modelwire, over each of
anthropic, openai-chat and gemini, the same 53 passed and the same one failed, 10 model calls
served through modelwire in each.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
TAG = "v1.0.21"
TESTS = [
    "react_agent_test.py",
    "hook_test.py",
    "memory_compression_test.py",
    "plan_test.py",
    "session_test.py",
    "formatter_openai_test.py",
    "formatter_anthropic_test.py",
    "formatter_gemini_test.py",
    "formatter_dashscope_test.py",
    "formatter_deepseek_test.py",
    "formatter_ollama_test.py",
    "formatter_openai_response_test.py",
]
PROTOCOLS = ["anthropic", "openai-chat", "gemini"]


def _pytest(folder: Path, env: dict[str, str] | None = None) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA", *TESTS],
        cwd=folder,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
    )
    print(done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-2000:])
    return {line.split()[1] for line in done.stdout.splitlines() if line.startswith("PASSED ")}


def _copy(repo: Path, folder: Path) -> None:
    folder.mkdir(parents=True)
    for name in TESTS:
        text = subprocess.run(
            ["git", "-C", str(repo), "show", f"{TAG}:tests/{name}"], capture_output=True, text=True, check=True
        ).stdout
        (folder / name).write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("repo", type=Path, help="a clone of agentscope-ai/agentscope with its tags")
    parser.add_argument("--keep", type=Path, help="run in this folder and keep it")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="agentscope1-suite-"))
    theirs = work / "as-written"
    _copy(args.repo, theirs)
    print(f"AgentScope {TAG}'s tests that take a model, as written:", end=" ")
    passed_theirs = _pytest(theirs)
    for protocol in PROTOCOLS:
        ours = work / protocol
        _copy(args.repo, ours)
        shutil.copy(HERE / "served.py", ours / "conftest.py")
        print(f"the same, on ModelwireChatModel over {protocol}:", end=" ")
        passed_ours = _pytest(ours, {"MODELWIRE_SUITE_PROTOCOL": protocol})
        served = ours / "served-calls.txt"
        print("  model calls served through modelwire:", served.read_text() if served.exists() else "none")
        for name in sorted(passed_theirs - passed_ours):
            print("  passes as written only:", name)


if __name__ == "__main__":
    main()
