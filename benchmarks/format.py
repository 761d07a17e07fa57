"""Building a request from a long history: 2,000 messages with tool calls, results, thinking
and images, for each protocol, beside AgentScope 2.x's formatters on the same history.

Two rows per protocol: the format alone (the payload as dicts), and the build, the format
plus the bytes sent (modelwire's body encoder, ``models._body.encode_body``; AgentScope's
payload through ``json.dumps``). Target: the build at most 0.6x AgentScope's (every history
goes through the one shared walk: a little speed traded for one implementation per rule).

A third row, the next turn: the same body built the way a model builds the request that adds
the conversation's last round to one it sent before (a draft of the earlier messages, see
``modelwire.formatters._incremental``: the messages checked unchanged, the new ones formatted,
the finished turns' bytes reused). Target: at most 0.15x the cold build; its body is checked
equal to the cold build's.

For each protocol it also times a floor: one walk writing the protocol's turns, a dict per
block, results in call order, with no rule checks, no provenance and no error context (what
a formatter cannot do without), to show what the checks and the shared walk cost. Each
floor's turns and tool ids are checked against modelwire's payload.

    python benchmarks/format.py [--rounds N] [--check]
"""

from __future__ import annotations

import argparse
import base64
import gc
import os
import sys
import time
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

from modelwire.formatters import ToolSpec  # noqa: E402
from modelwire.protocols import get_formatter  # noqa: E402
from modelwire.models._body import encode_body  # noqa: E402
from modelwire.message import (  # noqa: E402
    extras_of,
    AssistantMsg,
    Base64Source,
    DataBlock,
    SystemMsg,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    UserMsg,
)

PNG = base64.b64encode(os.urandom(3000)).decode()
TARGET = 0.6  # the cold build, against AgentScope's format + json.dumps


def history(n: int) -> list:
    msgs: list = [SystemMsg("system", "You are a careful assistant. " * 20)]
    i = 0
    while len(msgs) < n:
        i += 1
        user = [TextBlock(text=f"Question {i}: what is the weather in city {i}? " * 3)]
        if i % 5 == 0:
            user.append(DataBlock(source=Base64Source(data=PNG, media_type="image/png")))
        msgs.append(UserMsg("user", user))
        msgs.append(
            AssistantMsg(
                "agent",
                [
                    ThinkingBlock(
                        thinking="Let me think about the weather. " * 10, signature="EqQB" * 20, provider="anthropic"
                    ),
                    ThinkingBlock(
                        thinking="Summary of reasoning.",
                        provider="openai-responses",
                        reasoning_item_id=f"rs_{i}",
                        encrypted_content="gAAA" * 50,
                    ),
                    TextBlock(text="I'll check."),
                    ToolCallBlock(id=f"call_{i}_a", name="get_weather", input=f'{{"city": "city {i}"}}'),
                    ToolCallBlock(id=f"call_{i}_b", name="get_time", input="{}"),
                    ToolResultBlock(id=f"call_{i}_b", name="get_time", output="12:00", state="success"),
                    ToolResultBlock(
                        id=f"call_{i}_a",
                        name="get_weather",
                        output=[TextBlock(text="sunny, 21C " * 5)]
                        + ([DataBlock(source=Base64Source(data=PNG, media_type="image/png"))] if i % 7 == 0 else []),
                        state="success",
                    ),
                    TextBlock(text=f"It is sunny in city {i}. " * 4),
                ],
            )
        )
    return msgs[:n]


# A model of each protocol, for the rows of the whole request (options, the protocol's body).
MODELS = {
    "anthropic": "anthropic:claude-sonnet-4-5",
    "openai-chat": "openai:gpt-4.1",
    "openai-responses": "openai-responses:gpt-5",
    "gemini": "google:gemini-2.5-flash",
}

AGENTSCOPE = {
    "anthropic": "AnthropicChatFormatter",
    "openai-chat": "OpenAIChatFormatter",
    "openai-responses": "OpenAIResponseFormatter",
    "gemini": "GeminiChatFormatter",
}


def _theirs(protocol: str, msgs: list) -> tuple[Any, Any] | None:
    """AgentScope 2.x's formatter for the protocol, and the same history as AgentScope messages
    (converted through the JSON both share: the same content)."""
    try:
        import json
        import logging
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            logging.disable(logging.WARNING)
            from agentscope import formatter as as_formatter
            from agentscope import message as as_message
    except ImportError:
        return None
    history_as = [as_message.Msg.model_validate(json.loads(json.dumps(m.to_dict()))) for m in msgs]
    return getattr(as_formatter, AGENTSCOPE[protocol])(), history_as


