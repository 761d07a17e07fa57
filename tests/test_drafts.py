"""Requests built on the last one (modelwire.formatters._incremental): the payload and the
bytes of a draft that goes on from turn n equal a full format of turn n+1, on every
protocol; a change to a message already sent makes the next build start again."""

from __future__ import annotations

import asyncio
import base64
import json

import pytest

from modelwire.formatters import ToolSpec
from modelwire.protocols import get_formatter
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
    UserMsg,
)
from modelwire.models import load_model
from modelwire.models._body import encode_body
from modelwire.protocols import protocol_names
from modelwire.testing.server import ProviderServer

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(200))).decode()
TOOLS = [
    ToolSpec("get_weather", "Weather", {"type": "object", "properties": {"city": {"type": "string"}}}),
    ToolSpec("get_time", "Time"),
]


def turn(i: int) -> list:
    """The messages one round of an agent adds: a question, the answer with its tool work,
    now and then a hint, a system note, a result given as blocks, an image."""
    user = [TextBlock(text=f"Question {i}: the weather in city {i}?")]
    if i % 3 == 0:
        user.append(DataBlock(source=Base64Source(data=PNG, media_type="image/png")))
    answer = [
        ThinkingBlock(thinking=f"Thinking {i}.", signature=f"sig{i}", provider="anthropic"),
        TextBlock(text="I'll check."),
        ToolCallBlock(id=f"call {i}.a", name="get_weather", input=f'{{"city": "c{i}"}}'),
        ToolCallBlock(id=f"call_{i}_b", name="get_time", input="{}"),
        ToolResultBlock(id=f"call_{i}_b", name="get_time", output="12:00", state="success"),
    ]
    if i % 4 == 1:
        answer.append(HintBlock(hint="Answer in one line."))
    answer.append(
        ToolResultBlock(id=f"call {i}.a", name="get_weather", output=[TextBlock(text="sunny")], state="success")
    )
    out = [UserMsg("user", user), AssistantMsg("agent", answer)]
    if i % 5 == 2:
        out.append(AssistantMsg("agent", [TextBlock(text=f"It is sunny in c{i}.")]))
    if i % 7 == 3:
        out.append(SystemMsg("system", f"Note {i}: be brief."))
    return out


def full(formatter, messages, tools=TOOLS):
    return formatter.format(messages, tools, "auto")


@pytest.mark.parametrize("protocol", protocol_names())
def test_a_draft_gives_the_full_format_turn_after_turn(protocol):
    formatter = get_formatter(protocol)()
    messages: list = [SystemMsg("system", "You are careful.")]
    draft = formatter.draft(TOOLS, "auto")
    assert draft is not None
    for i in range(12):
        messages += turn(i)
        assert draft.matches(messages)
        payload = draft.extend(messages).payload()
        expected = full(formatter, messages)
        assert payload == expected, i
        key = formatter.payload_turns
        assert encode_body({**payload, key: draft.turns_encoded(payload[key])}) == encode_body(expected), i
    assert draft.taken > 10 and len(draft.raws) > 10  # it went on, and kept the finished turns' bytes


@pytest.mark.parametrize("protocol", protocol_names())
def test_a_conversation_cut_inside_a_turn_goes_on_from_there(protocol):
    # Every message count, including those that stop between a call and its result's message.
    formatter = get_formatter(protocol)()
    history = [SystemMsg("system", "Hi.")] + [m for i in range(6) for m in turn(i)]
    split = [
        AssistantMsg("agent", [ToolCallBlock(id="x1", name="get_time", input="{}")]),
        AssistantMsg("agent", [ToolResultBlock(id="x1", name="get_time", output="9", state="success")]),
    ]
    history += split + [UserMsg("user", "thanks")]
    draft = formatter.draft(TOOLS, "auto")
    for n in range(1, len(history) + 1):
        payload = draft.extend(history[:n]).payload()
        assert payload == full(formatter, history[:n]), n


def _edits():
    """Changes to a message already sent, each of which the next build must see."""

    def text(msgs):
        msgs[1].content[0].text = "Changed question"

    def result(msgs):
        msgs[2].content[-1].output = "rain"

    def append(msgs):
        msgs[1].content.append(TextBlock(text="And one more thing."))

    def delete(msgs):
        del msgs[2].content[-1]  # the weather result, and the call it answered
        del msgs[2].content[2]

    def name(msgs):
        msgs[1].content = [TextBlock(text="Replaced")]

    def replaced(msgs):
        msgs[1] = UserMsg("user", "Another first question")

    def source(msgs):
        msgs[1].content[1].source.media_type = "image/jpeg"

    def extra(msgs):
        msgs[2].content[1].citations = [{"type": "char_location", "cited_text": "x"}]

    def event(msgs):
        from modelwire import event as E

        reply = msgs[2]
        msgs[2].append_event(E.TextBlockStartEvent(reply_id=reply.id, block_id="late"))
        msgs[2].append_event(E.TextBlockDeltaEvent(reply_id=reply.id, block_id="late", delta="late words"))

    return [text, result, append, delete, name, replaced, source, extra, event]


