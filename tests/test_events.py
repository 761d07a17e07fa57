"""The 28 event types: fields, validation, JSON and JSON-lines codecs."""

from __future__ import annotations

import io

import pytest
from modelwire.errors import ValidationError

from modelwire import event as E
from modelwire.message import fields_of
from modelwire.errors import EventDecodeError
from modelwire.message import DataBlock, TextBlock, ToolCallBlock, ToolResultBlock, URLSource

CALL = ToolCallBlock(id="c1", name="f", input="{}")


def one_of_each() -> list[E.EventBase]:
    r = "r1"
    return [
        E.ReplyStartEvent(session_id="s", reply_id=r, name="agent"),
        E.ReplyEndEvent(
            session_id="s", reply_id=r, finished_reason="error", error={"type": "upstream", "message": "x"}
        ),
        E.ModelCallStartEvent(reply_id=r, model_name="claude"),
        E.ModelCallEndEvent(
            reply_id=r,
            input_tokens=1,
            output_tokens=2,
            cache_input_tokens=3,
            cache_creation_input_tokens=4,
            reasoning_tokens=5,
            stop_reason="max_tokens",
            provider_stop_reason="length",
        ),
        E.TextBlockStartEvent(reply_id=r, block_id="b"),
        E.TextBlockDeltaEvent(reply_id=r, block_id="b", delta="hé 漢字 🙂"),
        E.TextBlockEndEvent(reply_id=r, block_id="b", text="final", extras={"citations": [{"url": "u"}]}),
        E.DataBlockStartEvent(reply_id=r, block_id="d", media_type="image/png", name="pic"),
        E.DataBlockDeltaEvent(reply_id=r, block_id="d", media_type="image/png", data="QUJD"),
        E.DataBlockEndEvent(reply_id=r, block_id="d"),
        E.ThinkingBlockStartEvent(reply_id=r, block_id="t"),
        E.ThinkingBlockDeltaEvent(reply_id=r, block_id="t", delta="hmm"),
        E.ThinkingBlockEndEvent(reply_id=r, block_id="t", extras={"signature": "sig"}),
        E.HintBlockEvent(reply_id=r, block_id="h", hint=[TextBlock(text="look")], source="team"),
        E.ToolCallStartEvent(reply_id=r, tool_call_id="c1", tool_call_name="f"),
        E.ToolCallDeltaEvent(reply_id=r, tool_call_id="c1", delta="{"),
        E.ToolCallEndEvent(reply_id=r, tool_call_id="c1"),
        E.ToolResultStartEvent(reply_id=r, tool_call_id="c1", tool_call_name="f"),
        E.ToolResultTextDeltaEvent(reply_id=r, tool_call_id="c1", delta="ok"),
        E.ToolResultDataDeltaEvent(reply_id=r, tool_call_id="c1", media_type="image/png", url="https://x/y.png"),
        E.ToolResultEndEvent(reply_id=r, tool_call_id="c1", state="error", metadata={"why": "x"}),
        E.ExceedMaxItersEvent(reply_id=r, name="agent"),
        E.RequireUserConfirmEvent(reply_id=r, tool_calls=[CALL]),
        E.RequireExternalExecutionEvent(reply_id=r, tool_calls=[CALL]),
        E.UserConfirmResultEvent(reply_id=r, confirm_results=[E.ConfirmResult(confirmed=True, tool_call=CALL)]),
        E.UserInterruptEvent(reply_id=r),
        E.ExternalExecutionResultEvent(
            reply_id=r, execution_results=[ToolResultBlock(id="c1", name="f", output="done", state="success")]
        ),
        E.CustomEvent(name="tasks", value={"n": 1}),
    ]


def test_there_are_28_event_types_and_one_class_each():
    events = one_of_each()
    assert len(E.EventType) == 28
    assert {e.type for e in events} == {t.value for t in E.EventType}
    assert set(E.EVENT_CLASSES) == {t.value for t in E.EventType}
    for e in events:
        assert e.type == E.EventType(e.type).value and len(e.id) == 32 and e.created_at
        assert ("reply_id" in fields_of(type(e))) == (e.type != "CUSTOM")


