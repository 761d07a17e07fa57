"""Partial JSON while it streams: every view the parser gives is a prefix of the final value,
``feed`` says when the view changed and only then, the final value is ``json.loads``'s, and
text that cannot become JSON is refused where json.loads refuses it, with a typed error.

The oracle is ``json.loads`` of the whole text; the views are checked against it on random
JSON split anywhere (escapes and surrogate pairs cut in two included) and on the argument
deltas of every tool call in the recorded provider streams."""

from __future__ import annotations

import asyncio
import copy
import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from modelwire import event as E
from modelwire.errors import PartialJSONError, ProviderError, StreamGrammarError
from modelwire.event import PartialJSON, PartialToolCalls

from paths import HAVE_SHARED, ROOT

MODES = [
    {},
    {"whole_under": 0},
    {"partial_strings": True, "whole_under": 0},
    {"whole_under": 64},
    {"partial_strings": True, "whole_under": 16},
]
PROPS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def is_prefix(partial, final, strings_cut: bool) -> bool:
    """Whether ``partial`` shows ``final`` as far as it goes: the same keys with prefix
    values, at most as many items, the last of them maybe unfinished; a string cut only
    when open strings show."""
    if isinstance(partial, dict):
        return isinstance(final, dict) and all(
            k in final and is_prefix(v, final[k], strings_cut) for k, v in partial.items()
        )
    if isinstance(partial, list):
        if not isinstance(final, list) or len(partial) > len(final):
            return False
        whole = all(p == f for p, f in zip(partial[:-1], final))
        return whole and (not partial or is_prefix(partial[-1], final[len(partial) - 1], strings_cut))
    if isinstance(partial, str) and strings_cut:
        return isinstance(final, str) and final.startswith(partial)
    return type(partial) is type(final) and partial == final


def snapshot(value):
    """A copy of a view as it is now (the parser grows its value in place)."""
    return copy.deepcopy(value)


def views(pieces: list[str], **options) -> tuple[list, object]:
    """Each view after a piece that changed it, and the final value; a piece that did not
    change the view must leave it as it was."""
    parser = PartialJSON(**options)
    seen, last = [], ()
    for piece in pieces:
        changed = parser.feed(piece)
        now = (snapshot(parser.value),) if parser.has_value else ()  # () before anything shows
        assert changed == (now != last), (piece, last, now)
        if changed:
            seen.append(now[0])
        last = now
    return seen, parser.finish()


def check_views(text: str, pieces: list[str], **options) -> int:
    final = json.loads(text)
    seen, got = views(pieces, **options)
    assert got == final and type(got) is type(final)
    cut = bool(options.get("partial_strings"))
    for view in seen:
        assert is_prefix(view, final, cut), (view, final)
    for before, after in zip(seen, seen[1:]):  # each view extends the one before
        assert is_prefix(before, after, cut), (before, after)
    return len(seen)


def split(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts} | {0, len(text)})
    return [text[a:b] for a, b in zip(points, points[1:])] or [""]


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**20), max_value=10**20)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(
        st.characters(codec="utf-8", exclude_categories=["Cs"]) | st.sampled_from('"\\/\b\f\n\r\t\x00\x1f\u2028😀é')
    )
    | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=5), inner, max_size=5),
    max_leaves=25,
)


@PROPS
@given(
    json_values,
    st.booleans(),
    st.sampled_from([None, 0, 2]),
    st.lists(st.integers(min_value=0, max_value=10**6), max_size=40),
    st.sampled_from(MODES),
)
def test_random_json_split_anywhere_gives_prefix_views_and_the_whole_value(value, ascii, indent, cuts, mode):
    text = json.dumps(value, ensure_ascii=ascii, indent=indent)
    check_views(text, split(text, cuts), **mode)


