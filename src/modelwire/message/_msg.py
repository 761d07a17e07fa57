"""``Msg``: one turn of a conversation, an ordered list of typed blocks.

The role rules (user: text and data; system: text; assistant: anything) hold when a
message is built and on every later change: assigning ``role`` or ``content`` and
mutating ``content`` in place (``append``, ``insert``, ``extend``, item assignment)
are all checked, and a failed change leaves the message as it was.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Literal, Sequence, SupportsIndex, Union

from .._ids import new_id, now_iso
from .._record import Record, converters, extras_of, field
from ..errors import EventApplyError, InvalidMessageError, ValidationError
from ._blocks import (
    BLOCK_TYPES,
    ContentBlock,
    DataBlock,
    HintBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from ._fold import FoldState, apply_event
from ._types import ErrorInfo, ErrorType, ReplyFinishedReason, ReplyFinishedReasonValue, Usage, add_costs, check_role

__all__ = [
    "Msg",
    "Usage",
    "ErrorInfo",
    "ErrorType",
    "ReplyFinishedReason",
    "UserMsg",
    "AssistantMsg",
    "SystemMsg",
    "BlockList",
    "MsgInput",
    "as_messages",
]

_BLOCK_CLASSES = (TextBlock, ThinkingBlock, DataBlock, HintBlock, ToolCallBlock, ToolResultBlock)
MAX_DEPTH = 64  # nesting of metadata / extras a message may hold
_AGENTSCOPE1_TAGS = ("image", "audio", "video", "tool_use")  # block types of AgentScope 1.x only


def _as_block(value: Any) -> Any:
    """A content block, from a block or its dict form; anything else is refused here,
    not later when the message is sent or saved."""
    if isinstance(value, _BLOCK_CLASSES):
        try:
            _check_value(value)
        except ValueError as exc:
            raise InvalidMessageError(f"not a valid {value.type} block: {exc}") from None
        return value
    if isinstance(value, dict) and value.get("type") in BLOCK_TYPES:
        try:
            _check_value(value)
            return BLOCK_TYPES[value["type"]].from_dict(value)
        except ValueError as exc:
            raise InvalidMessageError(f"not a valid {value['type']} block: {exc}") from None
    raise InvalidMessageError(f"a message holds content blocks ({', '.join(BLOCK_TYPES)}), not {type(value).__name__}")


def _check_value(value: Any, depth: int = 0) -> None:
    """Refuse what JSON could not carry later: lone surrogates, absurd nesting."""
    if depth > MAX_DEPTH:
        raise ValueError(f"data nested more than {MAX_DEPTH} levels deep")
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValueError(
                (
                    f"a string holds a lone surrogate ({value[exc.start : exc.end]!r} at {exc.start}), which "
                    "no provider takes"
                )
            ) from None
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_value(key, depth + 1)
            _check_value(item, depth + 1)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _check_value(item, depth + 1)
    elif isinstance(value, Record):  # a block (or a source) built by hand: its fields and extras
        for name in type(value).__record_stored__:
            _check_value(getattr(value, name), depth + 1)
        extras = extras_of(value)
        if extras:
            _check_value(extras, depth)


class BlockList(list[ContentBlock]):
    """The ``content`` list of a :class:`Msg`: a list that enforces the role rules.

    Every in-place change is checked against the owning message's role before it is
    made. JSON and equality treat it as a plain list.
    """

    __slots__ = ("_owner",)

    def __init__(self, blocks: Iterable[Any] = (), owner: "Msg | None" = None) -> None:
        super().__init__(blocks)
        self._owner = owner

    def _check(self, blocks: Sequence[Any], start: int) -> None:
        owner = self._owner
        if owner is not None:
            check_role(owner.role, blocks, start)
            owner._content_changed()

    def append(self, block: Any) -> None:
        block = _as_block(block)
        self._check((block,), len(self))
        super().append(block)

    def insert(self, index: SupportsIndex, block: Any) -> None:
        block = _as_block(block)
        self._check((block,), int(index))
        super().insert(index, block)

    def extend(self, blocks: Iterable[Any]) -> None:
        blocks = [_as_block(b) for b in blocks]
        self._check(blocks, len(self))
        super().extend(blocks)

    # list's own __iadd__ takes any iterable too, and typeshed silences the same [misc] there.
    def __iadd__(self, blocks: Iterable[Any]) -> "BlockList":  # type: ignore[override, misc]
        self.extend(blocks)
        return self

    def __setitem__(self, index: Any, value: Any) -> None:
        if isinstance(index, slice):
            value = [_as_block(v) for v in value]
            self._check(value, index.start or 0)
        else:
            value = _as_block(value)
            self._check((value,), int(index))
        super().__setitem__(index, value)

    def __delitem__(self, index: Any) -> None:
        if self._owner is not None:
            self._owner._content_changed()
        super().__delitem__(index)

    def pop(self, index: SupportsIndex = -1) -> Any:
        if self._owner is not None:
            self._owner._content_changed()
        return super().pop(index)

    def remove(self, value: Any) -> None:
        if self._owner is not None:
            self._owner._content_changed()
        super().remove(value)

    def clear(self) -> None:
        if self._owner is not None:
            self._owner._content_changed()
        super().clear()

    def __reduce__(self) -> Any:
        # Pickle as a plain list; the owning Msg re-wraps it on unpickling.
        return (list, (list(self),))

    def __copy__(self) -> list[ContentBlock]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[ContentBlock]:
        import copy

        return [copy.deepcopy(b, memo) for b in self]


def _content(value: Any) -> list[Any]:
    """The ``content`` of a message: a string is one text block; each item is a block or
    a block's JSON, found by its ``type``."""
    if isinstance(value, str):
        return [TextBlock(text=value)]
    if not isinstance(value, (list, tuple)):
        raise ValidationError(
            None,
            [
                {
                    "loc": (),
                    "msg": f"expected a list of content blocks or a string, got {type(value).__name__}",
                    "type": "list_type",
                }
            ],
        )
    out = []
    for i, item in enumerate(value):
        if isinstance(item, _BLOCK_CLASSES):
            out.append(item)
            continue
        if not isinstance(item, dict):
            raise ValidationError(
                None,
                [
                    {
                        "loc": (i,),
                        "msg": f"expected a content block ({', '.join(BLOCK_TYPES)}), got {type(item).__name__}",
                        "type": "model_type",
                    }
                ],
            )
        cls = BLOCK_TYPES.get(item.get("type"))  # type: ignore[arg-type]
        if cls is None:
            tag = item.get("type")
            what = "has no 'type'" if tag is None else f"'type' {tag!r:.40} does not match any of the expected tags"
            if tag in _AGENTSCOPE1_TAGS:
                what = f"{what} (AgentScope 1.x JSON: read it with modelwire.message.from_agentscope1)"
            raise ValidationError(
                None, [{"loc": (i, "type"), "msg": f"{what}: {', '.join(BLOCK_TYPES)}", "type": "union_tag_invalid"}]
            )
        try:
            out.append(cls.from_dict(item))
        except ValidationError as exc:
            raise exc.under(i, item["type"]) from None
    return out


