"""Formatters' short paths (``Formatter.short``): the usual history formatted in one pass,
without the shared walk's segments, must give the walk's payload; anything else must be
left to the walk, which formats the unusual and raises what is wrong.

(With ``MODELWIRE_DEBUG=1``, as the tests run, every payload a short path makes is also
checked against the walk's, so every formatter test checks it too; these tests say which
histories take it, and that the ones it must not take go the walk's way.)"""

from __future__ import annotations

import pytest

from modelwire.errors import FormatError
from modelwire.formatters import Formatter, ToolSpec, get_formatter
from modelwire.message import AssistantMsg, Base64Source, DataBlock, HintBlock, SystemMsg, TextBlock, ThinkingBlock, ToolCallBlock, ToolResultBlock, UserMsg
from modelwire.protocols import protocol_names

PNG = "iVBORw0KGgo="
TOOLS = [ToolSpec("get_weather", "Weather", {"type": "object", "properties": {"city": {"type": "string"}}}), ToolSpec("get_time", "Time")]
SHORT = [p for p in protocol_names() if get_formatter(p).usual_run is not Formatter.usual_run]


def img() -> DataBlock:
    return DataBlock(source=Base64Source(data=PNG, media_type="image/png"))


def usual(rounds: int = 3) -> list:
    """What most histories are made of: a system prompt, questions (some with an image),
    replies with thinking, text, two calls answered out of order (one result returning an
    image), an answer; one reply in two messages, two questions in a row."""
    msgs: list = [SystemMsg("system", "Be brief.")]
    for i in range(rounds):
        msgs.append(UserMsg("user", [TextBlock(text=f"Question {i}"), img()] if i % 2 else f"Question {i}"))
        msgs.append(
            AssistantMsg(
                "agent",
                [
                    ThinkingBlock(thinking="Let me think.", signature="EqQB", provider="anthropic"),
                    TextBlock(text="I'll check."),
                    ToolCallBlock(id=f"call_{i}_a", name="get_weather", input=f'{{"city": "c{i}"}}'),
                    ToolCallBlock(id=f"call_{i}_b", name="get_time", input="{}"),
                    ToolResultBlock(id=f"call_{i}_b", name="get_time", output="12:00", state="success"),
                    ToolResultBlock(id=f"call_{i}_a", name="get_weather", output=[TextBlock(text="sunny"), img()], state="success"),
                ],
            )
        )
        msgs.append(AssistantMsg("agent", [TextBlock(text=f"Sunny in c{i}.")]))  # the same reply, a second message
    msgs += [UserMsg("user", "Thanks."), UserMsg("user", "And tomorrow?")]
    return msgs


def walked(protocol: str, msgs: list, **options) -> dict:
    return get_formatter(protocol)(**options).draft(TOOLS, "auto").once(msgs)


def shortened(protocol: str, msgs: list, **options) -> dict | None:
    return get_formatter(protocol)(**options).draft(TOOLS, "auto").short(msgs)


def test_these_protocols_have_one():
    assert {"anthropic", "openai-chat", "openai-responses", "gemini"} <= set(SHORT)


@pytest.mark.parametrize("protocol", SHORT)
def test_the_usual_history_takes_it_and_gives_the_walks_payload(protocol):
    msgs = usual()
    payload = shortened(protocol, msgs)
    assert payload is not None
    assert payload == walked(protocol, msgs)
    assert payload == get_formatter(protocol)().format(msgs, TOOLS, "auto")


def _with(msgs: list, at: int, msg) -> list:
    return [*msgs[:at], msg, *msgs[at:]]


