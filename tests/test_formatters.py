"""Formatters, rule by rule. Expected payloads are written out by hand, and every payload
is also checked against the official SDK's own request types (see sdk_params)."""

from __future__ import annotations

import json

import pytest
import sdk_params

from modelwire.errors import FormatError
from modelwire.formatters import ToolSpec
from modelwire.protocols import get_formatter
from modelwire.protocols import protocol_names
from modelwire.message import (
    AssistantMsg,
    Base64Source,
    DataBlock,
    HintBlock,
    SystemMsg,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    URLSource,
    UserMsg,
)

PNG = "iVBORw0KGgo="
PDF = "JVBERi0xLjQ="


DIALECT_FIELDS = ("reasoning_content", "reasoning", "reasoning_details")


def fmt(protocol, messages, tools=None, tool_choice=None, **options):
    payload = get_formatter(protocol)(**options).format(messages, tools, tool_choice)
    # The SDK's types are OpenAI's own: fields of OpenAI-compatible dialects (DeepSeek's
    # reasoning_content ...) are not in them, so they are set aside for this check.
    checked = {**payload}
    if "messages" in payload and protocol == "openai-chat":
        checked["messages"] = [{k: v for k, v in m.items() if k not in DIALECT_FIELDS} for m in payload["messages"]]
    sdk_params.validate(protocol, checked)
    return payload


def img(data=PNG, media_type="image/png", **kw):
    return DataBlock(source=Base64Source(data=data, media_type=media_type), **kw)


def call(cid, name="f", args='{"a": 1}', **extra):
    return ToolCallBlock(id=cid, name=name, input=args, **extra)


def result(cid, output="ok", state="success", name="f"):
    return ToolResultBlock(id=cid, name=name, output=output, state=state)


WEATHER = ToolSpec(
    "get_weather",
    "Weather for a city",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


# -- Anthropic -------------------------------------------------------------------------------


def test_anthropic_system_lifted_and_same_role_merged_and_empty_text_dropped():
    msgs = [
        SystemMsg("s", "Be brief."),
        UserMsg("u", "Hi"),
        UserMsg("u", [TextBlock(text=""), TextBlock(text="there")]),
        AssistantMsg("a", [TextBlock(text=""), TextBlock(text="Hello")]),
        SystemMsg("s", "Also polite."),
    ]
    assert fmt("anthropic", msgs) == {
        "system": [{"type": "text", "text": "Be brief."}, {"type": "text", "text": "Also polite."}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Hi"}, {"type": "text", "text": "there"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "Hello"}]},
        ],
    }


def test_results_of_many_calls_go_in_call_order_whatever_order_they_finished_in():
    """Each result joins its segment in its call's place, however far back that is; two
    results of one call keep the order they came in (a stable sort's)."""
    from modelwire.formatters._common import segments

    calls = [call(f"c{n}", "f", "{}") for n in range(1, 6)]
    finished = [
        result(cid, out, name="f")
        for cid, out in [("c4", "4"), ("c2", "2a"), ("c5", "5"), ("c1", "1"), ("c2", "2b"), ("c3", "3")]
    ]
    segs = segments([UserMsg("u", "go"), AssistantMsg("a", [*calls, *finished])], "anthropic")
    assert [seg.kind for seg in segs] == ["user", "assistant", "results"]
    assert [(r.id, r.output) for r in segs[2].blocks] == [
        ("c1", "1"),
        ("c2", "2a"),
        ("c2", "2b"),
        ("c3", "3"),
        ("c4", "4"),
        ("c5", "5"),
    ]


def test_anthropic_tool_results_open_the_next_user_turn_in_call_order():
    reply = AssistantMsg(
        "a",
        [
            TextBlock(text="Checking both."),
            call("c1", "get_weather", '{"city": "Paris"}'),
            call("c2", "get_time", ""),
            result("c2", "12:00", name="get_time"),  # finished first
            result("c1", [TextBlock(text="sunny"), img()], state="error", name="get_weather"),
            HintBlock(hint="Answer in one line."),
            TextBlock(text="Sunny at noon."),
        ],
    )
    payload = fmt("anthropic", [UserMsg("u", "Weather and time in Paris?"), reply])
    assert payload["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Weather and time in Paris?"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking both."},
                {"type": "tool_use", "id": "c1", "name": "get_weather", "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "c2", "name": "get_time", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "c1",
                    "content": [
                        {"type": "text", "text": "sunny"},
                        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
                    ],
                    "is_error": True,
                },
                {"type": "tool_result", "tool_use_id": "c2", "content": "12:00"},
                {"type": "text", "text": "Answer in one line."},
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "Sunny at noon."}]},
    ]


