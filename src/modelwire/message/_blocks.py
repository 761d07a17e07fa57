"""Content blocks: the typed pieces a message is made of.

Field names, ``type`` strings and enum values follow AgentScope 2.x, so the JSON of a
block loads unchanged on either side. The blocks a model produces (text, thinking,
data, tool call) accept provider extras as additional fields (for example a thinking
block's Anthropic ``signature``); those travel in the JSON and in the END events.
"""

from __future__ import annotations

import binascii
import re
from typing import Any, Literal, TypeAlias, Union

from .._ids import new_id, now_iso
from .._record import PlainStrEnum, Record, field
from ..errors import ValidationError

_oset = object.__setattr__

# How many times a field of a block or a source was assigned after it was made (the fold's
# own writes, into the message it streams, count on the message instead). A request build
# that reuses what it made for an earlier turn starts again when this moved
# (see modelwire.formatters._incremental): assigning to a block already sent is rare.
EDITS = [0]


class _Watched:
    """Counts assignments to a record's fields in :data:`EDITS`."""

    __slots__ = ()

    def __setattr__(self, name: str, value: Any) -> None:
        _oset(self, name, value)
        EDITS[0] += 1


__all__ = [
    "TextBlock",
    "ThinkingBlock",
    "DataBlock",
    "HintBlock",
    "ToolCallBlock",
    "ToolResultBlock",
    "Base64Source",
    "URLSource",
    "ToolCallState",
    "ToolResultState",
    "PermissionRule",
    "ContentBlock",
    "ContentBlockTypes",
    "BLOCK_TYPES",
    "validate_base64",
    "loose_base64",
    "loose_media_type",
    "data_problem",
    "validate_media_type",
    "normalize_base64",
    "normalize_media_type",
]

# RFC 6838 type/subtype, optional parameters after ';'.
_MEDIA_TYPE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}(\s*;.*)?$")
_URL_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:\S+$")


def validate_media_type(value: str) -> str:
    """Return ``value`` if it is a ``type/subtype`` media type, else raise ``ValueError``."""
    if not _MEDIA_TYPE_RE.match(value):
        raise ValueError(f"{value!r} is not a media type of the form 'type/subtype'")
    return value


def validate_base64(value: str) -> str:
    """Return ``value`` if it is standard, padded base64 (empty allowed), else raise ``ValueError``."""
    if value:
        if len(value) % 4:
            raise ValueError(f"data is not valid padded base64: its length {len(value)} is not a multiple of 4")
        try:
            binascii.a2b_base64(value, strict_mode=True)
        except (binascii.Error, ValueError) as exc:
            raise ValueError(f"data is not valid padded base64: {exc}") from None
    return value


# Media types as people and other libraries write them (AgentScope takes any string).
_MEDIA_ALIASES = {
    "jpg": "image/jpeg",
    "jpeg": "image/jpeg",
    "image/jpg": "image/jpeg",
    "png": "image/png",
    "gif": "image/gif",
    "webp": "image/webp",
    "pdf": "application/pdf",
    "txt": "text/plain",
    "text": "text/plain",
    "md": "text/markdown",
    "markdown": "text/markdown",
    "html": "text/html",
    "csv": "text/csv",
    "json": "application/json",
    "mp3": "audio/mpeg",
    "audio/mp3": "audio/mpeg",
    "wav": "audio/wav",
    "mp4": "video/mp4",
}
_NOT_BASE64 = re.compile(r"[^A-Za-z0-9+/=]")


def normalize_media_type(value: str) -> str:
    """A media type in its canonical form (``jpg``, ``PNG``, ``image/jpg`` -> ``image/jpeg``,
    ``image/png``); raises ``ValueError`` naming the value when it is none."""
    stripped = value.strip()
    alias = _MEDIA_ALIASES.get(stripped.lower().lstrip("."))
    if alias is not None:
        return alias
    return validate_media_type(stripped)


def normalize_base64(value: str) -> str:
    """Base64 as written in the wild -> standard padded base64: line breaks and spaces
    (MIME), a ``data:...;base64,`` prefix, the URL-safe alphabet, missing padding."""
    if value.startswith("data:"):
        head, comma, rest = value.partition(",")
        if not comma or not head.endswith(";base64"):
            raise ValueError(
                "a data: URI as base64 data must be ';base64,'-encoded; use a URL source for other data: URIs"
            )
        value = rest
    value = "".join(value.split())
    if "-" in value or "_" in value:
        value = value.replace("-", "+").replace("_", "/")
    bad = _NOT_BASE64.search(value)
    if bad:
        raise ValueError(f"data is not base64: character {bad.group()!r} at position {bad.start()}")
    value = value.rstrip("=")
    if len(value) % 4 == 1:
        raise ValueError(f"data is not base64: {len(value)} characters cannot encode whole bytes")
    return validate_base64(value + "=" * (-len(value) % 4))


def loose_base64(value: str) -> str:
    """Base64 as :func:`normalize_base64` makes it standard, or, where it cannot (AgentScope
    takes any string here), ``value`` as given: refused only where it would be sent."""
    try:
        return validate_base64(value)
    except ValueError:
        pass
    try:
        return normalize_base64(value)
    except ValueError:
        return value


def loose_media_type(value: str) -> str:
    """A media type as :func:`normalize_media_type` makes it canonical, or ``value`` as given."""
    try:
        return normalize_media_type(value)
    except ValueError:
        return value


def data_problem(data: str | None, media_type: str | None) -> str | None:
    """What a provider would refuse in inline data: base64 that is not, or a media type that is
    none (both kept as given when built, as AgentScope keeps them); None when both are sound."""
    if data is not None:
        try:
            validate_base64(data)
        except ValueError as exc:
            try:
                normalize_base64(data)  # its words say where the data goes wrong
            except ValueError as why:
                return str(why)
            return str(exc)
    if media_type is not None:
        try:
            validate_media_type(media_type)
        except ValueError as exc:
            return str(exc)
    return None


