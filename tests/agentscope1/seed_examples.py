"""Runs code blocks as written, in order, in one namespace, under AgentScope 1.0.21, and says
what each printed. Input: ``{"blocks": [code, ...], "through_modelwire": bool}``; with
``through_modelwire``, every message a block leaves in the namespace is read by modelwire and
written back (``from_agentscope1`` / ``to_agentscope1``) before the next block sees it, as a
memory saved by 1.x, loaded by modelwire and saved again would be."""

import contextlib
import io
import json
import sys

from agentscope.message import Msg

from modelwire.message import from_agentscope1, to_agentscope1


def _through_modelwire(namespace: dict) -> None:
    for name, value in list(namespace.items()):
        if isinstance(value, Msg):
            (written,) = to_agentscope1(from_agentscope1(value.to_dict()))
            namespace[name] = Msg.from_dict(written)
        elif isinstance(value, dict) and {"name", "role", "content"} <= set(value):
            (namespace[name],) = to_agentscope1(from_agentscope1(value))


def main() -> None:
    asked = json.load(sys.stdin)
    namespace: dict = {"__name__": "__seed__"}
    printed = []
    for code in asked["blocks"]:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, "<seed>", "exec"), namespace)  # noqa: S102 - the seed's own examples
        printed.append(out.getvalue())
        if asked["through_modelwire"]:
            _through_modelwire(namespace)
    print(json.dumps(printed, ensure_ascii=False))


main()