# Edits a protocol's request does not show, because it sends no such field: text citations
# are Anthropic's own (no other protocol sends them back), and Ollama sends no media type. A
# draft must see them all the same: the next request may go to a target that shows them.
def _not_shown(protocol: str, edit: str) -> bool:
    return (edit == "extra" and protocol != "anthropic") or (protocol, edit) == ("ollama", "source")


@pytest.mark.parametrize("edit", _edits(), ids=lambda f: f.__name__)
@pytest.mark.parametrize("protocol", protocol_names())
def test_a_change_to_a_sent_message_is_seen(protocol, edit):
    formatter = get_formatter(protocol)()
    messages = [SystemMsg("system", "Hi.")] + [m for i in range(4) for m in turn(i)]
    draft = formatter.draft(TOOLS, "auto")
    before = draft.extend(messages).payload()
    messages = list(messages)
    edit(messages)
    after = full(formatter, messages)
    assert (after == before) == _not_shown(protocol, edit.__name__)  # the edit is one its request shows, unless said
    assert not draft.matches(messages)


@pytest.mark.parametrize("protocol", protocol_names())
def test_each_request_sent_is_a_full_build_and_only_the_new_is_formatted(protocol):
    """Over a real socket, a conversation that grows by a turn per call: each body the server
    receives is what a full build sends, and the formatter takes only what is new."""
    from modelwire.testing import stream_reply
    from modelwire.testing.sse import body

    with ProviderServer() as server:
        server.respond = lambda request: stream_reply(protocol, body(protocol, ("text", "Fine.")))
        model = server.model(protocol)
        messages: list = [SystemMsg("system", "You are careful.")]
        sent, drafts = [], []
        for i in range(8):
            messages += turn(i)
            asyncio.run(model.complete(messages, tools=TOOLS))
            sent.append(list(messages))
            drafts += [kept[1] for kept in model._drafts.values()]
        bodies = [r["json"] for r in server.requests]
    for request, msgs in zip(bodies, sent, strict=True):
        expected, _ = model.build_request(msgs, TOOLS)
        assert request == json.loads(encode_body(expected))
    assert len(drafts) == 8 and all(d is drafts[0] for d in drafts)  # one draft, gone on from each time
    assert drafts[0].fed == sent[-1]


def test_an_agent_keeps_one_draft_and_goes_on_from_it():
    from modelwire.agent import Agent
    from modelwire.testing import sse_reply
    from modelwire.testing.sse import body

    with ProviderServer() as server:
        server.script(
            sse_reply(body("anthropic", ("tool", "toolu_1", "get_time", "{}"))),
            sse_reply(body("anthropic", ("text", "It is noon."))),
            sse_reply(body("anthropic", ("text", "Still noon."))),
        )
        model = load_model("anthropic:claude-sonnet-4-5", api_key="k", base_url=server.url)
        agent = Agent("a", model, system_prompt="Be brief.", tools=[ToolSpecTool()])
        asyncio.run(agent.reply("What time is it?"))
        first = next(iter(model._drafts.values()))[1]
        asyncio.run(agent.reply("And now?"))
        (kept,) = model._drafts.values()
        assert len(server.requests) == 3
    assert kept[1] is first  # the same draft, gone on from
    # It keeps the system prompt and the first reply's messages; the reply streaming when a
    # request went is formatted with that request only.
    assert (
        first.fed[0].role == "system" and first.fed[1:] == agent.context[: len(first.fed) - 1] and len(first.fed) >= 3
    )


def ToolSpecTool():
    from modelwire.agent import Tool

    def get_time() -> str:
        """The time."""
        return "12:00"

    return Tool(get_time)


@pytest.mark.parametrize(
    "spec",
    [
        "anthropic:claude-sonnet-4-5",
        "bedrock:us.anthropic.claude-sonnet-4-5-v1:0",
        "bedrock:amazon.nova-pro-v1:0",
        "google:gemini-2.5-flash",
    ],
)
def test_cache_marks_never_land_on_a_drafts_turns(spec):
    """A cache plan marks the last turn, the system prompt and the tools of each request:
    on copies, so the next request built on the draft is still a full build's."""
    model = load_model(spec, api_key="k", base_url="http://127.0.0.1:9", cache=True)
    messages: list = [SystemMsg("system", "Be brief.")]
    for i in range(5):
        messages += turn(i)
        drafted: list = []
        body, opts = model.build_request(messages, TOOLS, drafts=drafted)
        expected, _ = model.build_request(messages, TOOLS)
        assert body == expected, i
        assert drafted and model._drafted_body(body, opts, (drafted[0], drafted[1])) == encode_body(expected), i
    assert len(model._drafts) == 1 and len(next(iter(model._drafts.values()))[1].fed) == len(messages)