@pytest.mark.parametrize("ev", one_of_each(), ids=lambda e: e.type)
def test_every_event_round_trips_through_json(ev):
    text = E.event_to_json(ev)
    again = E.event_from_json(text)
    assert type(again) is type(ev) and again == ev
    assert E.parse_event(ev.to_dict()) == ev


def test_json_lines_round_trip_and_file_helpers():
    events = one_of_each()
    text = E.dumps_jsonl(events)
    assert text.count("\n") == len(events)
    assert E.loads_jsonl(text) == events
    buf = io.StringIO()
    assert E.write_jsonl(events, buf) == len(events)
    buf.seek(0)
    assert list(E.iter_jsonl(buf)) == events
    assert E.loads_jsonl("\n" + text + "\n\n") == events  # blank lines are skipped


def test_decode_errors_are_typed_and_name_the_line():
    good = E.event_to_json(E.UserInterruptEvent(reply_id="r"))
    with pytest.raises(EventDecodeError, match="line 2") as info:
        E.loads_jsonl(good + "\n" + '{"type": "TEXT_BLOCK_DELTA", "reply_id": "r", "block_id": "b"}\n')
    assert info.value.line == 2 and "delta" in str(info.value)
    with pytest.raises(EventDecodeError, match="NOT_AN_EVENT|tag"):
        E.parse_event({"type": "NOT_AN_EVENT"})
    with pytest.raises(EventDecodeError, match="line 1"):
        E.loads_jsonl("{not json")


@pytest.mark.parametrize("cls", [E.DataBlockDeltaEvent, E.ToolResultDataDeltaEvent])
def test_data_deltas_take_exactly_one_of_data_and_url(cls):
    ids = {"block_id": "d"} if cls is E.DataBlockDeltaEvent else {"tool_call_id": "c"}
    with pytest.raises(ValidationError, match="Exactly one of"):  # AgentScope's words
        cls(reply_id="r", media_type="image/png", **ids)
    with pytest.raises(ValidationError, match="Exactly one of"):
        cls(reply_id="r", media_type="image/png", data="QUJD", url="https://x", **ids)
    # As AgentScope does, data that is not base64 and a media type that is none are taken
    # (refused where they would be sent: see test_message).
    assert cls(reply_id="r", media_type="image/png", data="QUJDR", **ids).data == "QUJDR"
    assert cls(reply_id="r", media_type="no such type", data="QUJD", **ids).media_type == "no such type"
    # What a message takes, an event takes the same way (unpadded base64, "png").
    taken = cls(reply_id="r", media_type="png", data="QUJ", **ids)
    assert (taken.media_type, taken.data) == ("image/png", "QUJ=")


def test_agentscope_shaped_json_loads():
    # The JSON AgentScope 2.x writes for an event, written out by hand.
    data = {
        "id": "e1",
        "created_at": "2026-01-01T00:00:00",
        "metadata": {},
        "type": "MODEL_CALL_END",
        "reply_id": "r",
        "input_tokens": 10,
        "output_tokens": 5,
        "cache_input_tokens": 0,
        "cache_creation_input_tokens": 0,
        "finished_reason": "completed",
    }
    ev = E.parse_event(data)
    assert isinstance(ev, E.ModelCallEndEvent) and ev.reasoning_tokens == 0 and ev.stop_reason is None
    hint = E.parse_event(
        {
            "type": "HINT_BLOCK",
            "reply_id": "r",
            "block_id": "h",
            "hint": [{"type": "data", "source": {"type": "url", "url": "https://a/b.png", "media_type": "image/png"}}],
        }
    )
    assert isinstance(hint.hint[0], DataBlock) and isinstance(hint.hint[0].source, URLSource)


def test_json_lines_split_only_on_newline():
    # JSON leaves U+0085 / U+2028 / U+2029 unescaped inside strings; they are not line ends.
    events = [E.TextBlockDeltaEvent(reply_id="r", block_id="b", delta=f"a{c}b") for c in "\x85\u2028\u2029\x0b\x0c\x1c"]
    assert E.loads_jsonl(E.dumps_jsonl(events)) == events
    assert E.loads_jsonl(E.dumps_jsonl(events).encode()) == events
