"""What a call runs to build its request, on the model path (``HTTPModel._prepare``: the
sources walked, the capabilities, the draft of the conversation, the body encoded), for
each protocol, at 10, 50, 100, 1,000 and 2,000 messages with 1, 50 and 500 tools.

Rows, each a ratio of CPU times in the same interleaved rounds (the median of each round's
own ratio), each body checked equal to the cold build's before its time counts:

- the next turn (the model built the request before it, the history but its last round,
  and now gets the whole history) / the cold build (a model that never saw it):
  target at most 0.1x at 50 messages and more;
- the same next turn with every message a new object of the same content (the history
  loaded from JSON for each request; and as ``ModelwireChatModel`` converts AgentScope's
  memory, its system message built afresh, as AgentScope's agent does) / the cold build:
  target at most 0.25x at 50 messages and more;
- the cold build / AgentScope 2.x's formatter + ``json.dumps`` on the same history (no
  tools on either side), at 50 and 1,000 messages: target at most 0.6x; beside it, the
  body's encoding alone (modelwire's encoder on the same payload) / AgentScope's;
- the cold build with 4,000 tools / with 1,000 tools (10 messages): target at most 4x.

Beside the next turn, its floor in the same rounds: a call of the appended round alone on a
model that served another conversation / the cold build (what the round costs to format plus
the call's fixed work, with no history at all): where it is over 0.1x, no next turn at that
size can meet the target. Beside the same content as new objects, the content keys alone
(each message's, what telling a message from one of other content reads) / the cold build:
a next turn of new objects pays the round alone and the keys. A build is timed from inside
a running loop, as a call awaits it (the loop's start and stop, the harness's, are not
counted).

    python benchmarks/request_build.py [--rounds N] [--check]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import sys
import time
from typing import Any, Callable

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
sys.path.insert(0, os.path.dirname(__file__))

from format import AGENTSCOPE, MODELS, _theirs, history  # noqa: E402

SIZES = (10, 50, 100, 1000, 2000)
TOOL_COUNTS = (1, 50, 500)
NEXT_TARGET, SAME_TARGET, AGENTSCOPE_TARGET, TOOLS_TARGET = 0.1, 0.25, 0.6, 4.0
LOOP = asyncio.new_event_loop()


def tools_of(n: int) -> list[dict[str, Any]]:
    """``n`` tools as an application hands them over: dicts in OpenAI's function shape."""
    return [
        {
            "type": "function",
            "function": {
                "name": f"tool_{i}",
                "description": f"Does the thing number {i} and says what came of it.",
                "parameters": {
                    "type": "object",
                    "properties": {"city": {"type": "string", "description": "Where."}, "days": {"type": "integer"}},
                    "required": ["city"],
                },
            },
        }
        for i in range(n)
    ]


def new_model(protocol: str) -> Any:
    from modelwire.models import load_model

    return load_model(MODELS[protocol], api_key="k", base_url="http://127.0.0.1:9", capability_lookup=False)


async def build(model: Any, msgs: list, tools: list | None) -> bytes:
    """The body a call of ``model`` sends for ``msgs``: what its ``_prepare`` builds, awaited
    in a running loop as a call awaits it."""
    return (await model._prepare(msgs, tools, "auto" if tools else None, None)).body  # type: ignore[no-any-return]


def prepare(model: Any, msgs: list, tools: list | None) -> bytes:
    """:func:`build` run to its end (untimed: a setup, an expected body)."""
    return LOOP.run_until_complete(build(model, msgs, tools))


async def content_keys(msgs: list) -> list:
    """Each message's content key: what recognising a message as one sent before reads."""
    from modelwire.formatters._incremental import content_key

    return list(map(content_key, msgs))


def from_json(msgs: list) -> list:
    """The same messages as new objects: loaded from their JSON."""
    from modelwire.message import Msg

    return [Msg.from_dict(json.loads(m.to_json())) for m in msgs]


class FromAgentScope:
    """The history as AgentScope's memory holds it, handed over as ``ModelwireChatModel``
    does on each call: its system message built afresh from the prompt, every message
    converted into new modelwire messages."""

    def __init__(self, msgs: list, protocol: str) -> None:
        from agentscope import message as as_message
        from modelwire.integrations.agentscope import ModelwireChatModel

        self.as_message = as_message
        self.prompt = msgs[0].get_text_content()
        self.memory = [as_message.Msg.model_validate(json.loads(m.to_json())) for m in msgs[1:]]
        self.chat = ModelwireChatModel(new_model(protocol))  # what it converts with: one per protocol

    def messages(self, count: int) -> list:
        from modelwire.integrations.agentscope import to_modelwire

        system = self.as_message.SystemMsg(name="system", content=self.prompt)  # as AgentScope's agent builds it
        return [self.chat._restore(to_modelwire(m)) for m in [system, *self.memory[: count - 1]]]


