"""Folding events into a message: the semantics of ``Msg.append_event``.

Cost is linear in the total size of the deltas. Blocks are found through an id index
(built once per message, kept up to date), and streamed pieces are gathered in
buffers and joined once, when the block ends or when someone reads the message,
instead of re-copying a growing string on every delta. Base64 data pieces, each
independently padded, are joined as strings while their boundaries line up (the
usual case) and decoded and re-encoded once otherwise.

Every handler checks what it needs before it changes anything, so an event that
cannot be applied raises :class:`~modelwire.errors.EventApplyError` and leaves the
message exactly as it was.
"""

from __future__ import annotations

import binascii
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Callable

from ..errors import EventApplyError
from ._blocks import (
    Base64Source,
    DataBlock,
    HintBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolCallState,
    ToolResultBlock,
    ToolResultState,
    URLSource,
)
from ._types import ReplyFinishedReason, Usage, check_role

if TYPE_CHECKING:
    from ._msg import Msg

_set = object.__setattr__
_a2b = binascii.a2b_base64
_b2a = binascii.b2a_base64


class _Buffer:
    """Pieces of one string field of one block, joined on flush."""

    __slots__ = ("target", "attr", "parts", "b64", "aligned")

    def __init__(self, target: Any, attr: str, b64: bool = False) -> None:
        self.target = target
        self.attr = attr
        first = getattr(target, attr)
        self.parts: list[str] = [first] if first else []
        self.b64 = b64
        # base64 pieces can be joined as text while no piece but the last is padded
        self.aligned = not (b64 and first.endswith("="))

    def add_b64(self, piece: str) -> None:
        parts = self.parts
        if parts and parts[-1].endswith("="):
            self.aligned = False
        parts.append(piece)

    def value(self) -> str:
        parts = self.parts
        if len(parts) == 1:
            return parts[0]
        if self.b64 and not self.aligned:
            raw = b"".join([_a2b(p) for p in parts])
            return _b2a(raw, newline=False).decode("ascii")
        return "".join(parts)


class FoldState:
    """Per-message index of blocks by id, and the buffers of blocks still streaming.

    ``parts`` maps (kind, block id) to the list of pieces of a block that is being
    streamed, so that a delta costs one dict lookup and one list append.
    """

    __slots__ = ("text", "thinking", "data", "tool_call", "tool_result", "result_data", "buffers", "parts", "applied")

    def __init__(self, msg: "Msg") -> None:
        self.applied = 0  # events folded: a message whose count moved has changed
        self.text: dict[str, TextBlock] = {}
        self.thinking: dict[str, ThinkingBlock] = {}
        self.data: dict[str, DataBlock] = {}
        self.tool_call: dict[str, ToolCallBlock] = {}
        self.tool_result: dict[str, ToolResultBlock] = {}
        self.result_data: dict[tuple[str, str], DataBlock] = {}
        self.buffers: dict[int, _Buffer] = {}
        self.parts: dict[Any, list[str]] = {}
        for block in msg._content:
            self.add(block)

    def add(self, block: Any) -> None:
        table = getattr(self, block.type, None)
        if table is not None:
            table.setdefault(block.id, block)  # the first block with an id wins, as in a scan
        if block.type == "tool_result" and isinstance(block.output, list):
            for out in block.output:
                if out.type == "data" and out.source.type == "base64":
                    self.result_data.setdefault((block.id, out.id), out)

    def buffer(self, target: Any, attr: str, b64: bool = False, key: Any = None) -> _Buffer:
        buf = self.buffers.get(id(target))
        if buf is None:
            buf = self.buffers[id(target)] = _Buffer(target, attr, b64)
        if key is not None:
            self.parts[key] = buf.parts
        return buf

    def drop(self, target: Any) -> None:
        self.buffers.pop(id(target), None)
        self.parts.clear()  # cheap to rebuild: the next delta of each block re-registers

    def flush(self) -> None:
        for buf in self.buffers.values():
            _set(buf.target, buf.attr, buf.value())
        self.buffers.clear()
        self.parts.clear()

    def flush_one(self, target: Any) -> None:
        buf = self.buffers.pop(id(target), None)
        if buf is not None:
            _set(target, buf.attr, buf.value())
            self.parts.clear()


def _missing(event: Any, kind: str, key: str, msg: Msg) -> EventApplyError:
    return _skippable(
        EventApplyError(event, f"no {kind} with id {key!r} in message {msg.id!r} (was its START folded?)")
    )


def _skippable(err: EventApplyError) -> EventApplyError:
    """An event AgentScope's fold skips with a warning (another reply's, or one for a block
    the message does not hold): ``Msg.append_event`` skips it too unless ``strict``."""
    err.skippable = True  # type: ignore[attr-defined]
    return err