def test_a_draft_that_raised_is_dropped_and_the_next_build_starts_again():
    model = load_model("anthropic:claude-sonnet-4-5", api_key="k")
    messages: list = [SystemMsg("system", "Hi.")] + turn(0)
    model.build_request(messages, TOOLS, drafts=[])
    assert len(model._drafts) == 1
    bad = messages + [
        AssistantMsg("agent", [ToolResultBlock(id="nowhere", name="get_time", output="1", state="success")])
    ]
    from modelwire.errors import FormatError

    with pytest.raises(FormatError, match="answers no tool call"):
        model.build_request(bad, TOOLS, drafts=[])
    assert not model._drafts
    payload, _ = model.build_request(messages + turn(1), TOOLS, drafts=[])
    assert payload == model.build_request(messages + turn(1), TOOLS)[0]


def test_other_tools_start_a_new_draft():
    model = load_model("openai:gpt-4.1", api_key="k")
    messages: list = [SystemMsg("system", "Hi.")] + turn(0)
    model.build_request(messages, TOOLS, drafts=[])
    first = next(iter(model._drafts.values()))[1]
    payload, _ = model.build_request(messages, TOOLS[:1], drafts=[])
    assert next(iter(model._drafts.values()))[1] is not first
    assert [t["function"]["name"] for t in payload["tools"]] == ["get_weather"]


def test_new_messages_are_media_checked_and_a_change_of_refusals_starts_again():
    model = load_model(
        "anthropic:claude-sonnet-4-5", api_key="k", capabilities={"image_input": False}, on_unsupported_media="note"
    )
    messages: list = [SystemMsg("system", "Hi.")] + turn(1) + turn(2)
    model.build_request(messages, TOOLS, drafts=[])
    messages += turn(3)  # its question holds an image
    body, _ = model.build_request(messages, TOOLS, drafts=[])
    assert "[image not shown" in json.dumps(body) and body == model.build_request(messages, TOOLS)[0]
    first = next(iter(model._drafts.values()))[1]
    model._capabilities = None
    model._capability_overrides = {}  # now it takes images: the draft's notes would be wrong
    body, _ = model.build_request(messages, TOOLS, drafts=[])
    assert "image not shown" not in json.dumps(body) and next(iter(model._drafts.values()))[1] is not first


def test_tools_given_again_as_equal_values_keep_the_draft_and_a_change_in_place_does_not():
    model = load_model("openai:gpt-4.1", api_key="k")
    messages: list = [SystemMsg("system", "Hi.")] + turn(0)

    def tools() -> list:  # rebuilt on every call, as an agent framework does
        return [{"type": "function", "function": {"name": "get_time", "description": "Time", "parameters": {}}}]

    model.build_request(messages, tools(), drafts=[])
    first = next(iter(model._drafts.values()))[1]
    messages += turn(1)
    given = tools()
    model.build_request(messages, given, drafts=[])
    assert next(iter(model._drafts.values()))[1] is first
    given[0]["function"]["description"] = "The time now"  # changed in place, no new object
    messages += turn(2)
    payload, _ = model.build_request(messages, given, drafts=[])
    assert next(iter(model._drafts.values()))[1] is not first
    assert payload == model.build_request(messages, given)[0]
    assert payload["tools"][0]["function"]["description"] == "The time now"


def test_a_function_tool_is_the_same_tool_while_it_is_the_same_object():
    def get_time() -> str:
        """The time."""
        return "12:00"

    def get_time_again() -> str:
        """The time."""
        return "12:00"

    model = load_model("anthropic:claude-sonnet-4-5", api_key="k")
    messages: list = [SystemMsg("system", "Hi.")] + turn(0)
    from modelwire.agent import tool

    one, other = tool(get_time), tool(get_time_again)
    model.build_request(messages, [one], drafts=[])
    first = next(iter(model._drafts.values()))[1]
    model.build_request(messages + turn(1), [one], drafts=[])
    assert next(iter(model._drafts.values()))[1] is first
    model.build_request(messages + turn(1) + turn(2), [other], drafts=[])
    assert next(iter(model._drafts.values()))[1] is not first


@pytest.mark.parametrize("protocol", ["anthropic", "openai-chat", "gemini"])
def test_a_repeated_tool_name_is_refused_among_thousands(protocol):
    from modelwire.errors import FormatError

    many = [ToolSpec(f"tool_{i}", "A tool.") for i in range(4000)] + [ToolSpec("tool_7", "Again.")]
    with pytest.raises(FormatError, match=r"repeated: \['tool_7'\]"):
        get_formatter(protocol)().format([UserMsg("user", "Hi.")], many)


