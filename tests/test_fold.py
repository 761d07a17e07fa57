"""``Msg.append_event``: the effect of every event, and what happens on bad input."""

from __future__ import annotations

import base64

import pytest
from helpers import Reply, fold

from modelwire import event as E
from modelwire.errors import EventApplyError, RoleError
from modelwire.message import AssistantMsg, Msg, PermissionRule, TextBlock, ToolCallBlock, ToolResultBlock, UserMsg


def test_text_thinking_and_tool_call_blocks_are_built_in_order_with_event_ids_and_times():
    r = Reply().start().call()
    r.thinking("t1", "Let me ", "think.", extras={"signature": "EqQBCgIYAhIM"})
    r.text("b1", "Hel", "", "lo ", "🙂")
    r.tool_call("c1", "get_weather", "", '{"city":', ' "Paris"}')
    r.call_end(10, 20, cache_input_tokens=3, cache_creation_input_tokens=4, reasoning_tokens=5)
    r.end()
    msg = fold(r.events)
    thinking, text, call = msg.content
    assert (thinking.type, thinking.id, thinking.thinking, thinking.signature) == (
        "thinking",
        "t1",
        "Let me think.",
        "EqQBCgIYAhIM",
    )
    assert (text.id, text.text) == ("b1", "Hello 🙂")
    assert (call.id, call.name, call.input, call.state) == ("c1", "get_weather", '{"city": "Paris"}', "pending")
    by_type = {e.type: e for e in r.events}
    assert text.created_at == by_type["TEXT_BLOCK_START"].created_at
    assert call.finished_at == by_type["TOOL_CALL_END"].created_at
    assert msg.usage.to_dict() == {
        "input_tokens": 10,
        "output_tokens": 20,
        "cache_input_tokens": 3,
        "cache_creation_input_tokens": 4,
        "reasoning_tokens": 5,
    }
    assert msg.finished_reason == "completed" and msg.finished_at == r.events[-1].created_at


def test_usage_sums_over_model_calls():
    r = Reply().start().call().call_end(5, 1, cache_input_tokens=2).call().call_end(7, 3, cache_input_tokens=1).end()
    u = fold(r.events).usage
    assert (u.input_tokens, u.output_tokens, u.cache_input_tokens) == (12, 4, 3)


def test_text_end_with_text_replaces_the_deltas():
    r = Reply().start().call().text("b", "said too ", "much", text="said").call_end().end()
    assert fold(r.events).get_text_content() == "said"


def test_reading_mid_stream_sees_everything_folded_so_far():
    msg = AssistantMsg("a", [], id="r")
    msg.append_event(E.TextBlockStartEvent(reply_id="r", block_id="b"))
    for piece in ["a", "b", "c"]:
        msg.append_event(E.TextBlockDeltaEvent(reply_id="r", block_id="b", delta=piece))
        assert msg.content[0].text.endswith(piece)
    assert msg.get_text_content() == "abc"
    block = msg.content[0]
    msg.append_event(E.TextBlockDeltaEvent(reply_id="r", block_id="b", delta="d"))
    assert msg.to_dict()["content"][0]["text"] == "abcd"
    assert block.text == "abcd"  # the same block object is updated when the message is read
    assert "abcd" in repr(msg)


def test_data_block_pieces_are_joined_into_one_base64_string():
    raw = bytes(range(256)) * 5
    aligned = [base64.b64encode(raw[i : i + 96]).decode() for i in range(0, len(raw), 96)]  # 96 = 4*24: no padding
    ragged = [base64.b64encode(raw[i : i + 97]).decode() for i in range(0, len(raw), 97)]  # padded pieces
    for pieces in (aligned, ragged):
        r = Reply().start().call()
        r.add(E.DataBlockStartEvent, block_id="img", media_type="image/png", name="chart.png")
        for p in pieces:
            r.add(E.DataBlockDeltaEvent, block_id="img", media_type="image/png", data=p)
        r.add(E.DataBlockEndEvent, block_id="img").call_end().end()
        block = fold(r.events).content[0]
        assert base64.b64decode(block.source.data, validate=True) == raw
        assert block.source.data == base64.b64encode(raw).decode()
        assert block.name == "chart.png" and block.source.media_type == "image/png"


def test_data_block_url_delta_replaces_the_inline_source_and_base64_cannot_follow_it():
    r = Reply().start().call()
    r.add(E.DataBlockStartEvent, block_id="d", media_type="image/png")
    r.add(E.DataBlockDeltaEvent, block_id="d", media_type="image/png", url="https://x/y.png")
    msg = fold(r.events)
    assert msg.content[0].source.type == "url" and msg.content[0].source.url == "https://x/y.png"
    before = msg.to_dict()
    with pytest.raises(EventApplyError, match="already holds a URL"):
        msg.append_event(E.DataBlockDeltaEvent(reply_id=msg.id, block_id="d", media_type="image/png", data="QUJD"))
    assert msg.to_dict() == before