def _check_extras(ev: Any, block: Any) -> None:
    """Provider extras ride beside a block's own fields; they never replace one (an
    ``extras={"type": "text"}`` would turn a tool call into something else)."""
    extras = ev.extras
    if extras:
        clash = [key for key in extras if key in type(block).__record_fields__]
        if clash:
            raise EventApplyError(ev, f"its extras would overwrite the block's own field(s) {clash}")


def _set_extras(block: Any, extras: dict[str, Any] | None) -> None:
    if not extras:
        return
    extra = getattr(block, "__dict__", None)
    if extra is not None:
        extra.update(extras)


def _append_block(msg: "Msg", fold: FoldState, block: Any) -> None:
    content = msg._content
    # Role check as the checked list would, without dropping the fold state.
    check_role(msg.role, (block,), len(content))
    list.append(content, block)
    fold.add(block)


# -- handlers ------------------------------------------------------------------------------


def _reply_end(msg: "Msg", fold: FoldState, ev: Any) -> None:
    fold.flush()
    _set(msg, "finished_at", ev.created_at)
    _set(msg, "finished_reason", ReplyFinishedReason(ev.finished_reason))
    error = ev.error
    if error is not None:
        import copy  # here, not at import: most folds never copy

        error = copy.copy(error)
    _set(msg, "error", error)
    if ev.structured_output is not None:
        _set(msg, "structured_output", dict(ev.structured_output))


def _model_call_end(msg: "Msg", fold: FoldState, ev: Any) -> None:
    msg.append_usage(
        Usage(
            input_tokens=ev.input_tokens,
            output_tokens=ev.output_tokens,
            cache_input_tokens=ev.cache_input_tokens,
            cache_creation_input_tokens=ev.cache_creation_input_tokens,
            reasoning_tokens=ev.reasoning_tokens,
        )
    )
    if ev.cost is not None:
        msg.append_cost(ev.cost)


def _text_start(msg: "Msg", fold: FoldState, ev: Any) -> None:
    _append_block(msg, fold, TextBlock(id=ev.block_id, text="", created_at=ev.created_at))


def _streamed(kind: str, attr: str, label: str, id_field: str) -> tuple[Callable[..., None], Callable[..., None]]:
    """The DELTA and END handlers of a block whose one string field is streamed (text,
    thinking, tool call arguments): a delta is one dict lookup and one list append.
    A text END may carry the final text, which replaces the deltas."""
    key_of = attrgetter(id_field)
    table_of = attrgetter(kind)

    def delta(msg: "Msg", fold: FoldState, ev: Any) -> None:
        block_id = key_of(ev)
        parts = fold.parts.get((kind, block_id))
        if parts is None:
            block = table_of(fold).get(block_id)
            if block is None:
                raise _missing(ev, label, block_id, msg)
            parts = fold.buffer(block, attr, key=(kind, block_id)).parts
        parts.append(ev.delta)

    def end(msg: "Msg", fold: FoldState, ev: Any) -> None:
        block_id = key_of(ev)
        block = table_of(fold).get(block_id)
        if block is None:
            raise _missing(ev, label, block_id, msg)
        _check_extras(ev, block)
        if kind == "text" and ev.text is not None:
            fold.drop(block)  # END carries the final text: it replaces the deltas
            _set(block, "text", ev.text)
        else:
            fold.flush_one(block)
        _set(block, "finished_at", ev.created_at)
        _set_extras(block, ev.extras)

    return delta, end


_text_delta, _text_end = _streamed("text", "text", "text block", "block_id")
_thinking_delta, _thinking_end = _streamed("thinking", "thinking", "thinking block", "block_id")
_tool_call_delta, _tool_call_end = _streamed("tool_call", "input", "tool call", "tool_call_id")


def _thinking_start(msg: "Msg", fold: FoldState, ev: Any) -> None:
    _append_block(msg, fold, ThinkingBlock(id=ev.block_id, thinking="", created_at=ev.created_at))


def _data_start(msg: "Msg", fold: FoldState, ev: Any) -> None:
    block = DataBlock(
        id=ev.block_id,
        source=Base64Source(data="", media_type=ev.media_type),
        name=ev.name,
        created_at=ev.created_at,
    )
    _append_block(msg, fold, block)