def floor_anthropic(msgs: list) -> dict[str, Any]:
    """The least an Anthropic payload of this history needs: one walk, a dict per block,
    turns alternating, results in their own user turn in call order."""
    from pydantic_core import from_json

    def media(src: Any) -> dict[str, Any]:
        return {"type": "image", "source": {"type": "base64", "media_type": src.media_type, "data": src.data}}

    system: list = []
    turns: list = []
    order: dict[str, int] = {}

    def turn(role: str) -> list:
        if not turns or turns[-1]["role"] != role:
            turns.append({"role": role, "content": []})
        return turns[-1]["content"]

    for m in msgs:
        if m.role == "system":
            system += [{"type": "text", "text": b.text} for b in m.content]
            continue
        role = "user" if m.role == "user" else "assistant"
        for b in m.content:
            t = b.type
            if t == "text":
                turn(role).append({"type": "text", "text": b.text})
            elif t == "thinking":
                extras = extras_of(b)
                if extras and extras.get("signature"):
                    turn(role).append({"type": "thinking", "thinking": b.thinking, "signature": extras["signature"]})
            elif t == "tool_call":
                order[b.id] = len(order)
                turn(role).append({"type": "tool_use", "id": b.id, "name": b.name, "input": from_json(b.input)})
            elif t == "tool_result":
                out = b.output
                parts = (
                    out
                    if isinstance(out, str)
                    else [{"type": "text", "text": x.text} if x.type == "text" else media(x.source) for x in out]
                )
                results = turn("user")
                results.append({"type": "tool_result", "tool_use_id": b.id, "content": parts})
                if len(results) > 1 and order[results[-2]["tool_use_id"]] > order[b.id]:
                    results.sort(key=lambda r: order.get(r.get("tool_use_id"), -1))
            elif t == "data":
                turn(role).append(media(b.source))
    return {"system": system, "messages": turns}


def floor_chat(msgs: list) -> dict[str, Any]:
    """The least an OpenAI Chat payload of this history needs: one walk; text and calls of a
    turn in one assistant message, a tool message per result in call order, a user message
    after them for media that results returned."""

    def media(src: Any) -> dict[str, Any]:
        return {"type": "image_url", "image_url": {"url": f"data:{src.media_type};base64,{src.data}"}}

    out: list = []
    order: dict[str, int] = {}
    for m in msgs:
        if m.role == "system":
            out.append({"role": "system", "content": "\n\n".join(b.text for b in m.content)})
            continue
        if m.role == "user":
            parts = [{"type": "text", "text": b.text} if b.type == "text" else media(b.source) for b in m.content]
            out.append(
                {
                    "role": "user",
                    "content": parts[0]["text"] if len(parts) == 1 and parts[0]["type"] == "text" else parts,
                }
            )
            continue
        turn = None
        results: list = []
        returned: list = []
        for b in m.content:
            t = b.type
            if t == "text" or t == "tool_call":
                if results:
                    out += sorted(results, key=lambda r: order[r["tool_call_id"]])
                    if returned:
                        out.append({"role": "user", "content": returned})
                    results, returned, turn = [], [], None
                if turn is None:
                    turn = {"role": "assistant", "content": None}
                    out.append(turn)
                if t == "text":
                    turn["content"] = b.text if turn["content"] is None else turn["content"] + "\n\n" + b.text
                else:
                    order[b.id] = len(order)
                    turn.setdefault("tool_calls", []).append(
                        {"id": b.id, "type": "function", "function": {"name": b.name, "arguments": b.input}}
                    )
            elif t == "tool_result":
                output = b.output
                if isinstance(output, str):
                    text = output
                else:
                    text = "".join(x.text for x in output if x.type == "text")
                    returned += [media(x.source) for x in output if x.type != "text"]
                results.append({"role": "tool", "tool_call_id": b.id, "content": text})
        out += sorted(results, key=lambda r: order[r["tool_call_id"]])
        if returned:
            out.append({"role": "user", "content": returned})
    return {"messages": out}


