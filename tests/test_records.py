"""The record classes messages, blocks and events are made of: construction checks, the
JSON form, copies, the positional constructor adapters use, ids, and the stream decoder's
path for a whole event per piece."""

from __future__ import annotations

import copy
import json
import os
import pickle
import subprocess
import sys
import typing

import pytest

from modelwire import event as E
from modelwire._ids import new_id
from modelwire._record import Record, field, maker
from modelwire.adapters import StreamDecoder
from modelwire.errors import RoleError, ValidationError
from modelwire.message import (
    AssistantMsg,
    DataBlock,
    Msg,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    Usage,
    extras_of,
    fields_of,
)
from modelwire.protocols import get_protocol, protocol_names
from modelwire.testing.sse import body


def test_every_missing_field_is_named_at_once():
    with pytest.raises(ValidationError) as info:
        ToolCallBlock(name="f")
    assert [e["loc"] for e in info.value.errors()] == [("id",), ("input",)]
    assert {e["type"] for e in info.value.errors()} == {"missing"}


def test_a_wrong_type_says_where_inside_the_message():
    with pytest.raises(ValidationError) as info:
        Msg.from_dict(
            {
                "name": "a",
                "role": "assistant",
                "content": [{"type": "tool_result", "id": "c", "name": "f", "output": [{"type": "text", "text": 3}]}],
            }
        )
    (error,) = info.value.errors()
    assert error["loc"] == ("content", 0, "tool_result", "output", 0, "text", "text")
    assert error["type"] == "string_type" and "invalid Msg" in str(info.value)


def test_values_of_the_right_kind_are_taken_as_a_validating_library_would():
    assert Usage(input_tokens=3.0, output_tokens=True).to_dict()["input_tokens"] == 3
    with pytest.raises(ValidationError, match="integer"):
        Usage(input_tokens=2.5, output_tokens=1)
    with pytest.raises(ValidationError, match="expected one of"):
        ToolCallBlock(id="c", name="f", input="{}", state="done")
    assert ToolCallBlock(id="c", name="f", input="{}", state="asking").state == "asking"


def test_the_tag_is_fixed_per_class():
    assert TextBlock(type="text", text="x").type == "text"
    with pytest.raises(ValidationError, match="expected 'text'"):
        TextBlock(type="thinking", text="x")


def test_extras_ride_after_the_fields_and_only_where_a_block_takes_them():
    block = ThinkingBlock(thinking="t", id="b", created_at="T", signature="sig")
    assert list(block.to_dict()) == [*fields_of(ThinkingBlock), "signature"]
    assert extras_of(block) == {"signature": "sig"} and block.signature == "sig"
    result = ToolResultBlock(id="c", name="f", output="ok")
    assert dict(extras_of(result)) == {}
    with pytest.raises(TypeError):
        extras_of(result)["x"] = 1  # read-only: no shared dict to corrupt
    with pytest.raises(AttributeError):
        result.not_a_field = 1
    with pytest.raises(TypeError):
        ToolResultBlock(id="c", name="f", output="ok", typo=1)  # a keyword typo is an error
    # ... while JSON from a newer writer loads, its unknown keys dropped
    newer = ToolResultBlock.from_dict({"type": "tool_result", "id": "c", "name": "f", "output": "ok", "future": 1})
    assert newer.output == "ok" and "future" not in newer.to_dict() and not hasattr(newer, "future")
    loaded = E.parse_event({"type": "TEXT_BLOCK_DELTA", "reply_id": "r", "block_id": "b", "delta": "x", "future": 1})
    assert loaded.delta == "x" and "future" not in loaded.to_dict()


def test_replace_checks_what_it_changes_and_shares_the_rest():
    msg = AssistantMsg("a", [ToolCallBlock(id="c", name="f", input="{}")], id="m")
    other = msg.replace(name="b")
    assert other.name == "b" and other.content[0] is msg.content[0] and other.content is not msg.content
    with pytest.raises(RoleError):
        msg.replace(role="user")
    with pytest.raises(ValidationError, match="string"):
        msg.replace(name=3)


@pytest.mark.parametrize("how", ["copy", "deepcopy", "pickle"])
def test_copies_are_equal_and_own_their_parts(how):
    msg = AssistantMsg(
        "a",
        [
            TextBlock(text="x", citations=[{"n": 1}]),
            DataBlock(source={"type": "url", "url": "https://x/y.png", "media_type": "png"}),
        ],
    )
    msg.usage = Usage(input_tokens=1, output_tokens=2)
    made = {"copy": copy.copy, "deepcopy": copy.deepcopy, "pickle": lambda m: pickle.loads(pickle.dumps(m))}[how](msg)
    assert made == msg and made.to_json() == msg.to_json()
    made.content.append(TextBlock(text="more"))  # the copy's own list, still checked
    assert len(msg.content) == 2
    with pytest.raises(RoleError):
        made.role = "system"
    if how != "copy":
        assert made.content[0] is not msg.content[0] and made.content[0].citations == [{"n": 1}]


