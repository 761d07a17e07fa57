"""Record the project's cassettes (run from the repository root: python cassettes/record.py).

Each recording goes through modelwire.cassettes against modelwire.testing.ProviderServer, a
real HTTP server on 127.0.0.1 that answers like the provider; the notes inside each file say
what answered.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from modelwire.demo import run_demo  # noqa: E402
from modelwire.testing import ProviderServer, sse_reply  # noqa: E402
from modelwire.testing.sse import body  # noqa: E402


def record_demo() -> None:
    first = body(
        "anthropic",
        (
            "think",
            "The user wants an exact product and sum. I will use the calculator rather than do it in my head.",
            "EqQBCkYIBhgCKkDemoSignature",
        ),
        ("text", "Let me calculate that."),
        ("tool", "toolu_demo_01", "calculate", '{"expression": "(1234 * 5678) + 42"}'),
        msg_id="msg_demo_1",
        usage=(412, 96),
    )
    second = body("anthropic", ("text", "(1234 × 5678) + 42 = 7,006,694."), msg_id="msg_demo_2", usage=(538, 21))
    with ProviderServer(port=8765) as server:
        server.script(sse_reply(first, delay=0.02), sse_reply(second, delay=0.02))
        run_demo(io.StringIO(), record=True)
        assert len(server.requests) == 2, server.requests
    print("recorded cassettes/demo/calculator.json")


if __name__ == "__main__":
    record_demo()