def floor_gemini(msgs: list) -> dict[str, Any]:
    """The least a Gemini payload of this history needs: one walk, a part per block, turns
    alternating, function responses in call order ahead of the media results returned."""
    from pydantic_core import from_json

    def media(src: Any) -> dict[str, Any]:
        return {"inlineData": {"mimeType": src.media_type, "data": src.data}}

    system: list = []
    contents: list = []
    order: dict[str, int] = {}

    def turn(role: str) -> list:
        if not contents or contents[-1]["role"] != role:
            contents.append({"role": role, "parts": []})
        return contents[-1]["parts"]

    def answer(responses: list, returned: list) -> None:
        responses.sort(key=lambda r: r[0])
        turn("user").extend([part for _, part in responses] + returned)

    for m in msgs:
        if m.role == "system":
            system += [{"text": b.text} for b in m.content]
            continue
        role = "user" if m.role == "user" else "model"
        responses: list = []
        returned: list = []
        for b in m.content:
            t = b.type
            if t == "tool_result":
                output = b.output
                text = output if isinstance(output, str) else "".join(x.text for x in output if x.type == "text")
                responses.append((order[b.id], {"functionResponse": {"name": b.name, "response": {"result": text}}}))
                if not isinstance(output, str):
                    returned += [media(x.source) for x in output if x.type != "text"]
                continue
            if responses:
                answer(responses, returned)
                responses, returned = [], []
            if t == "text":
                turn(role).append({"text": b.text})
            elif t == "data":
                turn(role).append(media(b.source))
            elif t == "tool_call":
                order[b.id] = len(order)
                turn(role).append({"functionCall": {"name": b.name, "args": from_json(b.input)}})
        if responses:
            answer(responses, returned)
    return {"contents": contents, "systemInstruction": {"parts": system}}


def floor_responses(msgs: list) -> dict[str, Any]:
    """The least an OpenAI Responses payload of this history needs: one walk, an item per
    block (reasoning items where a block carries one), outputs in call order."""

    def media(src: Any) -> dict[str, Any]:
        return {"type": "input_image", "image_url": f"data:{src.media_type};base64,{src.data}"}

    items: list = []
    order: dict[str, int] = {}
    for m in msgs:
        if m.role == "system":
            items.append({"type": "message", "role": "system", "content": "\n\n".join(b.text for b in m.content)})
            continue
        if m.role == "user":
            items.append(
                {
                    "type": "message",
                    "role": "user",
                    "content": [
                        {"type": "input_text", "text": b.text} if b.type == "text" else media(b.source)
                        for b in m.content
                    ],
                }
            )
            continue
        outputs: list = []
        for b in m.content:
            t = b.type
            if t != "tool_result" and outputs:
                items += sorted(outputs, key=lambda o: order[o["call_id"]])
                outputs = []
            if t == "thinking":
                extras = extras_of(b)
                if extras and extras.get("reasoning_item_id"):
                    items.append(
                        {
                            "type": "reasoning",
                            "id": extras["reasoning_item_id"],
                            "summary": [{"type": "summary_text", "text": b.thinking}],
                            "encrypted_content": extras.get("encrypted_content"),
                        }
                    )
            elif t == "text":
                items.append({"type": "message", "role": "assistant", "content": b.text})
            elif t == "tool_call":
                order[b.id] = len(order)
                items.append({"type": "function_call", "call_id": b.id, "name": b.name, "arguments": b.input})
            elif t == "tool_result":
                output = b.output
                if isinstance(output, str):
                    outputs.append({"type": "function_call_output", "call_id": b.id, "output": output})
                else:
                    parts = [
                        {"type": "input_text", "text": x.text} if x.type == "text" else media(x.source) for x in output
                    ]
                    outputs.append({"type": "function_call_output", "call_id": b.id, "output": parts})
        items += sorted(outputs, key=lambda o: order[o["call_id"]])
    return {"input": items}


FLOORS = {
    "anthropic": floor_anthropic,
    "openai-chat": floor_chat,
    "openai-responses": floor_responses,
    "gemini": floor_gemini,
}


