"""Blocks, Msg, role rules, accessors and (de)serialization."""

from __future__ import annotations

import copy
import json
import pickle

import pytest
from modelwire.errors import ValidationError

from modelwire.errors import RoleError
from modelwire.message import (
    AssistantMsg,
    Base64Source,
    DataBlock,
    HintBlock,
    Msg,
    SystemMsg,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    URLSource,
    Usage,
    UserMsg,
)

PNG = DataBlock(source=Base64Source(data="iVBORw0KGgo=", media_type="image/png"))


def every_block():
    return [
        TextBlock(text="hi"),
        ThinkingBlock(thinking="hmm", signature="sig"),
        HintBlock(hint="be brief", source="system"),
        ToolCallBlock(id="c1", name="f", input='{"a": 1}'),
        ToolResultBlock(id="c1", name="f", output=[TextBlock(text="ok"), PNG], state="success"),
        PNG,
    ]


# -- blocks ------------------------------------------------------------------------------


def test_block_defaults_follow_the_contract():
    call = ToolCallBlock(id="c", name="n", input="")
    assert call.state == "pending" and call.suggested_rules == [] and call.finished_at is None
    result = ToolResultBlock(id="c", name="n", output="x")
    assert result.state == "running" and result.metadata == {}
    hint = HintBlock(hint="x")
    assert hint.finished_at is not None  # a hint is complete when made
    assert len(TextBlock(text="").id) == 32


@pytest.mark.parametrize("bad", ["Q", "Q=JD", "not base64!", "QUJDQ", "data:image/png,QUJD"])
def test_data_that_is_not_base64_is_kept_and_refused_where_it_would_be_sent(bad):
    """As AgentScope does, any string is taken when built (its seed writes data="..."); a
    formatter refuses it, naming the message and the block."""
    from modelwire.errors import FormatError
    from modelwire.protocols import get_formatter

    source = Base64Source(data=bad, media_type="image/png")
    assert source.data == bad
    msg = UserMsg("u", [TextBlock(text="look"), DataBlock(source=source, id="img-1")])
    for protocol in ("anthropic", "openai-chat", "openai-responses", "gemini", "bedrock-converse", "ollama"):
        with pytest.raises(FormatError, match=r"message \[1\]: data block 'img-1': .*base64") as info:
            get_formatter(protocol)().format([UserMsg("u", "hi"), msg])
        assert info.value.code == "bad-data" and info.value.index == 1


@pytest.mark.parametrize("loose", ["QUJ", "QUJ==", "QU JD\n", "data:image/png;base64,QUJD"])
def test_base64_source_normalises_what_other_tools_write(loose):
    """AgentScope takes any string; what it wrote must load (see test_protocols for more)."""
    assert Base64Source(data=loose, media_type="image/png").data in ("QUJ=", "QUJD")


@pytest.mark.parametrize("bad", ["image", "", "image/", "/png", "image png"])
def test_a_media_type_that_is_none_is_kept_and_refused_where_it_would_be_sent(bad):
    from modelwire.errors import FormatError
    from modelwire.protocols import get_formatter

    for source in (
        Base64Source(data="QUJD", media_type=bad),
        URLSource(url="https://example.com/a.png", media_type=bad),
    ):
        assert source.media_type == bad.strip()
        msg = UserMsg("u", [DataBlock(source=source, id="d")])
        with pytest.raises(FormatError, match="data block 'd': .*media type"):
            get_formatter("anthropic")().format([msg])


def test_url_source_needs_a_scheme_and_keeps_the_string_exactly():
    with pytest.raises(ValidationError, match="absolute URL"):
        URLSource(url="example.com/a.png", media_type="image/png")
    src = URLSource(url="https://Example.com", media_type="image/png")
    assert src.url == "https://Example.com"
    assert URLSource(url="data:image/png;base64,QUJD", media_type="image/png").url.startswith("data:")


def test_media_type_with_parameters_is_accepted():
    assert Base64Source(data="", media_type="audio/L16; rate=16000").media_type == "audio/L16; rate=16000"


def test_thinking_extras_survive_json_round_trip():
    block = ThinkingBlock(thinking="", redacted_thinking_data="abc", signature=None)
    msg = AssistantMsg("a", [block])
    again = Msg.from_dict(json.loads(msg.to_json()))
    assert again.content[0].redacted_thinking_data == "abc"
    assert again == msg


# -- role rules ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "factory,role,allowed",
    [(UserMsg, "user", {"text", "data"}), (SystemMsg, "system", {"text"}), (AssistantMsg, "assistant", None)],
)
def test_role_rules_at_construction(factory, role, allowed):
    for block in every_block():
        ok = allowed is None or block.type in allowed
        if ok:
            assert factory("n", [block]).role == role
        else:
            with pytest.raises(ValidationError) as info:
                factory("n", [block])
            assert repr(role) in str(info.value) and repr(block.type) in str(info.value)


def test_appending_a_tool_call_to_a_user_message_fails_and_names_role_and_type():
    msg = UserMsg("u", "hello")
    with pytest.raises(RoleError) as info:
        msg.content.append(ToolCallBlock(id="c", name="f", input="{}"))
    assert info.value.role == "user" and info.value.block_type == "tool_call"
    assert "'user'" in str(info.value) and "'tool_call'" in str(info.value)
    assert [b.type for b in msg.content] == ["text"]