def test_the_positional_constructor_checks_as_the_keyword_one_does():
    make = maker(E.TextBlockDeltaEvent, "id", "created_at", "reply_id", "block_id", "delta")
    fast = make("i", "T", "r", "b", "x")
    assert fast == E.TextBlockDeltaEvent(id="i", created_at="T", reply_id="r", block_id="b", delta="x")
    assert fast.metadata == {} and fast.metadata is not make("i", "T", "r", "b", "x").metadata
    with pytest.raises(ValidationError, match="delta"):
        make("i", "T", "r", "b", 5)
    media = maker(E.DataBlockDeltaEvent, "reply_id", "block_id", "media_type", "data")
    assert media("r", "b", "jpg", "QUI").to_dict()["data"] == "QUI="  # the class's own checks ran
    with pytest.raises(TypeError, match="no field"):
        maker(E.TextBlockDeltaEvent, "reply_id", "block_id", "delta", "nope")


def test_a_positional_constructor_stores_the_fields_its_caller_vouches_for_unchecked():
    """``trusted`` fields (an adapter's own ids and stamps) are stored as given; every other
    field is still checked, and a trusted field must be one of the named ones."""
    make = maker(E.TextBlockDeltaEvent, "reply_id", "block_id", "delta", trusted=("reply_id", "block_id"))
    assert make(5, "b", "x").reply_id == 5  # not checked: the caller's word
    with pytest.raises(ValidationError, match="delta"):
        make("r", "b", 5)
    with pytest.raises(TypeError, match="trusted fields must be named"):
        maker(E.TextBlockDeltaEvent, "reply_id", "block_id", "delta", trusted=("created_at",))


def test_an_adapter_refuses_a_reply_id_that_is_not_a_string():
    """Its events carry the reply id unchecked, so the adapter checks it once."""
    from modelwire.protocols import get_protocol

    with pytest.raises(TypeError, match="reply_id must be a string"):
        get_protocol("anthropic").adapter_class()(5)


def test_a_role_error_survives_pickling_with_its_details():
    err = RoleError("user", "thinking", "content[0]")
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is RoleError and back.role == "user" and str(back) == str(err)
    broad = pickle.loads(pickle.dumps(ValidationError("Msg", [{"loc": ("name",), "msg": "m", "type": "t"}])))
    assert str(broad) == "invalid Msg: name: m"


def test_the_contract_imports_without_pydantic():
    code = (
        "import sys, modelwire.message, modelwire.event, modelwire.agent; print(sorted(m for m "
        "in sys.modules if m.split('.')[0] in ('pydantic', 'pydantic_core')))"
    )
    src = os.path.join(os.path.dirname(__file__), "..", "src")
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": src}, check=True
    )
    assert out.stdout.strip() == "[]"


def test_the_contract_loads_no_module_it_does_not_use_at_once():
    """``import modelwire.message, modelwire.event`` is on every program's path: the clock,
    the JSON decoder, copying and provenance load when first used."""
    code = (
        "import sys, modelwire.message, modelwire.event\n"
        "print(sorted(m for m in ('datetime', 'json', 'copy', 'modelwire.message._provenance') if m in sys.modules))\n"
        "from modelwire.message import Origin, origin\n"
        "e = modelwire.event.event_from_json(modelwire.event.TextBlockDeltaEvent(reply_id='r', "
        "block_id='b', delta='x').to_json())\n"
        "print(Origin('anthropic').protocol, e.delta, origin(modelwire.message.TextBlock(text='t')))"
    )
    src = os.path.join(os.path.dirname(__file__), "..", "src")
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": src}, check=True
    )
    assert out.stdout.split("\n")[:2] == ["[]", "anthropic x None"]


