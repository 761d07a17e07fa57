"""``transpose``: the conversations of a cassette, sent to another model, side by side.

A recording made through modelwire keeps each call's conversation beside its request
(``conversation``: the messages in modelwire's JSON form, the tools, the tool choice). For
each one, ``transpose`` formats the same history for the target model, made valid for it
as ``modelwire check --fix`` makes it (ids and names it refuses rewritten, a call without
its result answered as interrupted, media it does not take replaced by a note), sends it,
records the answers into a new cassette, and reports per call what each model did: the
tool calls it chose (names and arguments), how much text it wrote, its tokens (input,
output, cached), its cost where the price is known, and the time to its first token. No
tool is run: the tool results are the recorded ones. It also says what of each recorded
history the target would not take back as it is: the signed thinking, compaction windows and
other provider items bound elsewhere (``message.BINDINGS``, and the model or account a block's
provenance names), with what is sent instead (:attr:`TransposeReport.unreplayed`).

With ``gate=True`` it is a model-upgrade gate: each recorded conversation, with its tools,
tool choice and options, goes through the target's own rules offline (the pre-flight
findings ``modelwire check`` reports), nothing sent; with ``live=True`` as well, through the
target itself, its answers compared with the recorded ones. A refusal (a finding modelwire
cannot fix, or an error answer), a block kind dropped (media the target does not take left
out of the history, or a kind of block the recorded answer had and the target's has not) or a changed
tool choice (a forced choice the target cannot take, or other tools called) is a
:class:`GateFinding` that fails the gate (:attr:`TransposeReport.gate_failed`).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ._cassette import Cassette, Interaction
from ._unreplayed import Unreplayed, unreplayed

__all__ = [
    "CallSide",
    "GateFinding",
    "TransposeRow",
    "TransposeReport",
    "Unreplayed",
    "transpose",
    "transpose_async",
    "GATE_KINDS",
]

# What a gate finding is: the three that fail the gate, and a note (a change modelwire makes
# to the request that loses nothing a team relies on: an id or a name rewritten ...).
GATE_KINDS = ("refusal", "dropped-block", "tool-choice", "note")
# Pre-flight rules whose fix changes what the model is asked or shown. (Signed thinking of
# another endpoint left out, ``foreign-thinking``, stays a note: no target can read it, so it
# would fail every switch of provider and tell a team nothing it can change.)
_RULE_KINDS = {"forced-tool-with-thinking": "tool-choice", "unsupported-media": "dropped-block"}


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
    blocks: list[str] = field(default_factory=list)  # the kinds of the answer's blocks, in order


@dataclass(frozen=True)
class GateFinding:
    """One reason a recorded call would break on the target (see :data:`GATE_KINDS`)."""

    index: int  # the interaction of the source cassette
    kind: str  # refusal | dropped-block | tool-choice | note
    where: str  # offline (the target's rules) | live (the target's answer)
    message: str
    rule: str | None = None  # the pre-flight rule, for an offline finding

    def __str__(self) -> str:
        label = "NOTE" if self.kind == "note" else f"FAIL {self.kind}"
        return f"{label} [{self.index}] ({self.where}): {self.message}"


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
    gate: list[GateFinding] | None = None  # with gate=True: what would break (empty: nothing)
    assumed: str | None = None  # the target's rules were assumed from a family (see Model.assumption)
    # the opaque state of the recorded histories the target does not take back as it is, each
    # with what it is bound to (see _unreplayed)
    unreplayed: list[Unreplayed] = field(default_factory=list)

    @property
    def gate_failed(self) -> bool:
        """A refusal, a dropped block kind or a changed tool choice was found."""
        return any(f.kind != "note" for f in self.gate or ())

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        if self.gate is not None:
            data["gate_failed"] = self.gate_failed
        return data

    def lines(self) -> list[str]:
        where = f"recorded into {self.out}" if self.out else "offline: nothing sent"
        out = [f"{self.source} -> {self.target} ({where})"]
        for row in self.rows:
            left, right = _side(row.recorded), _side(row.target)
            width = max(len(line) for line in left) + 2
            out.append(f"call [{row.index}]")
            out += [f"  {a.ljust(width)}| {b}" for a, b in zip(left, right)]
            out += [f"  note: {note}" for note in row.notes]
        out += [f"skipped: {why}" for why in self.skipped]
        out += [f"not replayed on {self.target}: {block}" for block in self.unreplayed]
        if self.gate is not None:
            out += self._gate_lines()
        return out

    def _gate_lines(self) -> list[str]:
        gate = self.gate or []
        out = [f"note: {self.assumed}"] if self.assumed else []
        out += [str(f) for f in sorted(gate, key=lambda f: (f.kind == "note", f.index))]
        failed = [f for f in gate if f.kind != "note"]
        if failed:
            counts = {k: sum(f.kind == k for f in failed) for k in GATE_KINDS[:3]}
            kinds = ", ".join(f"{kind} {n}" for kind, n in counts.items() if n)
            out.append(f"gate: FAILED for {self.target}: {kinds}")
        else:
            notes = f" ({len(gate)} note(s): what modelwire changes on the way)" if gate else ""
            out.append(f"gate: passed: no refusal, dropped block kind or changed tool choice on {self.target}{notes}")
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
    path: str | Path,
    target: str,
    *,
    out: str | Path | None = None,
    base_url: str | None = None,
    model: Any = None,
    gate: bool = False,
    live: bool = False,
) -> TransposeReport:
    """Send each recorded conversation of ``path`` to ``target`` (``provider:model``; ``model``:
    a model object to use instead, for tests), recording the answers into ``out`` (default:
    beside ``path``, named after the target). With ``gate``, check each one against the
    target's rules offline first, and send nothing unless ``live`` (see the module)."""
    source = Cassette.load(path)
    report = TransposeReport(str(path), target, "")
    calls = [(n, i, i.request.get("conversation")) for n, i in enumerate(source.interactions)]
    for index, _interaction, conversation in calls:
        if not isinstance(conversation, dict):
            report.skipped.append(
                (
                    f"[{index}]: recorded without its conversation (recorded before modelwire kept it, or not "
                    "through modelwire)"
                )
            )
    kept = [(n, i, c) for n, i, c in calls if isinstance(c, dict)]
    if gate:
        rules = model if model is not None else _offline_model(target, base_url)
        assumption = getattr(rules, "assumption", None)
        said = assumption() if callable(assumption) else None
        report.assumed = said if isinstance(said, str) else None
        report.gate = [f for index, _, conversation in kept for f in _gate_offline(index, conversation, rules)]
        report.unreplayed = [u for index, _, conversation in kept for u in _unreplayed_of(index, conversation, rules)]
        if not live:
            return report
    out = Path(out) if out is not None else Path(path).with_name(f"{Path(path).stem}.{_safe(target)}.json")
    if out.resolve() == Path(path).resolve():
        from ..errors import CassetteError

        raise CassetteError(f"transpose would overwrite its source {path}; name another -o")
    report.out = str(out)
    if kept:
        await _send_all(report, kept, target, out, base_url, model)
    return report