def _shape(protocol: str, payload: dict[str, Any]) -> list:
    """Turns (roles or item types) and the tool ids or names in each, in order: what a floor
    must agree with modelwire on."""
    if protocol == "anthropic":
        return [
            (
                t["role"],
                [c.get("id") or c.get("tool_use_id") for c in t["content"] if c["type"] in ("tool_use", "tool_result")],
            )
            for t in payload["messages"]
        ]
    if protocol == "openai-chat":
        return [
            (
                m["role"],
                [c["id"] for c in m.get("tool_calls", ())] + ([m["tool_call_id"]] if "tool_call_id" in m else []),
            )
            for m in payload["messages"]
        ]
    if protocol == "gemini":
        names = lambda parts: [p[k]["name"] for p in parts for k in ("functionCall", "functionResponse") if k in p]  # noqa: E731
        return [(c["role"], names(c["parts"])) for c in payload["contents"]]
    return [(i.get("role") or i["type"], i.get("call_id")) for i in payload["input"]]


def next_turn(draft: Any, formatter: Any, msgs: list) -> bytes:
    """The body of the next request built on ``draft``, as a model builds it: the messages
    checked against the draft, the new ones formatted, the finished turns' bytes reused."""
    assert draft.matches(msgs)
    payload = draft.extend(msgs).payload()
    key = formatter.payload_turns
    return encode_body({**payload, key: draft.turns_encoded(payload[key])})


def new_model(protocol: str) -> Any:
    from modelwire.models import load_model

    return load_model(MODELS[protocol], api_key="k", base_url="http://127.0.0.1:9", capability_lookup=False)


def model_body(model: Any, msgs: list, tools: list, drafts: list | None) -> bytes:
    """The body a model sends for ``msgs``: built in full (``drafts`` None), or on the draft
    its last request left, as its call path does (``HTTPModel._prepare``)."""
    body, opts = model.build_request(msgs, tools, "auto", drafts=drafts)
    if drafts:
        encoded = model._drafted_body(body, opts, (drafts[0], drafts[1]))
        if encoded is not None:
            return encoded  # type: ignore[no-any-return]
    return encode_body(body)


def sent_model(model: Any, msgs: list, tools: list) -> Any:
    """``model`` after its request for ``msgs`` went."""
    model_body(model, msgs, tools, [])
    return model


