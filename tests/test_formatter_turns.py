"""How the shared walk's turns come out for the usual history: results in their calls'
order with their media in that order, refusals, AgentScope's whole reasoning items, and a
formatter subclass that changes how segments become turns."""

from __future__ import annotations

import pytest

from modelwire.formatters import ToolSpec
from modelwire.protocols import get_formatter
from modelwire.message import (
    AssistantMsg,
    Base64Source,
    DataBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    UserMsg,
)

TOOLS = [
    ToolSpec("get_weather", "Weather", {"type": "object", "properties": {"city": {"type": "string"}}}),
    ToolSpec("get_time", "Time"),
]
WITH_RESULT_MEDIA = ["anthropic", "openai-chat", "openai-responses", "gemini"]


@pytest.mark.parametrize("protocol", WITH_RESULT_MEDIA)
def test_results_in_call_order_with_their_media_in_that_order(protocol):
    """Results given out of their calls' order, several returning media: the media follow
    in the order the results are sent (the calls')."""
    msgs = [
        UserMsg("user", "Two pictures"),
        AssistantMsg(
            "agent",
            [
                ToolCallBlock(id="a", name="get_weather", input="{}"),
                ToolCallBlock(id="b", name="get_time", input="{}"),
                ToolResultBlock(
                    id="b",
                    name="get_time",
                    output=[TextBlock(text="B"), DataBlock(source=Base64Source(data="QkJC", media_type="image/png"))],
                    state="success",
                ),
                ToolResultBlock(
                    id="a",
                    name="get_weather",
                    output=[TextBlock(text="A"), DataBlock(source=Base64Source(data="QUFB", media_type="image/png"))],
                    state="success",
                ),
            ],
        ),
    ]
    flat = repr(get_formatter(protocol)().format(msgs, TOOLS, "auto"))
    assert flat.index("QUFB") < flat.index("QkJC")  # a's image first: a was called first


def test_a_chat_refusal_is_sent_as_one():
    msgs = [UserMsg("user", "q"), AssistantMsg("agent", [TextBlock(text="I can't.", refusal=True)])]
    assert get_formatter("openai-chat")().format(msgs, TOOLS, "auto")["messages"][-1] == {
        "role": "assistant",
        "content": None,
        "refusal": "I can't.",
    }


def test_responses_replays_agentscopes_whole_reasoning_item():
    """AgentScope keeps a reasoning item whole on the thinking block (no item id of its own):
    it is sent once, before the output it belongs to."""
    raw = {
        "id": "rs_1",
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": "s"}],
        "encrypted_content": "E",
        "status": None,
    }
    msgs = [
        UserMsg("user", "q"),
        AssistantMsg(
            "agent",
            [ThinkingBlock(thinking="s", reasoning_item_raw=raw, provider="openai-responses"), TextBlock(text="a")],
        ),
        UserMsg("user", "and?"),
    ]
    payload = get_formatter("openai-responses")().format(msgs, TOOLS, "auto")
    assert payload["input"][1:3] == [
        {
            "id": "rs_1",
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": "s"}],
            "encrypted_content": "E",
        },
        {"type": "message", "role": "assistant", "content": "a"},
    ]


def test_a_subclass_that_changes_its_turns_keeps_them():
    """A formatter subclassed to change how segments become turns (here: every assistant
    message's text upper-cased) is formatted by its own take()."""
    from modelwire.protocols.openai_chat.formatter import OpenAIChatFormatter

    class Loud(OpenAIChatFormatter):
        def take(self, acc, seg):
            super().take(acc, seg)
            if seg.kind == "assistant" and acc.turns and isinstance(acc.turns[-1].get("content"), str):
                acc.turns[-1] = {**acc.turns[-1], "content": acc.turns[-1]["content"].upper()}

    msgs = [
        UserMsg("user", "q"),
        AssistantMsg("agent", [TextBlock(text="I'll check.")]),
        UserMsg("user", "ok"),
        AssistantMsg("agent", [TextBlock(text="Sunny.")]),
    ]
    loud = Loud().format(msgs, TOOLS, "auto")
    assert [m["content"] for m in loud["messages"] if m["role"] == "assistant"] == ["I'LL CHECK.", "SUNNY."]
    assert [
        m["content"]
        for m in get_formatter("openai-chat")().format(msgs, TOOLS, "auto")["messages"]
        if m["role"] == "assistant"
    ] == ["I'll check.", "Sunny."]