@pytest.mark.parametrize("mode", MODES, ids=lambda m: ",".join(f"{k}={v}" for k, v in m.items()) or "default")
def test_escapes_and_surrogate_pairs_cut_at_every_place(mode):
    value = {"s": 'a\\"\u00e9\U0001f600\n\t/\ud83d z', "k\U0001f600": ["\\u00e9", "\udc00", "\ud800\udc00"]}
    for text in (json.dumps(value), json.dumps(value, ensure_ascii=False)):
        for a in range(len(text) + 1):
            for b in range(a, min(len(text), a + 14) + 1):  # every cut, and every pair of cuts near each other
                check_views(text, [text[:a], text[a:b], text[b:]], **mode)
        check_views(text, list(text), **mode)  # one character a piece


@pytest.mark.parametrize("mode", MODES, ids=lambda m: ",".join(f"{k}={v}" for k, v in m.items()) or "default")
def test_backslash_runs_cut_anywhere_escape_the_right_quote(mode):
    """A piece of a string's text is taken whole unless a quote in it may end the string; a
    backslash at the end of one piece escapes the next one's first character, and a run of
    them may span pieces (an escaped backslash before the closing quote, code that quotes)."""
    value = ["x\\", "\\\\\\", 'say("\\"hi\\"")', "\\" * 9 + '"', {"k\\": "v\\\\"}, "end"]
    pad = "p" * 300  # past whole_under: the list opens and its strings stream
    for text in (json.dumps([pad, *value]), json.dumps({"a": pad, "b": value}, indent=1)):
        for a in range(len(pad), len(text) + 1):
            for b in range(a, min(len(text), a + 7) + 1):
                check_views(text, [text[:a], text[a:b], text[b:]], **mode)
        check_views(text, list(text), **mode)


def test_a_list_of_records_comes_item_by_item_whatever_the_commas():
    """Each record of a long list shows once whole, read in one step by the C scanner,
    with ``, ``, ``,`` or a new line and spaces between them; an item that cannot become
    JSON is refused where json.loads refuses it, the records before it kept."""
    records = [
        {"id": i, "tags": ["a", "b"][: i % 3], "sub": {"n": [i, {"m": None}]}, "s": "}]" * (i % 2)} for i in range(16)
    ]
    texts = [
        json.dumps({"items": records}),
        json.dumps({"items": records}, separators=(",", ":")),
        json.dumps({"items": records}, indent=2),
        json.dumps([[r] for r in records]),
    ]
    rnd = random.Random(70)
    for text in texts:
        for mode in MODES:
            for size in (3, 40, 137):
                check_views(text, [text[i : i + size] for i in range(0, len(text), size)], **mode)
            check_views(text, split(text, [rnd.randrange(len(text)) for _ in range(30)]), **mode)
    faults = [('"id": 9,', '"id": NaN,', "N", 9), ('"id": 9,', '"id" 9,', "9", 9), ("}, {", "} {", "{", 1)]
    for bad, fault, where, whole in faults:
        broken = texts[0].replace(bad, fault, 1)
        at = broken.index(fault) + fault.index(where)
        for mode in MODES:
            parser = PartialJSON(**mode)
            with pytest.raises(PartialJSONError) as info:
                for i in range(0, len(broken), 100):
                    parser.feed(broken[i : i + 100])
                parser.finish()
            assert info.value.position == at, (fault, mode, info.value)
            items = info.value.value["items"]
            assert items[:whole] == records[:whole] and len(items) <= whole + 1, (fault, mode)


@pytest.mark.parametrize("mode", MODES, ids=lambda m: ",".join(f"{k}={v}" for k, v in m.items()) or "default")
def test_an_error_after_a_long_string_says_where_json_loads_does(mode):
    long = 'ab\\c"d é ' * 60
    for broken in (
        json.dumps({"a": long, "b": 1})[:-8] + ", x}",  # a key that is not a string
        json.dumps([long, long])[:-1] + " 2]",  # a missing comma
        json.dumps({"a": long})[:-2] + "\\q" + '"}',  # a bad escape at the end of a long string
    ):
        with pytest.raises(ValueError) as want:
            json.loads(broken)
        parser = PartialJSON(**mode)
        with pytest.raises(PartialJSONError) as got:
            for i in range(0, len(broken), 50):
                parser.feed(broken[i : i + 50])
            parser.finish()
        assert got.value.position == want.value.pos, (got.value, want.value)


