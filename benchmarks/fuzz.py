"""Fuzz the five stream decoders with mutated real bodies.

Every body recorded in ``../shared/recorded-streams`` that one of the five protocols reads
(plus bodies generated from the documented formats, so the script runs without it) is
mutated at three depths:

- bytes: flipped, cut, dropped, duplicated, garbage appended;
- structure: one event's JSON has a value swapped for one of another type, a key removed,
  or events are dropped, repeated or swapped; then the body is framed again (SSE or AWS
  event-stream frames), so the mutation reaches the adapter instead of the framing;
- ids: tool-call ids as providers reuse them (every call one id, an id given to another
  call or to a server tool's result, an id no call has); a body so mutated that decodes
  whole also runs as two model calls of one reply (the same ids again) and as two turns of
  a conversation, formatted for every protocol;

and fed to the decoder in random pieces, sometimes with bytes that are not JSON arriving in
a later read after the stream's end. What it checks, for every run:

- the only exceptions out are modelwire's typed errors, and never ``InternalError`` (with
  ``MODELWIRE_DEBUG=1`` a bug is raised as itself, so it is counted too);
- every event list produced, closing events included, passes ``check_stream`` and folds
  into a message that dumps to JSON; the two-call replies pass it too, and formatting
  their conversations raises nothing but ``FormatError``.

    python benchmarks/fuzz.py --bodies 150000          # the full run (minutes)
    python benchmarks/fuzz.py --check                  # a short form, what CI runs
"""

from __future__ import annotations

import argparse
import collections
import json
import logging
import os
import random
import sys
import time
import traceback
from pathlib import Path

os.environ.setdefault("MODELWIRE_DEBUG", "1")
logging.getLogger("modelwire").setLevel(logging.ERROR)  # what is ignored after a stream's end is logged

from modelwire import errors as E  # noqa: E402
from modelwire import event as Ev  # noqa: E402
from modelwire.adapters import SSEDecoder, encode_frame, encode_sse  # noqa: E402
from modelwire.adapters._eventstream import EventStreamDecoder as FrameParser  # noqa: E402
from modelwire.message import AssistantMsg  # noqa: E402
from modelwire.protocols import get_protocol, sniff  # noqa: E402
from modelwire.testing.sse import body as fake_body  # noqa: E402

PROTOCOLS = ("anthropic", "openai-chat", "openai-responses", "gemini", "bedrock-converse", "ollama")
SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "recorded-streams"
ODD_VALUES: list = [
    None,
    True,
    False,
    0,
    -1,
    1.5,
    10**30,
    "",
    "x",
    "é",
    "\ud800",
    [],
    [1],
    {},
    {"a": 1},
    [[{}]],
    {"type": None},
]


def _server_tool_bodies() -> list[tuple[str, bytes]]:
    """Provider-run tools and their results, written from the documented formats (so the ids
    of a call and its result are mutated without ../shared): Anthropic's web search, Bedrock's
    code interpreter."""
    start = {
        "type": "message_start",
        "message": {"id": "m", "type": "message", "role": "assistant", "model": "c", "content": [], "usage": {}},
    }
    call = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "q"}}
    result = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [{"url": "https://e.x/"}]}
    anthropic = [start]
    for index, block in enumerate([call, result, {"type": "text", "text": "Found."}]):
        anthropic += [
            {"type": "content_block_start", "index": index, "content_block": block},
            {"type": "content_block_stop", "index": index},
        ]
    anthropic += [{"type": "message_delta", "delta": {"stop_reason": "end_turn"}}, {"type": "message_stop"}]

    def frame(event: str, payload: dict) -> bytes:
        return encode_frame({":event-type": event, ":message-type": "event"}, json.dumps(payload).encode())

    use = {"toolUse": {"toolUseId": "s1", "name": "nova_code_interpreter", "type": "server_tool_use"}}
    bedrock = [
        frame("messageStart", {"role": "assistant"}),
        frame("contentBlockStart", {"contentBlockIndex": 0, "start": use}),
        frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"toolUse": {"input": '{"code": "1+1"}'}}}),
        frame("contentBlockStop", {"contentBlockIndex": 0}),
        frame("contentBlockStart", {"contentBlockIndex": 1, "start": {"toolResult": {"toolUseId": "s1"}}}),
        frame("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"toolResult": [{"text": "2"}]}}),
        frame("contentBlockStop", {"contentBlockIndex": 1}),
        frame("messageStop", {"stopReason": "end_turn"}),
        frame("metadata", {"usage": {"inputTokens": 1, "outputTokens": 1}}),
    ]
    return [("anthropic", encode_sse([(e["type"], e) for e in anthropic])), ("bedrock-converse", b"".join(bedrock))]


