"""AgentScope 1.x's test models on modelwire: put as ``conftest.py`` beside 1.0.21's own tests
(by ``run.py``). Every ``ReActAgent`` built gets, in place of its model, one that asks the
test's own model for its scripted answer, serves that answer as a provider's stream from
modelwire's local provider server (a real socket), and returns what
``modelwire.integrations.agentscope1.ModelwireChatModel`` reads back from it, with the
agent's memory read by modelwire (its 1.x JSON, from ``ModelwireFormatter``). The test's own
formatter still formats for the test's own model, so what a test checks its model received
is unchanged. 1.x's own chat formatters are given every history as modelwire reads it and
writes it back, so their tests check the reader and the writer on 1.x's own histories.
``MODELWIRE_SUITE_PROTOCOL`` picks the provider's protocol (anthropic by default).
"""

import inspect
import json
import os
from typing import Any

import pytest
from agentscope.agent import ReActAgent
from agentscope.formatter import TruncatedFormatterBase
from agentscope.message import Msg
from agentscope.model import ChatModelBase, ChatResponse

from modelwire.integrations.agentscope1 import STRUCTURED_TOOL, ModelwireChatModel, ModelwireFormatter
from modelwire.message import from_agentscope1_history, to_agentscope1
from modelwire.testing import ProviderServer, stream_reply
from modelwire.testing.sse import body

PROTOCOL = os.environ.get("MODELWIRE_SUITE_PROTOCOL", "anthropic")
PRESETS = {
    "anthropic": "anthropic:claude-test",
    "openai-chat": "deepseek:deepseek-chat",
    "gemini": "google:gemini-test",
}
SERVER = ProviderServer()


class _Formatted(list):
    """The test's formatter's output (the list itself) and the messages' 1.x JSON."""

    as_json: list


class _BothFormatters:
    def __init__(self, theirs: Any) -> None:
        self.theirs = theirs

    async def format(self, msgs: list, **kwargs: Any) -> list:
        out = _Formatted(await self.theirs.format(msgs, **kwargs))
        out.as_json = await ModelwireFormatter().format(msgs)
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self.theirs, name)


def _blocks(response: ChatResponse, structured_model: Any) -> list[tuple]:
    if structured_model is not None:
        return [("tool", "call_structured", STRUCTURED_TOOL, json.dumps(response.metadata or {}))]
    out = []
    for block in response.content:
        if block["type"] == "text":
            out.append(("text", block["text"]))
        elif block["type"] == "thinking":
            out.append(("think", block["thinking"]))
        elif block["type"] == "tool_use":
            out.append(("tool", block["id"], block["name"], json.dumps(block.get("input") or {})))
    return out


class Served(ChatModelBase):
    """The test's model, its answers served over a socket and read back by modelwire."""

    def __init__(self, theirs: ChatModelBase) -> None:
        super().__init__(theirs.model_name, theirs.stream)
        self.theirs = theirs

    def __getattr__(self, name: str) -> Any:
        return getattr(self.theirs, name)

    async def __call__(self, messages: list, *args: Any, **kwargs: Any) -> Any:
        answer = await self.theirs(messages, *args, **kwargs)
        if not isinstance(answer, ChatResponse):
            last = None
            async for last in answer:  # every chunk is the whole reply so far: the last one is it
                pass
            answer = last
        structured_model = kwargs.get("structured_model")
        usage = answer.usage
        options = {"usage": (usage.input_tokens, usage.output_tokens)} if usage else {}
        SERVER.script(stream_reply(PROTOCOL, body(PROTOCOL, *_blocks(answer, structured_model), **options)))
        base = SERVER.url + ("/v1" if PROTOCOL == "openai-chat" else "")
        ours = ModelwireChatModel(PRESETS[PROTOCOL], api_key="sk-test", base_url=base, stream=self.theirs.stream)
        return await ours(getattr(messages, "as_json", messages), *args, **kwargs)


_format = TruncatedFormatterBase.format


async def _format_through_modelwire(self: Any, msgs: list, *args: Any, **kwargs: Any) -> Any:
    """1.x's own formatters, given the messages as modelwire reads and writes them back (a
    memory loaded by modelwire and saved again): their tests' expected requests still hold."""
    written = to_agentscope1(from_agentscope1_history([m.to_dict() for m in msgs]))
    return await _format(self, [Msg.from_dict(m) for m in written], *args, **kwargs)


_init = ReActAgent.__init__
_signature = inspect.signature(_init)


def _on_modelwire(self: Any, *args: Any, **kwargs: Any) -> None:
    bound = _signature.bind(self, *args, **kwargs)
    bound.arguments["model"] = Served(bound.arguments["model"])
    bound.arguments["formatter"] = _BothFormatters(bound.arguments["formatter"])
    _init(*bound.args, **bound.kwargs)


@pytest.fixture(autouse=True, scope="session")
def _modelwire_models():
    os.environ["MODELWIRE_CACHE_DIR"] = ""
    SERVER.__enter__()
    ReActAgent.__init__ = _on_modelwire
    TruncatedFormatterBase.format = _format_through_modelwire
    yield
    TruncatedFormatterBase.format = _format
    ReActAgent.__init__ = _init
    SERVER.__exit__(None, None, None)
    with open("served-calls.txt", "w") as out:  # run.py says how many model calls went through modelwire
        out.write(str(len(SERVER.requests)))