@pytest.mark.parametrize("zone", ["UTC", "America/New_York", "Asia/Kolkata"])
def test_timestamps_are_what_datetime_writes(zone):
    """Timestamps are formatted without :mod:`datetime`, a second at a time: each must be
    what ``datetime.fromtimestamp(t).isoformat()`` writes, across a change of daylight
    saving time and with a zero fraction (which isoformat leaves out)."""
    code = (
        "import datetime, random\n"
        "from modelwire._ids import _iso, now_iso\n"
        "base = 1710054000 * 10**6  # 2024-03-10 07:00 UTC: 02:00 in New York jumps to 03:00\n"
        "stamps = [base + s * 10**6 + f for s in range(-3, 4) for f in (0, 1, 999_999)]\n"
        "stamps += [random.randrange(0, 4 * 10**15) for _ in range(2000)]\n"
        "bad = [u for u in stamps if _iso(u) != datetime.datetime.fromtimestamp(u // "
        "10**6).replace(microsecond=u % 10**6).isoformat()]\n"
        "before = datetime.datetime.now().isoformat(); mine = now_iso(); after = datetime.datetime.now().isoformat()\n"
        "print(bad[:3], before <= mine <= after)"
    )
    env = {**os.environ, "TZ": zone, "PYTHONPATH": os.path.join(os.path.dirname(__file__), "..", "src")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "[] True"


def test_a_record_class_reads_its_annotations_as_get_type_hints_does():
    """A record class's first use evaluates its annotations with each text compiled once per
    process: for every record class modelwire has, and for classes whose annotations
    leave a name to resolve or carry ``Annotated``, the result is ``get_type_hints``'s."""
    import modelwire.agent  # noqa: F401 - every record class modelwire defines
    import modelwire.models  # noqa: F401
    import modelwire.serve  # noqa: F401
    from modelwire._record import _hints

    classes, todo = [], [Record]
    while todo:
        for sub in todo.pop().__subclasses__():
            classes.append(sub)
            todo.append(sub)
    assert len(classes) > 40
    for cls in [*classes, _Quoted, _Annotated]:
        assert _hints(cls) == typing.get_type_hints(cls), cls
    assert _Quoted(items=[TextBlock(text="x")]).items[0].text == "x"


class _Quoted(Record):
    items: list["TextBlock"] = field(default_factory=list)  # noqa: UP037 - a quoted name inside an annotation
    block: TextBlock | None = None


class _Annotated(Record):
    note: typing.Annotated[str, 5] = ""


def test_ids_are_unique_and_a_forked_child_draws_its_own():
    ids = {new_id() for _ in range(5000)}
    assert len(ids) == 5000 and all(len(i) == 32 and int(i, 16) >= 0 for i in ids)
    new_id()  # the pool holds ids drawn ahead now
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.write(write, " ".join(new_id() for _ in range(70)).encode())
        os._exit(0)
    os.waitpid(pid, 0)
    child = set(os.read(read, 1 << 16).decode().split())
    mine = {new_id() for _ in range(70)}
    assert len(child) == 70 and not child & mine


def _strip(events):
    return [e.to_dict() for e in events]


@pytest.mark.parametrize("protocol", [p for p in protocol_names() if get_protocol(p).framing == "sse"])
def test_a_whole_event_per_piece_decodes_as_the_whole_body_does(protocol):
    """Providers flush one event per piece; the decoder takes such a piece apart on its
    own path. The events must be those of the same bytes in one piece, and of the same
    bytes split where no event ends."""
    raw = body(protocol, ("think", "hm"), ("text", "Hello there"), ("tool", "c1", "f", '{"a": 1}'))
    pieces = [p + b"\n\n" for p in raw.split(b"\n\n") if p]
    # a field before an event, an id and a comment: these pieces take the full decoder
    pieces[1:1] = [b": keep-alive\n\n"]
    wire = get_protocol(protocol)

    def decode(chunks):
        counter = iter(range(1_000_000))
        adapter = wire.adapter_class()("r", new_id=lambda: f"id{next(counter)}", clock=lambda: "T")
        decoder = StreamDecoder(adapter)
        out = []
        for chunk in chunks:
            out += decoder.feed(chunk)
        return _strip(out + decoder.close()), _heard(adapter)

    whole, heard = decode([b"".join(pieces)])
    assert decode(pieces) == (whole, heard)
    odd = b"".join(pieces)
    assert decode([odd[i : i + 7] for i in range(0, len(odd), 7)]) == (whole, heard)
    assert any(e["type"] == "TEXT_BLOCK_DELTA" for e in whole)
    names = {name for name, _ in heard}
    assert names == {"message"} or "message" not in names  # the names the provider sent, or none


def _heard(adapter):
    """What the SSE decoder handed the adapter: (event name, data) per event."""
    return adapter.heard


@pytest.fixture(autouse=True)
def _listen(monkeypatch):
    """Each adapter notes what it is fed (the SSE event names and data), then does its work.
    Each protocol's own adapter class is wrapped, as its feed may be its own; so is its short
    path from the bytes, where it has one, for the events it takes (the others go on to feed)."""

    def listening(real):
        def feed(self, data, event=None):
            self.__dict__.setdefault("heard", []).append((event, json.dumps(data, sort_keys=True)))
            return real(self, data, event)

        return feed

    def listening_raw(real):
        def feed_raw(self, raw, event=None):
            out = real(self, raw, event)
            if out is not None:
                self.__dict__.setdefault("heard", []).append((event, json.dumps(json.loads(raw), sort_keys=True)))
            return out

        return feed_raw

    for cls in {get_protocol(p).adapter_class() for p in protocol_names()}:
        monkeypatch.setattr(cls, "feed", listening(cls.feed))
        fast = cls.fast_path()  # the short path its deltas table compiles to
        if fast is not None:
            monkeypatch.setattr(cls, "_BaseAdapter__fast", fast._replace(feed_raw=listening_raw(fast.feed_raw)))


def test_an_event_name_sent_in_its_own_piece_names_the_next_data():
    wire = get_protocol("anthropic")
    raw = body("anthropic", ("text", "Hi"))
    pieces = [p + b"\n\n" for p in raw.split(b"\n\n") if p]
    split = []
    for piece in pieces:
        name, _, data = piece.partition(b"\n")
        split += [name + b"\n", data] if piece.startswith(b"event: ") else [piece]
    ping = b'data: {"type": "ping"}\n\n'  # an event without a name, right after a named one
    split.insert(2, ping)
    adapter = wire.adapter_class()("r")
    decoder = StreamDecoder(adapter)
    events = [e for chunk in split for e in decoder.feed(chunk)] + decoder.close()
    names = [p[7 : p.index(b"\n")].decode() for p in pieces]
    assert [name for name, _ in adapter.heard] == [names[0], "message", *names[1:]]
    assert [e.type for e in events][-1] == "MODEL_CALL_END"
    assert "".join(e.delta for e in events if e.type == "TEXT_BLOCK_DELTA").strip() == "Hi"


def test_a_lazy_field_is_made_on_its_first_read_and_kept():
    from modelwire._record import MISSING, Record, field

    made = []

    def stamp() -> str:
        made.append(1)
        return f"v{len(made)}"

    class Lazy(Record):
        name: str = field(default_factory=stamp, lazy=True)
        size: int = 0

    one = Lazy(size=1)
    assert made == []  # nothing made at construction
    assert one.name == "v1" and one.name == "v1" and made == [1]  # made once, then kept
    assert one.to_dict() == {"name": "v1", "size": 1}
    two = Lazy()
    assert copy.copy(two).name == two.name == "v2"  # a copy reads it: the copy and the original agree
    three = Lazy()
    assert three == Lazy(name="v3") and len(made) == 3  # equality reads it
    assert Lazy(name="given").name == "given" and len(made) == 3  # a given value: no call
    event = E.TextBlockDeltaEvent(reply_id="r", block_id="b", delta="x")
    assert pickle.loads(pickle.dumps(event)).id == event.id and len(event.id) == 32
    with pytest.raises(ValidationError):
        Lazy(name=5)  # still checked when given
    make = maker(Lazy, "name", "size")
    assert make("kept", 2).name == "kept"
    assert make(MISSING, 2).name == "v4"  # MISSING leaves it to the first read
    with pytest.raises(ValidationError):
        make(7, 2)
    with pytest.raises(TypeError, match="default_factory"):
        field(lazy=True)


def test_events_an_adapter_makes_get_unique_ids_when_read():
    """Adapters leave event ids to the events (most are folded unread): read, every id is a
    fresh 32-digit hex id, and JSON holds the same one."""
    for protocol in protocol_names():
        wire = get_protocol(protocol)
        raw = body(protocol, ("text", "Hello there, how are you"), ("tool", "c1", "f", '{"a": 1}'))
        decoder = wire.decoder(wire.adapter_class()("r"))
        events = [e for piece in wire.split_stream(raw) for e in decoder.feed(piece)] + decoder.close()
        assert any(e.type.endswith("_DELTA") for e in events), protocol
        ids = [e.id for e in events]
        assert len(set(ids)) == len(ids) and all(len(i) == 32 and int(i, 16) >= 0 for i in ids), protocol
        assert [json.loads(E.event_to_json(e))["id"] for e in events] == ids


def test_the_coarse_clock_stamps_again_after_a_millisecond_or_when_time_goes_back(monkeypatch):
    """An adapter stamps every event with ``coarse_now_iso``: the stamp of a time within the
    millisecond after the last one it formatted, formatted again otherwise (later, or earlier
    when the system clock was set back), as ``now_iso`` would write it then."""
    import time

    from modelwire import _ids

    now = [1_800_000_000.25]
    monkeypatch.setattr(_ids, "_time", lambda: now[0])
    monkeypatch.setattr(_ids, "_time_ns", lambda: round(now[0] * 1e6) * 1000)

    def micros() -> str:
        return f".{int(now[0] * 1_000_000) % 1_000_000:06d}"

    first = _ids.coarse_now_iso()
    assert first == _ids.now_iso() == time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(now[0])) + ".250000"
    now[0] += 0.0009
    assert _ids.coarse_now_iso() == first  # within the millisecond: the same stamp
    now[0] += 0.0002
    assert _ids.coarse_now_iso().endswith(micros()) and micros() != ".250000"  # past it: the time now
    now[0] -= 5.0
    assert _ids.coarse_now_iso().endswith(micros()) and _ids.coarse_now_iso() < first  # set back: again
