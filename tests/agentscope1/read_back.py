"""Reads pairs of AgentScope 1.x message JSON with 1.0.21's own ``Msg.from_dict`` and says
which pairs do not read equal (the messages' ``to_dict()``). Input: ``[[original, written], ...]``."""

import json
import sys

from agentscope.message import Msg


def main() -> None:
    pairs = json.load(sys.stdin)
    unequal = []
    for n, (original, written) in enumerate(pairs):
        a = Msg.from_dict(original).to_dict()
        b = Msg.from_dict(written).to_dict()
        if a != b:
            unequal.append({"index": n, "original": a, "written": b})
    print(json.dumps({"read": len(pairs), "unequal": unequal[:5], "count_unequal": len(unequal)}, ensure_ascii=False))


main()
