"""Redaction: e-mail addresses and phone numbers out of every request before it leaves.

The agent keeps the whole text (its history, the tool results it got); only what is sent to
the provider is redacted. The model's own thinking is left alone: a provider checks its
signature.
"""

import asyncio
import re
from typing import Any

import modelwire
from modelwire.message import ContentBlock, Msg, TextBlock, ToolCallBlock, ToolResultBlock
from modelwire.models import Middleware, ModelCall

# An e-mail address, or a phone number written with its country code (+44 20 7946 0958).
PII = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+|\+\d[\d ()-]{6,}\d")


def scrub(text: str) -> str:
    return PII.sub("[redacted]", text)


def scrub_block(block: ContentBlock) -> ContentBlock:
    if isinstance(block, TextBlock):
        return block.replace(text=scrub(block.text))
    if isinstance(block, ToolCallBlock):
        return block.replace(input=scrub(block.input))  # its JSON stays JSON: "[redacted]" needs no escape
    if isinstance(block, ToolResultBlock):
        output: Any = (
            scrub(block.output) if isinstance(block.output, str) else [scrub_block(part) for part in block.output]
        )
        return block.replace(output=output)
    return block


class Redact(Middleware):
    """PII out of the messages of every call, before the request is built."""

    async def request(self, call: ModelCall) -> None:
        call.messages = [self.redacted(msg) for msg in call.messages]

    def redacted(self, msg: Msg) -> Msg:
        return msg.replace(content=[scrub_block(block) for block in msg.content])


async def main() -> None:
    model = modelwire.wrap(modelwire.load_model("anthropic:claude-sonnet-4-5"), Redact())
    reply = await model.complete([modelwire.UserMsg("me", "Draft a note to ann@example.com, +44 20 7946 0958.")])
    print(reply.get_text_content())  # the provider saw "[redacted]" twice


if __name__ == "__main__":
    asyncio.run(main())