@pytest.mark.parametrize("state", ["error", "denied", "interrupted"])
def test_anthropic_failed_results_are_errors(state):
    msgs = [UserMsg("u", "x"), AssistantMsg("a", [call("c"), result("c", "", state=state)])]
    assert fmt("anthropic", msgs)["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "c", "is_error": True}
    ]


@pytest.mark.parametrize(
    "state, output, response",
    [
        ("success", "", {"result": ""}),
        ("error", "", {"error": ""}),
        ("error", "boom", {"error": "boom"}),
        ("denied", "", {"error": "The tool call was denied."}),
        ("interrupted", "", {"error": "The tool call was interrupted."}),
        ("denied", "not allowed here", {"error": "not allowed here"}),
    ],
)
def test_gemini_failed_results_are_errors_and_never_empty_when_refused(state, output, response):
    msgs = [UserMsg("u", "x"), AssistantMsg("a", [call("c"), result("c", output, state=state)])]
    assert fmt("gemini", msgs)["contents"][2] == {
        "role": "user",
        "parts": [{"functionResponse": {"name": "f", "response": response}}],
    }


def test_results_merged_into_a_user_turn_go_ahead_of_its_other_parts():
    """Providers want tool results to open a user turn: results that join one holding other
    parts go first, each group in its own order; other parts joining go last."""
    from modelwire.formatters import merge_turn

    def after(part):
        return part["type"] != "tool_result"

    turns = [{"role": "user", "content": [{"type": "tool_result", "id": 1}, {"type": "text", "text": "a"}]}]
    merge_turn(turns, "user", [{"type": "tool_result", "id": 2}, {"type": "image", "n": 1}], after_results=after)
    merge_turn(turns, "user", [{"type": "text", "text": "b"}])
    merge_turn(turns, "user", [{"type": "tool_result", "id": 3}], after_results=after)
    assert turns == [
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "id": 1},
                {"type": "tool_result", "id": 2},
                {"type": "tool_result", "id": 3},
                {"type": "text", "text": "a"},
                {"type": "image", "n": 1},
                {"type": "text", "text": "b"},
            ],
        }
    ]
    merge_turn(turns, "assistant", [])  # nothing to add: no turn
    merge_turn(turns, "assistant", [{"type": "text", "text": "c"}])
    merge_turn(turns, "user", [{"type": "tool_result", "id": 4}, {"type": "text", "text": "d"}], after_results=after)
    assert turns[1:] == [
        {"role": "assistant", "content": [{"type": "text", "text": "c"}]},
        {"role": "user", "content": [{"type": "tool_result", "id": 4}, {"type": "text", "text": "d"}]},
    ]


def test_anthropic_thinking_replayed_only_when_it_came_from_anthropic():
    reply = AssistantMsg(
        "a",
        [
            ThinkingBlock(thinking="mine", signature="EqQB", provider="anthropic"),
            ThinkingBlock(thinking="", redacted_thinking_data="EmwK", provider="anthropic"),
            ThinkingBlock(thinking="no signature", provider="anthropic"),
            ThinkingBlock(thinking="from deepseek", provider="openai-chat", reasoning_field="reasoning_content"),
            TextBlock(text="Answer"),
        ],
    )
    msgs = [UserMsg("u", "q"), reply]
    assert fmt("anthropic", msgs)["messages"][1]["content"] == [
        {"type": "thinking", "thinking": "mine", "signature": "EqQB"},
        {"type": "redacted_thinking", "data": "EmwK"},
        {"type": "text", "text": "Answer"},
    ]
    as_text = fmt("anthropic", msgs, thinking_as_text=True)["messages"][1]["content"]
    assert as_text[2:] == [
        {"type": "text", "text": "<thinking>\nno signature\n</thinking>"},
        {"type": "text", "text": "<thinking>\nfrom deepseek\n</thinking>"},
        {"type": "text", "text": "Answer"},
    ]