def test_an_open_string_shows_only_whole_characters():
    parser = PartialJSON(partial_strings=True)
    shown = []
    for piece in ['"ab', "\\", "u00", "e9", "\\ud83d", "\\ude00", "!", '"']:
        parser.feed(piece)
        shown.append(parser.value)
    assert shown == ["ab", "ab", "ab", "abé", "abé", "abé😀", "abé😀!", "abé😀!"]
    assert parser.done


def test_what_shows_and_when():
    parser = PartialJSON(whole_under=0)
    steps = [
        ('{"a', {}),  # the object opens at once; a key without its value does not show
        ('": 12', {}),  # 12 may still grow
        (", ", {"a": 12}),
        ('"b": "op', {"a": 12}),  # an open string shows only when asked for
        ('en", "c": [tr', {"a": 12, "b": "open", "c": []}),
        ("ue, nul", {"a": 12, "b": "open", "c": [True]}),
        ("l]}", {"a": 12, "b": "open", "c": [True, None]}),
    ]
    for piece, view in steps:
        parser.feed(piece)
        assert parser.value == view, piece
    assert parser.done and parser.finish() == {"a": 12, "b": "open", "c": [True, None]}


def test_by_default_a_container_under_256_characters_shows_once_whole():
    """The default keeps the cost near one ``json.loads`` (benchmarks/partial_json.py): a UI
    sees a small container at most 256 characters late, a big one as it goes."""
    small = PartialJSON()
    assert small.feed('{"city": "Paris", "days": [1, 2') is False and not small.has_value
    assert small.feed("]}") is True and small.value == {"city": "Paris", "days": [1, 2]}
    big = PartialJSON()
    big.feed('{"note": "' + "x" * 300 + '", "items": [{"a": 1}, {"b"')
    assert big.value == {"note": "x" * 300}  # the note is whole; the list is still small
    big.feed(": 2}, " + '{"n": 0}, ' * 30)
    assert big.value == {"note": "x" * 300, "items": [{"a": 1}, {"b": 2}] + [{"n": 0}] * 30}


def test_open_strings_show_as_they_grow_in_a_small_object_by_default():
    """``partial_strings=True`` is asked for to see text as it comes: its default shows every
    container as it opens, or a short answer would show nothing until it closed."""
    parser = PartialJSON(partial_strings=True)
    assert parser.feed('{"answer": "Hel') is True and parser.value == {"answer": "Hel"}
    calls = PartialToolCalls(partial_strings=True)
    calls.see(E.ToolCallStartEvent(reply_id="r", tool_call_id="c1", tool_call_name="say"))
    partial = calls.see(E.ToolCallDeltaEvent(reply_id="r", tool_call_id="c1", delta='{"text": "Hi th'))
    assert partial is not None and partial.value == {"text": "Hi th"}
    assert PartialJSON(partial_strings=True, whole_under=256).feed('{"answer": "Hel') is False


def test_a_small_container_shows_once_whole_with_whole_under():
    parser = PartialJSON(whole_under=100)
    assert parser.feed('[{"a": 1, "b"') is False and not parser.has_value
    assert parser.feed(': 2}, {"c"') is False  # the array's text so far is still under 100
    assert parser.feed(": 3}]") is True and parser.value == [{"a": 1, "b": 2}, {"c": 3}]
    big = PartialJSON(whole_under=10)
    big.feed('[{"a": 1, "b": 2}, {"c"')
    assert big.value == [{"a": 1, "b": 2}]  # past 10 characters the array opened; the record came whole


