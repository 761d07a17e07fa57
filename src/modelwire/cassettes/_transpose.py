"""``transpose``: the conversations of a cassette, sent to another model, side by side.

A recording made through modelwire keeps each call's conversation beside its request
(``conversation``: the messages in modelwire's JSON form, the tools, the tool choice). For
each one, ``transpose`` formats the same history for the target model, made valid for it
as ``modelwire check --fix`` makes it (ids and names it refuses rewritten, a call without
its result answered as interrupted, media it does not take replaced by a note), sends it,
records the answers into a new cassette, and reports per call what each model did: the
tool calls it chose (names and arguments), how much text it wrote, its tokens (input,
output, cached), its cost where the price is known, and the time to its first token. No
tool is run: the tool results are the recorded ones.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ._cassette import Cassette, Interaction

__all__ = ["CallSide", "TransposeRow", "TransposeReport", "transpose", "transpose_async"]


@dataclass
class CallSide:
    """What one model did on one call."""

    model: str
    tools: list[tuple[str, str]] = field(default_factory=list)  # (name, arguments as sent)
    text_chars: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost: float | None = None
    first_token: float | None = None  # seconds from sending to the first delta (None: not measured)
    error: str | None = None


@dataclass
class TransposeRow:
    index: int  # the interaction of the source cassette
    recorded: CallSide
    target: CallSide
    notes: list[str] = field(default_factory=list)  # what was changed to make the history valid for the target


@dataclass
class TransposeReport:
    source: str
    target: str
    out: str
    rows: list[TransposeRow] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def lines(self) -> list[str]:
        out = [f"{self.source} -> {self.target} (recorded into {self.out})"]
        for row in self.rows:
            left, right = _side(row.recorded), _side(row.target)
            width = max(len(line) for line in left) + 2
            out.append(f"call [{row.index}]")
            out += [f"  {a.ljust(width)}| {b}" for a, b in zip(left, right)]
            out += [f"  note: {note}" for note in row.notes]
        out += [f"skipped: {why}" for why in self.skipped]
        return out


def _side(side: CallSide) -> list[str]:
    calls = ", ".join(f"{name}({_short(args)})" for name, args in side.tools) or "none"
    cost = f"${side.cost:.6f}" if side.cost is not None else "unknown"
    first = f"{side.first_token:.2f} s" if side.first_token is not None else "-"
    lines = [
        side.model,
        f"tool calls: {calls}",
        f"text: {side.text_chars} chars",
        f"tokens: in {side.input_tokens}, out {side.output_tokens}, cached {side.cached_tokens}",
        f"cost: {cost}",
        f"first token: {first}",
    ]
    if side.error:
        lines.append(f"error: {side.error}")
    return lines


def _short(args: str, limit: int = 60) -> str:
    return args if len(args) <= limit else args[: limit - 3] + "..."


def transpose(path: str | Path, target: str, **options: Any) -> TransposeReport:
    """The calls of the cassette at ``path`` sent to ``target`` (see :func:`transpose_async`)."""
    from .._sync import run_sync

    return run_sync(transpose_async(path, target, **options), "transpose() (use await transpose_async(...))")


async def transpose_async(
    path: str | Path, target: str, *, out: str | Path | None = None, base_url: str | None = None, model: Any = None
) -> TransposeReport:
    """Send each recorded conversation of ``path`` to ``target`` (``provider:model``; ``model``:
    a model object to use instead, for tests), recording the answers into ``out`` (default:
    beside ``path``, named after the target)."""
    from ..models import load_model
    from ._hook import use_cassette

    source = Cassette.load(path)
    out = Path(out) if out is not None else Path(path).with_name(f"{Path(path).stem}.{_safe(target)}.json")
    if out.resolve() == Path(path).resolve():
        from ..errors import CassetteError

        raise CassetteError(f"transpose would overwrite its source {path}; name another -o")
    report = TransposeReport(str(path), target, str(out))
    calls = [(n, i, i.request.get("conversation")) for n, i in enumerate(source.interactions)]
    for index, _interaction, conversation in calls:
        if not isinstance(conversation, dict):
            report.skipped.append(
                (
                    f"[{index}]: recorded without its conversation (recorded before modelwire kept it, or not "
                    "through modelwire)"
                )
            )
    if any(isinstance(c, dict) for _, _, c in calls):
        if model is None:
            model = load_model(target, base_url=base_url) if base_url else load_model(target)
            _refuse_plain_http(model)
        with use_cassette(out, "all", allow_unused=True):
            for index, interaction, conversation in calls:
                if isinstance(conversation, dict):
                    report.rows.append(await _one(index, interaction, conversation, model))
    return report


def _refuse_plain_http(model: Any) -> None:
    """The target's key never crosses the network in plain http (as ``recheck``: see
    :mod:`modelwire.cassettes._bound`); ``transpose`` sends to the target's own endpoint,
    which the user named, never to a URL of the cassette."""
    from ._bound import refuse_plain_http

    spec = getattr(model, "spec", None)
    if spec is not None and spec.base_url:
        refuse_plain_http(spec.base_url)


async def _one(index: int, interaction: Interaction, conversation: dict[str, Any], model: Any) -> TransposeRow:
    from ..message import as_messages
    from ..models._preflight import repair

    messages = as_messages(conversation.get("messages") or [])
    tools = [_tool(t) for t in conversation.get("tools") or ()]
    tool_choice = conversation.get("tool_choice")
    fixed = repair(model, messages)
    notes = [str(f) for f in model.preflight(messages, tools or None, tool_choice) if f.fix]
    if tools and tool_choice not in (None, "auto", "none") and not model.forced_tool_ok():
        notes.append(
            f"tool_choice {tool_choice!r} sent as 'auto': {model.provider}:{model.name} cannot be made to call a tool"
        )
        tool_choice = "auto"
    options = {k: v for k, v in (conversation.get("options") or {}).items() if k in ("max_tokens",)}
    return TransposeRow(
        index, _recorded(interaction), await _live(model, fixed, tools or None, tool_choice, options), notes
    )


def _tool(data: dict[str, Any]) -> Any:
    from ..formatters import ServerTool, ToolSpec

    if "server_tool" in data:
        return ServerTool(data["server_tool"], raw=data.get("raw"), **(data.get("config") or {}))
    return ToolSpec.coerce(data)


def _recorded(interaction: Interaction) -> CallSide:
    """The recorded answer, as a side of the report."""
    from ..protocols import decode_sse
    from ..errors import ProviderError
    from ._drift import _protocol_of

    request = interaction.request
    name = str(request["json"].get("model") or request["url"].rsplit("/", 1)[-1])
    protocol = _protocol_of(interaction)
    if protocol is None:
        return CallSide(name, error="not a model call modelwire knows")
    if interaction.response["status"] >= 400:
        return CallSide(name, error=f"HTTP {interaction.response['status']}")
    try:
        events = decode_sse(protocol, interaction.body_bytes(), "recorded")
        error = None
    except ProviderError as err:
        events, error = list(err.events or []), f"{type(err).__name__}: {err.message}"
    side = _side_of(name, events, None)
    side.error = error
    side.cost = _cost(request["url"], protocol, name, events)
    return side


async def _live(
    model: Any, messages: list[Any], tools: Sequence[Any] | None, tool_choice: Any, options: dict[str, Any]
) -> CallSide:
    from ..errors import ProviderError

    name = f"{model.provider}:{model.name}"
    events: list[Any] = []
    started = time.perf_counter()
    first: float | None = None
    try:
        async for event in model.stream(messages, tools=tools, tool_choice=tool_choice, options=options or None):
            if first is None and event.type.endswith("_DELTA"):
                first = time.perf_counter() - started
            events.append(event)
    except ProviderError as err:
        return CallSide(name, error=f"{type(err).__name__}: {err.message}")
    side = _side_of(name, events, first)
    end = next((e for e in reversed(events) if e.type == "MODEL_CALL_END"), None)
    if end is not None:
        from .. import cost

        priced = cost.price(end, provider=model.provider, model=model.name) if cost.available() else None
        total = priced.get("total") if priced else None
        side.cost = float(total) if isinstance(total, (int, float)) else None
    return side


def _side_of(name: str, events: Sequence[Any], first: float | None) -> CallSide:
    from ..event._calls import tool_calls_in

    side = CallSide(name, first_token=first)
    for event in events:
        if event.type == "TEXT_BLOCK_DELTA":
            side.text_chars += len(event.delta)
        elif event.type == "MODEL_CALL_END":
            side.input_tokens, side.output_tokens, side.cached_tokens = (
                event.input_tokens,
                event.output_tokens,
                event.cache_input_tokens,
            )
    side.tools = [(call_name, _compact(arguments)) for _, call_name, arguments in tool_calls_in(events)]
    return side


def _compact(arguments: str) -> str:
    try:
        return (
            json.dumps(json.loads(arguments), ensure_ascii=False, separators=(",", ":"), sort_keys=True)
            if arguments.strip()
            else "{}"
        )
    except ValueError:
        return arguments


def _cost(url: str, protocol: str, model: str, events: Sequence[Any]) -> float | None:
    from ..protocols import get_protocol
    from ._show import _price

    end = next((e for e in reversed(events) if e.type == "MODEL_CALL_END"), None)
    if end is None:
        return None
    priced = _price(url, get_protocol(protocol), model, end)
    total = priced.get("total") if priced else None
    return float(total) if isinstance(total, (int, float)) else None


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