def test_anthropic_server_tools_replayed_as_they_came():
    raw_result = {
        "type": "web_search_tool_result",
        "tool_use_id": "srv_1",
        "content": [{"type": "web_search_result", "url": "https://x", "title": "X", "encrypted_content": "E"}],
    }
    reply = AssistantMsg(
        "a",
        [
            call(
                "srv_1",
                "web_search",
                '{"query": "q"}',
                server_side=True,
                provider="anthropic",
                provider_block_type="server_tool_use",
            ),
            ToolResultBlock(
                id="srv_1",
                name="web_search",
                output="X <https://x>",
                state="success",
                metadata={"provider": "anthropic", "provider_block": raw_result},
            ),
            TextBlock(
                text="Found it.",
                citations=[
                    {
                        "type": "web_search_result_location",
                        "url": "https://x",
                        "title": "X",
                        "encrypted_index": "I",
                        "cited_text": "c",
                    }
                ],
            ),
        ],
    )
    content = fmt("anthropic", [UserMsg("u", "search"), reply])["messages"][1]["content"]
    assert content[0] == {"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {"query": "q"}}
    assert content[1] == raw_result
    assert content[2]["citations"][0]["url"] == "https://x"


def test_anthropic_media_sources():
    msgs = [
        UserMsg(
            "u",
            [
                img(),
                DataBlock(source=URLSource(url="https://example.com/a.jpg", media_type="image/jpeg")),
                DataBlock(source=Base64Source(data=PDF, media_type="application/pdf"), name="report.pdf"),
                DataBlock(source=URLSource(url="https://example.com/a.pdf", media_type="application/pdf")),
                DataBlock(source=Base64Source(data="aGVsbG8=", media_type="text/plain")),
                DataBlock(source=URLSource(url="data:image/png;base64," + PNG, media_type="image/png")),
            ],
        )
    ]
    assert fmt("anthropic", msgs)["messages"][0]["content"] == [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/a.jpg"}},
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": PDF},
            "title": "report.pdf",
        },
        {"type": "document", "source": {"type": "url", "url": "https://example.com/a.pdf"}},
        {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "hello"}},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
    ]


def test_anthropic_tools_tool_choice_and_cache_control():
    msgs = [SystemMsg("s", "sys"), UserMsg("u", "one"), AssistantMsg("a", "r1"), UserMsg("u", "two")]
    payload = fmt("anthropic", msgs, [WEATHER], "get_weather", cache_system=True, cache_tools=True, cache_last_turns=2)
    eph = {"type": "ephemeral"}
    assert payload["system"] == [{"type": "text", "text": "sys", "cache_control": eph}]
    assert payload["tools"] == [
        {
            "name": "get_weather",
            "description": "Weather for a city",
            "input_schema": WEATHER.parameters,
            "cache_control": eph,
        }
    ]
    assert payload["tool_choice"] == {"type": "tool", "name": "get_weather"}
    assert payload["messages"][0]["content"][-1]["cache_control"] == eph
    assert payload["messages"][2]["content"][-1]["cache_control"] == eph
    assert "cache_control" not in payload["messages"][1]["content"][-1]
    with pytest.raises(FormatError, match="5 cache breakpoints.*allows 4"):
        fmt(
            "anthropic",
            msgs + [AssistantMsg("a", "r2"), UserMsg("u", "3")],
            [WEATHER],
            cache_system=True,
            cache_tools=True,
            cache_last_turns=3,
        )
    for choice, expected in [("auto", {"type": "auto"}), ("none", {"type": "none"}), ("required", {"type": "any"})]:
        assert fmt("anthropic", msgs, [WEATHER], choice)["tool_choice"] == expected


# -- errors every formatter raises -------------------------------------------------------------


PROTOCOLS = protocol_names()


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_result_without_a_call_names_the_message(protocol):
    msgs = [UserMsg("u", "x"), AssistantMsg("a", [TextBlock(text="hm"), result("ghost")])]
    with pytest.raises(FormatError) as info:
        fmt(protocol, msgs)
    assert info.value.index == 1 and "'ghost' answers no tool call" in str(info.value)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_call_without_a_result_before_the_conversation_goes_on(protocol):
    msgs = [UserMsg("u", "x"), AssistantMsg("a", [call("c1")]), UserMsg("u", "and?")]
    with pytest.raises(FormatError, match="'c1' has no result") as info:
        fmt(protocol, msgs)
    assert info.value.index == 1