UNUSUAL = {
    # blocks it leaves to the walk
    "a hint": lambda m: _with(m, 2, AssistantMsg("agent", [HintBlock(hint="Use metric units.")])),
    "a server-side call": lambda m: _with(m, 3, AssistantMsg("agent", [ToolCallBlock(id="srv_1", name="web_search", input="{}", server_side=True)])),
    # rules the walk refuses
    "a result with no call": lambda m: [*m, AssistantMsg("agent", [ToolResultBlock(id="nope", name="get_time", output="x", state="success")])],
    "a running result": lambda m: [*m, AssistantMsg("agent", [ToolCallBlock(id="c9", name="get_time", input="{}"), ToolResultBlock(id="c9", name="get_time", output="", state="running")])],
    "a call id used twice": lambda m: [*m, AssistantMsg("agent", [ToolCallBlock(id="call_0_a", name="get_time", input="{}")])],
    "a question before the answer": lambda m: [*m, AssistantMsg("agent", [ToolCallBlock(id="c9", name="get_time", input="{}")]), UserMsg("user", "Well?")],
    "text between a call and its result": lambda m: [
        *m,
        AssistantMsg("agent", [ToolCallBlock(id="c8", name="get_time", input="{}"), ToolCallBlock(id="c9", name="get_time", input="{}")]),
        AssistantMsg("agent", [ToolResultBlock(id="c8", name="get_time", output="1", state="success"), TextBlock(text="and")]),
    ],
    "a call after a system message, its calls open": lambda m: [
        *m,
        AssistantMsg("agent", [ToolCallBlock(id="c8", name="get_time", input="{}")]),
        SystemMsg("system", "Be briefer."),
        AssistantMsg("agent", [ToolCallBlock(id="c9", name="get_time", input="{}")]),
    ],
}


@pytest.mark.parametrize("case", list(UNUSUAL))
@pytest.mark.parametrize("protocol", SHORT)
def test_the_unusual_is_left_to_the_walk(protocol, case):
    msgs = UNUSUAL[case](usual(2))
    assert shortened(protocol, msgs) is None
    try:
        expected = walked(protocol, msgs)
    except FormatError as exc:
        with pytest.raises(FormatError) as raised:
            get_formatter(protocol)().format(msgs, TOOLS, "auto")
        assert (raised.value.index, raised.value.code, str(raised.value)) == (exc.index, exc.code, str(exc))  # the walk's own error
    else:
        assert get_formatter(protocol)().format(msgs, TOOLS, "auto") == expected


def test_a_message_with_no_blocks_opens_no_run():
    """The walk makes no segment of an empty message: two parts of a reply around one stay
    one assistant turn."""
    msgs = [UserMsg("user", "Hi"), AssistantMsg("agent", [TextBlock(text="a")]), UserMsg("user", []), AssistantMsg("agent", [TextBlock(text="b")])]
    for protocol in SHORT:
        assert shortened(protocol, msgs) == walked(protocol, msgs)


@pytest.mark.parametrize("protocol", SHORT)
def test_results_in_call_order_with_their_media_in_that_order(protocol):
    """Results given out of their calls' order, several returning media: the media follow
    in the order the results are sent (the calls'), as the walk sends them."""
    msgs = [
        UserMsg("user", "Two pictures"),
        AssistantMsg(
            "agent",
            [
                ToolCallBlock(id="a", name="get_weather", input="{}"),
                ToolCallBlock(id="b", name="get_time", input="{}"),
                ToolResultBlock(id="b", name="get_time", output=[TextBlock(text="B"), DataBlock(source=Base64Source(data="QkJC", media_type="image/png"))], state="success"),
                ToolResultBlock(id="a", name="get_weather", output=[TextBlock(text="A"), DataBlock(source=Base64Source(data="QUFB", media_type="image/png"))], state="success"),
            ],
        ),
    ]
    payload = shortened(protocol, msgs)
    assert payload is not None and payload == walked(protocol, msgs)
    flat = repr(payload)
    assert flat.index("QUFB") < flat.index("QkJC")  # a's image first: a was called first


@pytest.mark.parametrize("protocol", SHORT)
def test_options_it_does_not_cover_go_the_walks_way(protocol):
    assert shortened(protocol, usual(), speaker_names=True, assistant_name="agent") is None