def _structured(value: Any) -> Any:
    """A structured output: its JSON form (a dict), or the validated instance of the model the
    agent was asked for (anything with pydantic's ``model_dump``), written as its JSON form."""
    if value is None or isinstance(value, dict) or callable(getattr(value, "model_dump", None)):
        return value
    what = f"expected an object or a model instance, got {type(value).__name__}"
    raise ValidationError(None, [{"loc": (), "msg": what, "type": "dict_type"}])


class _MsgState:
    """What a message keeps beside its fields, in slots of its own (``Msg.__slots__``), set
    with ``object.__setattr__`` so that ``Msg.__setattr__`` does not count them as changes.
    Declared here, outside the record, so that checkers do not take them for fields."""

    __slots__ = ()
    if TYPE_CHECKING:
        _fold: FoldState | None  # the stream folded into the message so far (message/_fold.py)
        _content: BlockList
        _version: int


class Msg(Record, _MsgState):
    """One message: who sent it, in which role, and its ordered content blocks."""

    __slots__ = ("_fold", "_content", "_version")

    name: str
    content: list[ContentBlock] = field(convert=_content)
    role: Literal["user", "assistant", "system"]
    id: str = field(default_factory=new_id)
    metadata: dict[str, Any] = field(default_factory=dict)
    created_at: str = field(default_factory=now_iso)
    usage: Usage | None = None
    finished_at: str | None = None
    finished_reason: ReplyFinishedReason | ReplyFinishedReasonValue | None = None
    structured_output: dict[str, Any] | Any = field(default=None, convert=_structured)
    """The agent's structured answer: the validated instance of ``structured_model`` where a
    model class was given (``reply.structured_output.city``), its dict in the JSON form."""
    error: ErrorInfo | None = None
    cost: dict[str, Any] | None = None
    """modelwire addition: the price of the model calls of this message (``modelwire.cost``)."""

    def __post_init__(self) -> None:
        _check_value(
            [self.name, self.metadata, self.structured_output, self.cost, self.finished_at, self.created_at, self.id]
        )
        content = self._content
        _check_value(content)
        check_role(self.role, content)
        object.__setattr__(self, "_content", BlockList(content, self))
        object.__setattr__(self, "_fold", None)
        object.__setattr__(self, "_version", 0)

    # -- change tracking ---------------------------------------------------------------

    def __setattr__(self, name: str, value: Any) -> None:
        # Every change bumps ``_version`` (a request build reuses what it made of a message
        # only while its version, and its fold's count of events, stay as they were).
        object.__setattr__(self, "_version", self._version + 1)
        if name == "content":
            blocks = _content(value)
            _check_value(blocks)
            check_role(self.role, blocks)
            self._sync()
            object.__setattr__(self, "_content", BlockList(blocks, self))
            self._content_changed()
            return
        convert = converters(Msg).get(name)
        if convert is not None:
            try:
                value = convert(value)
            except ValidationError as exc:
                raise exc.under(name).named("Msg") from None
            if name == "role":
                # Check first, so that a refused change leaves the message as it was.
                check_role(value, self._content)
            elif isinstance(value, (str, dict, list)):
                _check_value(value)
        object.__setattr__(self, name, value)

    def _content_changed(self) -> None:
        object.__setattr__(self, "_version", self._version + 1)
        fold = self._fold
        if fold is not None:
            fold.flush()
            object.__setattr__(self, "_fold", None)

    def _sync(self) -> None:
        """Write streamed pieces still held in buffers into their blocks."""
        fold = self._fold
        if fold is not None and fold.buffers:
            fold.flush()

    # -- accessors ---------------------------------------------------------------------

    def get_text_content(self, separator: str = "\n") -> str | None:
        """The text blocks joined by ``separator``, or ``None`` when there is none."""
        texts = [b.text for b in self.content if b.type == "text"]
        return separator.join(texts) if texts else None

    def get_content_blocks(self, block_type: str | list[str] | None = None) -> list[Any]:
        """The blocks of one type, of a list of types, or all of them."""
        if block_type is None:
            return list(self.content)
        if isinstance(block_type, str):
            return [b for b in self.content if b.type == block_type]
        types = set(block_type)
        return [b for b in self.content if b.type in types]

    def has_content_blocks(self, block_type: str | list[str] | None = None) -> bool:
        """Whether the message holds a block of the given type(s) (any block for ``None``)."""
        if block_type is None:
            return len(self.content) > 0
        types = {block_type} if isinstance(block_type, str) else set(block_type)
        return any(b.type in types for b in self.content)

    # -- events ------------------------------------------------------------------------

    def append_event(self, event: Any, *, strict: bool = False) -> "Msg":
        """Fold one streamed event into this message (see ``modelwire.message._fold``).

        As AgentScope's fold does, an event of another reply, or one for a block this
        message does not hold, is skipped with a warning (logger ``modelwire.fold``) and
        changes nothing; with ``strict=True`` it raises
        :class:`~modelwire.errors.EventApplyError` instead (modelwire's own folds are strict:
        a provider stream that does that is broken). Any other event that cannot be applied
        raises in both modes, and changes nothing."""
        try:
            apply_event(self, event)
        except EventApplyError as err:
            if strict or not getattr(err, "skippable", False):
                raise
            import logging

            logging.getLogger("modelwire.fold").warning("skipped: %s", err)
        return self

    def append_usage(self, usage: Usage) -> "Msg":
        """Add the token usage of one model call to this message's usage."""
        if self.usage is None:
            import copy  # here, not at import: only a first usage is copied

            object.__setattr__(self, "usage", copy.copy(usage))
        else:
            u = self.usage
            u.input_tokens += usage.input_tokens
            u.output_tokens += usage.output_tokens
            u.cache_input_tokens += usage.cache_input_tokens
            u.cache_creation_input_tokens += usage.cache_creation_input_tokens
            u.reasoning_tokens += usage.reasoning_tokens
        return self

    def append_cost(self, cost: dict[str, Any] | None) -> "Msg":
        """Add the price of one model call to this message's cost."""
        if cost is not None:
            object.__setattr__(self, "cost", add_costs(self.cost, cost))
        return self

    # -- serialization -----------------------------------------------------------------

    @classmethod
    def from_dict(cls, data: Any) -> "Msg":
        """Build a message from :meth:`to_dict` output (or AgentScope 2.x JSON)."""
        return super().from_dict(data)  # type: ignore[no-any-return]

    def __copy__(self) -> "Msg":
        self._sync()
        new = super().__copy__()
        object.__setattr__(new, "_content", BlockList(self._content, new))
        object.__setattr__(new, "_fold", None)
        object.__setattr__(new, "_version", 0)
        return new  # type: ignore[no-any-return]

    def __deepcopy__(self, memo: dict[int, Any]) -> "Msg":
        self._sync()
        new = super().__deepcopy__(memo)
        object.__setattr__(new, "_content", BlockList(new._content, new))
        object.__setattr__(new, "_fold", None)
        object.__setattr__(new, "_version", 0)
        return new  # type: ignore[no-any-return]

    def __getstate__(self) -> Any:
        self._sync()
        return super().__getstate__()

    def __setstate__(self, state: Any) -> None:
        super().__setstate__(state)
        object.__setattr__(self, "_content", BlockList(self._content, self))
        object.__setattr__(self, "_fold", None)
        object.__setattr__(self, "_version", 0)