def corpus() -> list[tuple[str, bytes]]:
    """(protocol, body) pairs: generated ones always, real ones when ../shared is there."""
    out = _server_tool_bodies()
    for protocol in PROTOCOLS:
        out.append(
            (
                protocol,
                fake_body(
                    protocol,
                    ("think", "Let me see."),
                    ("text", "The answer is 42."),
                    ("tool", "call_1", "f", '{"a": [1, 2]}'),
                ),
            )
        )
        out.append(
            (protocol, fake_body(protocol, ("tool", "call_1", "f", "{}"), ("tool", "call_2", "g", '{"x": "y"}')))
        )
    if SHARED.is_dir():
        for path in sorted(SHARED.rglob("*")):
            if path.suffix not in (".sse", ".txt", ".bin", ".eventstream", ".ndjson") or not path.is_file():
                continue
            raw = path.read_bytes()
            protocol = {".eventstream": "bedrock-converse", ".ndjson": "ollama"}.get(path.suffix) or sniff(raw)
            if path.suffix == ".eventstream" and "bedrock-invoke" in path.parts:
                continue  # Claude's events inside Bedrock's frames: another endpoint's framing
            if protocol in PROTOCOLS and raw:
                out.append((protocol, raw))
    return out


# -- structure: events out of a body, and back ------------------------------------------------


def split_events(protocol: str, raw: bytes) -> list[tuple[str | None, object]] | None:
    """The body's events as (name, parsed data), or None if it cannot be read whole."""
    try:
        if protocol == "bedrock-converse":
            frames = FrameParser().feed(raw)
            return [(json.dumps(f.headers, default=str), json.loads(f.payload or b"{}")) for f in frames]
        if protocol == "ollama":
            return [(None, json.loads(line)) for line in raw.splitlines() if line.strip()]
        events = SSEDecoder().feed_raw(raw) + SSEDecoder().close_raw()
        out = []
        for name, data, _id, _retry in events:
            text = data.decode("utf-8", "replace")
            out.append((name if name and name != "message" else None, text if text == "[DONE]" else json.loads(text)))
        return out
    except Exception:  # noqa: BLE001 - a body this script cannot re-frame is mutated as bytes
        return None


def join_events(protocol: str, events: list[tuple[str | None, object]]) -> bytes:
    if protocol == "bedrock-converse":
        out = b""
        for headers, data in events:
            head = {k: str(v) for k, v in json.loads(headers or "{}").items()}
            out += encode_frame(head, json.dumps(data).encode())
        return out
    if protocol == "ollama":
        return b"".join(json.dumps(data).encode() + b"\n" for _, data in events)
    return encode_sse(events)


def _paths(value, here=()):
    yield here
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _paths(child, here + (key,))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            yield from _paths(child, here + (i,))


def _set(value, path, new, delete=False):
    for step in path[:-1]:
        value = value[step]
    if delete and isinstance(value, dict):
        del value[path[-1]]
    elif delete and isinstance(value, list):
        value.pop(path[-1])
    else:
        value[path[-1]] = new