async def _send_all(
    report: TransposeReport, kept: list[Any], target: str, out: Path, base_url: str | None, model: Any
) -> None:
    from ..models import load_model
    from ._hook import use_cassette

    if model is None:
        model = load_model(target, base_url=base_url) if base_url else load_model(target)
        _refuse_plain_http(model)
    if report.gate is None:  # (the gate found them already, on the target's rules)
        report.unreplayed = [u for index, _, conversation in kept for u in _unreplayed_of(index, conversation, model)]
    with use_cassette(out, "all", allow_unused=True):
        for index, interaction, conversation in kept:
            row = await _one(index, interaction, conversation, model)
            report.rows.append(row)
            if report.gate is not None:
                report.gate += _gate_live(row)


def _offline_model(target: str, base_url: str | None) -> Any:
    """The target as ``modelwire check`` loads it: its rules, no key, nothing to send to."""
    from ..models import _offline_model as offline

    return offline(target, base_url)


def _gate_offline(index: int, conversation: dict[str, Any], model: Any) -> list[GateFinding]:
    """The pre-flight findings of one recorded call on the target, each rated for the gate: a
    finding with no fix is a refusal; one whose fix changes the tool choice or leaves a kind of
    block out is one of those; any other fix is a note."""
    messages, tools, tool_choice = _parts(conversation)
    options = {k: v for k, v in (conversation.get("options") or {}).items() if k not in ("stream",)}
    findings = model.preflight(messages, tools or None, tool_choice, options or None)
    return [
        GateFinding(
            index, _RULE_KINDS.get(f.rule) or ("refusal" if f.fix is None else "note"), "offline", str(f), f.rule
        )
        for f in findings
    ]


def _gate_live(row: TransposeRow) -> list[GateFinding]:
    """What the target's answer lost beside the recorded one: an error, a kind of block, the
    tools it called (by name; arguments and text may differ)."""
    target, recorded = row.target, row.recorded
    if target.error:
        return [GateFinding(row.index, "refusal", "live", f"{target.model} answered {target.error}")]
    if recorded.error:
        return []  # nothing to compare with
    out = []
    gone = [kind for kind in dict.fromkeys(recorded.blocks) if kind not in target.blocks]
    if gone:
        message = f"the recorded answer had {', '.join(gone)} block(s); {target.model}'s has none"
        out.append(GateFinding(row.index, "dropped-block", "live", message))
    before, now = sorted(n for n, _ in recorded.tools), sorted(n for n, _ in target.tools)
    if before != now:
        message = f"the recorded answer called {before or 'no tool'}; {target.model} called {now or 'no tool'}"
        out.append(GateFinding(row.index, "tool-choice", "live", message))
    return out


def _refuse_plain_http(model: Any) -> None:
    """The target's key never crosses the network in plain http (as ``recheck``: see
    :mod:`modelwire.cassettes._bound`); ``transpose`` sends to the target's own endpoint,
    which the user named, never to a URL of the cassette."""
    from ._bound import refuse_plain_http

    spec = getattr(model, "spec", None)
    if spec is not None and spec.base_url:
        refuse_plain_http(spec.base_url)


async def _one(index: int, interaction: Interaction, conversation: dict[str, Any], model: Any) -> TransposeRow:
    from ..models._preflight import repair

    messages, tools, tool_choice = _parts(conversation)
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


def _unreplayed_of(index: int, conversation: dict[str, Any], model: Any) -> list[Unreplayed]:
    """What of one recorded history ``model`` does not take back as it is (see _unreplayed);
    nothing for a target that is not a modelwire model (a test's stand-in)."""
    if not hasattr(model, "wire") or not hasattr(model, "formatter"):
        return []
    return unreplayed(index, _parts(conversation)[0], model)


def _parts(conversation: dict[str, Any]) -> tuple[list[Any], list[Any], Any]:
    """A recorded conversation's messages, tools and tool choice, as modelwire's objects."""
    from ..message import as_messages

    messages = as_messages(conversation.get("messages") or [])
    return messages, [_tool(t) for t in conversation.get("tools") or ()], conversation.get("tool_choice")


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
    from ._drift import _KINDS

    side = CallSide(name, first_token=first)
    for event in events:
        if event.type in _KINDS:
            side.blocks.append(_KINDS[event.type])
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