class _ContentDescriptor:
    """Reading ``msg.content`` first writes any buffered stream pieces into the blocks,
    so a reader always sees the message as folded so far. Setting it through
    ``object.__setattr__`` (the constructor) stores the value as it is."""

    def __get__(self, obj: Any, cls: Any = None) -> Any:
        if obj is None:
            return self
        fold = obj._fold
        if fold is not None and fold.buffers:
            fold.flush()
        return obj._content

    def __set__(self, obj: Any, value: Any) -> None:
        object.__setattr__(obj, "_content", value)


type.__setattr__(Msg, "content", _ContentDescriptor())


def _to_blocks(content: str | list[Any], name: Any = "", metadata: Any = None) -> list[Any]:
    """The factories' content, refused with :class:`InvalidMessageError` here if it could not
    be sent or saved later (``Msg(...)`` itself raises :class:`~modelwire.errors.ValidationError`)."""
    try:
        _check_value([name, content, metadata])
    except ValueError as exc:
        raise InvalidMessageError(f"this message cannot be sent or saved: {exc}") from None
    return [TextBlock(text=content)] if isinstance(content, str) else content


def UserMsg(
    name: str,
    content: str | list[Any],
    metadata: dict[str, Any] | None = None,
    created_at: str | None = None,
    finished_at: str | None = None,
    finished_reason: ReplyFinishedReason | ReplyFinishedReasonValue | None = None,
    id: str | None = None,  # noqa: A002
) -> Msg:
    """A ``user`` message; a plain string becomes one text block. ``finished_at`` defaults to ``created_at``."""
    created_at = created_at or now_iso()
    return Msg(
        name=name,
        content=_to_blocks(content, name, metadata),
        role="user",
        metadata=metadata or {},
        created_at=created_at,
        finished_at=created_at if finished_at is None else finished_at,
        finished_reason=finished_reason,
        id=id or new_id(),
    )