class Base64Source(_Watched, Record):
    """Inline data, base64 encoded. Data and media type are normalised on the way in
    (see :func:`normalize_base64`, :func:`normalize_media_type`), so what AgentScope and
    other tools write loads, and what is kept is standard where it can be made so. Like
    AgentScope, any string is taken: data that is not base64 (or a media type that is none)
    is refused where it would be sent, naming the message and the block."""

    type: Literal["base64"] = "base64"
    data: str
    media_type: str

    def __post_init__(self) -> None:
        _oset(self, "data", loose_base64(self.data))
        _oset(self, "media_type", loose_media_type(self.media_type))


class URLSource(_Watched, Record):
    """Data found at a URL (``https:``, ``file:``, ``data:``, ...). The string is kept as given."""

    type: Literal["url"] = "url"
    url: str
    media_type: str

    def __post_init__(self) -> None:
        if not _URL_RE.match(self.url):
            raise ValidationError(
                None,
                [
                    {
                        "loc": ("url",),
                        "msg": f"{self.url[:80]!r} is not an absolute URL (it needs a scheme such as https:)",
                        "type": "value_error",
                    }
                ],
            )
        _oset(self, "media_type", loose_media_type(self.media_type))


def _located(name: str, check: Any, value: str) -> str:
    try:
        return check(value)  # type: ignore[no-any-return]
    except ValueError as exc:
        raise ValidationError(None, [{"loc": (name,), "msg": str(exc), "type": "value_error"}]) from None


Source: TypeAlias = Union[Base64Source, URLSource]


class TextBlock(_Watched, Record, extra=True):
    """Plain text. Provider extras (citations, a refusal flag) are kept as extra fields."""

    type: Literal["text"] = "text"
    text: str
    id: str = field(default_factory=new_id)
    created_at: str = field(default_factory=now_iso)
    finished_at: str | None = None


class ThinkingBlock(_Watched, Record, extra=True):
    """Model reasoning.

    Provider extras needed to send the thinking back are extra fields, with the names
    AgentScope uses: ``signature`` and ``redacted_thinking_data`` (Anthropic),
    ``reasoning_item_id`` / ``reasoning_item_raw`` (OpenAI Responses).
    """

    type: Literal["thinking"] = "thinking"
    thinking: str
    id: str = field(default_factory=new_id)
    created_at: str = field(default_factory=now_iso)
    finished_at: str | None = None


class DataBlock(_Watched, Record, extra=True):
    """Binary content (image, audio, video, PDF ...) given inline or by URL."""

    type: Literal["data"] = "data"
    id: str = field(default_factory=new_id)
    source: Source
    name: str | None = None
    created_at: str = field(default_factory=now_iso)
    finished_at: str | None = None


class HintBlock(_Watched, Record):
    """An out-of-band instruction injected into the loop; sent to a model as user content."""

    type: Literal["hint"] = "hint"
    hint: str | list[Union[TextBlock, DataBlock]]
    id: str = field(default_factory=new_id)
    source: str | None = None
    created_at: str = field(default_factory=now_iso)
    finished_at: str | None = field(default_factory=now_iso)


class ToolCallState(PlainStrEnum):
    """pending -> asking -> allowed | finished; pending -> allowed -> finished | submitted -> finished."""

    PENDING = "pending"
    ASKING = "asking"
    ALLOWED = "allowed"
    SUBMITTED = "submitted"
    FINISHED = "finished"


class ToolResultState(PlainStrEnum):
    """A tool result's state: running while it streams, then success, error, interrupted or denied."""

    SUCCESS = "success"
    ERROR = "error"
    INTERRUPTED = "interrupted"
    DENIED = "denied"
    RUNNING = "running"


ToolCallStateValue = Literal["pending", "asking", "allowed", "submitted", "finished"]
ToolResultStateValue = Literal["success", "error", "interrupted", "denied", "running"]


class PermissionRule(_Watched, Record):
    """A permission rule suggested to the user when a call asks for confirmation."""

    tool_name: str
    rule_content: str | None
    behavior: Literal["allow", "deny", "ask", "passthrough"]
    source: str


class ToolCallBlock(_Watched, Record, extra=True):
    """A call of a tool by the model. ``input`` is the raw JSON string of the arguments."""

    type: Literal["tool_call"] = "tool_call"
    id: str
    name: str
    input: str
    state: ToolCallState | ToolCallStateValue = ToolCallState.PENDING
    suggested_rules: list[PermissionRule] = field(default_factory=list)
    created_at: str = field(default_factory=now_iso)
    finished_at: str | None = None


class ToolResultBlock(_Watched, Record):
    """The result of a tool call; ``id`` equals the call's id."""

    type: Literal["tool_result"] = "tool_result"
    id: str
    name: str
    output: str | list[Union[TextBlock, DataBlock]]
    state: ToolResultState | ToolResultStateValue = ToolResultState.RUNNING
    metadata: dict[str, Any] = field(default_factory=dict)
    created_at: str = field(default_factory=now_iso)
    finished_at: str | None = None


ContentBlock: TypeAlias = Union[TextBlock, ThinkingBlock, HintBlock, ToolCallBlock, ToolResultBlock, DataBlock]

ContentBlockTypes: TypeAlias = Literal["text", "thinking", "hint", "tool_call", "tool_result", "data"]

BLOCK_TYPES: dict[str, type[Record]] = {
    "text": TextBlock,
    "thinking": ThinkingBlock,
    "hint": HintBlock,
    "tool_call": ToolCallBlock,
    "tool_result": ToolResultBlock,
    "data": DataBlock,
}
