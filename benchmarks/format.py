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
from typing import Any

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


AGENTSCOPE = {"anthropic": "AnthropicChatFormatter", "openai-chat": "OpenAIChatFormatter", "openai-responses": "OpenAIResponseFormatter", "gemini": "GeminiChatFormatter"}


def _theirs(protocol: str, msgs: list) -> tuple[Any, Any] | None:
    """AgentScope 2.x's formatter for the protocol, and the same history as AgentScope messages
    (converted through the JSON both share: the same content)."""
    try:
        import json
        import logging
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            logging.disable(logging.WARNING)
            from agentscope import formatter as as_formatter
            from agentscope import message as as_message
    except ImportError:
        return None
    history_as = [as_message.Msg.model_validate(json.loads(json.dumps(m.to_dict()))) for m in msgs]
    return getattr(as_formatter, AGENTSCOPE[protocol])(), history_as


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--check", action="store_true", help="format once with each, check, no timings")
    args = parser.parse_args()
    import asyncio
    import json
    import statistics

    msgs = history(args.messages if not args.check else 60)
    tools = [ToolSpec("get_weather", "Weather", {"type": "object", "properties": {"city": {"type": "string"}}}), ToolSpec("get_time", "Time")]
    blocks = sum(len(m.content) for m in msgs)
    print(f"{len(msgs)} messages, {blocks} blocks; median of {args.rounds} interleaved rounds (min), each payload checked")
    ok = True
    for protocol in AGENTSCOPE:
        formatter = get_formatter(protocol)()
        expected = len(json.dumps(formatter.format(msgs, tools, "auto")))
        theirs = _theirs(protocol, msgs)

        def ours_run() -> Any:
            return formatter.format(msgs, tools, "auto")

        checks = {"modelwire": lambda payload: len(json.dumps(payload)) == expected}  # the same payload every run
        contenders = {"modelwire": ours_run}
        if theirs is not None:
            their_formatter, their_msgs = theirs
            their_expected = len(json.dumps(asyncio.run(their_formatter.format(their_msgs)), default=str))
            loop = asyncio.new_event_loop()

            def theirs_run() -> Any:
                return loop.run_until_complete(their_formatter.format(their_msgs))

            checks["AgentScope"] = lambda payload: len(json.dumps(payload, default=str)) == their_expected
            contenders["AgentScope"] = theirs_run
        if args.check:
            for name, fn in contenders.items():
                assert checks[name](fn()), name
            continue
        times: dict[str, list[float]] = {k: [] for k in contenders}
        for _ in range(args.rounds):
            for name, fn in contenders.items():
                t0 = time.perf_counter()
                payload = fn()
                took = time.perf_counter() - t0
                assert checks[name](payload), f"{name} gave another payload"  # checked before the time counts
                times[name].append(took)
        med = {k: statistics.median(v) for k, v in times.items()}
        line = f"  {protocol:<18} modelwire {med['modelwire'] * 1000:7.1f} ms ({min(times['modelwire']) * 1000:.1f})"
        if "AgentScope" in med:
            ratio = med["modelwire"] / med["AgentScope"]
            ok &= ratio <= 0.5
            line += f"   AgentScope 2.x {med['AgentScope'] * 1000:7.1f} ms ({min(times['AgentScope']) * 1000:.1f})   {ratio:.2f}x"
            if ratio > 0.5:
                line += f"   MISSED: target 0.50x, over by {ratio - 0.5:.2f}"
        print(line)
    if args.check:
        print("checked: every formatter gave its payload")
        return 0
    print(f"target (modelwire <= 0.5x AgentScope's formatters) met: {ok}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