# Where a formatter refuses video, and where it leaves media types to the API (Gemini takes
# video, and its list of types changes by model: the capability record's media kinds say).
TAKES_VIDEO = {"gemini"}


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_unsupported_media_type_names_the_message(protocol):
    msgs = [UserMsg("u", "x"), UserMsg("u", [DataBlock(source=Base64Source(data="AAAA", media_type="video/mp4"))])]
    if protocol in TAKES_VIDEO:
        assert "video/mp4" in json.dumps(fmt(protocol, msgs))
        return
    with pytest.raises(FormatError, match="video/mp4") as info:
        fmt(protocol, msgs)
    assert info.value.index == 1


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_file_urls_must_be_resolved_first(protocol):
    msgs = [UserMsg("u", [DataBlock(source=URLSource(url="file:///tmp/a.png", media_type="image/png"))])]
    with pytest.raises(FormatError, match="file: sources"):
        fmt(protocol, msgs)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_running_results_and_unknown_tool_choice(protocol):
    with pytest.raises(FormatError, match="still running"):
        fmt(protocol, [UserMsg("u", "x"), AssistantMsg("a", [call("c"), result("c", state="running")])])
    with pytest.raises(FormatError, match="'nope', which is not among the tools"):
        fmt(protocol, [UserMsg("u", "x")], [WEATHER], "nope")


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_hints_inside_a_tool_turn_follow_its_results(protocol):
    reply = AssistantMsg("a", [call("c"), HintBlock(hint="be quick"), result("c"), TextBlock(text="done")])
    payload = fmt(protocol, [UserMsg("u", "go"), reply])
    flat = str(payload)
    assert flat.index("be quick") > flat.index("'ok'")


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_speaker_names_show_who_said_what(protocol):
    msgs = [
        UserMsg("alice", "I like tea."),
        UserMsg("bob", "I like coffee."),
        AssistantMsg("critic", "Both fine."),
        AssistantMsg("me", "Tea!"),
    ]
    payload = fmt(protocol, msgs, speaker_names=True, assistant_name="me")
    flat = str(payload)
    for line in ("alice: I like tea.", "bob: I like coffee.", "critic: Both fine."):
        assert line in flat
    assert "me: Tea!" not in flat and "Tea!" in flat
    plain = str(fmt(protocol, msgs))
    assert "alice:" not in plain


# -- OpenAI Chat -----------------------------------------------------------------------------


def test_chat_turns_tool_messages_and_media_from_tools():
    reply = AssistantMsg(
        "a",
        [
            TextBlock(text="Let me look."),
            call("c1", "get_weather", '{"city": "Paris"}'),
            call("c2", "chart", "{}"),
            result("c2", [img(), TextBlock(text="chart drawn")], name="chart"),
            result("c1", "sunny", name="get_weather"),
            TextBlock(text="Sunny; chart attached."),
        ],
    )
    payload = fmt(
        "openai-chat",
        [SystemMsg("s", "sys"), UserMsg("u", "Paris?"), reply],
        [WEATHER],
        "auto",
        system_role="developer",
    )
    assert payload == {
        "messages": [
            {"role": "developer", "content": "sys"},
            {"role": "user", "content": "Paris?"},
            {
                "role": "assistant",
                "content": "Let me look.",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                    },
                    {"id": "c2", "type": "function", "function": {"name": "chart", "arguments": "{}"}},
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
            {"role": "tool", "tool_call_id": "c2", "content": "chart drawn"},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Media returned by tool call c2 (chart):"},
                    {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
                ],
            },
            {"role": "assistant", "content": "Sunny; chart attached."},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "Weather for a city",
                    "parameters": WEATHER.parameters,
                },
            }
        ],
        "tool_choice": "auto",
    }