def mutate_structure(protocol: str, raw: bytes, rnd: random.Random) -> bytes | None:
    events = split_events(protocol, raw)
    if not events:
        return None
    choice = rnd.randrange(10)
    if choice == 0 and len(events) > 1:
        del events[rnd.randrange(len(events))]
    elif choice == 1:
        i = rnd.randrange(len(events))
        events.insert(i, events[i])
    elif choice == 2 and len(events) > 1:
        i, j = rnd.randrange(len(events)), rnd.randrange(len(events))
        events[i], events[j] = events[j], events[i]
    else:
        i = rnd.randrange(len(events))
        name, data = events[i]
        if not isinstance(data, (dict, list)):
            return None
        paths = [p for p in _paths(data) if p]
        if not paths:
            return None
        path = rnd.choice(paths)
        _set(data, path, rnd.choice(ODD_VALUES), delete=rnd.random() < 0.2)
        events[i] = (name, data)
    return join_events(protocol, events)


# Keys whose string values name a tool call (or the item that carries one) in one protocol
# or another: a call's id, the id a result answers, a Responses item's id.
ID_KEYS = frozenset({"id", "tool_use_id", "call_id", "toolUseId", "item_id", "tool_call_id"})


def _id_paths(value, here=()):
    for path in _paths(value, here):
        if path and path[-1] in ID_KEYS:
            yield path


def _get(value, path):
    for step in path:
        value = value[step]
    return value


def mutate_ids(protocol: str, raw: bytes, rnd: random.Random) -> bytes | None:
    """Ids as providers reuse them: every call of a body given one id (``call_0``, a
    constant id), one id given to another call or to a server tool's result (a result for
    the wrong call, for a text block, for no call), or an id taken from an earlier event."""
    events = split_events(protocol, raw)
    if not events:
        return None
    found = [
        (i, path) for i, (_, data) in enumerate(events) if isinstance(data, (dict, list)) for path in _id_paths(data)
    ]
    found = [(i, p) for i, p in found if isinstance(_get(events[i][1], p), str)]
    if not found:
        return None
    values = sorted({_get(events[i][1], p) for i, p in found})
    choice = rnd.randrange(4)
    if choice == 0:  # one id for all (a server that answers call_0 every time)
        same = rnd.choice([*values, "call_0", "list_dir:0"])
        chosen = found
    elif choice == 1:  # some of them, to one of the others
        same = rnd.choice(values)
        chosen = rnd.sample(found, rnd.randint(1, len(found)))
    elif choice == 2:  # one to an id no event has
        same = rnd.choice(["srvtoolu_nowhere", "call_99", "", "toolu_01" * 40])
        chosen = [rnd.choice(found)]
    else:  # one to another's, chosen at random
        same = None
        chosen = [rnd.choice(found)]
    for i, path in chosen:
        _set(events[i][1], path, same if same is not None else rnd.choice(values))
    return join_events(protocol, events)


def mutate_bytes(raw: bytes, rnd: random.Random) -> bytes:
    data = bytearray(raw)
    choice = rnd.randrange(5)
    if choice == 0 and data:
        for _ in range(rnd.randint(1, 4)):
            data[rnd.randrange(len(data))] = rnd.randrange(256)
    elif choice == 1 and data:
        del data[rnd.randrange(len(data)) :]
    elif choice == 2 and data:
        i = rnd.randrange(len(data))
        del data[i : i + rnd.randint(1, 40)]
    elif choice == 3 and data:
        i = rnd.randrange(len(data))
        data[i:i] = data[i : i + rnd.randint(1, 200)]
    else:
        data += bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 30)))
    return bytes(data)


# -- one run ------------------------------------------------------------------------------------

_ids = iter(range(10**12))


def _new_id() -> str:
    return f"i{next(_ids)}"


def decode(
    protocol: str, raw: bytes, rnd: random.Random, trailing: bytes = b"", carried: frozenset[str] | None = frozenset()
) -> tuple[list, BaseException | None]:
    """Feed ``raw`` in random pieces (then ``trailing`` in a read of its own), keeping every
    event; returns them and the error raised, if any. ``carried``: the provider-run calls
    the request left open, as the models layer tells the adapter."""
    wire = get_protocol(protocol)
    adapter = wire.adapter_class()("r", new_id=_new_id, clock=lambda: "2026-01-01T00:00:00")
    adapter.carried_calls = carried
    decoder = wire.decoder(adapter, keep=True)
    error = None
    try:
        i = 0
        while i < len(raw):
            n = rnd.choice((1, 7, 64, 512, 1 << 20))
            decoder.feed(raw[i : i + n])
            i += n
        if trailing:
            decoder.feed(trailing)
        decoder.close()
    except E.ProviderError as err:
        error = err
    except Exception as exc:  # noqa: BLE001 - what the run is looking for
        return decoder.events, exc
    return decoder.events, error