@pytest.mark.parametrize(
    "mutate",
    [
        lambda m, b: m.content.insert(0, b),
        lambda m, b: m.content.extend([TextBlock(text="x"), b]),
        lambda m, b: m.content.__setitem__(0, b),
        lambda m, b: m.content.__setitem__(slice(0, 1), [b]),
        lambda m, b: m.content.__iadd__([b]),
        lambda m, b: setattr(m, "content", [b]),
        lambda m, b: setattr(m, "content", [b.to_dict()]),
    ],
    ids=["insert", "extend", "setitem", "slice", "iadd", "assign", "assign-dict"],
)
def test_every_content_change_is_checked_and_a_refused_one_changes_nothing(mutate):
    msg = SystemMsg("s", "rules")
    before = msg.to_dict()
    with pytest.raises(RoleError, match="'system'.*'thinking'"):
        mutate(msg, ThinkingBlock(thinking="x"))
    assert msg.to_dict() == before


def test_changing_the_role_is_checked_and_a_refused_change_keeps_the_old_role():
    msg = AssistantMsg("a", [TextBlock(text="x"), ToolCallBlock(id="c", name="f", input="{}")])
    with pytest.raises(RoleError, match="'user'.*'tool_call'"):
        msg.role = "user"
    assert msg.role == "assistant"
    msg2 = UserMsg("u", [TextBlock(text="x"), PNG])
    with pytest.raises(RoleError, match="'system'.*'data'"):
        msg2.role = "system"
    assert msg2.role == "user"
    msg2.role = "assistant"
    assert msg2.role == "assistant"
    with pytest.raises(ValidationError):
        msg2.role = "robot"


def test_allowed_mutations_work():
    msg = UserMsg("u", "a")
    msg.content.append(PNG)
    msg.content += [TextBlock(text="b")]
    msg.content[0] = TextBlock(text="A")
    assert [b.type for b in msg.content] == ["text", "data", "text"]
    assert msg.get_text_content() == "A\nb"
    msg.content = "plain"
    assert msg.get_text_content() == "plain"


# -- factories and accessors ----------------------------------------------------------------


def test_factories_wrap_strings_and_set_defaults():
    u = UserMsg("alice", "hi")
    assert u.role == "user" and u.name == "alice" and u.content[0].text == "hi"
    assert u.finished_at == u.created_at
    s = SystemMsg("system", "be kind")
    assert s.finished_at == s.created_at
    a = AssistantMsg("bot", "hello", usage=Usage(input_tokens=1, output_tokens=2))
    assert a.finished_at is None and a.usage.output_tokens == 2
    assert UserMsg("u", "x", id="fixed").id == "fixed"


def test_accessors():
    msg = AssistantMsg("a", every_block() + [TextBlock(text="bye")])
    assert msg.get_text_content() == "hi\nbye"
    assert msg.get_text_content(separator="|") == "hi|bye"
    assert AssistantMsg("a", [ThinkingBlock(thinking="x")]).get_text_content() is None
    assert [b.type for b in msg.get_content_blocks("tool_call")] == ["tool_call"]
    assert [b.type for b in msg.get_content_blocks(["text", "data"])] == ["text", "data", "text"]
    assert len(msg.get_content_blocks()) == 7
    assert msg.has_content_blocks("tool_result") and not msg.has_content_blocks(["audio"])
    assert msg.has_content_blocks() and not AssistantMsg("a", []).has_content_blocks()


# -- serialization ---------------------------------------------------------------------------


def test_message_json_round_trip_with_every_field():
    msg = AssistantMsg(
        "a",
        every_block(),
        metadata={"k": [1, 2]},
        structured_output={"answer": 42},
        usage=Usage(input_tokens=3, output_tokens=4, cache_input_tokens=1, cache_creation_input_tokens=2),
        finished_reason="error",
    )
    msg.error = {"type": "rate_limit", "message": "slow down"}
    data = msg.to_dict()
    assert data["error"] == {"type": "rate_limit", "message": "slow down"}
    assert data["finished_reason"] == "error"
    again = Msg.from_dict(data)
    assert again == msg and again.to_dict() == data
    assert Msg.from_dict(json.loads(msg.to_json())) == msg


def test_copies_and_pickles_keep_the_role_rules():
    msg = UserMsg("u", "x")
    for other in (copy.copy(msg), copy.deepcopy(msg), msg.replace(), pickle.loads(pickle.dumps(msg))):
        assert other == msg
        with pytest.raises(RoleError):
            other.content.append(ThinkingBlock(thinking="no"))


def test_invalid_payloads_give_precise_errors():
    with pytest.raises(ValidationError) as info:
        Msg.from_dict({"name": "x", "role": "assistant", "content": [{"type": "tool_call", "name": "f"}]})
    text = str(info.value)
    assert "tool_call" in text and "id" in text and "input" in text
    with pytest.raises(ValidationError, match="union_tag_invalid|does not match any of the expected tags"):
        Msg.from_dict({"name": "x", "role": "assistant", "content": [{"type": "image", "url": "x"}]})


def test_openai_style_message_dicts_are_taken_as_input():
    """``{"role": "user", "content": "..."}`` (no ``name``), as OpenAI's and most libraries'
    messages are written: the role is the speaker's name; a full message's JSON is read as it is."""
    from modelwire.message import as_messages

    msgs = as_messages(
        [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "text", "text": "yo"}]},
        ]
    )
    assert [(m.role, m.name, m.get_text_content()) for m in msgs] == [
        ("system", "system", "Be brief."),
        ("user", "user", "hi"),
        ("assistant", "assistant", "yo"),
    ]
    assert as_messages({"role": "user", "name": "ann", "content": "hi"})[0].name == "ann"
