"""``check_stream``: every rule, each broken once, with the index and rule in the error."""

from __future__ import annotations

import pytest
from helpers import Reply

from modelwire import event as E
from modelwire.errors import StreamGrammarError
from modelwire.message import ToolCallBlock, ToolResultBlock


def valid() -> Reply:
    r = Reply().start().call().thinking("t", "a").text("b", "x").tool_call("c", "f", "{}").call_end()
    r.tool_result("c", "f", "ok").call().text("b2", "done").call_end()
    return r.end()


def test_a_valid_stream_passes_and_counts_its_events():
    r = valid()
    assert E.check_stream(r.events) == len(r.events)


def test_interleaved_blocks_and_parallel_calls_pass():
    r = Reply().start().call()
    r.add(E.ToolCallStartEvent, tool_call_id="a", tool_call_name="f")
    r.add(E.ToolCallStartEvent, tool_call_id="b", tool_call_name="g")
    r.add(E.TextBlockStartEvent, block_id="t")
    r.add(E.ToolCallDeltaEvent, tool_call_id="b", delta="{}")
    r.add(E.TextBlockDeltaEvent, block_id="t", delta="x")
    r.add(E.ToolCallDeltaEvent, tool_call_id="a", delta="{}")
    r.add(E.ToolCallEndEvent, tool_call_id="b")
    r.add(E.TextBlockEndEvent, block_id="t")
    r.add(E.ToolCallEndEvent, tool_call_id="a")
    r.add(E.CustomEvent, name="progress", value={})
    r.call_end().tool_result("b", "g").tool_result("a", "f").end()
    E.check_stream(r.events)


def broken(mutate):
    r = valid()
    events = list(r.events)
    mutate(events, r)
    return events


CASES = {
    "does not start with REPLY_START": (lambda ev, r: ev.pop(0), 0, "begin with REPLY_START"),
    "does not end with REPLY_END": (lambda ev, r: ev.pop(), None, "end with REPLY_END"),
    "event after REPLY_END": (
        lambda ev, r: ev.append(E.UserInterruptEvent(reply_id=r.reply_id)),
        "last",
        "follow REPLY_END",
    ),
    "wrong reply_id": (
        lambda ev, r: ev.insert(3, E.TextBlockDeltaEvent(reply_id="other", block_id="t", delta="x")),
        3,
        "differs from REPLY_START",
    ),
    "delta before start": (
        lambda ev, r: ev.insert(2, E.TextBlockDeltaEvent(reply_id=r.reply_id, block_id="zz", delta="x")),
        2,
        "never started",
    ),
    "delta after end": (
        lambda ev, r: ev.insert(6, E.ThinkingBlockDeltaEvent(reply_id=r.reply_id, block_id="t", delta="x")),
        6,
        "has ended",
    ),
    "block started twice": (
        lambda ev, r: ev.insert(5, E.ThinkingBlockStartEvent(reply_id=r.reply_id, block_id="t")),
        5,
        "already used",
    ),
    "delta of another kind": (
        lambda ev, r: ev.insert(4, E.TextBlockDeltaEvent(reply_id=r.reply_id, block_id="t", delta="x")),
        4,
        "is a thinking block, not a text block",
    ),
    "block id reused across kinds": (
        lambda ev, r: ev.insert(5, E.TextBlockStartEvent(reply_id=r.reply_id, block_id="t")),
        5,
        "already used",
    ),
    "result before call ended": (
        lambda ev, r: ev.insert(10, E.ToolResultStartEvent(reply_id=r.reply_id, tool_call_id="c", tool_call_name="f")),
        10,
        "before that call ended",
    ),
    "result twice": (
        lambda ev, r: ev.insert(15, E.ToolResultStartEvent(reply_id=r.reply_id, tool_call_id="c", tool_call_name="f")),
        15,
        "already has a result",
    ),
    "model calls nest": (
        lambda ev, r: ev.insert(2, E.ModelCallStartEvent(reply_id=r.reply_id, model_name="m")),
        2,
        "do not nest",
    ),
    "model call ends with an open block": (
        lambda ev, r: ev.insert(3, E.ModelCallEndEvent(reply_id=r.reply_id, input_tokens=0, output_tokens=0)),
        3,
        "still open",
    ),
    "second REPLY_START": (
        lambda ev, r: ev.insert(1, E.ReplyStartEvent(session_id="s", reply_id=r.reply_id, name="a")),
        1,
        "second REPLY_START",
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_each_rule(name):
    mutate, index, rule = CASES[name]
    events = broken(mutate)
    with pytest.raises(StreamGrammarError) as info:
        E.check_stream(events)
    err = info.value
    expected_index = len(events) - 1 if index == "last" else (len(events) if index is None else index)
    assert err.index == expected_index, str(err)
    assert rule in err.rule and f"[{expected_index}]" in str(err)
    if index is not None and index != "last":
        assert err.event_type == events[index].type


def test_reply_end_with_open_things_names_them():
    r = Reply().start().add(E.TextBlockStartEvent, block_id="open-text").end()
    with pytest.raises(StreamGrammarError, match="open-text"):
        E.check_stream(r.events)
    r = Reply().start().call().tool_call("c", "f").call_end()
    r.add(E.ToolResultStartEvent, tool_call_id="c", tool_call_name="f").end()
    with pytest.raises(StreamGrammarError, match=r"tool results \['c'\]"):
        E.check_stream(r.events)
    r = Reply().start().call().end()
    with pytest.raises(StreamGrammarError, match="model call is open"):
        E.check_stream(r.events)


def test_human_in_the_loop_events_must_name_ended_calls():
    call = ToolCallBlock(id="c", name="f", input="{}")
    ok = Reply().start().call().tool_call("c", "f", "{}").call_end()
    ok.add(E.RequireUserConfirmEvent, tool_calls=[call])
    ok.add(E.UserConfirmResultEvent, confirm_results=[E.ConfirmResult(confirmed=True, tool_call=call)])
    ok.tool_result("c", "f", "done").end()
    E.check_stream(ok.events)

    ghost = ToolCallBlock(id="ghost", name="f", input="{}")
    for cls in (E.RequireUserConfirmEvent, E.RequireExternalExecutionEvent):
        r = Reply().start().add(cls, tool_calls=[ghost]).end()
        with pytest.raises(StreamGrammarError, match="ghost"):
            E.check_stream(r.events)
    r = (
        Reply()
        .start()
        .add(E.ExternalExecutionResultEvent, execution_results=[ToolResultBlock(id="ghost", name="f", output="")])
        .end()
    )
    with pytest.raises(StreamGrammarError, match="ghost"):
        E.check_stream(r.events)

    ext = Reply().start().call().tool_call("c", "f", "{}").call_end()
    ext.add(E.RequireExternalExecutionEvent, tool_calls=[call])
    ext.add(
        E.ExternalExecutionResultEvent,
        execution_results=[ToolResultBlock(id="c", name="f", output="x", state="success")],
    )
    ext.end()
    E.check_stream(ext.events)


def test_the_incremental_checker_reports_the_same_as_check_stream():
    events = broken(CASES["delta after end"][0])
    checker = E.StreamChecker()
    with pytest.raises(StreamGrammarError) as info:
        for ev in events:
            checker.feed(ev)
    assert info.value.index == 6