@pytest.mark.parametrize("text", ["12", " -0.5e-3 ", "true", "null", '"x"', "[]", "{}"])
def test_a_top_value_that_is_not_a_container(text):
    parser = PartialJSON()
    for ch in text:
        parser.feed(ch)
    assert parser.finish() == json.loads(text)


@PROPS
@given(json_values, st.integers(min_value=0, max_value=10**6), st.sampled_from('{}[]",:\\ 0-.etu\x01'), st.booleans())
def test_broken_json_is_refused_where_json_loads_refuses_it(value, where, char, insert):
    text = json.dumps(value)
    at = where % (len(text) + 1)
    broken = text[:at] + char + text[at + (0 if insert else 1) :]
    try:  # json.loads takes NaN and Infinity; JSON (RFC 8259) does not, nor does the parser
        want = json.loads(broken, parse_constant=_refuse)
    except ValueError:
        want = PartialJSONError
    parser = PartialJSON()
    try:
        for piece in split(broken, [at, at + 1, where // 7]):
            parser.feed(piece)
        got = parser.finish()
    except PartialJSONError as exc:
        assert 0 <= exc.position <= len(broken)
        got = PartialJSONError
    assert got == want


def _refuse(name: str):
    raise ValueError(name)


def test_an_error_keeps_what_was_parsed_and_the_parser_stays_refused():
    parser = PartialJSON(whole_under=0)
    parser.feed('{"a": [1, 2], "b": ')
    with pytest.raises(PartialJSONError, match="at character 19") as info:
        parser.feed("}")
    assert info.value.value == {"a": [1, 2]} and info.value.position == 19
    assert isinstance(info.value, ValueError)
    with pytest.raises(PartialJSONError):
        parser.feed("1}")
    with pytest.raises(PartialJSONError, match="ends inside an unclosed array"):
        cut = PartialJSON()
        cut.feed("[1, 2")
        cut.finish()
    with pytest.raises(PartialJSONError, match="NaN|'N'"):
        PartialJSON().feed("[NaN]")


# -- tool calls in events ------------------------------------------------------------------------


def call_events(calls: list[tuple[str, str, list[str]]], interleave: bool) -> list:
    events = [E.ToolCallStartEvent(reply_id="r", tool_call_id=i, tool_call_name=n) for i, n, _ in calls]
    deltas = [(i, d) for i, _, pieces in calls for d in pieces]
    if interleave:  # one delta of each call in turn
        longest = max(len(pieces) for _, _, pieces in calls)
        deltas = [(i, pieces[k]) for k in range(longest) for i, _, pieces in calls if k < len(pieces)]
    events += [E.ToolCallDeltaEvent(reply_id="r", tool_call_id=i, delta=d) for i, d in deltas]
    return events + [E.ToolCallEndEvent(reply_id="r", tool_call_id=i) for i, _, _ in calls]


@pytest.mark.parametrize("interleave", [False, True])
def test_parallel_calls_grow_each_on_its_own(interleave):
    weather = ['{"ci', 'ty": "Pa', 'ris", "days', '": [1, ', "2]}"]
    time = ['{"zone":', ' "UTC"}']
    events = call_events([("c1", "weather", weather), ("c2", "time", time), ("c3", "ping", [])], interleave)
    calls = PartialToolCalls(whole_under=0)  # every container as it opens
    got: dict[str, list] = {}
    for ev in events:
        partial = calls.see(ev)
        if partial is not None:
            got.setdefault(partial.tool_call_id, []).append((snapshot(partial.value), partial.done))
    assert got["c1"] == [
        ({}, False),
        ({"city": "Paris"}, False),
        ({"city": "Paris", "days": [1]}, False),
        ({"city": "Paris", "days": [1, 2]}, False),
        ({"city": "Paris", "days": [1, 2]}, True),
    ]
    assert got["c2"] == [({}, False), ({"zone": "UTC"}, False), ({"zone": "UTC"}, True)]
    assert got["c3"] == [({}, True)]  # a call without arguments
    by_default = PartialToolCalls()  # containers under 256 characters show once whole
    seen = [(p.tool_call_id, snapshot(p.value), p.done) for p in map(by_default.see, events) if p is not None]
    assert [s for s in seen if s[0] == "c1"] == [("c1", got["c1"][-1][0], False), ("c1", got["c1"][-1][0], True)]


def test_a_call_whose_arguments_are_not_json_gives_one_error_and_no_more():
    events = call_events([("c1", "f", ['{"a": 1, ', '"b" 2', "}"])], interleave=False)
    calls = PartialToolCalls(whole_under=0)
    seen = [p for p in map(calls.see, events) if p is not None]
    assert [(p.value, p.done, type(p.error).__name__) for p in seen] == [
        ({"a": 1}, False, "NoneType"),
        ({"a": 1}, False, "PartialJSONError"),
    ]


# -- the recorded provider streams -----------------------------------------------------------

BODIES = (".sse", ".txt", ".bin", ".eventstream", ".ndjson")
RECORDED = sorted(p for p in ROOT.rglob("*") if p.suffix in BODIES and p.is_file()) if HAVE_SHARED else []


def recorded_calls() -> list[tuple[str, list]]:
    from decoding import decode

    from modelwire.protocols import sniff

    out = []
    for path in RECORDED:
        body = path.read_bytes()
        name = sniff(body)
        if name is None:
            continue
        try:
            _, events, _ = decode(name, [body])
        except (ProviderError, StreamGrammarError):
            continue  # a continuation of another stream: decoded with it elsewhere
        if any(ev.type == "TOOL_CALL_DELTA" for ev in events):
            out.append((f"{path.parent.name}/{path.name}", events))
    return out


@pytest.mark.skipif(not HAVE_SHARED, reason="../shared/recorded-streams is not present")
def test_every_recorded_tool_call_gives_prefix_views_of_its_arguments():
    streams = recorded_calls()
    assert len(streams) >= 10, [name for name, _ in streams]
    checked = 0
    for name, events in streams:
        whole: dict[str, str] = {}
        for ev in events:
            if ev.type == "TOOL_CALL_DELTA":
                whole[ev.tool_call_id] = whole.get(ev.tool_call_id, "") + ev.delta
        for mode in MODES:
            calls = PartialToolCalls(**mode)
            for ev in events:
                partial = calls.see(ev)
                if partial is None:
                    continue
                args = whole[partial.tool_call_id]
                try:
                    final = json.loads(args) if args.strip() else {}
                except ValueError:
                    assert partial.error is not None or not partial.done, (name, args)
                    continue
                assert partial.error is None, (name, partial.error)
                view = snapshot(partial.value)
                assert is_prefix(view, final, bool(mode.get("partial_strings"))), (name, view, final)
                assert not partial.done or view == final, name
                checked += 1
        # and the same arguments re-cut at random places, piece by piece
        for cid, args in whole.items():
            if args.strip().startswith(("{", "[")) and _json(args):
                rnd = random.Random(cid)
                check_views(args, split(args, [rnd.randrange(len(args) + 1) for _ in range(len(args) // 3)]))
    assert checked > 100


def _json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


# -- the agent's structured output -----------------------------------------------------------


class Forecast(BaseModel):
    city: str
    days: list[int]
    note: str = ""


@pytest.mark.parametrize("model_string", ["openai:gpt-test", "openai-responses:resp-test", "anthropic:claude-test"])
def test_the_agent_structured_output_grows_then_ends_validated(server, model_string):
    from modelwire.agent import Agent
    from modelwire.message import UserMsg
    from modelwire.models import load_model
    from modelwire.models.transport import RetryPolicy
    from modelwire.testing import sse as sse_bodies
    from modelwire.testing import stream_reply

    model = load_model(
        model_string,
        api_key="sk-test",
        base_url=server.url + ("" if model_string.startswith("anthropic") else "/v1"),
        retry=RetryPolicy(max_retries=0),
    )
    answer = '{"city": "Paris", "days": [21, 23, 19], "note": "sunny then rain"}'
    native = model.capabilities.native_structured_output
    # native: the answer is the reply's text; else the final_answer tool's arguments, after some prose
    blocks = [("text", answer)] if native else [("text", "Here it is."), ("tool", "c1", "final_answer", answer)]
    server.script(stream_reply(model.protocol, sse_bodies.body(model.protocol, *blocks)))
    agent = Agent("Buddy", model)
    partials = agent.partial_output(Forecast)

    async def collect():
        seen = []
        async for ev in agent.reply_stream(UserMsg("user", "Forecast for Paris"), structured_model=Forecast):
            partial = partials.see(ev)
            if partial is not None:
                seen.append(partial._replace(value=snapshot(partial.value)))
        return seen

    seen = asyncio.run(collect())
    final = json.loads(answer)
    *growing, last = seen
    assert last.done and last.value == final and last.output == Forecast(**final)
    assert growing and not any(p.done for p in growing)
    for partial in growing:
        assert is_prefix(partial.value, final, strings_cut=False), partial.value


# -- serve: each dialect's own form for a call's arguments as they come -------------------------


def _anthropic_tool_call(call_id: str, name: str, pieces: list[str]) -> bytes:
    """An Anthropic stream whose one tool call's arguments come in ``pieces``."""
    from modelwire.adapters import encode_sse

    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test", "content": []}
    events = [
        {"type": "message_start", "message": {**message, "usage": {"input_tokens": 5, "output_tokens": 1}}},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}},
        },
        *[
            {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": p}}
            for p in pieces
        ],
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}},
        {"type": "message_stop"},
    ]
    return encode_sse([(e["type"], e) for e in events])


@pytest.mark.parametrize("dialect", ["ui-message", "ag-ui"])
def test_serve_sends_a_calls_arguments_as_they_come_in_the_dialects_own_form(dialect):
    """The AI SDK's UI message stream has ``tool-input-delta`` (its client parses the input so
    far itself) and AG-UI has ``TOOL_CALL_ARGS``: the pieces go as they come, in order, and
    read back as partial JSON each view is a prefix of the whole input."""
    test_serve = pytest.importorskip("test_serve")
    from modelwire.testing import ProviderServer, sse_reply
    from modelwire.testing.sse import body

    args = '{"city": "S\\u00e3o Paulo \\ud83d\\ude00", "days": [1, 2, 3], "units": "metric"}'
    pieces = [args[i : i + 5] for i in range(0, len(args), 5)]
    with ProviderServer() as provider:
        provider.replies = [
            sse_reply(_anthropic_tool_call("toolu_1", "weather", pieces)),
            sse_reply(body("anthropic", ("text", "Sunny."))),
        ]
        with test_serve.Served(test_serve.app_for(provider)) as url:
            with test_serve.httpx.Client() as client:
                if dialect == "ag-ui":
                    resp = client.post(url + "/reply", json=test_serve.AG_UI_INPUT)
                else:
                    user = {"id": "m1", "role": "user", "parts": [{"type": "text", "text": "Weather?"}]}
                    resp = client.post(url + "/reply", json={"id": "chat1", "messages": [user]})
    frames = [f for f in test_serve.frames_of(resp.content) if isinstance(f, dict)]
    if dialect == "ag-ui":
        sent = [f["delta"] for f in frames if f["type"] == "TOOL_CALL_ARGS"]
        whole = json.loads(args)
    else:
        sent = [f["inputTextDelta"] for f in frames if f["type"] == "tool-input-delta"]
        (available,) = [f for f in frames if f["type"] == "tool-input-available"]
        whole = available["input"]
        assert whole == json.loads(args)
    assert sent == pieces
    assert check_views(args, sent, partial_strings=True, whole_under=0) >= 5