def AssistantMsg(
    name: str,
    content: str | list[Any],
    metadata: dict[str, Any] | None = None,
    created_at: str | None = None,
    finished_at: str | None = None,
    finished_reason: ReplyFinishedReason | ReplyFinishedReasonValue | None = None,
    structured_output: dict[str, Any] | None = None,
    id: str | None = None,  # noqa: A002
    usage: Usage | None = None,
) -> Msg:
    """An ``assistant`` message; it may hold every block type."""
    return Msg(
        name=name,
        content=_to_blocks(content, name, metadata),
        role="assistant",
        metadata=metadata or {},
        created_at=created_at or now_iso(),
        finished_at=finished_at,
        finished_reason=finished_reason,
        structured_output=structured_output,
        id=id or new_id(),
        usage=usage,
    )


def SystemMsg(
    name: str,
    content: str | list[Any],
    metadata: dict[str, Any] | None = None,
    created_at: str | None = None,
    finished_at: str | None = None,
    finished_reason: ReplyFinishedReason | ReplyFinishedReasonValue | None = None,
    id: str | None = None,  # noqa: A002
) -> Msg:
    """A ``system`` message (text blocks only). ``finished_at`` defaults to ``created_at``."""
    created_at = created_at or now_iso()
    return Msg(
        name=name,
        content=_to_blocks(content, name, metadata),
        role="system",
        metadata=metadata or {},
        created_at=created_at,
        finished_at=created_at if finished_at is None else finished_at,
        finished_reason=finished_reason,
        id=id or new_id(),
    )


