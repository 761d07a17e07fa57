"""An adapter makes its most frequent events (a text or argument delta of an open block) on
the short path its ``deltas`` table compiles to, and leaves everything else to the full one.
The two must never differ: every body here is decoded by each protocol's adapter as it is,
and by the same adapter on the full path only (``BaseAdapter.feed``, no table), piece by
piece as servers send it; the events, and the error that ended the call, are the same."""

from __future__ import annotations

import pytest

from modelwire.adapters import BaseAdapter
from modelwire.errors import ProviderError
from modelwire.protocols import get_protocol, protocol_names
from modelwire.testing.sse import body

from paths import HAVE_SHARED, ROOT

BODIES = (".sse", ".txt", ".bin", ".eventstream", ".ndjson")
RECORDED = sorted(p for p in ROOT.rglob("*") if p.suffix in BODIES and p.is_file()) if HAVE_SHARED else []
SCRIPTS = [
    (("text", "Hello there, how are you today?"),),
    (
        ("think", "Let me think about it."),
        ("text", "Sunny."),
        ("tool", "call_1", "get_weather", '{"city": "Paris", "days": [1, 2]}'),
    ),
    (("tool", "call_1", "get_weather", '{"city": "Oslo"}'), ("tool", "call_2", "get_time", '{"city": "Lima"}')),
    (("text", ""), ("text", "after an empty one")),
]


def decode(protocol: str, pieces: list[bytes], full_path: bool) -> tuple[list[dict], str | None, list]:
    wire = get_protocol(protocol)
    cls = wire.adapter_class()
    if full_path:
        cls = type(cls.__name__, (cls,), {"feed": BaseAdapter.feed, "deltas": ()})
    counter = iter(range(10**9))
    decoder = wire.decoder(cls("r", new_id=lambda: f"id{next(counter)}", clock=lambda: "T"), keep=True)
    error, seen = None, []
    try:
        for piece in pieces:
            decoder.feed(piece)
            seen.append(getattr(decoder.adapter, "sequence", None))
        decoder.close()
    except ProviderError as err:
        error = f"{type(err).__name__}: {err}"
    # and what the adapter keeps beside its events after each piece (Responses: the last
    # sequence number, which a resumed stream starts after)
    return [e.to_dict() for e in decoder.events], error, seen


def same_both_ways(protocol: str, raw: bytes) -> list[dict]:
    wire = get_protocol(protocol)
    try:
        split = wire.split_stream(raw)  # as its servers send it: one event per piece
    except ProviderError:
        split = [raw[i : i + 100] for i in range(0, len(raw), 100)]  # not in its framing at all
    decoded = []
    for pieces in (split, [raw]):
        fast = decode(protocol, pieces, full_path=False)
        assert fast == decode(protocol, pieces, full_path=True)
        decoded.append(fast[:2])
    # The decoders' own short path (one whole event per piece) against their general one
    # (the whole body in one piece): the same events, the same error.
    assert decoded[0] == decoded[1]
    return fast[0]


def test_an_adapter_with_a_short_path_still_has_the_full_one():
    """The full path is what this test compares against: the short path an adapter's
    ``deltas`` table compiles to, and any ``feed`` of its own before the base's."""
    own = [p for p in protocol_names() if get_protocol(p).adapter_class().fast_path() is not None]
    assert own, "no adapter has a short path: this test compares nothing"
    assert not [p for p in protocol_names() if "feed_raw" in vars(get_protocol(p).adapter_class())], (
        "a short path written by hand beside the table"
    )


@pytest.mark.parametrize("protocol", protocol_names())
@pytest.mark.parametrize("script", range(len(SCRIPTS)))
def test_generated_streams_decode_the_same_on_both_paths(protocol, script):
    events = same_both_ways(protocol, body(protocol, *SCRIPTS[script]))
    assert events[-1]["type"] == "MODEL_CALL_END"


@pytest.mark.skipif(not HAVE_SHARED, reason="../shared/recorded-streams is not present")
@pytest.mark.parametrize("protocol", protocol_names())
def test_every_recorded_body_decodes_the_same_on_both_paths(protocol):
    """Every recorded body through every protocol, its own or not: a body of another
    protocol must fail (or be taken) the same way on both paths too."""
    decoded = 0
    for path in RECORDED:
        events = same_both_ways(protocol, path.read_bytes())
        decoded += any(e["type"] in ("TEXT_BLOCK_DELTA", "TOOL_CALL_DELTA", "THINKING_BLOCK_DELTA") for e in events)
    assert decoded >= 3, f"only {decoded} recorded bodies gave {protocol} deltas: the corpus is not its own"


