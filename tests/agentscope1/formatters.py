"""A 1.x history as AgentScope 1.0.21's own chat formatters send it (OpenAI, Anthropic, Gemini).
Input: ``{"history": [1.x message JSON, ...]}``; output: ``{formatter: its messages}``."""

import asyncio
import json
import sys

from agentscope.formatter import AnthropicChatFormatter, GeminiChatFormatter, OpenAIChatFormatter
from agentscope.message import Msg


async def main() -> None:
    history = [Msg.from_dict(m) for m in json.load(sys.stdin)["history"]]
    out = {}
    for name, formatter in (
        ("openai-chat", OpenAIChatFormatter()),
        ("anthropic", AnthropicChatFormatter()),
        ("gemini", GeminiChatFormatter()),
    ):
        out[name] = await formatter.format(history)
    print(json.dumps(out, ensure_ascii=False))


asyncio.run(main())
