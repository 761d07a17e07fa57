"""AgentScope's own tests against modelwire (not part of CI: AgentScope's tests are not in its
package; they are read from a checkout of its repository).

    python scripts/agentscope_suite/run.py PATH/TO/agentscope [--keep DIR]

- ``message_test.py``, ``event_test.py``, ``event_to_message_test.py``: their
  ``agentscope.message`` / ``agentscope.event`` imports pointed at ``modelwire.message`` /
  ``modelwire.event``; nothing else changed.
- the agent and human-in-the-loop tests (``agent_basic``, ``agent_interrupt``,
  ``agent_structured_output``, ``hitl_*``): run twice, once as written (AgentScope's own
  ``MockModel``) and once with ``tests/utils.py``'s ``MockModel`` replaced by
  ``mock_model.py`` (the same scripts served over a local socket to ``ModelwireChatModel``).
  ``agent_interrupt_test.py`` cancels a reply 50 ms after it starts, inside the first model
  call when it is a real HTTP call; its window is widened to 500 ms in both runs.

It prints each run's result and the tests that pass with AgentScope's mock but not with
modelwire. Needs the dev extra (agentscope) and ``apscheduler`` (AgentScope's ``app``
package imports it).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CONTRACT = ["message_test.py", "event_test.py", "event_to_message_test.py"]
AGENT = [
    "agent_basic_test.py",
    "agent_interrupt_test.py",
    "agent_structured_output_test.py",
    "hitl_external_execution_test.py",
    "hitl_mixed_test.py",
    "hitl_user_confirmation_test.py",
]


def _pytest(folder: Path, files: list[str]) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA", *files],
        cwd=folder,
        capture_output=True,
        text=True,
    )
    print(done.stdout.strip().splitlines()[-1])
    return {line.split()[1] for line in done.stdout.splitlines() if line.startswith("PASSED ")}


def _copy(repo: Path, folder: Path, files: list[str]) -> None:
    folder.mkdir(parents=True)
    for name in [*files, "utils.py"]:
        shutil.copy(repo / "tests" / name, folder / name)
    interrupt = folder / "agent_interrupt_test.py"
    if interrupt.exists():
        text = interrupt.read_text()
        interrupt.write_text(text.replace("cancel_after: float = 0.05,", "cancel_after: float = 0.5,"))


def contract(repo: Path, work: Path) -> None:
    folder = work / "contract"
    _copy(repo, folder, CONTRACT)
    for name in CONTRACT:
        path = folder / name
        path.write_text(re.sub(r"\bagentscope\.(message|event)\b", r"modelwire.\1", path.read_text()))
    print("message, event and event-to-message tests on modelwire's classes:", end=" ")
    _pytest(folder, CONTRACT)


def agent(repo: Path, work: Path) -> None:
    theirs, ours = work / "mock", work / "modelwire"
    _copy(repo, theirs, AGENT)
    _copy(repo, ours, AGENT)
    utils = (ours / "utils.py").read_text()
    start, end = utils.index("class MockModel(ChatModelBase):"), utils.index("def compare_by_printing")
    (ours / "utils.py").write_text(utils[:start] + "from mock_model import MockModel  # noqa: E402\n\n\n" + utils[end:])
    shutil.copy(HERE / "mock_model.py", ours / "mock_model.py")
    print("agent and human-in-the-loop tests, AgentScope's MockModel:", end=" ")
    passed_theirs = _pytest(theirs, AGENT)
    print("the same, on ModelwireChatModel:", end=" ")
    passed_ours = _pytest(ours, AGENT)
    for name in sorted(passed_theirs - passed_ours):
        print("  passes with AgentScope's mock only:", name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("repo", type=Path, help="a checkout of agentscope-ai/agentscope")
    parser.add_argument("--keep", type=Path, help="run in this folder and keep it")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="agentscope-suite-"))
    contract(args.repo, work)
    agent(args.repo, work)


if __name__ == "__main__":
    main()