def test_a_source_in_a_message_added_or_changed_is_still_read_under_the_policy(tmp_path):
    """The messages a request sent, unchanged and holding no URL, are not walked again for
    sources; one added, or changed to hold a URL, is, under the call's source policy."""
    from modelwire.errors import SourceRefusedError
    from modelwire.message import URLSource
    from modelwire.sources import SourcePolicy, use_source_policy

    note = tmp_path / "pixel.png"
    note.write_bytes(base64.b64decode(PNG))
    model = load_model("anthropic:claude-sonnet-4-5", api_key="k", capability_lookup=False)
    messages: list = [SystemMsg("system", "Hi.")] + turn(1) + turn(2)

    def with_file() -> UserMsg:
        return UserMsg("user", [DataBlock(source=URLSource(url=note.as_uri(), media_type="image/png"))])

    async def body() -> bytes:
        return (await model._prepare(messages, TOOLS, None, None)).body

    asyncio.run(body())
    assert next(iter(model._drafts.values()))[2] == len(messages)  # the next call walks none of them
    messages += turn(4) + [with_file()]
    assert PNG in asyncio.run(body()).decode()
    with use_source_policy(SourcePolicy()), pytest.raises(SourceRefusedError):
        asyncio.run(body())  # the file read is refused for input from outside
    messages = messages[:-1]
    asyncio.run(body())
    messages[1].content = [*messages[1].content, with_file().content[0]]  # an earlier message changed
    with use_source_policy(SourcePolicy()), pytest.raises(SourceRefusedError):
        asyncio.run(body())
    assert PNG in asyncio.run(body()).decode()


def as_new_objects(messages: list) -> list:
    """The same messages as other objects: through their JSON, as an application that keeps
    its history as JSON loads it for each request."""
    from modelwire.message import Msg

    return [Msg.from_dict(json.loads(json.dumps(m.to_dict()))) for m in messages]


@pytest.mark.parametrize("protocol", protocol_names())
def test_the_same_messages_as_new_objects_go_on_from_the_draft(protocol):
    with ProviderServer() as server:
        model = server.model(protocol)
    messages: list = [SystemMsg("system", "Be brief.")]
    first = None
    for i in range(6):
        messages += turn(i)
        given = as_new_objects(messages)
        drafted: list = []
        body, opts = model.build_request(given, TOOLS, drafts=drafted)
        expected, _ = model.build_request(as_new_objects(messages), TOOLS)
        assert body == expected, i
        assert model._drafted_body(body, opts, (drafted[0], drafted[1])) == encode_body(expected), i
        first = first or drafted[0]
        assert drafted[0] is first, i  # one draft, gone on from
        assert drafted[0].fed[: len(given)] == given


@pytest.mark.parametrize(
    "change",
    [
        lambda m: m.content[0].replace(text=m.content[0].text + "!"),
        lambda m: m.content[0].replace(provenance={"provider": "anthropic"}),
        lambda m: m.content[0].replace(id="another"),
    ],
    ids=["text", "an extra", "a text block's id"],
)
def test_a_new_object_with_other_content_is_not_taken_for_the_old(change):
    """What a formatter reads of a message is its key: another text, another extra start a
    new draft; a text block's id, which no formatter sends, does not."""
    model = load_model("anthropic:claude-sonnet-4-5", api_key="k")
    messages: list = [SystemMsg("system", "Be brief.")] + turn(0) + turn(1)
    model.build_request(messages, TOOLS, drafts=[])
    first = next(iter(model._drafts.values()))[1]
    given = as_new_objects(messages)
    block = change(given[1])
    given[1] = given[1].replace(content=[block, *given[1].content[1:]])
    drafted: list = []
    body, _ = model.build_request(given, TOOLS, drafts=drafted)
    assert body == model.build_request(given, TOOLS)[0]
    assert (drafted[0] is first) == (block.id == "another")


def test_a_sent_message_changed_in_place_is_not_recognised_from_its_old_key():
    model = load_model("openai:gpt-4.1", api_key="k")
    messages: list = [SystemMsg("system", "Be brief.")] + turn(0) + turn(1)
    model.build_request(messages, TOOLS, drafts=[])
    model.build_request(as_new_objects(messages), TOOLS, drafts=[])  # the keys taken
    given = as_new_objects(messages)
    given[1].content[0].text = "Another question."  # assigned in place: the same object
    body, _ = model.build_request(given, TOOLS, drafts=[])
    assert body == model.build_request(given, TOOLS)[0]
    assert "Another question." in json.dumps(body)