def _data_delta(msg: "Msg", fold: FoldState, ev: Any) -> None:
    block = fold.data.get(ev.block_id)
    if block is None:
        raise _missing(ev, "data block", ev.block_id, msg)
    if ev.url:
        # A URL is the whole content: it replaces the (empty) inline source.
        fold.drop(block.source)
        _set(block, "source", URLSource(url=ev.url, media_type=ev.media_type))
        return
    source = block.source
    if source.type != "base64":
        raise EventApplyError(ev, f"data block {ev.block_id!r} already holds a URL; base64 data cannot follow it")
    buf = fold.buffers.get(id(source))
    if buf is None:
        buf = fold.buffer(source, "data", b64=True)
    buf.add_b64(ev.data)  # the media type stays the start's, as AgentScope keeps it


def _data_end(msg: "Msg", fold: FoldState, ev: Any) -> None:
    block = fold.data.get(ev.block_id)
    if block is None:
        raise _missing(ev, "data block", ev.block_id, msg)
    _check_extras(ev, block)
    fold.flush_one(block.source)
    _set(block, "finished_at", ev.created_at)
    _set_extras(block, ev.extras)


def _hint(msg: "Msg", fold: FoldState, ev: Any) -> None:
    import copy  # here, not at import: most folds never copy

    hint = ev.hint if isinstance(ev.hint, str) else [copy.deepcopy(b) for b in ev.hint]
    block = HintBlock(id=ev.block_id, hint=hint, source=ev.source, created_at=ev.created_at, finished_at=ev.created_at)
    _append_block(msg, fold, block)


def _tool_call_start(msg: "Msg", fold: FoldState, ev: Any) -> None:
    block = ToolCallBlock(id=ev.tool_call_id, name=ev.tool_call_name, input="", created_at=ev.created_at)
    _append_block(msg, fold, block)


def _tool_result_start(msg: "Msg", fold: FoldState, ev: Any) -> None:
    block = ToolResultBlock(
        id=ev.tool_call_id, name=ev.tool_call_name, output=[], state="running", created_at=ev.created_at
    )
    _append_block(msg, fold, block)


def _result(msg: "Msg", fold: FoldState, ev: Any) -> ToolResultBlock:
    block = fold.tool_result.get(ev.tool_call_id)
    if block is None:
        raise _missing(ev, "tool result", ev.tool_call_id, msg)
    if isinstance(block.output, str):
        text = TextBlock(text=block.output, id=f"{block.id}.0", created_at=block.created_at)
        _set(block, "output", [text] if block.output else [])
    return block


def _tool_result_text(msg: "Msg", fold: FoldState, ev: Any) -> None:
    block = _result(msg, fold, ev)
    output = block.output
    assert not isinstance(output, str)  # _result made it a list
    if output and output[-1].type == "text":
        last = output[-1]
    else:
        # As AgentScope folds it, an empty piece starts a text part too. Id and time come
        # from the result block, so the same events build the same block however their
        # deltas were split.
        last = TextBlock(text="", id=f"{block.id}.{len(output)}", created_at=block.created_at)
        output.append(last)
    if not ev.delta:
        return
    buf = fold.buffers.get(id(last))
    if buf is None:
        buf = fold.buffer(last, "text")
    buf.parts.append(ev.delta)


def _tool_result_data(msg: "Msg", fold: FoldState, ev: Any) -> None:
    block = _result(msg, fold, ev)
    key = (ev.tool_call_id, ev.block_id)
    if ev.data is not None:
        target = fold.result_data.get(key)
        if target is not None:
            buf = fold.buffers.get(id(target.source))
            if buf is None:
                buf = fold.buffer(target.source, "data", b64=True)
            buf.add_b64(ev.data)
            if ev.media_type:
                target.source.media_type = ev.media_type
            return
        source: Any = Base64Source(data=ev.data, media_type=ev.media_type)
        out = DataBlock(id=ev.block_id, source=source, created_at=block.created_at)
        fold.result_data[key] = out
    else:
        source = URLSource(url=ev.url, media_type=ev.media_type)
        out = DataBlock(id=ev.block_id, source=source, created_at=block.created_at)
    assert not isinstance(block.output, str)  # _result made it a list
    block.output.append(out)


def _tool_result_end(msg: "Msg", fold: FoldState, ev: Any) -> None:
    block = fold.tool_result.get(ev.tool_call_id)
    if block is None:
        raise _missing(ev, "tool result", ev.tool_call_id, msg)
    if isinstance(block.output, list):
        for out in block.output:
            fold.flush_one(out.source if out.type == "data" else out)
    _set(block, "state", ToolResultState(ev.state))
    _set(block, "metadata", dict(ev.metadata))
    _set(block, "finished_at", ev.created_at)
    call = fold.tool_call.get(ev.tool_call_id)
    if call is not None:
        _set(call, "state", ToolCallState.FINISHED)