def test_chats_own_leaves_refusals_and_dialects_that_send_thinking_to_the_walk():
    msgs = usual(2)
    refused = [*msgs, AssistantMsg("agent", [TextBlock(text="I can't.", refusal=True)])]
    assert shortened("openai-chat", refused) is None
    assert get_formatter("openai-chat")().format(refused, TOOLS, "auto")["messages"][-1] == {"role": "assistant", "content": None, "refusal": "I can't."}
    assert shortened("openai-chat", msgs, reasoning_field="reasoning_content") is None
    assert shortened("openai-chat", msgs, thinking_as_text=True) is None


def test_responses_replays_agentscopes_whole_reasoning_item():
    """AgentScope keeps a reasoning item whole on the thinking block (no item id of its own):
    the short path sends it once, as the walk does."""
    raw = {"id": "rs_1", "type": "reasoning", "summary": [{"type": "summary_text", "text": "s"}], "encrypted_content": "E", "status": None}
    msgs = [
        UserMsg("user", "q"),
        AssistantMsg("agent", [ThinkingBlock(thinking="s", reasoning_item_raw=raw, provider="openai-responses"), TextBlock(text="a")]),
        UserMsg("user", "and?"),
    ]
    payload = shortened("openai-responses", msgs)
    assert payload is not None and payload == walked("openai-responses", msgs)
    assert payload["input"][1:3] == [
        {"id": "rs_1", "type": "reasoning", "summary": [{"type": "summary_text", "text": "s"}], "encrypted_content": "E"},
        {"type": "message", "role": "assistant", "content": "a"},
    ]


def test_a_subclass_that_changes_its_turns_keeps_them():
    """A formatter subclassed to change how segments become turns (here: every assistant
    message's text upper-cased) is formatted by its own take(), not by the short path it
    inherits; one that gives its own pass takes that."""
    from modelwire.protocols.openai_chat.formatter import OpenAIChatFormatter

    class Loud(OpenAIChatFormatter):
        def take(self, acc, seg):
            super().take(acc, seg)
            if seg.kind == "assistant" and acc.turns and isinstance(acc.turns[-1].get("content"), str):
                acc.turns[-1] = {**acc.turns[-1], "content": acc.turns[-1]["content"].upper()}

    msgs = usual(1)
    loud = Loud().format(msgs, TOOLS, "auto")
    assert [m["content"] for m in loud["messages"] if m["role"] == "assistant"] == ["I'LL CHECK.", "SUNNY IN C0."]

    class Own(Loud):
        def usual_run(self, conformer):
            return None  # a pass of its own: none, so the walk

    assert Own().format(msgs, TOOLS, "auto") == loud
    assert [m["content"] for m in get_formatter("openai-chat")().format(msgs, TOOLS, "auto")["messages"] if m["role"] == "assistant"] == ["I'll check.", "Sunny in c0."]


@pytest.mark.parametrize("protocol", SHORT)
def test_in_debug_mode_a_pass_that_breaks_where_the_walk_formats_is_a_bug(protocol):
    """A short path that raises (here: on user text) gives up, and in production the walk
    formats the history; with ``MODELWIRE_DEBUG=1`` that is an AssertionError naming the
    error, unless the walk refuses the history too (bad input may break the pass first)."""
    fmt = get_formatter(protocol)

    class Broken(fmt):
        def usual_run(self, conformer):
            run = super().usual_run(conformer)

            class Pass(type(run)):
                __slots__ = ()

                def user_text(self, *args):
                    raise TypeError("a bug in the pass")

            run.__class__ = Pass
            return run

    msgs = usual(1)
    with pytest.raises(AssertionError, match="a bug in the pass"):
        Broken().format(msgs, TOOLS, "auto")
    bad = [*msgs[:-1], AssistantMsg("agent", [ToolResultBlock(id="nobody_called", name="get_time", output="x", state="success")])]
    with pytest.raises(FormatError):  # the walk refuses it: its error, not the pass's
        Broken().format(bad, TOOLS, "auto")