@pytest.mark.parametrize("protocol", protocol_names())
def test_what_the_content_key_leaves_out_no_formatter_sends(protocol):
    """A text block's id and every block's times are left out of a message's content key:
    changed, they change no protocol's payload."""
    from modelwire.formatters._incremental import _UNREAD, _UNREAD_BY_TYPE

    messages: list = [SystemMsg("system", "Be brief.")] + turn(0) + turn(1) + turn(2)
    other = as_new_objects(messages)

    def changed(block):
        left_out = _UNREAD | _UNREAD_BY_TYPE.get(block.type, set())
        values = {"id": "another", "created_at": "2020-01-01T00:00:00", "finished_at": "2020-01-01T00:00:01"}
        if block.type == "tool_result" and not isinstance(block.output, str):
            block = block.replace(output=[changed(b) for b in block.output])
        return block.replace(**{k: v for k, v in values.items() if k in left_out})

    other = [m.replace(content=[changed(b) for b in m.content]) for m in other]
    formatter = get_formatter(protocol)()
    assert full(formatter, other) == full(formatter, messages)


def test_a_tool_object_changed_in_place_is_sent_as_it_is_now():
    """An agent's tool (or a ToolSpec) changed between two calls of one model: the second
    request carries the change, as a fresh model's would (found by an independent review)."""
    from modelwire.agent import Tool
    from modelwire.formatters import ToolSpec
    from modelwire.message import UserMsg
    from modelwire.models import load_model

    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    for tool in (Tool(add), ToolSpec("add", "Add.", {"type": "object", "properties": {}})):
        model = load_model("anthropic:claude-test", api_key="k", capability_lookup=False)
        msgs = [UserMsg("u", "1 + 2?")]
        drafts: list = []
        first = model.build_request(msgs, [tool], drafts=drafts)[0]
        assert first["tools"][0]["description"] == "Add." and drafts
        tool.description = "CHANGED"
        again = model.build_request(msgs, [tool], drafts=drafts)[0]
        fresh = load_model("anthropic:claude-test", api_key="k", capability_lookup=False).build_request(msgs, [tool])[0]
        assert again["tools"][0]["description"] == fresh["tools"][0]["description"] == "CHANGED"


def test_a_server_tool_changed_in_place_is_sent_as_it_is_now():
    """A provider-run tool's settings changed between two calls of one model: the second
    request carries the change, as a fresh model's would (the draft keeps its tools'
    converted fields only while they say the same; found by an independent review)."""
    from modelwire.formatters import ServerTool
    from modelwire.message import UserMsg
    from modelwire.models import load_model

    search = ServerTool("web_search", max_uses=3)
    model = load_model("anthropic:claude-test", api_key="k", capability_lookup=False)
    msgs = [UserMsg("u", "News?")]
    drafts: list = []
    first = model.build_request(msgs, [search], drafts=drafts)[0]
    assert first["tools"][0]["max_uses"] == 3 and drafts
    search.config["max_uses"] = 9
    again = model.build_request(msgs, [search], drafts=drafts)[0]
    fresh = load_model("anthropic:claude-test", api_key="k", capability_lookup=False).build_request(msgs, [search])[0]
    assert again["tools"][0]["max_uses"] == fresh["tools"][0]["max_uses"] == 9


def test_a_formatter_subclass_that_writes_its_own_finish_is_heard_on_the_model_path():
    """A shipped formatter subclassed to add a field in ``finish()``: a model's requests (a
    kept draft's payloads) carry it, as ``format()`` does."""
    from modelwire.message import UserMsg
    from modelwire.models import load_model
    from modelwire.protocols.openai_chat.formatter import OpenAIChatFormatter

    class Tagged(OpenAIChatFormatter):
        def finish(self, acc, tools, tool_choice):
            return {**super().finish(acc, tools, tool_choice), "metadata": {"tag": "x"}}

    model = load_model("openai:gpt-4.1", api_key="k", capability_lookup=False)
    model.formatter.__class__ = Tagged  # the model's own formatter, as configured, now the subclass
    msgs = [UserMsg("u", "hi")]
    drafts: list = []
    assert model.formatter.format(msgs)["metadata"] == {"tag": "x"}
    for _ in range(2):  # the draft's first payload, then a kept draft's
        assert model.build_request(msgs, None, drafts=drafts)[0]["metadata"] == {"tag": "x"}