def test_chat_user_parts():
    wav = DataBlock(source=Base64Source(data="UklGRg==", media_type="audio/wav"))
    pdf = DataBlock(source=Base64Source(data=PDF, media_type="application/pdf"), name="r.pdf")
    url_img = DataBlock(source=URLSource(url="https://x/y.png", media_type="image/png"))
    payload = fmt("openai-chat", [UserMsg("u", [TextBlock(text="look"), url_img, wav, pdf])])
    assert payload["messages"][0]["content"] == [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
        {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
        {"type": "file", "file": {"filename": "r.pdf", "file_data": f"data:application/pdf;base64,{PDF}"}},
    ]
    with pytest.raises(FormatError, match="audio as base64 only"):
        fmt(
            "openai-chat", [UserMsg("u", [DataBlock(source=URLSource(url="https://x/a.mp3", media_type="audio/mpeg"))])]
        )


def test_chat_names_only_when_asked_and_sanitized():
    msgs = [UserMsg("Dr. Ana María", "hola"), UserMsg("bob", "hi")]
    assert all("name" not in m for m in fmt("openai-chat", msgs)["messages"])
    named = fmt("openai-chat", msgs, include_names=True)["messages"]
    assert [(m["name"], m["content"]) for m in named] == [("Dr_Ana_Mar_a", "hola"), ("bob", "hi")]


def test_chat_reasoning_replayed_only_to_dialects_that_want_it():
    reply = AssistantMsg(
        "a",
        [
            ThinkingBlock(thinking="think 1", provider="openai-chat", reasoning_field="reasoning_content"),
            call("c"),
            result("c"),
            ThinkingBlock(thinking="from claude", signature="s", provider="anthropic"),
            TextBlock(text="done"),
        ],
    )
    msgs = [UserMsg("u", "q"), reply]
    openai_payload = fmt("openai-chat", msgs)
    assert "reasoning_content" not in str(openai_payload)
    deepseek = fmt("openai-chat", msgs, reasoning_field="reasoning_content", reasoning_on_tool_calls=True)["messages"]
    assert deepseek[1]["reasoning_content"] == "think 1" and deepseek[1]["tool_calls"][0]["id"] == "c"
    assert "reasoning_content" not in deepseek[3]  # Claude's thinking is not DeepSeek's to replay
    # A tool-call turn with no reasoning of its own still gets the field when the dialect needs it.
    bare = fmt(
        "openai-chat",
        [UserMsg("u", "q"), AssistantMsg("a", [call("c"), result("c")])],
        reasoning_field="reasoning_content",
        reasoning_on_tool_calls=True,
    )
    assert bare["messages"][1]["reasoning_content"] == ""
    # Another provider's reasoning on a tool-call turn: its text, as AgentScope's formatters send
    # it (DeepSeek needs the reasoning of every tool-call turn back), never its signature.
    switched = fmt(
        "openai-chat",
        [
            UserMsg("u", "q"),
            AssistantMsg(
                "a", [ThinkingBlock(thinking="from claude", signature="sig-claude", provider="anthropic"), call("c")]
            ),
            AssistantMsg("a", [result("c")]),
        ],
        reasoning_field="reasoning_content",
        reasoning_on_tool_calls=True,
    )["messages"]
    assert switched[1]["reasoning_content"] == "from claude" and "sig-claude" not in str(switched)


def test_chat_refusal_and_tool_choice_shapes():
    msgs = [UserMsg("u", "bad"), AssistantMsg("a", [TextBlock(text="I can't help with that.", refusal=True)])]
    assert fmt("openai-chat", msgs)["messages"][1] == {
        "role": "assistant",
        "content": None,
        "refusal": "I can't help with that.",
    }
    assert fmt("openai-chat", msgs, [WEATHER], {"name": "get_weather"})["tool_choice"] == {
        "type": "function",
        "function": {"name": "get_weather"},
    }


# -- OpenAI Responses ------------------------------------------------------------------------


def test_responses_items_in_original_position():
    reply = AssistantMsg(
        "a",
        [
            ThinkingBlock(
                thinking="step 1",
                provider="openai-responses",
                reasoning_item_id="rs_1",
                reasoning_part="summary",
                summary_index=0,
                encrypted_content="gAAA",
            ),
            ThinkingBlock(
                thinking="step 2",
                provider="openai-responses",
                reasoning_item_id="rs_1",
                reasoning_part="summary",
                summary_index=1,
            ),
            call("call_1", "get_weather", '{"city": "Paris"}', item_id="fc_1"),
            ToolResultBlock(id="call_1", name="get_weather", output=[TextBlock(text="sunny"), img()], state="success"),
            ThinkingBlock(thinking="", provider="openai-responses", reasoning_item_id="rs_2", encrypted_content="gBBB"),
            TextBlock(text="Sunny.", item_id="msg_1", annotations=[]),
        ],
    )
    payload = fmt(
        "openai-responses",
        [SystemMsg("s", "sys"), UserMsg("u", [TextBlock(text="Paris?"), img()]), reply],
        [WEATHER],
        "required",
        instructions=True,
    )
    assert payload == {
        "instructions": "sys",
        "input": [
            {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "Paris?"},
                    {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}", "detail": "auto"},
                ],
            },
            {
                "type": "reasoning",
                "id": "rs_1",
                "summary": [{"type": "summary_text", "text": "step 1"}, {"type": "summary_text", "text": "step 2"}],
                "encrypted_content": "gAAA",
            },
            {
                "type": "function_call",
                "call_id": "call_1",
                "name": "get_weather",
                "arguments": '{"city": "Paris"}',
                "id": "fc_1",
            },
            {
                "type": "function_call_output",
                "call_id": "call_1",
                "output": [
                    {"type": "input_text", "text": "sunny"},
                    {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}", "detail": "auto"},
                ],
            },
            {"type": "reasoning", "id": "rs_2", "summary": [], "encrypted_content": "gBBB"},
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Sunny.", "annotations": []}],
                "status": "completed",
            },
        ],
        "tools": [
            {
                "type": "function",
                "name": "get_weather",
                "description": "Weather for a city",
                "parameters": WEATHER.parameters,
                "strict": False,
            }
        ],
        "tool_choice": "required",
    }
    without_ids = fmt("openai-responses", [UserMsg("u", "q"), reply], item_ids=False)["input"]
    assert without_ids[-1] == {"type": "message", "role": "assistant", "content": "Sunny."}
    assert "id" not in without_ids[2]


