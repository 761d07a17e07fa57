"""Runs a docs page's code block as written, in this (AgentScope 1.x) environment, with the
Anthropic API pointed at modelwire's local provider server, which answers in text. Input:
``{"code": ...}``; output: what it printed and the requests the server saw."""

import contextlib
import io
import json
import os
import sys

from modelwire.testing import ProviderServer, stream_reply
from modelwire.testing.sse import body


def main() -> None:
    code = json.load(sys.stdin)["code"]
    with ProviderServer() as server:
        server.respond = lambda request: stream_reply("anthropic", body("anthropic", ("text", "Hello from the docs")))
        os.environ.update(ANTHROPIC_API_KEY="sk-ant-docs", ANTHROPIC_BASE_URL=server.url)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, "<docs>", "exec"), {"__name__": "__main__"})  # noqa: S102 - the page's own block
        requests = [r["json"] for r in server.requests]
    print(json.dumps({"stdout": out.getvalue(), "requests": requests}, ensure_ascii=False))


main()