@pytest.mark.parametrize(
    "spec",
    [
        "anthropic:claude-sonnet-4-5",
        "openai:gpt-4.1",
        "openai-responses:gpt-5",
        "google:gemini-2.5-flash",
        "bedrock:us.anthropic.claude-sonnet-4-5-v1:0",
    ],
)
def test_a_draft_converts_its_tools_once_and_no_request_changes_the_next(spec):
    """The tools are converted and checked once per draft, and each payload gets its own
    dicts and lists of them: what one request's body puts in them (``extra_body`` merged
    into the tool choice, a cache mark on the tools) is not in the next request."""
    model = load_model(spec, api_key="k", base_url="http://127.0.0.1:9", capability_lookup=False)
    messages: list = [SystemMsg("system", "Be brief.")] + turn(0)
    drafted: list = []
    model.build_request(messages, TOOLS, "get_time", drafts=drafted)
    draft, fields = drafted[0], drafted[0].fields
    assert fields, "the tools' fields are kept with the draft"
    marked = {key: {"marked": True} for key, value in fields.items() if isinstance(value, dict)}
    assert marked, fields
    for i in (1, 2):
        messages += turn(i)
        options = {"cache": True, "extra_body": marked} if i == 1 else None
        body, _ = model.build_request(messages, TOOLS, "get_time", options, drafts=drafted)
        assert drafted[0] is draft and draft.fields is fields  # not converted again
        expected, _ = model.build_request(messages, TOOLS, "get_time", options)
        assert body == expected, i
    assert "marked" not in json.dumps(body) and "cache" not in json.dumps(body)
    assert "marked" not in json.dumps(fields) and "cache" not in json.dumps(fields)


def test_the_content_key_tells_apart_values_equal_in_python_that_format_apart():
    """1, True and 1.0 are equal in Python and not in JSON; a subclass's own field is read
    too (each record class packs its own fields, never a base's reader)."""
    from modelwire.formatters._incremental import content_key

    def keyed(**extras) -> bytes | None:
        return content_key(AssistantMsg("agent", [TextBlock(text="Hi.", **extras)]))

    keys = [keyed(score=1), keyed(score=True), keyed(score=1.0), keyed(score=-0.0), keyed(score=0.0)]
    assert None not in keys and len(set(keys)) == len(keys)
    assert keyed(score=1) == keyed(score=1)

    class Noted(TextBlock):
        note: str = ""

    one, other = (AssistantMsg("agent", [Noted(text="Hi.", note=n)]) for n in ("a", "b"))
    assert content_key(AssistantMsg("agent", [TextBlock(text="Hi.")])) is not None  # the base's reader made first
    assert None not in (content_key(one), content_key(other)) and content_key(one) != content_key(other)


def test_a_number_too_big_for_the_content_key_still_builds_every_turn():
    """A block holding an int of 2**64 or more (msgpack, which the content key packs with, has
    no form for it): the message gets no key, so it is never taken for another, and every
    request is built as a fresh one (it raised OverflowError from the request build)."""
    from modelwire.formatters._incremental import content_key
    from modelwire.models import load_model

    message = UserMsg("u", [TextBlock.from_dict({"type": "text", "text": "Count.", "n": 2**70})])
    assert content_key(message) is None
    model = load_model("openai:gpt-4.1", api_key="k", capability_lookup=False)
    drafts: list = []
    for _ in range(2):
        sent = model.build_request([message], None, drafts=drafts)[0]
        assert sent["messages"] == [{"role": "user", "content": "Count."}]


TOOL_SPECS = [
    "anthropic:claude-sonnet-4-5",
    "openai:gpt-4.1",
    "openai-responses:gpt-5",
    "google:gemini-2.5-flash",
    "bedrock:us.anthropic.claude-sonnet-4-5-v1:0",
]


def fresh(spec: str):
    return load_model(spec, api_key="k", base_url="http://127.0.0.1:9", capability_lookup=False)


def sent(model, messages, tools, options=None) -> bytes:
    """The bytes a call of ``model`` would send (its draft's turns and tools as kept bytes)."""

    async def prepared() -> bytes:
        return (await model._prepare(messages, tools, "auto", options)).body  # type: ignore[no-any-return]

    return asyncio.run(prepared())


def cold(spec: str, messages, tools, options=None) -> bytes:
    """What a model that never saw these messages nor these tools encodes for them."""
    return encode_body(fresh(spec).build_request(messages, tools, "auto", options)[0])


def tool_list() -> list:
    """Tools, one of them of a name some targets refuse (sent rewritten, mapped back)."""
    return [
        ToolSpec(name, f"Tool {name}.", {"type": "object", "properties": {"n": {"type": "integer"}}})
        for name in ["fs/read_file", *(f"tool_{i}" for i in range(5))]
    ]