def sent(draft: Any, formatter: Any, msgs: list) -> Any:
    """``draft`` after the request for ``msgs`` went (its body built)."""
    next_turn(draft, formatter, msgs)
    return draft


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--check", action="store_true", help="format once with each, check, no timings")
    args = parser.parse_args()
    if not args.check:
        os.environ.pop("MODELWIRE_DEBUG", None)  # it checks every drafted build against a full one
    import asyncio
    import json
    import statistics

    msgs = history(args.messages if not args.check else 60)
    tools = [
        ToolSpec("get_weather", "Weather", {"type": "object", "properties": {"city": {"type": "string"}}}),
        ToolSpec("get_time", "Time"),
    ]
    blocks = sum(len(m.content) for m in msgs)
    print(
        f"{len(msgs)} messages, {blocks} blocks; CPU time, median of {args.rounds} interleaved "
        "rounds (min), each payload checked; a ratio is the median of each round's own"
    )
    ok = True
    for protocol in AGENTSCOPE:
        formatter = get_formatter(protocol)()
        expected = len(json.dumps(formatter.format(msgs, tools, "auto")))
        theirs = _theirs(protocol, msgs)

        def ours_run() -> Any:
            return formatter.format(msgs, tools, "auto")

        checks = {"modelwire": lambda payload: len(json.dumps(payload)) == expected}  # the same payload every run
        contenders = {"modelwire": ours_run}
        built = encode_body(formatter.format(msgs, tools, "auto"))
        checks["modelwire build"] = lambda body: body == built
        contenders["modelwire build"] = lambda: encode_body(formatter.format(msgs, tools, "auto"))
        # The next turn: a draft built on the conversation but its last round (untimed, a fresh
        # one each run), then what a model does for the request that adds that round.
        cut = len(msgs) - 2
        setups = {"modelwire next turn": lambda: sent(formatter.draft(tools, "auto"), formatter, msgs[:cut])}
        checks["modelwire next turn"] = lambda body: body == built
        contenders["modelwire next turn"] = lambda draft: next_turn(draft, formatter, msgs)
        # The same two as a model builds the whole request (options, the protocol's own body):
        # in full, and on the draft its last request left.
        model_built = model_body(new_model(protocol), msgs, tools, None)
        checks["model build"] = checks["model next turn"] = lambda body: body == model_built
        setups["model build"] = lambda: new_model(protocol)
        contenders["model build"] = lambda model: model_body(model, msgs, tools, None)
        setups["model next turn"] = lambda: sent_model(new_model(protocol), msgs[:cut], tools)
        contenders["model next turn"] = lambda model: model_body(model, msgs, tools, [])
        shape = _shape(protocol, formatter.format(msgs, tools, "auto"))
        checks["floor"] = lambda payload: _shape(protocol, payload) == shape
        contenders["floor"] = lambda: FLOORS[protocol](msgs)
        if theirs is not None:
            their_formatter, their_msgs = theirs
            their_expected = len(json.dumps(asyncio.run(their_formatter.format(their_msgs)), default=str))
            loop = asyncio.new_event_loop()

            def theirs_run() -> Any:
                return loop.run_until_complete(their_formatter.format(their_msgs))

            checks["AgentScope"] = lambda payload: len(json.dumps(payload, default=str)) == their_expected
            contenders["AgentScope"] = theirs_run
            their_built = json.dumps(theirs_run(), ensure_ascii=False, default=str).encode()
            checks["AgentScope build"] = lambda body: len(body) == len(their_built)
            contenders["AgentScope build"] = lambda: json.dumps(theirs_run(), ensure_ascii=False, default=str).encode()
        if args.check:
            for name, fn in contenders.items():
                assert checks[name](fn() if name not in setups else fn(setups[name]())), name
            continue
        times: dict[str, list[float]] = {k: [] for k in contenders}
        for _ in range(args.rounds):
            for name, fn in contenders.items():
                given = setups[name]() if name in setups else None
                gc.collect()  # each run starts from the same heap, and no collection lands in one
                gc.disable()
                try:
                    t0 = time.process_time()  # CPU time: another guest's share of the machine is not counted
                    payload = fn() if given is None else fn(given)
                    took = time.process_time() - t0
                finally:
                    gc.enable()
                assert checks[name](payload), f"{name} gave another payload"  # checked before the time counts
                times[name].append(took)
        med = {k: statistics.median(v) for k, v in times.items()}

        def paired(a: str, b: str) -> float:  # the median of each round's own ratio: a slow stretch weighs on both
            return statistics.median(x / y for x, y in zip(times[a], times[b]))

        def ms(name: str, digits: int = 1) -> str:  # the median, and the fastest round in brackets
            return f"{med[name] * 1000:7.{digits}f} ms ({min(times[name]) * 1000:.{digits}f})"

        line = f"  {protocol:<18} format: modelwire {ms('modelwire')}"
        if "AgentScope" in med:
            line += f"   AgentScope 2.x {ms('AgentScope')}   {paired('modelwire', 'AgentScope'):.2f}x"
            ratio = paired("modelwire build", "AgentScope build")
            ok &= ratio <= TARGET
            line += (
                f"\n  {'':<18} build:  modelwire {ms('modelwire build')}"
                f"   AgentScope 2.x {ms('AgentScope build')}   {ratio:.2f}x"
            )
            if ratio > TARGET:
                line += f"   MISSED: target {TARGET:.2f}x, over by {ratio - TARGET:.2f}"
        turn_ratio = paired("modelwire next turn", "modelwire build")
        ok &= turn_ratio <= 0.15
        line += f"\n  {'':<18} next turn: modelwire {ms('modelwire next turn', 2)} = {turn_ratio:.3f}x its cold build"
        if turn_ratio > 0.15:
            line += f"   MISSED: target 0.15x, over by {turn_ratio - 0.15:.3f}"
        model_ratio = paired("model next turn", "model build")
        ok &= model_ratio <= 0.15
        line += (
            f"\n  {'':<18} the whole request: model build {med['model build'] * 1000:7.1f} ms, next "
            f"turn {med['model next turn'] * 1000:.2f} ms = {model_ratio:.3f}x"
            + (f"   MISSED: target 0.15x, over by {model_ratio - 0.15:.3f}" if model_ratio > 0.15 else "")
        )
        if "floor" in med and "AgentScope" in med:
            floor = paired("floor", "AgentScope")
            line += f"\n  {'':<18} floor {ms('floor')} = {floor:.2f}x AgentScope: one walk, a dict per block, no checks"
        print(line)
    if args.check:
        print("checked: every formatter gave its payload")
        return 0
    print(f"target (modelwire's build <= {TARGET}x AgentScope's format + json.dumps) met: {ok}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
