"""The AgentScope 1.x page of the docs (docs/guides/agentscope1.md): its 1.x block runs as
written in AgentScope 1.0.21's own environment against the local provider server."""

from __future__ import annotations

import re
from pathlib import Path

import agentscope1_env

ROOT = Path(__file__).resolve().parents[1]

DOCS_PAGE = ROOT / "docs" / "guides" / "agentscope1.md"


def test_the_docs_page_s_1x_agent_block_runs_as_written_on_agentscope_1():
    """The page's AgentScope 1.x block (fenced ``py``: it needs 1.x, which the docs' own runner
    of ``python`` blocks does not have) runs in the 1.x environment against the local provider
    server, and prints the model's answer."""
    (code,) = re.findall(r"```py\n(.*?)```", DOCS_PAGE.read_text(encoding="utf-8"), re.S)
    printed = agentscope1_env.run("run_block.py", {"code": code}, env={"MODELWIRE_CACHE_DIR": ""})
    assert printed["stdout"].strip().endswith("Hello from the docs")
    assert printed["requests"][0]["model"] == "claude-sonnet-4-5"
