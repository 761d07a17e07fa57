"""``Msg``: one turn of a conversation, an ordered list of typed blocks.

The role rules (user: text and data; system: text; assistant: anything) hold when a
message is built and on every later change: assigning ``role`` or ``content`` and
mutating ``content`` in place (``append``, ``insert``, ``extend``, item assignment)
are all checked, and a failed change leaves the message as it was.
"""

from __future__ import annotations

from typing import Any, Iterable, Literal, Sequence, SupportsIndex, Union

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from .._ids import new_id, now_iso
from ..errors import InvalidMessageError
from ._blocks import BLOCK_TYPES, ContentBlock, TextBlock
from ._fold import apply_event
from ._types import _ALLOWED, ErrorInfo, ErrorType, ReplyFinishedReason, Usage, add_costs, check_role

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

_BLOCK_CLASSES = tuple(BLOCK_TYPES.values())
MAX_DEPTH = 64  # nesting of metadata / extras a message may hold


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
            return BLOCK_TYPES[value["type"]].model_validate(value)
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
            raise ValueError(f"a string holds a lone surrogate ({value[exc.start:exc.end]!r} at {exc.start}), which no provider takes") from None
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_value(key, depth + 1)
            _check_value(item, depth + 1)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _check_value(item, depth + 1)
    elif isinstance(value, BaseModel):  # a block (or a source) built by hand: its fields and extras
        _check_value(value.__dict__, depth)
        if value.__pydantic_extra__:
            _check_value(value.__pydantic_extra__, depth)


class BlockList(list):
    """The ``content`` list of a :class:`Msg`: a list that enforces the role rules.

    Every in-place change is checked against the owning message's role before it is
    made. Pydantic, JSON and equality treat it as a plain list.
    """

    __slots__ = ("_owner",)

    def __init__(self, blocks: Iterable[Any] = (), owner: "Msg | None" = None) -> None:
        super().__init__(blocks)
        self._owner = owner

    def _check(self, blocks: Sequence[Any], start: int) -> None:
        owner = self._owner
        if owner is not None:
            check_role(owner.__dict__["role"], blocks, start)
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

    def __iadd__(self, blocks: Iterable[Any]) -> "BlockList":  # type: ignore[override]
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

    def __copy__(self) -> list:
        return list(self)

    def __deepcopy__(self, memo: dict) -> list:
        import copy

        return [copy.deepcopy(b, memo) for b in self]


class Msg(BaseModel):
    """One message: who sent it, in which role, and its ordered content blocks."""

    model_config = ConfigDict(validate_assignment=True)

    name: str
    content: list[ContentBlock]
    role: Literal["user", "assistant", "system"]
    id: str = Field(default_factory=new_id)
    metadata: dict = Field(default_factory=dict)
    created_at: str = Field(default_factory=now_iso)
    usage: Usage | None = None
    finished_at: str | None = None
    finished_reason: ReplyFinishedReason | None = None
    structured_output: dict | None = None
    error: ErrorInfo | None = None
    cost: dict | None = None
    """modelwire addition: the price of the model calls of this message (``modelwire.cost``)."""

    _fold: Any = PrivateAttr(default=None)

    @model_validator(mode="before")
    @classmethod
    def _str_content(cls, data: Any) -> Any:
        if isinstance(data, dict):
            if any(isinstance(v, (dict, list, str)) and not isinstance(v, BlockList) for v in data.values()):
                _check_value({k: v for k, v in data.items() if not isinstance(v, BlockList)})
            if isinstance(data.get("content"), str):
                data = {**data, "content": [TextBlock(text=data["content"])]}
        return data

    def model_copy(self, *, update: dict[str, Any] | None = None, deep: bool = False) -> "Msg":  # type: ignore[override]
        """A copy that keeps the role rules (an ``update`` of the role or content is checked)
        and owns its content list."""
        self._sync()
        copy = super().model_copy(update=update, deep=deep)
        d = copy.__dict__
        content = d["content"]
        if isinstance(content, str):
            content = [TextBlock(text=content)]
        blocks = [_as_block(b) for b in content]
        check_role(d["role"], blocks)
        d["content"] = BlockList(blocks, copy)
        copy.__pydantic_private__ = {"_fold": None}
        return copy

    @model_validator(mode="after")
    def _own_content(self) -> "Msg":
        d = self.__dict__
        content = d["content"]
        check_role(d["role"], content)
        if not isinstance(content, BlockList) or content._owner is not self:
            d["content"] = BlockList(content, self)
        self._content_changed()
        return self

    # -- change tracking ---------------------------------------------------------------

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "role":
            # Check first, so that a refused change leaves the message as it was.
            if value in _ALLOWED:
                check_role(value, self.__dict__["content"])
        elif name == "content":
            if isinstance(value, str):
                value = [TextBlock(text=value)]
            blocks = _validate_blocks(value)
            check_role(self.__dict__["role"], blocks)
            self._sync()
            self.__dict__["content"] = BlockList(blocks, self)
            self.__pydantic_fields_set__.add("content")
            self._content_changed()
            return
        super().__setattr__(name, value)

    def _content_changed(self) -> None:
        fold = self.__pydantic_private__.get("_fold") if self.__pydantic_private__ else None
        if fold is not None:
            fold.flush()
            self.__pydantic_private__["_fold"] = None

    def _sync(self) -> None:
        """Write streamed pieces still held in buffers into their blocks."""
        priv = self.__pydantic_private__
        if priv:
            fold = priv.get("_fold")
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

    def append_event(self, event: Any) -> "Msg":
        """Fold one streamed event into this message (see ``modelwire.message._fold``)."""
        apply_event(self, event)
        return self

    def append_usage(self, usage: Usage) -> "Msg":
        """Add the token usage of one model call to this message's usage."""
        if self.usage is None:
            self.__dict__["usage"] = usage.model_copy()
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
            self.__dict__["cost"] = add_costs(self.cost, cost)
        return self

    # -- serialization -----------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready dict of this message (``model_dump(mode="json")``)."""
        return self.model_dump(mode="json")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Msg":
        """Build a message from :meth:`to_dict` output (or AgentScope 2.x JSON)."""
        return cls.model_validate(data)

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:  # type: ignore[override]
        self._sync()
        return super().model_dump(**kwargs)

    def model_dump_json(self, **kwargs: Any) -> str:  # type: ignore[override]
        self._sync()
        return super().model_dump_json(**kwargs)

    def __eq__(self, other: object) -> bool:
        # Field by field; the private fold index is a cache and takes no part.
        if not isinstance(other, Msg):
            return NotImplemented
        self._sync()
        other._sync()
        return type(self) is type(other) and self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]

    def __iter__(self):  # type: ignore[override]
        self._sync()
        return super().__iter__()

    def __repr_args__(self):  # type: ignore[override]
        self._sync()
        return super().__repr_args__()

    def __copy__(self) -> "Msg":
        self._sync()
        new = super().__copy__()
        new.__pydantic_private__ = {"_fold": None}
        new.__dict__["content"] = BlockList(self.__dict__["content"], new)
        return new

    def __deepcopy__(self, memo: dict | None = None) -> "Msg":
        self._sync()
        new = super().__deepcopy__(memo)
        new.__pydantic_private__ = {"_fold": None}
        new.__dict__["content"] = BlockList(new.__dict__["content"], new)
        return new

    def __getstate__(self) -> dict[Any, Any]:
        self._sync()
        state = super().__getstate__()
        state["__pydantic_private__"] = {"_fold": None}
        return state

    def __setstate__(self, state: dict[Any, Any]) -> None:
        super().__setstate__(state)
        self.__dict__["content"] = BlockList(self.__dict__["content"], self)