def carried_by(protocol: str, raw: bytes) -> frozenset[str]:
    """The calls the request of a recorded body left open: those its results answer and it
    did not make (Anthropic's pause_turn continuation answers the call the turn paused in)."""
    events, _ = decode(protocol, raw, random.Random(0), carried=None)
    started = {e.tool_call_id for e in events if e.type == "TOOL_CALL_START"}
    return frozenset(e.tool_call_id for e in events if e.type == "TOOL_RESULT_START" and e.tool_call_id not in started)


def check(events: list, carried: frozenset[str] = frozenset()) -> None:
    # A server tool's result may answer a call the request left open, made by an earlier
    # model call of the same reply (Anthropic's pause_turn continuation): such calls are put
    # in a call before. A result for any other call not in the events fails the grammar.
    started = {e.tool_call_id for e in events if e.type == "TOOL_CALL_START"}
    earlier = [
        e.tool_call_id
        for e in events
        if e.type == "TOOL_RESULT_START" and e.tool_call_id not in started and e.tool_call_id in carried
    ]
    before = []
    if earlier:
        before.append(Ev.ModelCallStartEvent(reply_id="r", model_name="m"))
        for call_id in dict.fromkeys(earlier):
            before += [
                Ev.ToolCallStartEvent(reply_id="r", tool_call_id=call_id, tool_call_name="t"),
                Ev.ToolCallEndEvent(reply_id="r", tool_call_id=call_id),
            ]
        before.append(Ev.ModelCallEndEvent(reply_id="r", input_tokens=0, output_tokens=0))
    stream = [
        Ev.ReplyStartEvent(id="s", session_id="s", reply_id="r", name="a"),
        *before,
        *events,
        Ev.ReplyEndEvent(id="e", session_id="s", reply_id="r"),
    ]
    Ev.check_stream(stream)
    msg = AssistantMsg("a", [], id="r")
    for event in stream[:-1]:
        msg.append_event(event)
    json.dumps(msg.to_dict())


def check_turns(protocol: str, bad: bytes, rnd: random.Random, carried: frozenset[str]) -> None:
    """The same body as two model calls of one reply (the provider gives its ids again),
    through the agent's id keeping, then that reply twice in a conversation (again in the
    next turn), formatted for every protocol: the reply's events keep the grammar, a
    formatter raises nothing but ``FormatError``, and the protocol that made the reply
    formats it."""
    from modelwire.agent._agent import _TOOL_EVENTS, _CallIds
    from modelwire.protocols import get_formatter
    from modelwire.message import ToolResultBlock, UserMsg

    reply = AssistantMsg("a", [], id="r")
    stream = [Ev.ReplyStartEvent(id="s", session_id="s", reply_id="r", name="a")]
    for _ in range(2):
        events, error = decode(protocol, bad, rnd, carried=carried)
        if error is not None:
            return
        ids = _CallIds(reply)
        try:
            events = [ids.see(e) if e.type in _TOOL_EVENTS else e for e in events]
        except E.StreamProtocolError:
            return  # a result for a call this reply never made: refused, typed
        for event in events:
            reply.append_event(event)
        stream += events
    stream.append(Ev.ReplyEndEvent(id="e", session_id="s", reply_id="r"))
    reply.append_event(stream[-1])
    Ev.check_stream(stream)
    answered = {b.id for b in reply.content if b.type == "tool_result"}
    calls = [b for b in reply.content if b.type == "tool_call" and not b.__dict__.get("server_side")]
    content = list(reply.content) + [
        ToolResultBlock(id=c.id, name=c.name, output="ok", state="success") for c in calls if c.id not in answered
    ]
    turn = reply.replace(content=content)
    history = [UserMsg("u", "one"), turn, UserMsg("u", "two"), turn.replace(id="r2"), UserMsg("u", "three")]
    tools = [{"name": name, "parameters": {"type": "object"}} for name in sorted({c.name for c in calls})]
    for target in PROTOCOLS:
        try:
            get_formatter(target)().format(history, tools or None)
        except E.FormatError as exc:
            if target == protocol:  # the provider that made the reply takes it back, its ids reused or not
                raise AssertionError(f"the conversation does not go on: {exc}") from exc


