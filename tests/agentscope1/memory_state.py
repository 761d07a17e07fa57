"""Loads memory states into AgentScope 1.0.21's own ``InMemoryMemory`` and gives back its
``state_dict()`` of each. Input: ``[state, ...]``; output: ``[state_dict, ...]``."""

import json
import sys

from agentscope.memory import InMemoryMemory


def main() -> None:
    out = []
    for state in json.load(sys.stdin):
        memory = InMemoryMemory()
        memory.load_state_dict(state)
        out.append(memory.state_dict())
    print(json.dumps(out, ensure_ascii=False))


main()