@pytest.mark.parametrize("spec", TOOL_SPECS)
def test_the_tools_bytes_a_draft_keeps_follow_a_change_in_place_extra_body_and_cache_marks(spec):
    """A draft's tools go into the body as bytes encoded once; each request is still the
    bytes a cold build sends: after a tool changed in place, with ``extra_body`` that puts a
    list of its own in place of a tools' list (the draft's first item kept in it) or merges
    into their dicts, after that ``extra_body`` is gone again, and with cache marks."""
    model, tools = fresh(spec), tool_list()
    messages: list = [SystemMsg("system", "Be brief.")] + turn(0)
    assert sent(model, messages, tools) == cold(spec, messages, tools)
    fields = model._drafts[id(messages[0])][1].fields
    assert fields and model._drafts[id(messages[0])][1].fields_raw, "the tools are kept as bytes"
    for i, step in enumerate(["changed in place", "extra_body's list", "extra_body merged", "as before", "cached"], 1):
        messages += turn(i)
        now = model._drafts[id(messages[0])][1].fields
        options = {
            "extra_body's list": {
                "extra_body": {k: [*v[:1], {"marked": True}] for k, v in now.items() if type(v) is list}
            },
            "extra_body merged": {"extra_body": {k: {"marked": True} for k, v in now.items() if type(v) is dict}},
            "cached": {"cache": True},
        }.get(step)
        if step == "changed in place":
            tools[0].description = "CHANGED"
        body = sent(model, messages, tools, options)
        assert body == cold(spec, messages, tools, options), step
        assert b"CHANGED" in body and (b"marked" in body) == bool((options or {}).get("extra_body")), step
    assert model._drafts[id(messages[0])][1].fields is not fields  # the tool changed: converted again


@pytest.mark.parametrize("spec", TOOL_SPECS)
def test_a_new_conversation_with_the_same_tools_takes_their_fields_and_bytes(spec):
    """A model keeps the tools' fields (and bytes) its drafts made by the tools' key: a new
    conversation with equal tools (other objects) converts none of them, and its body is a
    cold build's; one whose tool was changed in place since is converted afresh."""
    model, tools = fresh(spec), tool_list()
    first: list = [SystemMsg("system", "Be brief.")] + turn(0)
    sent(model, first, tools)
    fields = model._drafts[id(first[0])][1].fields
    other = [UserMsg("user", "Another conversation.")]
    assert sent(model, other, tool_list()) == cold(spec, other, tools)
    assert model._drafts[id(other[0])][1].fields is fields
    from modelwire.formatters._toolids import name_map

    rules = model.formatter.tool_name_rules
    assert model._name_map(tools, "auto") == name_map(tools, rules)
    assert rules is None or list(name_map(tools, rules).values()) == ["fs/read_file"]
    tools[0].description = "CHANGED"
    third = [UserMsg("user", "A third one.")]
    body = sent(model, third, tools)
    assert body == cold(spec, third, tools) and b"CHANGED" in body
    assert model._drafts[id(third[0])][1].fields is not fields
    kept = model._tool_fields
    assert len(kept) == 2 and kept[-1][1][3] is not fields
    for n in range(model.tool_fields_kept + 2):  # bounded: the most recently used are kept
        more = [UserMsg("user", f"Conversation {n}.")]
        sent(model, more, [ToolSpec(f"only_{n}", "One.")])
    assert len(model._tool_fields) == model.tool_fields_kept


def test_a_formatter_setting_changed_between_requests_is_in_the_next_one():
    """Bedrock's ``cache_tools`` turned on after a request: the next one, in the same
    conversation and in a new one with the same tools, has the cache point after the tools,
    as a cold build with it on does (the tools' fields kept by the draft and by the model
    are made from the tools alone)."""
    spec, tools = "bedrock:us.anthropic.claude-sonnet-4-5-v1:0", tool_list()
    model = fresh(spec)
    first: list = [SystemMsg("system", "Be brief.")] + turn(0)
    assert b"cachePoint" not in sent(model, first, tools)
    model.formatter.cache_tools = True

    def cold_cached(messages: list) -> bytes:
        other = fresh(spec)
        other.formatter.cache_tools = True
        return encode_body(other.build_request(messages, tools, "auto")[0])

    another = [UserMsg("user", "Another conversation.")]
    body = sent(model, another, tool_list())
    assert body == cold_cached(another) and b"cachePoint" in body
    first += turn(1)
    body = sent(model, first, tools)
    assert body == cold_cached(first) and b"cachePoint" in body


@pytest.mark.parametrize("spec", TOOL_SPECS)
def test_tool_names_follow_rules_a_lookup_changed_in_a_new_conversation(spec):
    """The tools' fields a model keeps are taken only under the name rules they were made
    with: after the capabilities changed the rules (a name pattern the provider published or
    its refusal taught; here as a lookup leaves them, resolved again), a new conversation
    with the same tools sends the names the new rules give, as a cold build with them does."""
    wider = {"tool_name_pattern": "^[a-zA-Z0-9_\\.-]{1,64}$"}  # (as a refusal states it)

    def dotted() -> list:
        return [ToolSpec(name, "A tool.", {"type": "object"}) for name in ("fs.read", "tool_0")]

    model, tools = fresh(spec), dotted()
    if model.formatter.tool_name_rules is None or model.formatter.tool_name_rules.fits("fs.read"):
        pytest.skip("this protocol sends the name as it is under its own rules")
    first = [UserMsg("user", "One conversation.")]
    assert b'"name":"fs.read"' not in sent(model, first, tools)  # rewritten under the formatter's own rules
    expected = load_model(spec, api_key="k", base_url="http://127.0.0.1:9", capability_lookup=False, capabilities=wider)
    model._capability_overrides, model._capabilities = expected._capability_overrides, None  # what a lookup does

    other = [UserMsg("user", "Another conversation.")]
    body = sent(model, other, dotted())
    assert body == sent(expected, other, tools)
    assert b'"name":"fs.read"' in body


