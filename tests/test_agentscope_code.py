"""Code written for AgentScope runs on modelwire's classes: its pydantic-named methods, its
names, its lenient construction and its fold, checked against AgentScope 2.0.11 itself."""

from __future__ import annotations

import json
import logging
import warnings

import pytest

from modelwire import event as E
from modelwire.errors import EventApplyError
from modelwire.message import AssistantMsg, Base64Source, Msg, TextBlock, ToolCallBlock, Usage, UserMsg

agentscope = pytest.importorskip("agentscope", reason="the dev extra installs agentscope==2.0.11")
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from agentscope import event as as_event  # noqa: E402
    from agentscope import message as as_message  # noqa: E402


def _theirs(msg: Msg):
    return as_message.Msg.model_validate(json.loads(msg.to_json()))


def test_model_dump_is_agentscopes_for_the_same_message():
    msg = AssistantMsg(
        "bot",
        [TextBlock(text="hi"), ToolCallBlock(id="c", name="f", input="{}")],
        usage=Usage(input_tokens=3, output_tokens=2),
    )
    theirs = _theirs(msg)
    assert msg.model_dump() == theirs.model_dump(mode="json")  # no modelwire-only field while it is unset
    assert msg.model_dump(exclude_none=True) == theirs.model_dump(mode="json", exclude_none=True)
    assert json.loads(msg.model_dump_json()) == json.loads(theirs.model_dump_json())
    msg.usage.reasoning_tokens = 1  # set: then it is there
    assert msg.model_dump()["usage"]["reasoning_tokens"] == 1


def test_model_validate_and_copy():
    msg = UserMsg("me", "hello")
    data = msg.model_dump()
    assert Msg.model_validate(data) == msg and Msg.model_validate(msg) is msg
    assert Msg.model_validate_json(json.dumps(data)) == msg
    copied = msg.model_copy(update={"name": "you"})
    assert copied.name == "you" and msg.name == "me" and copied.content == msg.content
    deep = msg.model_copy(deep=True)
    assert deep == msg and deep.content[0] is not msg.content[0]
    event = E.TextBlockDeltaEvent(reply_id="r", block_id="b", delta="x")
    assert E.TextBlockDeltaEvent.model_validate(event.model_dump()) == event
    with pytest.raises(TypeError, match="by_alias"):
        msg.model_dump(by_alias=True)  # refused, never ignored


def test_the_names_agentscopes_event_module_exports():
    for name in ("ReplyEndReason", "ReplyFinishedReason"):
        ours, theirs = getattr(E, name), getattr(as_event, name)
        assert {m.value for m in ours} == {m.value for m in theirs}
    missing = [n for n in dir(as_event) if not n.startswith("_") and not hasattr(E, n)]
    assert missing == []
    from modelwire import message as M

    assert [n for n in as_message.__all__ if not hasattr(M, n)] == []


def test_types_states_and_reasons_are_agentscopes_enums():
    """``event.type.value`` (the seeds' tutorial) and the enums' members work as in AgentScope,
    while each stays equal to its string and writes as it."""
    for tag, cls in E.EVENT_CLASSES.items():
        assert cls.type is E.EventType(tag) and cls.type == tag and cls.type.value == tag
    assert {m.value for m in E.EventType} == {m.value for m in as_event.EventType}
    event = E.ModelCallEndEvent(reply_id="r", input_tokens=1, output_tokens=2)
    assert event.type.value == "MODEL_CALL_END" and event.finished_reason is E.FinishedReason.COMPLETED
    assert json.loads(E.event_to_json(event))["finished_reason"] == "completed"
    end = E.ReplyEndEvent.from_dict({"session_id": "s", "reply_id": "r", "finished_reason": "interrupted"})
    assert end.finished_reason is E.ReplyFinishedReason.INTERRUPTED
    msg = Msg.from_dict(
        {
            "name": "bot",
            "role": "assistant",
            "content": [{"type": "tool_call", "id": "c", "name": "f", "input": "{}", "state": "asking"}],
        }
    )
    call = msg.content[0]
    assert (
        call.state.value == "asking" and call.state == "asking" and msg.model_dump()["content"][0]["state"] == "asking"
    )
    theirs = as_message.ToolCallBlock(id="c", name="f", input="{}")
    assert ToolCallBlock(id="c", name="f", input="{}").state.value == theirs.state.value == "pending"
    folded = AssistantMsg("bot", [], id="r")
    folded.append_event(E.ReplyEndEvent(session_id="s", reply_id="r", finished_reason="error"))
    assert folded.finished_reason.value == "error"


def test_what_agentscope_takes_is_taken_when_built():
    """The seed's own example: placeholder data, taken as AgentScope takes it."""
    source = Base64Source(data="...", media_type="image/png")
    theirs = as_message.Base64Source(data="...", media_type="image/png")
    assert source.model_dump() == theirs.model_dump(mode="json")
    assert E.DataBlockDeltaEvent(reply_id="r", block_id="d", data="x", media_type="image/png").data == "x"


def _untimed(value):
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if k not in ("created_at", "finished_at")}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


def _as_event(event):
    from pydantic import TypeAdapter

    return TypeAdapter(as_event.AgentEvent).validate_python(json.loads(E.event_to_json(event)))


def test_the_fold_skips_what_agentscopes_skips_with_a_warning(caplog):
    events = [
        E.TextBlockStartEvent(reply_id="reply-1", block_id="t"),
        E.TextBlockDeltaEvent(reply_id="reply-1", block_id="t", delta="kept"),
        E.TextBlockDeltaEvent(reply_id="reply-1", block_id="ghost", delta="x"),  # no such block
        E.TextBlockStartEvent(reply_id="another-reply", block_id="z"),  # another reply's
        E.ToolResultTextDeltaEvent(reply_id="reply-1", tool_call_id="ghost", delta="x"),
        E.TextBlockEndEvent(reply_id="reply-1", block_id="t"),
    ]
    ours = AssistantMsg("bot", [], id="reply-1", created_at="2026-01-01T00:00:00")
    theirs = _theirs(ours)
    with caplog.at_level(logging.WARNING, logger="modelwire.fold"):
        for event in events:
            ours.append_event(event)
            theirs.append_event(_as_event(event))
    # (AgentScope stamps a block with the time it folds it, modelwire with its event's)
    assert _untimed(ours.model_dump()) == _untimed(theirs.model_dump(mode="json"))
    assert ours.get_text_content() == "kept"
    assert sum("skipped" in r.message for r in caplog.records) == 3
    strict = AssistantMsg("bot", [], id="reply-1")
    for event in events[2:5]:
        before = strict.to_dict()
        with pytest.raises(EventApplyError):
            strict.append_event(event, strict=True)
        assert strict.to_dict() == before


def test_a_malformed_event_still_raises_without_strict():
    """Only what AgentScope skips is skipped: an event that is not one still raises."""
    msg = AssistantMsg("bot", [], id="r")
    with pytest.raises(EventApplyError, match="parse_event"):
        msg.append_event({"type": "TEXT_BLOCK_DELTA"})