def test_responses_other_providers_thinking_is_not_replayed_and_system_items():
    reply = AssistantMsg(
        "a", [ThinkingBlock(thinking="claude's", signature="s", provider="anthropic"), TextBlock(text="hi")]
    )
    payload = fmt("openai-responses", [SystemMsg("s", "sys"), UserMsg("u", "q"), reply], system_role="developer")
    assert payload["input"] == [
        {"type": "message", "role": "developer", "content": "sys"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "q"}]},
        {"type": "message", "role": "assistant", "content": "hi"},
    ]


def test_which_urls_each_provider_fetches_itself():
    from modelwire.protocols.anthropic.formatter import AnthropicFormatter
    from modelwire.protocols.openai_chat.formatter import OpenAIChatFormatter
    from modelwire.protocols.openai_responses.formatter import OpenAIResponsesFormatter

    assert [AnthropicFormatter.needs_inline(t) for t in ("image/png", "application/pdf", "text/plain")] == [
        False,
        False,
        True,
    ]
    assert [OpenAIChatFormatter.needs_inline(t) for t in ("image/png", "audio/wav", "application/pdf")] == [
        False,
        True,
        True,
    ]
    assert not OpenAIResponsesFormatter.needs_inline("application/pdf")
    # Gemini fetches no http(s) media itself but a public YouTube video, which goes by its URL
    from modelwire.protocols import get_protocol

    gemini = get_protocol("gemini")
    assert not gemini.needs_inline("video/mp4", "https://www.youtube.com/watch?v=9hE5-98ZeCg")
    assert gemini.needs_inline("video/mp4", "https://example.com/v.mp4") and gemini.needs_inline("video/mp4")
    with pytest.raises(FormatError, match="text/plain documents as base64 only"):
        fmt("anthropic", [UserMsg("u", [DataBlock(source=URLSource(url="https://x/a.txt", media_type="text/plain"))])])


def test_a_youtube_video_goes_to_gemini_by_its_url_never_fetched():
    """The Gemini API reads public YouTube videos itself ("YouTube URLs" among its video input
    methods); fetched, a watch page is HTML sent as a video. The URL is not fetched (this
    machine has no network: a fetch would fail) and goes as fileData, as google-genai types it."""
    import asyncio

    from modelwire.models import load_model
    from modelwire.models._media import resolve_sources

    url = "https://www.youtube.com/watch?v=9hE5-98ZeCg"
    video = DataBlock(source=URLSource(url=url, media_type="video/mp4"))
    model = load_model("google:gemini-2.5-flash", api_key="k")
    messages = [UserMsg("u", [TextBlock(text="Summarize the video."), video])]
    resolved = asyncio.run(
        resolve_sources(messages, model.wire, model.transport, model.max_source_bytes, model.endpoint)
    )
    assert resolved[0].content[1] is video  # left as it is
    payload = model.build_request(resolved)[0]
    assert payload["contents"][0]["parts"][1] == {"fileData": {"mimeType": "video/mp4", "fileUri": url}}
    sdk_params.gemini_request(payload)
    other = DataBlock(source=URLSource(url="https://www.youtube.com.evil/v.mp4", media_type="video/mp4"))
    with pytest.raises(FormatError, match="cannot be sent https: sources"):
        fmt("gemini", [UserMsg("u", [other])])  # any other page is fetched first, never sent as a URL