def timed(fn: Callable[..., Any], given: Any) -> tuple[float, Any]:
    """``fn`` (on ``given``) awaited inside a running loop, timed from its start to its end:
    what starting and stopping the loop costs the harness is not counted (a call's build
    runs in the loop the call runs in)."""

    async def inside() -> tuple[float, Any]:
        gc.collect()  # each run starts from the same heap, and no collection lands in one
        gc.disable()
        try:
            t0 = time.process_time()  # CPU time: another guest's share of the machine is not counted
            out = await (fn() if given is None else fn(given))
            return time.process_time() - t0, out
        finally:
            gc.enable()

    return LOOP.run_until_complete(inside())


def run(contenders: dict[str, tuple[Any, Any]], expected: dict[str, Any], rounds: int) -> dict[str, list[float]]:
    """Each contender (a setup, untimed, and the timed call on what it gave) once per round,
    interleaved; each output checked before its time counts."""
    times: dict[str, list[float]] = {k: [] for k in contenders}
    for _ in range(rounds):
        for name, (setup, fn) in contenders.items():
            took, out = timed(fn, setup() if setup is not None else None)
            check = expected[name]
            assert check(out) if callable(check) else out == check, f"{name} gave another body"
            times[name].append(took)
    return times


def paired(times: dict[str, list[float]], a: str, b: str) -> float:
    return statistics.median(x / y for x, y in zip(times[a], times[b]))


def verdict(ratio: float, target: float) -> str:
    return "MET" if ratio <= target else f"MISSED (target {target}x, over by {ratio - target:.3f})"


def turns(protocol: str, n: int, t: int, rounds: int, agentscope: bool) -> tuple[str, bool]:
    msgs, tools = history(n), tools_of(t) or None
    cut = n - 2
    cold = prepare(new_model(protocol), msgs, tools)

    def primed(*given: list) -> Any:
        model = new_model(protocol)
        for msgs_given in given:
            prepare(model, msgs_given, tools)
        return model

    contenders: dict[str, tuple[Any, Any]] = {
        "cold": (lambda: new_model(protocol), lambda model: build(model, msgs, tools)),
        "next": (lambda: primed(msgs[:cut]), lambda model: build(model, msgs, tools)),
        "json": (
            # Two requests before: a conversation some turns in (the first one is always cold).
            lambda: (primed(from_json(msgs[: cut - 2]), from_json(msgs[:cut])), from_json(msgs)),
            lambda given: build(given[0], given[1], tools),
        ),
    }
    # The floor beside the next turn: a call of the appended round alone, on a model that
    # served another conversation (the round formatted and the call's fixed work, no history).
    alone = msgs[cut:]
    contenders["alone"] = (lambda: primed(history(4)), lambda model: build(model, alone, tools))
    # The floor beside the same content as new objects: telling them apart from other content
    # at all, each message's content key (what it reads of a message, packed and hashed in C).
    contenders["keys"] = (lambda: from_json(msgs), content_keys)
    if agentscope:
        memory = FromAgentScope(msgs, protocol)

        def converted() -> tuple[Any, list]:
            model = new_model(protocol)
            prepare(model, memory.messages(cut - 2), tools)
            prepare(model, memory.messages(cut), tools)
            return model, memory.messages(n)

        contenders["agentscope"] = (converted, lambda given: build(given[0], given[1], tools))
    expected: dict[str, Any] = {name: cold for name in contenders}
    expected["alone"] = prepare(new_model(protocol), alone, tools)
    expected["keys"] = lambda keys: len(keys) == n and None not in keys
    if agentscope:  # its own conversion: the body it gives cold, checked the same way
        expected["agentscope"] = prepare(new_model(protocol), memory.messages(n), tools)
    times = run(contenders, expected, rounds)
    ok = True
    line = f"  {protocol:<17} {n:>5} msgs {t:>3} tools  cold {statistics.median(times['cold']) * 1000:7.2f} ms"
    for name, label, target in (("next", "next turn", NEXT_TARGET), ("json", "from JSON", SAME_TARGET)) + (
        (("agentscope", "AgentScope", SAME_TARGET),) if agentscope else ()
    ):
        ratio = paired(times, name, "cold")
        counted = n >= 50
        ok &= ratio <= target or not counted
        line += f"   {label} {ratio:.3f}x" + (f" {verdict(ratio, target)}" if counted else "")
    return (
        line + f"   floor: the round alone {paired(times, 'alone', 'cold'):.3f}x, the content keys alone "
        f"{paired(times, 'keys', 'cold'):.3f}x"
    ), ok


