"""Property tests: random valid reply streams.

For every generated stream: ``check_stream`` accepts it; folding it equals folding
its JSON round trip; folding does not depend on how the deltas were split; and the
folded message holds exactly the content the stream carried.
"""

from __future__ import annotations

import base64
import json
import random
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from modelwire import event as E
from modelwire.message import AssistantMsg, Msg

TS = "2026-01-01T00:00:00"
text_st = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=0, max_size=60
) | st.sampled_from(["", "漢字かな🙂👍🏽", '{"a": "\\"quoted\\"", "b": [1, 2]}', "line\nbreak\r\n\ttab"])


@dataclass
class BlockSpec:
    kind: str  # text | thinking | data | tool_call
    id: str
    content: Any  # str, or bytes for data
    extras: dict | None = None
    name: str = "tool"


@dataclass
class CallSpec:
    blocks: list[BlockSpec]
    results: list[tuple[str, str, str]] = field(default_factory=list)  # (call id, output, state)


@st.composite
def reply_specs(draw) -> list[CallSpec]:
    calls = []
    n = 0
    for _ in range(draw(st.integers(1, 3))):
        blocks = []
        for _ in range(draw(st.integers(0, 4))):
            n += 1
            kind = draw(st.sampled_from(["text", "thinking", "data", "tool_call"]))
            if kind == "data":
                content: Any = draw(st.binary(max_size=200))
            else:
                content = draw(text_st)
            extras = None
            if kind == "thinking" and draw(st.booleans()):
                extras = {"signature": draw(st.text(max_size=10)), "reasoning_item_id": f"rs_{n}"}
            blocks.append(BlockSpec(kind, f"{kind}-{n}", content, extras, name=draw(st.sampled_from(["f", "g"]))))
        results = [
            (b.id, draw(text_st), draw(st.sampled_from(["success", "error", "denied", "interrupted"])))
            for b in blocks
            if b.kind == "tool_call" and draw(st.booleans())
        ]
        calls.append(CallSpec(blocks, results))
    return calls


def _cut(content: Any, rnd: random.Random) -> list[Any]:
    """Split content into pieces at random places; empty pieces included now and then."""
    if not content:
        return [content] if rnd.random() < 0.5 else []
    cuts = sorted(rnd.sample(range(len(content) + 1), k=min(len(content) + 1, rnd.randint(0, 6))))
    edges = [0, *cuts, len(content)]
    return [content[a:b] for a, b in zip(edges, edges[1:])]