def test_tool_results_gather_text_and_data_and_finish_the_call():
    img = base64.b64encode(b"\x89PNG" * 100).decode()
    r = Reply().start().call().tool_call("c1", "plot", "{}").call_end()
    r.add(E.ToolResultStartEvent, tool_call_id="c1", tool_call_name="plot")
    r.add(E.ToolResultTextDeltaEvent, tool_call_id="c1", delta="Here ")
    r.add(E.ToolResultTextDeltaEvent, tool_call_id="c1", delta="it is")
    r.add(E.ToolResultDataDeltaEvent, tool_call_id="c1", block_id="img", media_type="image/png", data=img[:200])
    r.add(E.ToolResultDataDeltaEvent, tool_call_id="c1", block_id="img", media_type="image/png", data=img[200:])
    r.add(E.ToolResultDataDeltaEvent, tool_call_id="c1", block_id="u", media_type="image/png", url="https://x/a.png")
    r.add(E.ToolResultTextDeltaEvent, tool_call_id="c1", delta="done")
    r.add(E.ToolResultEndEvent, tool_call_id="c1", state="success", metadata={"elapsed": 1.5})
    r.end()
    msg = fold(r.events)
    call, result = msg.content
    assert call.state == "finished"
    assert result.state == "success" and result.metadata == {"elapsed": 1.5}
    assert [o.type for o in result.output] == ["text", "data", "data", "text"]
    assert result.output[0].text == "Here it is" and result.output[3].text == "done"
    assert result.output[1].source.data == img and result.output[2].source.url == "https://x/a.png"
    assert result.finished_at == r.events[-2].created_at


def test_text_delta_on_a_result_whose_output_is_a_string():
    msg = AssistantMsg(
        "a", [ToolCallBlock(id="c", name="f", input="{}"), ToolResultBlock(id="c", name="f", output="pre")], id="r"
    )
    msg.append_event(E.ToolResultTextDeltaEvent(reply_id="r", tool_call_id="c", delta="+more"))
    assert msg.content[1].output[0].text == "pre+more"


def test_confirmation_flow_moves_call_states():
    rule = PermissionRule(tool_name="rm", rule_content="*.tmp", behavior="allow", source="user")
    r = Reply().start().call().tool_call("a", "rm", "{}").tool_call("b", "rm", "{}").call_end()
    msg = fold(r.events)
    asked = [
        ToolCallBlock(id="a", name="rm", input="{}", suggested_rules=[rule]),
        ToolCallBlock(id="b", name="rm", input="{}"),
    ]
    msg.append_event(E.RequireUserConfirmEvent(reply_id=msg.id, tool_calls=asked))
    assert [c.state for c in msg.content] == ["asking", "asking"]
    assert msg.content[0].suggested_rules == [rule]
    results = [
        E.ConfirmResult(confirmed=True, tool_call=asked[0]),
        E.ConfirmResult(confirmed=False, tool_call=asked[1]),
    ]
    msg.append_event(E.UserConfirmResultEvent(reply_id=msg.id, confirm_results=results))
    assert [c.state for c in msg.content] == ["allowed", "finished"]
    # A late, stale answer moves nothing.
    msg.append_event(
        E.UserConfirmResultEvent(
            reply_id=msg.id, confirm_results=[E.ConfirmResult(confirmed=False, tool_call=asked[0])]
        )
    )
    assert msg.content[0].state == "allowed"


def test_external_execution_flow():
    r = Reply().start().call().tool_call("x", "deploy", "{}").call_end()
    msg = fold(r.events)
    msg.append_event(E.RequireExternalExecutionEvent(reply_id=msg.id, tool_calls=[msg.content[0]]))
    assert msg.content[0].state == "submitted"
    result = ToolResultBlock(id="x", name="deploy", output="deployed", state="success")
    ev = E.ExternalExecutionResultEvent(reply_id=msg.id, execution_results=[result])
    msg.append_event(ev)
    assert msg.content[0].state == "submitted"  # as AgentScope folds it: the result beside it answers it
    assert msg.content[1].output == "deployed" and msg.content[1].finished_at == ev.created_at
    assert result.finished_at is None  # the event's block is copied, not adopted
    msg.append_event(ev)  # a duplicate answer is ignored
    assert len(msg.content) == 2


def test_hint_block_event_appends_a_complete_hint():
    r = Reply().start().add(E.HintBlockEvent, block_id="h", hint="3 tasks left", source='{"from":"scheduler"}')
    msg = fold(r.events)
    hint = msg.content[0]
    assert (hint.type, hint.id, hint.hint, hint.source) == ("hint", "h", "3 tasks left", '{"from":"scheduler"}')
    assert hint.created_at == hint.finished_at == r.events[1].created_at


def test_reply_end_sets_reason_and_error():
    r = Reply().start().end(finished_reason="error", error={"type": "rate_limit", "message": "429"})
    msg = fold(r.events)
    assert msg.finished_reason == "error" and msg.error.type == "rate_limit" and msg.error.message == "429"


