"""Formatting a long history: 2,000 messages with tool calls, results, thinking and images,
for each protocol. Prints milliseconds per format (best of N) and per message.

    python benchmarks/format.py [--repeat N]
"""

from __future__ import annotations

import argparse
import base64
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

from modelwire.formatters import ToolSpec, get_formatter  # noqa: E402
from modelwire.message import (  # noqa: E402
    AssistantMsg,
    Base64Source,
    DataBlock,
    SystemMsg,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    UserMsg,
)

PNG = base64.b64encode(os.urandom(3000)).decode()


def history(n: int) -> list:
    msgs: list = [SystemMsg("system", "You are a careful assistant. " * 20)]
    i = 0
    while len(msgs) < n:
        i += 1
        user = [TextBlock(text=f"Question {i}: what is the weather in city {i}? " * 3)]
        if i % 5 == 0:
            user.append(DataBlock(source=Base64Source(data=PNG, media_type="image/png")))
        msgs.append(UserMsg("user", user))
        msgs.append(
            AssistantMsg(
                "agent",
                [
                    ThinkingBlock(thinking="Let me think about the weather. " * 10, signature="EqQB" * 20, provider="anthropic"),
                    ThinkingBlock(thinking="Summary of reasoning.", provider="openai-responses", reasoning_item_id=f"rs_{i}", encrypted_content="gAAA" * 50),
                    TextBlock(text="I'll check."),
                    ToolCallBlock(id=f"call_{i}_a", name="get_weather", input=f'{{"city": "city {i}"}}'),
                    ToolCallBlock(id=f"call_{i}_b", name="get_time", input="{}"),
                    ToolResultBlock(id=f"call_{i}_b", name="get_time", output="12:00", state="success"),
                    ToolResultBlock(
                        id=f"call_{i}_a",
                        name="get_weather",
                        output=[TextBlock(text="sunny, 21C " * 5)] + ([DataBlock(source=Base64Source(data=PNG, media_type="image/png"))] if i % 7 == 0 else []),
                        state="success",
                    ),
                    TextBlock(text=f"It is sunny in city {i}. " * 4),
                ],
            )
        )
    return msgs[:n]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--messages", type=int, default=2000)
    args = parser.parse_args()
    msgs = history(args.messages)
    tools = [ToolSpec("get_weather", "Weather", {"type": "object", "properties": {"city": {"type": "string"}}}), ToolSpec("get_time", "Time")]
    blocks = sum(len(m.content) for m in msgs)
    print(f"{len(msgs)} messages, {blocks} blocks")
    for protocol in ("anthropic", "openai-chat", "openai-responses", "gemini"):
        formatter = get_formatter(protocol)()
        best = float("inf")
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            formatter.format(msgs, tools, "auto")
            best = min(best, time.perf_counter() - t0)
        print(f"  {protocol:<18} {best * 1000:8.1f} ms per format  ({best / len(msgs) * 1e6:6.1f} us per message)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