def render(spec: list[CallSpec], split_seed: int, order_seed: int, reply_id: str = "r") -> list[E.EventBase]:
    """The events of the reply described by ``spec``. Only the delta splits depend on
    ``split_seed``; START/END events (ids and times) are the same for any split."""
    split = random.Random(split_seed)
    order = random.Random(order_seed)
    counter = iter(range(10**9))

    def ev(cls: type, **kw: Any) -> E.EventBase:
        return cls(id=f"e{next(counter)}", created_at=TS, reply_id=reply_id, **kw)

    out = [E.ReplyStartEvent(id="start", created_at=TS, session_id="s", reply_id=reply_id, name="agent")]
    for call in spec:
        out.append(ev(E.ModelCallStartEvent, model_name="m"))
        lanes = []
        for b in call.blocks:
            pieces = _cut(b.content, split)
            if b.kind == "text":
                lane = [(E.TextBlockStartEvent, {"block_id": b.id})]
                lane += [(E.TextBlockDeltaEvent, {"block_id": b.id, "delta": p}) for p in pieces]
                lane.append((E.TextBlockEndEvent, {"block_id": b.id}))
            elif b.kind == "thinking":
                lane = [(E.ThinkingBlockStartEvent, {"block_id": b.id})]
                lane += [(E.ThinkingBlockDeltaEvent, {"block_id": b.id, "delta": p}) for p in pieces]
                lane.append((E.ThinkingBlockEndEvent, {"block_id": b.id, "extras": b.extras}))
            elif b.kind == "data":
                lane = [(E.DataBlockStartEvent, {"block_id": b.id, "media_type": "image/png"})]
                lane += [
                    (
                        E.DataBlockDeltaEvent,
                        {"block_id": b.id, "media_type": "image/png", "data": base64.b64encode(p).decode()},
                    )
                    for p in pieces
                ]
                lane.append((E.DataBlockEndEvent, {"block_id": b.id}))
            else:
                lane = [(E.ToolCallStartEvent, {"tool_call_id": b.id, "tool_call_name": b.name})]
                lane += [(E.ToolCallDeltaEvent, {"tool_call_id": b.id, "delta": p}) for p in pieces]
                lane.append((E.ToolCallEndEvent, {"tool_call_id": b.id}))
            lanes.append(lane)
        # Interleave the blocks' events: each block keeps its own order and blocks start
        # in spec order (so the content order does not depend on the split). START/END
        # ids do not depend on the split either.
        started = 0
        while any(lanes):
            eligible = [k for k, lane in enumerate(lanes[:started]) if lane]
            if started < len(lanes):
                eligible.append(started)
            i = order.choice(eligible)
            if i == started:
                started += 1
            cls, kw = lanes[i].pop(0)
            if cls.__name__.endswith(("StartEvent", "EndEvent")):
                eid = f"{kw.get('block_id') or kw.get('tool_call_id')}-{cls.__name__}"
                out.append(cls(id=eid, created_at=TS, reply_id=reply_id, **kw))
            else:
                out.append(ev(cls, **kw))
        out.append(ev(E.ModelCallEndEvent, input_tokens=len(call.blocks), output_tokens=1, cache_input_tokens=1))
        for call_id, output, state in call.results:
            out.append(
                E.ToolResultStartEvent(
                    id=f"{call_id}-rs", created_at=TS, reply_id=reply_id, tool_call_id=call_id, tool_call_name="f"
                )
            )
            # An empty result is sent with no piece: one empty piece alone is content to the
            # fold (an empty text part, as AgentScope folds it), not a way of splitting nothing.
            for p in _cut(output, split) if output else []:
                out.append(ev(E.ToolResultTextDeltaEvent, tool_call_id=call_id, delta=p))
            out.append(
                E.ToolResultEndEvent(
                    id=f"{call_id}-re", created_at=TS, reply_id=reply_id, tool_call_id=call_id, state=state
                )
            )
    out.append(E.ReplyEndEvent(id="end", created_at=TS, session_id="s", reply_id=reply_id))
    return out


def fold(events: list[E.EventBase]) -> Msg:
    msg = AssistantMsg("agent", [], id="r", created_at=TS)
    for e in events:
        msg.append_event(e)
    return msg


PROPS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPS
@given(reply_specs(), st.integers(0, 2**32), st.integers(0, 2**32))
def test_generated_streams_are_valid_and_fold_to_their_content(spec, split_seed, order_seed):
    events = render(spec, split_seed, order_seed)
    assert E.check_stream(events) == len(events)
    msg = fold(events)
    blocks = {b.id: b for b in msg.content if b.type != "tool_result"}
    for call in spec:
        for b in call.blocks:
            got = blocks[b.id]
            if b.kind == "text":
                assert got.text == b.content
            elif b.kind == "thinking":
                assert got.thinking == b.content
                for k, v in (b.extras or {}).items():
                    assert getattr(got, k) == v
            elif b.kind == "data":
                assert base64.b64decode(got.source.data) == b.content
            else:
                assert got.input == b.content
        for call_id, output, state in call.results:
            result = next(x for x in msg.content if x.type == "tool_result" and x.id == call_id)
            assert "".join(o.text for o in result.output) == output and result.state == state
            assert blocks[call_id].state == "finished"
    assert msg.usage.input_tokens == sum(len(c.blocks) for c in spec)