MsgInput = Union[str, Msg, dict[str, Any], Sequence[Union[str, Msg, dict[str, Any]]], None]
"""What a caller may give where messages go: a string (the user's words), a message, its
JSON (modelwire's or AgentScope's dict; an OpenAI-style ``{"role", "content"}`` dict takes its
role as its name), or a list of those."""


def as_messages(value: MsgInput) -> list[Msg]:
    """``value`` as a list of messages (see :data:`MsgInput`)."""
    if value is None:
        return []
    items = [value] if isinstance(value, (str, Msg, dict)) else list(value)
    if set(map(type, items)) == {Msg}:  # the usual history: one C pass, no call per message
        return items  # type: ignore[return-value]  # every item is a Msg, as the line above checked
    out = []
    for item in items:
        if isinstance(item, str):
            out.append(UserMsg("user", item))
        elif isinstance(item, dict):
            if "name" not in item and item.get("role") in ("user", "system", "assistant"):
                # An OpenAI-style message ({"role": "user", "content": "..."}): its speaker is its role.
                item = {**item, "name": item["role"]}
            out.append(Msg.from_dict(item))
        elif isinstance(item, Msg):
            out.append(item)
        else:
            raise InvalidMessageError(f"a message is a string, a Msg or a message's JSON, not {type(item).__name__}")
    return out


Msg.__record_added__ = frozenset({"cost"})  # modelwire's addition (see Record.model_dump)
