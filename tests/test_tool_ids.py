"""Tool-call ids and tool names each target takes: rewritten where a target refuses
them, the same for a call and its result, mapped back when the model calls a tool."""

from __future__ import annotations

import asyncio
import json
import re

import pytest

import sdk_params
from modelwire.agent import Agent, Tool
from modelwire.message import AssistantMsg, TextBlock, ToolCallBlock, ToolResultBlock, UserMsg
from modelwire.models import load_model
from modelwire.testing import ProviderServer, sse_reply
from modelwire.testing.sse import body as sse_body

KIMI = [
    UserMsg("user", "Weather in Paris and in Oslo?"),
    AssistantMsg(
        "agent",
        [
            TextBlock(text="Checking."),
            ToolCallBlock(id="functions.get_weather:0", name="get_weather", input='{"city": "Paris"}'),
            ToolCallBlock(id="functions.get_weather:1", name="get_weather", input='{"city": "Oslo"}'),
            ToolResultBlock(id="functions.get_weather:0", name="get_weather", output="sunny", state="success"),
            ToolResultBlock(id="functions.get_weather:1", name="get_weather", output="rain", state="success"),
        ],
    ),
    UserMsg("user", "Thanks. And tomorrow?"),
]
TOOLS = [
    {
        "name": "get_weather",
        "description": "w",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
]


def build(spec, messages, tools=TOOLS, tool_choice=None):
    model = load_model(spec, api_key="k", base_url="http://127.0.0.1:9")
    return model.build_request(messages, tools, tool_choice)[0]


def test_kimi_ids_to_anthropic_are_rewritten_consistently_and_replay_to_the_origin_unchanged():
    sent = build("anthropic:claude-sonnet-4-5", KIMI)
    sdk_params.streaming_request("anthropic", sent)
    uses = [
        c["id"]
        for m in sent["messages"]
        for c in m["content"]
        if isinstance(m["content"], list) and c["type"] == "tool_use"
    ]
    results = [
        c["tool_use_id"]
        for m in sent["messages"]
        for c in m["content"]
        if isinstance(m["content"], list) and c["type"] == "tool_result"
    ]
    assert uses == results and len(set(uses)) == 2
    assert all(re.fullmatch(r"[a-zA-Z0-9_-]+", i) for i in uses)
    assert build("anthropic:claude-sonnet-4-5", KIMI) == sent  # deterministic
    assert KIMI[1].content[1].id == "functions.get_weather:0"  # the history itself is not changed
    back = build("groq:moonshotai/kimi-k2-instruct", KIMI)  # the origin: byte for byte as before
    assert [c["id"] for m in back["messages"] for c in m.get("tool_calls") or []] == [
        "functions.get_weather:0",
        "functions.get_weather:1",
    ]


def test_mistral_ids_are_nine_letters_and_digits():
    sent = build("mistral:mistral-large-latest", KIMI)
    calls = [c["id"] for m in sent["messages"] for c in m.get("tool_calls") or []]
    answered = [m["tool_call_id"] for m in sent["messages"] if m["role"] == "tool"]
    assert calls == answered and all(re.fullmatch(r"[a-zA-Z0-9]{9}", i) for i in calls) and len(set(calls)) == 2
    nine = [
        UserMsg("u", "x"),
        AssistantMsg(
            "a",
            [
                ToolCallBlock(id="abcDEF123", name="get_weather", input="{}"),
                ToolResultBlock(id="abcDEF123", name="get_weather", output="ok", state="success"),
            ],
        ),
    ]
    assert [c["id"] for m in build("mistral:m", nine)["messages"] for c in m.get("tool_calls") or []] == ["abcDEF123"]


def test_bedrock_takes_what_botocore_takes():
    sent = build("bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0", KIMI)
    sdk_params.bedrock_request(sent)
    assert "functions.get_weather:0" in json.dumps(sent)  # [a-zA-Z0-9_.:-] is taken there


def test_ids_that_clean_up_alike_stay_apart():
    a, b = "call.1", "call:1"
    history = [
        UserMsg("u", "x"),
        AssistantMsg(
            "a",
            [
                ToolCallBlock(id=a, name="get_weather", input="{}"),
                ToolCallBlock(id=b, name="get_weather", input="{}"),
                ToolResultBlock(id=a, name="get_weather", output="A", state="success"),
                ToolResultBlock(id=b, name="get_weather", output="B", state="success"),
            ],
        ),
    ]
    sent = build("anthropic:claude-sonnet-4-5", history)
    results = {
        c["tool_use_id"]: c["content"]
        for m in sent["messages"]
        if isinstance(m["content"], list)
        for c in m["content"]
        if c["type"] == "tool_result"
    }
    assert len(results) == 2 and sorted(results.values()) == ["A", "B"]


MCP_TOOLS = [
    {
        "name": "fs/read_file",
        "description": "read",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
    {
        "name": "github.search:issues",
        "description": "search",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
    },
]


@pytest.mark.parametrize(
    "spec,pattern",
    [
        ("anthropic:claude-sonnet-4-5", r"^[a-zA-Z0-9_-]{1,64}$"),
        ("openai:gpt-4.1", r"^[a-zA-Z0-9_-]{1,64}$"),
        ("openai-responses:gpt-4.1", r"^[a-zA-Z0-9_-]{1,64}$"),
        ("bedrock:us.amazon.nova-micro-v1:0", r"^[a-zA-Z0-9_-]{1,64}$"),
        ("google:gemini-2.5-flash", r"^[a-zA-Z_][a-zA-Z0-9_.:-]{0,127}$"),
    ],
)
def test_mcp_style_names_are_sent_as_each_target_takes_them(spec, pattern):
    history = [
        UserMsg("u", "read it"),
        AssistantMsg(
            "a",
            [
                ToolCallBlock(id="c1", name="fs/read_file", input='{"path": "a"}'),
                ToolResultBlock(id="c1", name="fs/read_file", output="text", state="success"),
            ],
        ),
    ]
    sent = json.dumps(build(spec, history, MCP_TOOLS, "github.search:issues"))
    names = set(re.findall(r'"name": "([^"]+)"', sent))
    assert "fs/read_file" not in names
    assert all(re.match(pattern, n) for n in names), names
    if spec.startswith("google"):
        assert "github.search:issues" in names  # Gemini takes dots and colons


def test_the_model_calls_a_renamed_tool_and_the_agent_runs_the_right_function():
    ran = []

    async def read_file(path: str) -> str:
        """Read a file."""
        ran.append(path)
        return "contents of " + path

    tool = Tool(read_file, name="fs/read_file")
    with ProviderServer() as server:

        def respond(request):
            names = [t["name"] for t in request["json"].get("tools", [])]
            if len(server.requests) == 1:
                (sent_name,) = names
                assert sent_name != "fs/read_file" and re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", sent_name)
                return sse_reply(sse_body("anthropic", ("tool", "toolu_1", sent_name, '{"path": "notes.txt"}')))
            return sse_reply(sse_body("anthropic", ("text", "Done.")))

        server.respond = respond
        agent = Agent("a", load_model("anthropic:claude-sonnet-4-5", api_key="k", base_url=server.url), tools=[tool])
        reply = asyncio.run(agent.reply("Read notes.txt"))
    assert ran == ["notes.txt"]
    (call,) = reply.get_content_blocks("tool_call")
    assert call.name == "fs/read_file"  # the tool's own name, in the history
    (result,) = reply.get_content_blocks("tool_result")
    assert result.state == "success" and result.output[0].text == "contents of notes.txt"


# -- media a model cannot take ------------------------------------------------------------------


def _with_image():
    from modelwire.message import Base64Source, DataBlock

    image = DataBlock(source=Base64Source(data="iVBORw0KGgo=", media_type="image/png"), name="chart.png")
    return [UserMsg("user", [TextBlock(text="What is in this chart?"), image])]


def test_an_image_to_a_text_only_model_is_refused_before_sending_or_noted():
    from modelwire.errors import FormatError

    with pytest.raises(
        FormatError, match=r"deepseek:deepseek-chat takes no image input.*on_unsupported_media='note'"
    ) as info:
        build("deepseek:deepseek-chat", _with_image())
    assert info.value.index == 0
    model = load_model("deepseek:deepseek-chat", api_key="k", on_unsupported_media="note")
    sent = model.build_request(_with_image())[0]
    (user,) = [m for m in sent["messages"] if m["role"] == "user"]
    assert "image_url" not in json.dumps(
        user
    ) and "[image 'chart.png' not shown: deepseek:deepseek-chat takes no image input]" in json.dumps(user)
    assert "image_url" in json.dumps(build("openai:gpt-4.1", _with_image()))  # a model that takes images
    # A tool's image result is noted too, inside the result.
    from modelwire.message import Base64Source, DataBlock

    chart = DataBlock(source=Base64Source(data="iVBORw0KGgo=", media_type="image/png"))
    turn = AssistantMsg(
        "a",
        [
            ToolCallBlock(id="c1", name="get_weather", input="{}"),
            ToolResultBlock(id="c1", name="get_weather", output=[TextBlock(text="map:"), chart], state="success"),
        ],
    )
    sent = model.build_request([UserMsg("u", "x"), turn])[0]
    assert "not shown" in json.dumps(sent) and "iVBORw0KGgo" not in json.dumps(sent)
    # An image inside a hint (a background tool's result, as AgentScope writes one) too.
    from modelwire.message import HintBlock

    hinted = [
        UserMsg("u", "x"),
        AssistantMsg(
            "a", [TextBlock(text="ok"), HintBlock(hint=[TextBlock(text="the chart:"), chart], source="system")]
        ),
    ]
    sent = model.build_request(hinted)[0]
    assert "not shown" in json.dumps(sent) and "iVBORw0KGgo" not in json.dumps(sent)
    with pytest.raises(FormatError, match="takes no image input") as info:
        build("deepseek:deepseek-chat", hinted)
    assert info.value.index == 1


def test_an_id_that_fits_but_was_given_to_a_rewritten_one_gets_its_own():
    """A later call whose own id is the very id an earlier refused one was rewritten to (a
    conversation that went to Anthropic and came back) gets another: no two calls alike."""
    first = build("anthropic:claude-sonnet-4-5", KIMI)
    taken = next(
        c["id"]
        for m in first["messages"]
        for c in m["content"]
        if isinstance(m["content"], list) and c["type"] == "tool_use"
    )
    later = [
        *KIMI,
        AssistantMsg(
            "agent",
            [
                ToolCallBlock(id=taken, name="get_weather", input='{"city": "Rome"}'),
                ToolResultBlock(id=taken, name="get_weather", output="hot", state="success"),
            ],
        ),
    ]
    sent = build("anthropic:claude-sonnet-4-5", later)
    sdk_params.streaming_request("anthropic", sent)
    uses = [
        c["id"]
        for m in sent["messages"]
        for c in m["content"]
        if isinstance(m["content"], list) and c["type"] == "tool_use"
    ]
    results = [
        c["tool_use_id"]
        for m in sent["messages"]
        for c in m["content"]
        if isinstance(m["content"], list) and c["type"] == "tool_result"
    ]
    assert uses == results and len(set(uses)) == 3
    assert uses[0] == taken and uses[2] != taken and all(re.fullmatch(r"[a-zA-Z0-9_-]+", i) for i in uses)