def test_a_history_loaded_again_each_turn_walks_only_what_may_hold_a_source(tmp_path):
    """New objects of the content a request sent (a history loaded from JSON per request) go
    on from the draft on the model path, so the messages before the first URL source are not
    walked again; one holding a URL source still is, under the call's policy, and every body
    is a cold build's."""
    from modelwire.errors import SourceRefusedError
    from modelwire.message import URLSource
    from modelwire.sources import SourcePolicy, use_source_policy

    note = tmp_path / "pixel.png"
    note.write_bytes(base64.b64decode(PNG))
    spec = "anthropic:claude-sonnet-4-5"
    model = fresh(spec)
    messages: list = [SystemMsg("system", "Hi.")] + turn(1) + turn(2)
    sent(model, as_new_objects(messages), TOOLS)
    before = len(messages)
    messages += turn(3)
    given = as_new_objects(messages)
    assert model._plain(given) == before  # recognised: all but the new round
    assert sent(model, given, TOOLS) == cold(spec, given, TOOLS)
    source_at = len(messages)
    messages += [UserMsg("user", [DataBlock(source=URLSource(url=note.as_uri(), media_type="image/png"))])]
    assert PNG in sent(model, as_new_objects(messages), TOOLS).decode()
    messages += turn(5)
    given = as_new_objects(messages)
    assert model._plain(given) <= source_at  # never past the message with a source
    with use_source_policy(SourcePolicy()), pytest.raises(SourceRefusedError):
        sent(model, given, TOOLS)  # that one is walked again: the file read is refused for input from outside
    assert sent(model, given, TOOLS) == sent(fresh(spec), given, TOOLS)  # a model that never saw them


def test_a_history_loaded_again_with_a_compaction_window_elsewhere_is_cut_the_same():
    """A history holding Anthropic's compaction window, sent to OpenAI (its summary in place
    of what came before), loaded as new objects for each request: each body is a cold
    build's."""
    from test_compaction import SUMMARY, anthropic_compacting_stream

    from modelwire.testing import sse_reply

    with ProviderServer() as server:
        server.script(sse_reply(anthropic_compacting_stream(stop="end_turn")))
        reply = asyncio.run(server.model("anthropic", "claude-sonnet-4-6").complete([UserMsg("user", "weather?")]))
    messages: list = [SystemMsg("system", "Hi."), UserMsg("user", "weather?"), reply, UserMsg("user", "tomorrow?")]
    spec = "openai:gpt-4.1"
    model = fresh(spec)
    for i in range(4):
        given = as_new_objects(messages)
        body = sent(model, given, TOOLS)
        assert body == cold(spec, given, TOOLS), i
        assert SUMMARY.encode() in body and b"weather?" not in body, i
        messages += turn(10 + i)


def test_a_compaction_window_after_a_history_loaded_again_is_cut_whatever_was_scanned_last():
    """A conversation loaded again after the model served another: the scan for compaction
    windows goes on past what the draft holds, and a window in the new messages (Anthropic's,
    sent to OpenAI) cuts the history as a cold build does."""
    from test_compaction import SUMMARY, anthropic_compacting_stream

    from modelwire.testing import sse_reply

    with ProviderServer() as server:
        server.script(sse_reply(anthropic_compacting_stream(stop="end_turn")))
        reply = asyncio.run(server.model("anthropic", "claude-sonnet-4-6").complete([UserMsg("user", "weather?")]))
    spec = "openai:gpt-4.1"
    model = fresh(spec)
    first: list = [SystemMsg("system", "Hi.")] + turn(1) + turn(2)
    sent(model, as_new_objects(first), TOOLS)
    sent(model, [SystemMsg("system", "Other."), UserMsg("user", "b"), UserMsg("user", "c")], TOOLS)
    first += [UserMsg("user", "weather?"), reply, UserMsg("user", "tomorrow?")]
    given = as_new_objects(first)
    body = sent(model, given, TOOLS)
    assert body == cold(spec, given, TOOLS)
    assert SUMMARY.encode() in body and b"weather?" not in body