def test_a_delta_with_a_field_of_another_type_takes_the_full_path():
    """What the short path must not take: each is refused (or kept) as the full path does."""
    from modelwire.adapters import encode_sse

    start = [
        {"type": "message_start", "message": {"id": "m", "model": "claude", "usage": {"input_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    ]
    odd = [
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": 5}},
        {"type": "content_block_delta", "index": [0], "delta": {"type": "text_delta", "text": "x"}},
        {"type": "content_block_delta", "index": 0, "delta": ["text_delta"]},
        {"type": "content_block_delta", "index": 3, "delta": {"type": "text_delta", "text": "x"}},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": "x"},
            "error": {"type": "overloaded_error", "message": "busy"},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "citations_delta", "citation": {"cited_text": "c"}},
        },
    ]
    for event in odd:
        raw = encode_sse(
            [
                (e["type"], e)
                for e in [*start, event, {"type": "content_block_stop", "index": 0}, {"type": "message_stop"}]
            ]
        )
        same_both_ways("anthropic", raw)
    # blocks that do not stream deltas: one of a type added later (kept as data), a result
    opened = [
        {"type": "content_block_start", "index": 0, "content_block": {"type": "compaction", "content": ""}},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
        },
    ]
    for block in opened:
        for kind, field in (
            ("text_delta", "text"),
            ("input_json_delta", "partial_json"),
            ("thinking_delta", "thinking"),
        ):
            delta = {"type": "content_block_delta", "index": 0, "delta": {"type": kind, field: "x"}}
            raw = encode_sse(
                [
                    (e["type"], e)
                    for e in [
                        start[0],
                        block,
                        delta,
                        {"type": "content_block_stop", "index": 0},
                        {"type": "message_stop"},
                    ]
                ]
            )
            same_both_ways("anthropic", raw)


def test_what_a_short_path_keeps_from_a_chunk_beside_its_delta_is_kept():
    """A Gemini chunk carries the usage so far and the response id beside its text, and a
    Chat chunk may carry usage beside its content: the short path keeps them as the full
    path does, even when no later chunk repeats them."""
    from modelwire.adapters import encode_sse

    def gemini(text, **top):
        return (None, {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "index": 0}], **top})

    chunks = [
        gemini("The"),
        gemini(" sky", usageMetadata={"promptTokenCount": 5, "candidatesTokenCount": 2}, responseId="resp-9"),
        gemini(" is blue.", usageMetadata={"promptTokenCount": 5, "candidatesTokenCount": 4}),
        (
            None,
            {
                "candidates": [
                    {"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP", "index": 0}
                ]
            },
        ),
    ]
    events = same_both_ways("gemini", encode_sse(chunks))
    end = events[-1]
    assert end["output_tokens"] == 4 and end["metadata"]["response_id"] == "resp-9"
    # Gemini repeats the usage on every chunk; the short path decodes it only when it is not
    # the last chunk's again. A chunk on the full path in between changes what "the last" is.
    first, other = (
        {"promptTokenCount": 5, "candidatesTokenCount": 1},
        {"promptTokenCount": 5, "candidatesTokenCount": 3, "totalTokenCount": 8},
    )
    two_parts = (
        None,
        {"candidates": [{"content": {"parts": [{"text": " a"}, {"text": " b"}]}, "index": 0}], "usageMetadata": other},
    )
    chunks = [
        gemini("The", usageMetadata=first),
        gemini(" sky", usageMetadata=first),
        two_parts,
        gemini(" is", usageMetadata=first),
        chunks[-1],
    ]
    end = same_both_ways("gemini", encode_sse(chunks))[-1]
    assert end["output_tokens"] == 1 and end["metadata"]["usage"] == {**other, **first}

    def chat(delta, **top):
        return (
            None,
            {
                "id": "c1",
                "object": "chat.completion.chunk",
                "model": "m",
                "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
                **top,
            },
        )

    chunks = [
        chat({"role": "assistant", "content": ""}),
        chat({"content": "Hi"}),
        chat({"content": " there"}, usage={"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}),
        (
            None,
            {
                "id": "c1",
                "object": "chat.completion.chunk",
                "model": "m",
                "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
            },
        ),
        (None, "[DONE]"),
    ]
    events = same_both_ways("openai-chat", encode_sse(chunks))
    assert events[-1]["output_tokens"] == 2


def test_ollama_lines_the_short_path_must_leave_to_the_full_one():
    """Ollama lines beside the usual one (a piece of the open text or thinking): each is
    decoded as the full path decodes it."""
    import json

    def line(message=None, **top):
        return {
            "model": "m",
            "created_at": "t",
            "message": {"role": "assistant", "content": "", **(message or {})},
            "done": False,
            **top,
        }

    opened = [line({"thinking": "Hmm"}), line({"content": "Hi"})]
    odd = [
        line({"thinking": "more", "content": "both"}),
        line({"content": 5}),
        line({"content": " x", "tool_calls": [{"function": {"name": "f", "arguments": {}}}]}),
        line({"thinking": "late"}),
        line({"content": " y"}, error="busy"),
        line({"content": " y"}, error=None),
        line({"content": " y"}, done="yes"),
        line({"content": " y"}, done=None),
        line({"content": " y", "thinking": None}),
        line({"content": None}),
        line({"content": " y", "tool_calls": []}),
        line({"content": " y", "tool_calls": None}),
        {"model": "m", "message": None, "done": False},
        {"model": "m", "done": False},
        {"model": "m", "message": ["content"], "done": False},
        line({"content": " z"}, done=True, done_reason="stop", eval_count=3),
    ]
    end = {
        "model": "m",
        "message": {"role": "assistant", "content": ""},
        "done": True,
        "done_reason": "stop",
        "prompt_eval_count": 1,
        "eval_count": 2,
    }
    for start in (opened, opened[:1]):  # the text open; the thinking still open
        for item in odd:
            raw = b"".join(json.dumps(x).encode() + b"\n" for x in [*start, item, line({"content": " after"}), end])
            same_both_ways("ollama", raw)


def test_gemini_text_chunks_the_short_path_must_leave_to_the_full_one():
    """The usual Gemini chunk is one text part of candidate 0 continuing the open text block,
    with the usage so far and the response id; its short path decodes only that. Chunks
    beside it (a part or candidate with anything more, another candidate, an error or prompt
    feedback beside the text, fields of another type) are read as the full path reads them."""
    from modelwire.adapters import encode_sse

    def chunk(parts=None, candidates=None, **top):
        candidates = (
            candidates
            if candidates is not None
            else [
                {"content": {"role": "model", "parts": parts if parts is not None else [{"text": " more"}]}, "index": 0}
            ]
        )
        return (
            None,
            {
                "candidates": candidates,
                "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 2},
                "modelVersion": "g",
                **top,
            },
        )

    def cand(**extra):
        return {"content": {"role": "model", "parts": [{"text": " more"}]}, **extra}

    opening = [chunk([{"text": "The"}]), chunk([{"text": " sky"}], responseId="resp-1")]
    odd = [
        chunk(responseId="resp-2"),
        chunk([{"text": " hmm", "thought": True}]),
        chunk([{"text": " signed", "thoughtSignature": "c2ln"}]),
        chunk([{"text": 5}]),
        chunk([{"text": ""}]),
        chunk([{"text": " a"}, {"text": " b"}]),
        chunk([]),
        chunk([{"functionCall": {"name": "f", "args": {}}}]),
        chunk(
            [
                {
                    "text": " t",
                    "functionCall": {
                        "partialArgs": [{"jsonPath": "$.a", "stringValue": "v", "willContinue": True}],
                        "willContinue": True,
                    },
                }
            ]
        ),
        chunk(candidates=[cand(index=0), cand(index=1)]),
        chunk(candidates=[cand(index=1)]),
        chunk(candidates=[cand(index=False)]),
        chunk(candidates=[cand()]),
        chunk(candidates=[cand(index=0, finishReason="STOP")]),
        chunk(candidates=[cand(index=0, safetyRatings=[])]),
        chunk(candidates=[{"content": {"role": "model"}, "index": 0}]),
        chunk(candidates=[{"content": {"parts": None}, "index": 0}]),
        chunk(candidates=[{"content": None, "index": 0}]),
        chunk(candidates=[]),
        chunk(candidates=None),
        chunk(error={"code": 500, "message": "busy", "status": "INTERNAL"}),
        chunk(error=None),
        chunk(promptFeedback={"blockReason": "SAFETY"}),
        chunk(usageMetadata=None),
        chunk(usageMetadata=[1]),
        chunk(responseId=7),
        chunk(responseId=""),
        chunk(responseId="resp-3", createTime="2026-01-01T00:00:00Z"),
    ]
    closing = [chunk([{"text": " blue."}]), chunk([{"text": ""}], candidates=[cand(index=0, finishReason="STOP")])]
    for item in odd:
        same_both_ways("gemini", encode_sse([*opening, item, *closing]))
    for start in ([], [chunk([{"text": "Hm", "thought": True}])]):  # no block open; a thinking block open
        same_both_ways("gemini", encode_sse([*start, *opening, *closing]))


def test_gemini_call_pieces_the_short_path_must_leave_to_the_full_one():
    """Vertex streams a call's arguments as partialArgs: the usual chunk adds one piece to the
    string being continued. Chunks beside it (another path, another type, a last piece, more
    in the chunk than the piece) are read as the full path reads them."""
    from modelwire.adapters import encode_sse

    import itertools

    tokens = itertools.count(1)

    def chunk(call=None, parts=None, **candidate_extra):
        parts = parts if parts is not None else [{"functionCall": call}]
        out = {
            "candidates": [{"content": {"role": "model", "parts": parts}, "index": 0, **candidate_extra}],
            "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": next(tokens)},
        }
        return (None, out)

    def piece(value, path="$.text", more=True, kind="stringValue", **candidate_extra):
        return chunk(
            {"partialArgs": [{"jsonPath": path, kind: value, "willContinue": more}], "willContinue": True},
            **candidate_extra,
        )

    opening = [chunk({"name": "write", "willContinue": True}), piece("The"), piece(" quick")]
    odd = [
        piece(" brown", path="$.other"),
        piece(7, kind="numberValue"),
        piece(" fox", more=False),
        piece(5),
        piece(" over", finishReason="STOP"),
        piece(" over", citationMetadata={"citations": [{"uri": "https://example.com"}]}),
        (None, {**piece(" id")[1], "responseId": "resp-7"}),
        chunk(
            parts=[
                {
                    "functionCall": {
                        "partialArgs": [{"jsonPath": "$.text", "stringValue": " x", "willContinue": True}],
                        "willContinue": True,
                    },
                    "thoughtSignature": "c2ln",
                }
            ]
        ),
        chunk(
            {
                "partialArgs": [
                    {"jsonPath": "$.text", "stringValue": " a", "willContinue": True},
                    {"jsonPath": "$.text", "stringValue": " b", "willContinue": True},
                ],
                "willContinue": True,
            }
        ),
        chunk({"partialArgs": [{"jsonPath": "$.text", "stringValue": " y", "willContinue": True}]}),
        chunk(
            {"partialArgs": [{"jsonPath": "$.text", "stringValue": " y", "willContinue": True}], "willContinue": False}
        ),
        chunk(
            {
                "partialArgs": [{"jsonPath": "$.text", "stringValue": " y", "willContinue": True}],
                "willContinue": True,
                "id": "c9",
            }
        ),
        chunk(
            {
                "partialArgs": [{"jsonPath": "$.text", "stringValue": " y", "willContinue": True, "extra": 1}],
                "willContinue": True,
            }
        ),
        chunk(
            parts=[
                {
                    "text": " t",
                    "functionCall": {
                        "partialArgs": [{"jsonPath": "$.text", "stringValue": " y", "willContinue": True}],
                        "willContinue": True,
                    },
                }
            ]
        ),
        chunk(parts=[{"text": "between"}]),
        (None, {"error": {"code": 500, "message": "busy", "status": "INTERNAL"}}),
    ]
    closing = [piece(" dog"), chunk({}), chunk(parts=[{"text": ""}], finishReason="STOP")]
    for item in odd:
        assert same_both_ways("gemini", encode_sse([*opening, item, *closing]))
    events = same_both_ways("gemini", encode_sse([*opening, *closing]))
    assert [e for e in events if e["type"] == "TOOL_CALL_DELTA"][0]["delta"] == '{"text": "The quick dog"}'
    assert events[-1]["output_tokens"] == closing[-1][1]["usageMetadata"]["candidatesTokenCount"]


def test_gemini_whole_calls_the_short_path_must_leave_to_the_full_one(monkeypatch):
    """The Gemini API sends a call whole, name and arguments in one part: the usual one is
    made on the short path (start, arguments, end, closing the text before it), and every
    chunk that says more, or less, or what the full path refuses, is read as it reads it."""
    from modelwire.adapters import encode_sse
    from modelwire.protocols.gemini.adapter import GeminiAdapter

    made = []
    whole_call = GeminiAdapter._add_whole_call
    monkeypatch.setattr(GeminiAdapter, "_add_whole_call", lambda self, *a: made.append(1) or whole_call(self, *a))

    def chunk(*parts, **candidate_extra):
        out = {"candidates": [{"content": {"role": "model", "parts": list(parts)}, "index": 0, **candidate_extra}]}
        return (None, {**out, "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 1}})

    def call(**fields):
        return {"functionCall": {"name": "write", "args": {"text": "a"}, **fields}}

    opening = [chunk({"text": "Writing"}), chunk(call(id="c1"))]
    odd = [
        [chunk({"text": "again"}), chunk(call(id="c1"))],  # an id used twice (renamed), after text
        chunk(call(args=None)),
        chunk({"functionCall": {"name": "write"}}),
        chunk(call(args=["not", "an", "object"])),
        chunk(call(args={"deep": {"list": [1, 2.5, None, True, "é"]}})),
        chunk(call(id=7)),
        chunk(call(id="")),
        chunk(call(id=None)),
        chunk({**call(), "thoughtSignature": "c2ln"}),
        chunk({**call(), "thoughtSignature": ""}),
        chunk(call(willContinue=False)),
        chunk(call(extra=1)),
        chunk(call(), call(id="c2")),
        chunk(call(), finishReason="STOP"),
        chunk({"text": "more", **call()}),
        chunk({"functionCall": {"name": "", "args": {}}}),
        chunk({"functionCall": {"name": "stream", "willContinue": True}}),  # a Vertex call begins...
        chunk(call(id="c3")),  # ... and a whole one ends it
        chunk({"functionCall": {"name": None, "partialArgs": [{"jsonPath": "$.x", "stringValue": "v"}]}}),
        (None, {**chunk(call())[1], "responseId": "resp-3", "usageMetadata": {"candidatesTokenCount": 9}}),
        (None, {**chunk(call())[1], "usageMetadata": "not an object"}),
        (None, {**chunk(call())[1], "promptFeedback": {"blockReason": "SAFETY"}}),
    ]
    closing = [chunk(call(id="c4")), chunk({"text": ""}, finishReason="STOP")]
    for item in odd:
        middle = item if isinstance(item, list) else [item]
        assert same_both_ways("gemini", encode_sse([*opening, *middle, *closing]))
    made.clear()
    events = same_both_ways("gemini", encode_sse([*opening, *closing]))
    assert made  # the usual whole call took the short path
    assert [e["type"] for e in events[:4]] == [
        "MODEL_CALL_START",
        "TEXT_BLOCK_START",
        "TEXT_BLOCK_DELTA",
        "TEXT_BLOCK_END",
    ]
    assert [e["delta"] for e in events if e["type"] == "TOOL_CALL_DELTA"] == ['{"text": "a"}'] * 2


def test_responses_deltas_the_short_path_must_leave_to_the_full_one():
    """Responses deltas beside the usual one (text for an open part, arguments for an open
    call): each is decoded as the full path decodes it."""
    import json

    from modelwire.adapters import encode_sse

    events = [
        json.loads(line[6:])
        for line in body("openai-responses", ("text", "Hi there"), ("tool", "call_1", "f", '{"a":1}')).split(b"\n")
        if line.startswith(b"data: ")
    ]
    text, args = events[3], events[8]
    assert text["type"] == "response.output_text.delta" and args["type"] == "response.function_call_arguments.delta"
    odd = [
        {**text, "delta": 5},
        {**text, "delta": ""},
        {**text, "item_id": "msg_9"},
        {**text, "item_id": 3},
        {**text, "summary_index": 0},
        {**text, "content_index": 1},
        {**text, "content_index": None},
        {**text, "sequence_number": "7"},
        {**text, "error": {"message": "busy"}},
        {k: v for k, v in text.items() if k != "item_id"},
        {**args, "item_id": "msg_0"},
        {**args, "delta": None},
        {**text, "type": "response.reasoning_summary_text.delta"},
    ]
    for position in (4, 8):  # beside the open text part, then beside the open call
        for item in odd:
            raw = encode_sse([(e["type"], e) for e in [*events[:position], item, *events[position:]]])
            same_both_ways("openai-responses", raw)


def test_bedrock_frames_the_short_path_must_leave_to_the_full_one():
    """Bedrock frames beside the usual one (a text or tool-input delta of an open block):
    each is decoded as the full path decodes it, and so is a frame that is not an event."""
    import json

    from modelwire.adapters._eventstream import EventStreamDecoder, encode_frame

    frames = [
        (f.headers, json.loads(f.payload))
        for f in EventStreamDecoder().feed(
            body("bedrock-converse", ("text", "Hi there"), ("tool", "call_1", "f", '{"a":1}'))
        )
    ]
    text, args = frames[1], frames[5]
    assert text[1]["delta"] == {"text": "Hi "} and "toolUse" in args[1]["delta"]

    def frame(payload, headers=text[0]):
        return (headers, payload)

    odd = [
        frame({**text[1], "error": {"message": "busy"}}),
        frame({"contentBlockIndex": 1, "delta": {"text": "x"}}),
        frame({"contentBlockIndex": 0, "delta": {"toolUse": {"input": "{}"}}}),
        frame({"contentBlockIndex": 0, "delta": {"text": None}}),
        frame({"contentBlockIndex": 0, "delta": {"toolUse": ["x"]}}),
        frame({"contentBlockIndex": "0", "delta": {"text": "x"}}),
        frame({"delta": {"text": "x"}}),
        frame({"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "hm"}}}),
        frame({"contentBlockIndex": 0, "delta": {"text": "x", "toolUse": {"input": "{}"}}}),
        frame({"contentBlockIndex": 0, "delta": {"text": ""}}),
        frame(text[1], {**text[0], ":event-type": "contentBlockStop"}),
        frame(text[1], {**text[0], ":message-type": "exception", ":exception-type": "throttlingException"}),
    ]
    for position in (2, 6):  # beside the open text, then beside the open call
        for item in odd:
            raw = b"".join(
                encode_frame(h, json.dumps(p).encode()) for h, p in [*frames[:position], item, *frames[position:]]
            )
            same_both_ways("bedrock-converse", raw)


def test_chat_chunks_the_short_path_must_leave_to_the_full_one():
    """Chat chunks beside the usual one (a piece of the open text, or of an open call's
    arguments by its index): each is decoded as the full path decodes it."""
    import json

    from modelwire.adapters import encode_sse

    chunks = [
        json.loads(line[6:])
        for line in body("openai-chat", ("text", "Hi there"), ("tool", "call_1", "f", '{"a": 1}')).split(b"\n")
        if line.startswith(b"data: {")
    ]
    text, args = chunks[1], chunks[4]
    assert text["choices"][0]["delta"] == {"content": "Hi "} and "tool_calls" in args["choices"][0]["delta"]

    def with_delta(chunk, delta=None, **choice):
        (old,) = chunk["choices"]
        return {**chunk, "choices": [{**old, "delta": delta if delta is not None else old["delta"], **choice}]}

    piece = {"index": 0, "function": {"arguments": "x"}}
    odd = [
        with_delta(text, {"content": "x", "role": "assistant"}),
        with_delta(text, {"content": "x", "refusal": None}),
        with_delta(text, {"content": "x", "reasoning_content": "hm"}),
        with_delta(text, {"content": "x", "audio": {}}),
        with_delta(text, {"content": None}),
        with_delta(text, {"content": 5}),
        with_delta(text, {}),
        with_delta(text, finish_reason="stop"),
        with_delta(text, logprobs={"content": []}),
        with_delta(text, index=1),
        {**text, "usage": {"prompt_tokens": 1, "completion_tokens": 1}},
        {**text, "x_groq": {"id": "g"}},
        {**text, "error": {"message": "busy"}},
        {**text, "choices": [text["choices"][0], {**text["choices"][0], "index": 1}]},
        {**text, "choices": []},
        with_delta(text, {"content": "x", "tool_calls": [piece]}),
        with_delta(text, {"content": "x", "tool_calls": None}),
        with_delta(args, {"tool_calls": None}),
        with_delta(args, {"tool_calls": []}),
        with_delta(args, {"tool_calls": [piece, {**piece, "index": 1}]}),
        with_delta(args, {"tool_calls": [{**piece, "id": "call_9"}]}),
        with_delta(args, {"tool_calls": [{**piece, "type": "function"}]}),
        with_delta(args, {"tool_calls": [{"index": 0, "function": {"arguments": "x", "name": "g"}}]}),
        with_delta(args, {"tool_calls": [{"index": 3, "function": {"arguments": "x"}}]}),
        with_delta(args, {"tool_calls": [{"index": "0", "function": {"arguments": "x"}}]}),
        with_delta(args, {"tool_calls": [{"index": 0, "function": {"arguments": None}}]}),
        with_delta(args, {"tool_calls": [{"index": 0, "function": None}]}),
        with_delta(args, {"tool_calls": [{"index": 0}]}),
        with_delta(args, {"tool_calls": [{**piece, "extra": 1}]}),
    ]
    for position in (2, 5):  # beside the open text, then beside the open call
        for item in odd:
            raw = encode_sse([(None, c) for c in [*chunks[:position], item, *chunks[position:]]] + [(None, "[DONE]")])
            same_both_ways("openai-chat", raw)


def test_a_table_compiles_to_code_that_reads_each_row():
    """The kit on a table of its own: what each rule declines, read from real bytes."""
    from modelwire.adapters import Const, Delta, STREAMING
    from modelwire.adapters._fast import compile_fast_path

    rows = (
        Delta("d.t", key=(Const("k"), "i"), kinds=("text",), when={"type": "x"}, absent=("error",), only=("d",)),
        Delta("m.text", fixed="text", kinds=("text",), empty=("m.extra", "done")),
    )
    fast = compile_fast_path(rows, "Toy", STREAMING)

    class Toy:
        state = STREAMING

        def __init__(self) -> None:
            block = type("B", (), {"kind": "text", "closed": False})()
            self.blocks = {("k", 1): block, "text": block}

        def short_delta(self, target, text):
            return [text]

    toy = Toy()
    feed = fast.feed_raw
    assert feed(toy, b'{"type":"x","i":1,"d":{"t":"a"},"z":[1,2]}') == ["a"]  # z: skipped, not read
    assert feed(toy, b'{"type":"x","i":1,"d":{"t":"a","u":1}}') is None  # d holds only t
    assert feed(toy, b'{"type":"x","i":1,"d":{"t":"a"},"error":null}') is None  # absent: not even null
    assert feed(toy, b'{"type":"y","i":1,"d":{"t":"a"}}') is None  # another type
    assert feed(toy, b'{"type":"x","i":2,"d":{"t":"a"}}') is None  # no such block open
    assert feed(toy, b'{"type":"x","i":[1],"d":{"t":"a"}}') is None  # a key of another type
    assert feed(toy, b'{"m":{"text":"b","extra":null},"done":false}') == ["b"]  # empty: null, false
    assert feed(toy, b'{"m":{"text":"b","extra":"e"}}') is None
    assert feed(toy, b'{"m":{"text":""}}') is None and feed(toy, b'{"m":{"text":5}}') is None
    assert feed(toy, b"not json") is None
    toy.state = "ended"
    assert feed(toy, b'{"m":{"text":"b"}}') is None
    assert "def feed_raw(self, raw, event=None):" in fast.source


@pytest.mark.parametrize(
    "row",
    [{"text": "a..b"}, {"text": "a[1]"}, {"text": "list[0]"}, {"text": "class"}, {"text": "a", "when": {"b": []}}],
)
def test_a_table_that_cannot_be_read_is_refused_when_compiled(row):
    from modelwire.adapters import Delta
    from modelwire.adapters._fast import compile_fast_path

    with pytest.raises(ValueError, match="fast-path"):
        compile_fast_path((Delta(**row),))


def test_every_built_in_table_compiles_and_shows_its_rows():
    from modelwire.adapters import fast_path_source

    for name in protocol_names():
        cls = get_protocol(name).adapter_class()
        if cls.deltas:
            source = fast_path_source(cls)
            assert source.count("text = ") == len(cls.deltas), name


def test_two_objects_whose_paths_read_alike_stay_two():
    """``a.b_c`` and ``a_b.c`` would be one name in the generated code: each keeps its own."""
    from modelwire.adapters import STREAMING, Delta
    from modelwire.adapters._fast import compile_fast_path

    fast = compile_fast_path((Delta("a.b_c.t", fixed="x"), Delta("a_b.c.u", fixed="y")), "Alike", STREAMING)
    block = type("B", (), {"kind": "text", "closed": False})()
    toy = type("Toy", (), {"state": STREAMING, "blocks": {"x": block, "y": block}})()
    toy.short_delta = lambda target, text: [text]
    # a null object reads as its own empty one, whose fields are its own
    assert fast.feed_raw(toy, b'{"a":{"b_c":null},"a_b":{"c":{"u":"second"}}}') == ["second"]
    assert fast.feed_raw(toy, b'{"a":{"b_c":{"t":"first"}},"a_b":{"c":null}}') == ["first"]


def test_a_short_path_that_fails_leaves_the_event_to_the_full_path(monkeypatch):
    """A bug in a table's reading (here a ``find`` that raises) is no event lost: the short
    path says None and the full path takes the event; with MODELWIRE_DEBUG=1 it is raised."""
    from modelwire.adapters import STREAMING, Delta
    from modelwire.adapters._fast import compile_fast_path

    fast = compile_fast_path((Delta("t", key="k", find="broken"),), "Broken", STREAMING)

    class Toy:
        state = STREAMING

        def broken(self, key):
            raise KeyError(key)

    monkeypatch.setenv("MODELWIRE_DEBUG", "0")
    assert fast.feed_raw(Toy(), b'{"t":"x","k":1}') is None
    monkeypatch.setenv("MODELWIRE_DEBUG", "1")
    with pytest.raises(KeyError):
        fast.feed_raw(Toy(), b'{"t":"x","k":1}')


@pytest.mark.parametrize("mapped", [False, True])
def test_a_call_made_whole_is_the_call_a_streamed_one_makes(mapped):
    """``whole_call`` (a provider event that is a whole tool call) keeps the rules of a call
    that streams (open_block, delta, close_block): a new id where none is given, an id used
    already renamed (the result then finds the renamed call), the tool's own name for the
    name it was sent as, no delta for empty arguments, a call without a name refused."""

    def run(whole: bool) -> tuple[list[dict], list[str]]:
        adapter = get_protocol("ollama").adapter_class()(
            "r", new_id=iter(f"n{i}" for i in range(99)).__next__, clock=lambda: "T"
        )
        adapter.tool_names = {"sent_name": "own_name"} if mapped else {}
        out = adapter.begin_feed()
        ids = []
        for key, (name, call_id, arguments) in enumerate(
            [("sent_name", "c1", '{"a": 1}'), ("f", "c1", "{}"), ("f", None, ""), ("g", "c2", "[]")]
        ):
            extras = {"x": key} if key < 3 else {}  # the last with none: its END says None
            if whole:
                ids.append(adapter.whole_call(name, call_id, arguments, extras))
            else:
                block = adapter.open_block(key, "tool_call", name=name, block_id=call_id)
                block.extras.update(extras)
                adapter.delta(block, arguments)
                adapter.close_block(key)
                ids.append(block.id)
        result = adapter.open_block("r", "tool_result", name="f", block_id="c1")
        ids.append(result.id)
        with pytest.raises(ProviderError, match="without a name"):
            adapter.whole_call("", "c9", "{}") if whole else adapter.open_block("z", "tool_call", block_id="c9")
        return [{k: v for k, v in e.to_dict().items() if k != "id"} for e in out], ids

    assert run(whole=True) == run(whole=False)
    events, ids = run(whole=True)
    assert ids[:2] == ["c1", "c1_2"] and ids[2].startswith("n") and ids[3:] == ["c2", "c1_2"]
    assert events[0]["tool_call_name"] == ("own_name" if mapped else "sent_name")
    assert [e["type"] for e in events[6:8]] == ["TOOL_CALL_START", "TOOL_CALL_END"]  # no arguments: no delta
    assert events[10]["type"] == "TOOL_CALL_END" and events[10]["extras"] is None