def run(bodies: int, seed: int = 0, report=print) -> dict:
    rnd = random.Random(seed)
    items = corpus()
    carried = [carried_by(protocol, raw) for protocol, raw in items]
    stats = collections.Counter()
    failures: dict[str, tuple] = {}
    for n in range(bodies):
        protocol, raw = items[n % len(items)]
        open_calls = carried[n % len(items)]
        kind = rnd.randrange(10)
        trailing = b""
        if kind < 3:
            bad = mutate_structure(protocol, raw, rnd) or mutate_bytes(raw, rnd)
        elif kind < 5:
            bad = mutate_ids(protocol, raw, rnd)
            stats["ids"] += bad is not None
            bad = bad or mutate_structure(protocol, raw, rnd) or mutate_bytes(raw, rnd)
        elif kind < 9:
            bad = mutate_bytes(raw, rnd)
        else:
            bad, trailing = (
                raw,
                bytes(
                    rnd.choice(
                        [b"data: {oops\n\n", b"}}garbage\n\n", b"\x00\x01\x02\x03" * 5, b"event: x\ndata: [1,2\n\n"]
                    )
                ),
            )
        events, error = decode(protocol, bad, rnd, trailing, open_calls)
        stats[protocol] += 1
        problem = None
        if error is not None and not isinstance(error, E.ProviderError):
            problem = f"{type(error).__name__}: {error}"
        elif isinstance(error, E.InternalError):
            problem = f"InternalError: {error}"
        else:
            stats["typed_errors" if error is not None else "decoded"] += 1
            try:
                check(events, open_calls)
                if error is None and 3 <= kind < 5 and any(e.type == "TOOL_CALL_START" for e in events):
                    stats["turns"] += 1
                    check_turns(protocol, bad, rnd, open_calls)
            except Exception as exc:  # noqa: BLE001
                problem = f"events: {type(exc).__name__}: {exc}"
        if problem is not None:
            stats["failures"] += 1
            key = protocol + " " + problem.split(":")[0] + problem[:90]
            if key not in failures:
                failures[key] = (
                    protocol,
                    bad,
                    trailing,
                    problem,
                    "".join(traceback.format_exception(error)) if isinstance(error, BaseException) else "",
                )
    return {"stats": stats, "failures": failures, "corpus": len(items)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bodies", type=int, default=150_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--check", action="store_true", help="a short run (2,000 bodies), what CI runs")
    parser.add_argument("--save", type=Path, help="write one body per distinct failure into this folder")
    args = parser.parse_args()
    bodies = 2_000 if args.check else args.bodies
    started = time.perf_counter()
    result = run(bodies, args.seed)
    stats, failures = result["stats"], result["failures"]
    took = time.perf_counter() - started
    per = ", ".join(f"{p} {stats[p]}" for p in PROTOCOLS)
    print(f"{bodies} mutated bodies from {result['corpus']} real and generated ones ({per}) in {took:.0f} s")
    print(f"  decoded whole: {stats['decoded']}, typed errors: {stats['typed_errors']}, failures: {stats['failures']}")
    print(
        (
            f"  ids mutated in {stats['ids']} bodies; {stats['turns']} of them also run as two calls "
            "of one reply and two turns, formatted for every protocol"
        )
    )
    for key, (protocol, bad, trailing, problem, tb) in failures.items():
        print(f"FAIL {protocol}: {problem}\n{tb[-1500:]}")
        if args.save:
            args.save.mkdir(parents=True, exist_ok=True)
            (args.save / f"{len(list(args.save.iterdir())):03d}-{protocol}.bin").write_bytes(
                bad + b"\n#TRAILING#" + trailing
            )
    if not failures:
        print("checked: only typed errors, every event list passes check_stream")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