def test_events_without_effect_and_custom_events_change_nothing():
    msg = AssistantMsg("a", [], id="r")
    before = msg.to_dict()
    for ev in [
        E.ReplyStartEvent(session_id="s", reply_id="r", name="a"),
        E.ModelCallStartEvent(reply_id="r", model_name="m"),
        E.UserInterruptEvent(reply_id="r"),
        E.ExceedMaxItersEvent(reply_id="r", name="a"),
        E.CustomEvent(name="x", value={"a": 1}),
    ]:
        msg.append_event(ev)
    assert msg.to_dict() == before


def test_append_event_takes_parsed_events_and_names_the_parser_for_json():
    msg = AssistantMsg("a", [], id="r")
    raw = {"type": "TEXT_BLOCK_START", "reply_id": "r", "block_id": "b"}
    with pytest.raises(EventApplyError, match="parse_event"):
        msg.append_event(raw)
    assert msg.content == []
    msg.append_event(E.parse_event(raw))
    msg.append_event(E.parse_event({"type": "TEXT_BLOCK_DELTA", "reply_id": "r", "block_id": "b", "delta": "x"}))
    assert msg.get_text_content() == "x"


# -- bad input: a typed error, and nothing lost -------------------------------------------------


@pytest.mark.parametrize(
    "bad",
    [
        E.TextBlockDeltaEvent(reply_id="other", block_id="b", delta="x"),
        E.TextBlockDeltaEvent(reply_id="r", block_id="nope", delta="x"),
        E.TextBlockEndEvent(reply_id="r", block_id="nope"),
        E.ThinkingBlockDeltaEvent(reply_id="r", block_id="b", delta="x"),  # b is a text block
        E.ToolCallDeltaEvent(reply_id="r", tool_call_id="nope", delta="x"),
        E.ToolResultTextDeltaEvent(reply_id="r", tool_call_id="nope", delta="x"),
        E.ToolResultEndEvent(reply_id="r", tool_call_id="nope", state="success"),
        E.DataBlockDeltaEvent(reply_id="r", block_id="nope", media_type="image/png", data="QUJD"),
        E.RequireUserConfirmEvent(
            reply_id="r",
            tool_calls=[ToolCallBlock(id="c", name="f", input="{}"), ToolCallBlock(id="zz", name="f", input="{}")],
        ),
    ],
    ids=lambda e: e.type,
)
def test_an_event_that_cannot_be_applied_raises_and_changes_nothing(bad):
    msg = AssistantMsg("a", [ToolCallBlock(id="c", name="f", input="{}")], id="r")
    msg.append_event(E.TextBlockStartEvent(reply_id="r", block_id="b"))
    msg.append_event(E.TextBlockDeltaEvent(reply_id="r", block_id="b", delta="kept"))
    before = msg.to_dict()
    with pytest.raises(EventApplyError) as info:
        msg.append_event(bad, strict=True)
    assert bad.type in str(info.value)
    assert msg.to_dict() == before
    msg.append_event(E.TextBlockDeltaEvent(reply_id="r", block_id="b", delta="+more"))
    assert msg.get_text_content() == "kept+more"


def test_folding_a_tool_call_into_a_user_message_is_a_role_error():
    msg = UserMsg("u", "hi", id="r")
    with pytest.raises(RoleError, match="'user'.*'tool_call'"):
        msg.append_event(E.ToolCallStartEvent(reply_id="r", tool_call_id="c", tool_call_name="f"))
    assert len(msg.content) == 1


def test_content_edits_between_events_keep_the_index_right():
    msg = AssistantMsg("a", [], id="r")
    msg.append_event(E.TextBlockStartEvent(reply_id="r", block_id="b"))
    msg.append_event(E.TextBlockDeltaEvent(reply_id="r", block_id="b", delta="one"))
    msg.content.insert(0, TextBlock(text="zero", id="z"))
    msg.append_event(E.TextBlockDeltaEvent(reply_id="r", block_id="b", delta="two"))
    assert [b.text for b in msg.content] == ["zero", "onetwo"]
    msg.content.pop(0)
    msg.append_event(E.TextBlockDeltaEvent(reply_id="r", block_id="b", delta="three"))
    assert msg.get_text_content() == "onetwothree"
    msg.content = []
    with pytest.raises(EventApplyError):
        msg.append_event(E.TextBlockDeltaEvent(reply_id="r", block_id="b", delta="four"), strict=True)


def test_json_round_trip_of_the_events_changes_nothing():
    r = Reply().start().call().thinking("t", "a", extras={"signature": "s", "reasoning_item_id": "rs_1"})
    r.text("b", "x", "y").tool_call("c", "f", '{"q"', ":1}").call_end(3, 4).tool_result("c", "f", "res")
    r.end()
    direct = fold(r.events)
    via_json = fold(E.loads_jsonl(E.dumps_jsonl(r.events)))
    assert direct == via_json
    assert Msg.from_dict(direct.to_dict()) == direct