def _calls(msg: "Msg", fold: FoldState, ev: Any, ids: list[str]) -> list[ToolCallBlock]:
    found = []
    for cid in ids:
        call = fold.tool_call.get(cid)
        if call is None:
            raise _missing(ev, "tool call", cid, msg)
        found.append(call)
    return found


def _require_confirm(msg: "Msg", fold: FoldState, ev: Any) -> None:
    import copy  # here, not at import: most folds never copy

    calls = _calls(msg, fold, ev, [tc.id for tc in ev.tool_calls])
    for call, asked in zip(calls, ev.tool_calls):
        _set(call, "state", ToolCallState.ASKING)
        _set(call, "suggested_rules", [copy.copy(r) for r in asked.suggested_rules])


def _confirm_result(msg: "Msg", fold: FoldState, ev: Any) -> None:
    calls = _calls(msg, fold, ev, [r.tool_call.id for r in ev.confirm_results])
    for call, result in zip(calls, ev.confirm_results):
        # Only calls still asking move; a late answer (after an interrupt) is stale.
        if call.state == "asking":
            _set(call, "state", ToolCallState.ALLOWED if result.confirmed else ToolCallState.FINISHED)


def _require_external(msg: "Msg", fold: FoldState, ev: Any) -> None:
    calls = _calls(msg, fold, ev, [tc.id for tc in ev.tool_calls])
    for call in calls:
        _set(call, "state", ToolCallState.SUBMITTED)


def _external_result(msg: "Msg", fold: FoldState, ev: Any) -> None:
    import copy  # here, not at import: most folds never copy

    for result in ev.execution_results:
        if result.id in fold.tool_result:
            continue  # already answered (for example interrupted before the result came)
        block = copy.deepcopy(result)
        if block.finished_at is None:
            _set(block, "finished_at", ev.created_at)
        _append_block(msg, fold, block)
        # The call keeps its state (``submitted``), as AgentScope's append_event does: the
        # result beside it says it was answered.


def _ignore(msg: "Msg", fold: FoldState, ev: Any) -> None:
    return None


HANDLERS: dict[str, Callable[["Msg", FoldState, Any], None]] = {
    "REPLY_START": _ignore,
    "REPLY_END": _reply_end,
    "MODEL_CALL_START": _ignore,
    "MODEL_CALL_END": _model_call_end,
    "TEXT_BLOCK_START": _text_start,
    "TEXT_BLOCK_DELTA": _text_delta,
    "TEXT_BLOCK_END": _text_end,
    "THINKING_BLOCK_START": _thinking_start,
    "THINKING_BLOCK_DELTA": _thinking_delta,
    "THINKING_BLOCK_END": _thinking_end,
    "DATA_BLOCK_START": _data_start,
    "DATA_BLOCK_DELTA": _data_delta,
    "DATA_BLOCK_END": _data_end,
    "HINT_BLOCK": _hint,
    "TOOL_CALL_START": _tool_call_start,
    "TOOL_CALL_DELTA": _tool_call_delta,
    "TOOL_CALL_END": _tool_call_end,
    "TOOL_RESULT_START": _tool_result_start,
    "TOOL_RESULT_TEXT_DELTA": _tool_result_text,
    "TOOL_RESULT_DATA_DELTA": _tool_result_data,
    "TOOL_RESULT_END": _tool_result_end,
    "REQUIRE_USER_CONFIRM": _require_confirm,
    "USER_CONFIRM_RESULT": _confirm_result,
    "REQUIRE_EXTERNAL_EXECUTION": _require_external,
    "EXTERNAL_EXECUTION_RESULT": _external_result,
    "USER_INTERRUPT": _ignore,
    "EXCEED_MAX_ITERS": _ignore,
}


def apply_event(msg: "Msg", event: Any) -> None:
    """Fold ``event`` into ``msg``. See the module docstring for the guarantees."""
    try:
        handler = HANDLERS.get(event.type)
    except AttributeError:
        # Messages sit below events: JSON is parsed by the caller, not here.
        hint = "; parse it first with modelwire.event.parse_event" if isinstance(event, dict) else ""
        raise EventApplyError(event, f"not an event{hint}") from None
    if handler is None:
        if event.type == "CUSTOM":
            return
        raise EventApplyError(event, f"unknown event type {event.type!r}")
    if event.reply_id != msg.id:
        raise _skippable(EventApplyError(event, f"its reply_id {event.reply_id!r} is not this message's id {msg.id!r}"))
    fold = msg._fold
    if fold is None:
        fold = FoldState(msg)
        _set(msg, "_fold", fold)
    fold.applied += 1
    handler(msg, fold, event)
