"""The in-process fake model users test their agents with: scripted replies through a
real protocol adapter, requests through the real formatter, no socket."""

from __future__ import annotations

import json

import pytest

from modelwire.agent import Agent
from modelwire.errors import FormatError
from modelwire.message import Base64Source, DataBlock, UserMsg
from modelwire.protocols import protocol_names
from modelwire.testing import FakeModel


def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@pytest.mark.parametrize("protocol", protocol_names())
def test_an_agent_runs_a_tool_round_on_a_fake_model_of_each_protocol(protocol):
    model = FakeModel(
        [
            [("think", "They want weather."), ("tool", "call_1", "weather", '{"city": "Paris"}')],
            [("text", "It is sunny in Paris.")],
        ],
        protocol=protocol,
    )
    agent = Agent("bot", model, tools=[weather])
    reply = agent.reply_sync("Weather in Paris?")
    assert reply.get_text_content().strip() == "It is sunny in Paris."
    (result,) = reply.get_content_blocks("tool_result")
    assert result.state == "success" and "sunny in Paris" in json.dumps(result.to_dict())
    assert len(model.requests) == 2 and "sunny in Paris" in json.dumps(model.requests[1])  # the result went back
    assert reply.usage.input_tokens == 20  # two calls of the scripted usage, decoded by the adapter


def test_a_reply_can_depend_on_what_was_asked():
    def echo(messages, tools):
        return [("text", "you said: " + messages[-1].get_text_content())]

    model = FakeModel(echo)
    assert model.complete_sync("hello").get_text_content().strip() == "you said: hello"
    assert model.complete_sync([UserMsg("u", "again")]).get_text_content().strip() == "you said: again"


def test_a_conversation_the_provider_would_refuse_fails_as_it_would_there():
    model = FakeModel([[("text", "never")]])
    svg = UserMsg("u", [DataBlock(source=Base64Source(data="PHN2Zy8+", media_type="image/svg+xml"))])
    with pytest.raises(FormatError, match="image/svg"):
        model.complete_sync([svg])


def test_running_out_of_scripted_replies_says_so():
    from modelwire.errors import ConfigError

    agent = Agent("bot", FakeModel([[("tool", "call_1", "weather", '{"city": "Oslo"}')]]), tools=[weather])
    with pytest.raises(ConfigError, match="call 2 has no scripted reply"):
        agent.reply_sync("Weather?")


def test_a_mistyped_block_or_a_missing_reply_is_a_clear_typed_error():
    """A script mistake names the call and the block (it was an IndexError deep in a fake
    stream, or an AssertionError), and ends the reply as any model error does."""
    from modelwire.errors import ConfigError

    assert FakeModel.__doc__ and "scripted" in FakeModel.__doc__
    mistyped = FakeModel([[("txt", "Hello.")]])
    with pytest.raises(ConfigError, match=r"call 1, block 1: \('txt', 'Hello.'\) is not a block"):
        Agent("bot", mistyped).reply_sync("hi")
    short = FakeModel([[("tool", "c1")]])
    with pytest.raises(ConfigError, match="is not a block"):
        Agent("bot", short).reply_sync("hi")
    once = FakeModel([[("text", "Hello.")]])
    agent = Agent("bot", once)
    assert agent.reply_sync("hi").get_text_content().strip() == "Hello."
    with pytest.raises(ConfigError, match="call 2 has no scripted reply"):
        agent.reply_sync("again")