class _ContentDescriptor:
    """Reading ``msg.content`` first writes any buffered stream pieces into the blocks,
    so a reader always sees the message as folded so far."""

    def __get__(self, obj: Any, cls: Any = None) -> Any:
        if obj is None:
            return self
        priv = obj.__pydantic_private__
        if priv:
            fold = priv.get("_fold")
            if fold is not None and fold.buffers:
                fold.flush()
        return obj.__dict__["content"]

    def __set__(self, obj: Any, value: Any) -> None:  # pragma: no cover - Msg.__setattr__ handles it
        obj.__setattr__("content", value)


type.__setattr__(Msg, "content", _ContentDescriptor())

_BLOCKS_ADAPTER: Any = None


def _validate_blocks(value: Any) -> list[Any]:
    global _BLOCKS_ADAPTER
    if _BLOCKS_ADAPTER is None:
        from pydantic import TypeAdapter

        _BLOCKS_ADAPTER = TypeAdapter(list[ContentBlock])
    return _BLOCKS_ADAPTER.validate_python(value)


def _to_blocks(content: str | list[Any], name: Any = "", metadata: Any = None) -> list[Any]:
    """The factories' content, refused with :class:`InvalidMessageError` here if it could not
    be sent or saved later (``Msg(...)`` itself raises pydantic's ``ValidationError``)."""
    try:
        _check_value([name, content, metadata])
    except ValueError as exc:
        raise InvalidMessageError(f"this message cannot be sent or saved: {exc}") from None
    return [TextBlock(text=content)] if isinstance(content, str) else content


def UserMsg(
    name: str,
    content: str | list[Any],
    metadata: dict | None = None,
    created_at: str | None = None,
    finished_at: str | None = None,
    finished_reason: ReplyFinishedReason | str | None = None,
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
    metadata: dict | None = None,
    created_at: str | None = None,
    finished_at: str | None = None,
    finished_reason: ReplyFinishedReason | str | None = None,
    structured_output: dict | None = None,
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
    metadata: dict | None = None,
    created_at: str | None = None,
    finished_at: str | None = None,
    finished_reason: ReplyFinishedReason | str | None = None,
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


MsgInput = Union[str, Msg, dict, Sequence[Union[str, Msg, dict]], None]
"""What a caller may give where messages go: a string (the user's words), a message, its
JSON (modelwire's or AgentScope's dict), or a list of those."""


def as_messages(value: MsgInput) -> list[Msg]:
    """``value`` as a list of messages (see :data:`MsgInput`)."""
    if value is None:
        return []
    items = [value] if isinstance(value, (str, Msg, dict)) else list(value)
    out = []
    for item in items:
        if isinstance(item, str):
            out.append(UserMsg("user", item))
        elif isinstance(item, dict):
            out.append(Msg.from_dict(item))
        elif isinstance(item, Msg):
            out.append(item)
        else:
            raise InvalidMessageError(f"a message is a string, a Msg or a message's JSON, not {type(item).__name__}")
    return out