@PROPS
@given(reply_specs(), st.integers(0, 2**32), st.integers(0, 2**32))
def test_folding_equals_folding_the_json_round_trip(spec, split_seed, order_seed):
    events = render(spec, split_seed, order_seed)
    direct = fold(events)
    again = fold(E.loads_jsonl(E.dumps_jsonl(events)))
    assert again == direct
    assert Msg.from_dict(json.loads(direct.to_json())) == direct


@PROPS
@given(reply_specs(), st.integers(0, 2**32), st.integers(0, 2**32), st.integers(0, 2**32))
def test_folding_does_not_depend_on_how_deltas_were_split(spec, seed_a, seed_b, order_seed):
    a = fold(render(spec, seed_a, order_seed))
    b = fold(render(spec, seed_b, order_seed))
    assert a == b
    assert a.to_json() == b.to_json()


_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()  # NaN and the infinities included: json.dumps writes them
    | text_st,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text_st, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(_json_values)
def test_the_text_kept_of_a_whole_value_is_what_json_dumps_writes(value: Any) -> None:
    """Adapters keep a call's whole arguments as ``json.dumps(value, ensure_ascii=False)``
    writes them; the encoder they use is made once, and must write the same text."""
    from modelwire.adapters import json_text

    assert json_text(value) == json.dumps(value, ensure_ascii=False)


_sse_lines = st.lists(
    st.sampled_from(
        [
            b"data: {}",
            b'data: {"n": 1}',
            b'data: {"n": 2}',
            b"event: ping",
            b"event: other",
            b": a comment",
            b"data:{}",
            b"id: 7",
            b"retry: 10",
            b"",
            b"",
            b"data: [DONE]",
        ]
    ),
    max_size=24,
)


@settings(max_examples=400, deadline=None)
@given(
    _sse_lines,
    st.sampled_from([b"\n", b"\r\n", b"\r"]),
    st.booleans(),
    st.lists(st.integers(0, 400), max_size=12),
)
def test_the_stream_decoder_hands_over_what_the_sse_decoder_dispatches(lines, end, bom, cuts) -> None:
    """The stream decoder takes a piece that is one whole event apart itself: only while the
    full decoder holds nothing (no partial line, no event name or data, no CR to pair, the
    BOM check done). However the pieces fall, the adapter gets what the full decoder would
    dispatch, in order, names and data alike."""
    from modelwire.adapters import SSEDecoder
    from modelwire.adapters._base import BaseAdapter, StreamDecoder

    got: list[tuple[Any, Any]] = []

    class Recording(BaseAdapter):
        def done(self) -> list[Any]:
            got.append(("[DONE]", b"[DONE]"))
            return []

        def close(self) -> list[Any]:
            return []

    body = (b"\xef\xbb\xbf" if bom else b"") + b"".join(line + end for line in lines)
    points = sorted({min(c, len(body)) for c in cuts} | {0, len(body)})
    # each cut piece followed by a usual one (an event of its own, with and without a name),
    # so one comes in every state the cuts leave the full decoder in
    probes = [b'data: {"probe": 1}\n\n', b'event: probe\ndata: {"probe": 2}\n\n']
    pieces = [x for i, (a, b) in enumerate(zip(points, points[1:])) for x in (body[a:b], probes[i % 2])]
    decoder = StreamDecoder(Recording("r"))
    # every event's data, as the adapter's short path is handed it (raw bytes, with its name)
    decoder._quick = lambda data, name: got.append((name, data)) or []
    reference = SSEDecoder()
    expected: list[tuple[Any, Any]] = []
    for piece in pieces:
        decoder.feed(piece)
        expected += [(name if data != b"[DONE]" else "[DONE]", data) for name, data, _, _ in reference.feed_raw(piece)]
    decoder.close()
    expected += [(name if data != b"[DONE]" else "[DONE]", data) for name, data, _, _ in reference.close_raw()]
    assert got == expected