def against_agentscope(protocol: str, n: int, rounds: int) -> tuple[str, bool]:
    msgs = history(n)
    theirs = _theirs(protocol, msgs)
    if theirs is None:
        return f"  {protocol:<17} {n:>5} msgs: AgentScope not installed", True
    formatter, their_msgs = theirs

    async def their_build() -> bytes:
        return json.dumps(await formatter.format(their_msgs), ensure_ascii=False, default=str).encode()

    async def encoded(payload: dict[str, Any]) -> bytes:
        from modelwire.models._body import encode_body

        return encode_body(payload)

    their_len = len(LOOP.run_until_complete(their_build()))
    contenders = {
        "cold": (lambda: new_model(protocol), lambda model: build(model, msgs, None)),
        "AgentScope": (None, their_build),
        # The floor: the cold build's own body encoded, and nothing else (its payload made untimed).
        "encode": (lambda: new_model(protocol).build_request(msgs)[0], encoded),
    }
    body = prepare(new_model(protocol), msgs, None)
    expected = {"cold": body, "AgentScope": lambda got: len(got) == their_len, "encode": body}
    times = run(contenders, expected, rounds)
    ratio = paired(times, "cold", "AgentScope")
    return (
        f"  {protocol:<17} {n:>5} msgs  cold {statistics.median(times['cold']) * 1000:7.2f} ms   AgentScope "
        f"format + json.dumps {statistics.median(times['AgentScope']) * 1000:7.2f} ms   {ratio:.2f}x "
        f"{verdict(ratio, AGENTSCOPE_TARGET)}   floor: the body's encoding alone "
        f"{paired(times, 'encode', 'AgentScope'):.2f}x"
    ), ratio <= AGENTSCOPE_TARGET


def many_tools(protocol: str, rounds: int) -> tuple[str, bool]:
    msgs = history(10)
    small, large = tools_of(1000), tools_of(4000)
    contenders = {
        "1000": (lambda: new_model(protocol), lambda model: build(model, msgs, small)),
        "4000": (lambda: new_model(protocol), lambda model: build(model, msgs, large)),
    }
    expected = {"1000": prepare(new_model(protocol), msgs, small), "4000": prepare(new_model(protocol), msgs, large)}
    times = run(contenders, expected, rounds)
    ratio = paired(times, "4000", "1000")
    return (
        f"  {protocol:<17} cold, 10 msgs: 4,000 tools {statistics.median(times['4000']) * 1000:7.2f} ms, "
        f"1,000 tools {statistics.median(times['1000']) * 1000:6.2f} ms = {ratio:.2f}x {verdict(ratio, TOOLS_TARGET)}"
    ), ratio <= TOOLS_TARGET


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--check", action="store_true", help="each contender once, checked; the verdicts not counted")
    args = parser.parse_args()
    os.environ.pop("MODELWIRE_DEBUG", None)  # it checks every drafted build against a full one
    import logging

    logging.disable(logging.WARNING)
    try:
        import agentscope  # noqa: F401

        agentscope_here = True
    except ImportError:
        agentscope_here = False
    rounds = 1 if args.check else args.rounds
    sizes, counts = ((10, 60), (1, 50)) if args.check else (SIZES, TOOL_COUNTS)
    print(
        f"CPU time of HTTPModel._prepare, median of {rounds} interleaved rounds; a ratio is the median of each "
        "round's own; every body checked equal to the cold build's"
    )
    ok = True
    print("next turn (one round appended) / cold build; from JSON and from AgentScope: every message a new object")
    for protocol in AGENTSCOPE:
        for n in sizes:
            for t in counts:
                line, met = turns(protocol, n, t, rounds, agentscope_here)
                ok &= met
                print(line, flush=True)
    print("cold build / AgentScope 2.x format + json.dumps (no tools on either side)")
    for protocol in AGENTSCOPE:
        for n in (50, 1000) if not args.check else (50,):
            line, met = against_agentscope(protocol, n, rounds)
            ok &= met
            print(line, flush=True)
    print("4,000 tools / 1,000 tools")
    for protocol in AGENTSCOPE:
        line, met = many_tools(protocol, rounds)
        ok &= met
        print(line, flush=True)
    if args.check:
        print("checked: every body equal to the cold build's")
        return 0
    print(f"every target met: {ok}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
