"""What a formatter reads of a block: its provider extras, a data block's source (checked
where it would be sent), an uploaded file it refers to, a tool result's output."""

from __future__ import annotations

from typing import Any, Sequence

from ..errors import FormatError
from ..message import DataBlock, Msg, ToolResultBlock, origin
from ..message._blocks import data_problem


def extra(block: Any, key: str, default: Any = None) -> Any:
    """A provider extra of a block (see the adapters), or ``default``. Cheaper than
    ``getattr``, which goes through pydantic's ``__getattr__`` and an exception when the
    extra is absent."""
    try:
        return block.__dict__.get(key, default)  # extras_of(), inlined: formatters ask per block
    except AttributeError:
        return default


# -- data blocks -----------------------------------------------------------------------------


def data_parts(block: DataBlock) -> tuple[str, str, str]:
    """(kind, payload, media_type): kind is base64 (payload = data) or url (payload = url).
    Data that is not base64, or a media type that is none (taken when built, as AgentScope
    takes them), is refused here, where it would be sent: a ``FormatError`` naming the block
    (and, through :func:`guarded`, its message)."""
    src = block.source
    problem = data_problem(src.data if src.type == "base64" else None, src.media_type)
    if problem is not None:
        raise BadDataError(block.id, problem)
    if src.type == "base64":
        return "base64", src.data, src.media_type
    return "url", src.url, src.media_type


def sent_source(
    block: DataBlock, index: int, protocol: str, urls: tuple[str, ...] = ("http://", "https://", "data:")
) -> tuple[str, str, str]:
    """:func:`data_parts` for a formatter whose provider is sent a URL source only when it
    starts with one of ``urls`` (what the provider fetches or reads itself): any other URL is
    refused here, in one message for every protocol, saying what to do."""
    kind, payload, media_type = data_parts(block)
    if kind == "url" and not payload.startswith(urls):
        scheme = payload.split(":", 1)[0]
        takes = f" or a URL starting {' '.join(urls)}" if urls else ""
        raise FormatError(
            index,
            f"{protocol} cannot be sent {scheme}: sources; give the bytes (base64){takes} (the models layer "
            "fetches http and https sources the provider does not)",
            protocol,
            code="unsupported-media",
        )
    return kind, payload, media_type


class BadDataError(FormatError):
    """Inline data a provider would refuse; ``block_id`` names the block."""

    def __init__(self, block_id: str, problem: str, index: int | None = None, protocol: str = "") -> None:
        self.block_id, self.problem = block_id, problem
        super().__init__(
            index,
            f"data block {block_id!r}: {problem}; fix it, or send the data as a URL source",
            protocol,
            code="bad-data",
        )


def located(exc: FormatError, messages: Sequence[Msg], protocol: str) -> FormatError:
    """``exc`` naming the message that holds its block, where it named only the block."""
    if not isinstance(exc, BadDataError) or exc.index is not None:
        return exc
    for index, msg in enumerate(messages):
        if any(getattr(b, "id", None) == exc.block_id for b in msg.content):
            return BadDataError(exc.block_id, exc.problem, index, protocol or exc.protocol)
    return exc


def held_file(block: DataBlock, endpoint: str | None, files_api: str | None) -> str | None:
    """The id of the uploaded file (``model.upload_file``) a data block refers to, where
    ``endpoint`` holds it in ``files_api`` (the protocol's Files API: OpenAI's Chat and
    Responses share one); None for any other block, and for a file held elsewhere."""
    fields = block.__dict__
    file_id = fields.get("file_id") if fields else None
    if not isinstance(file_id, str) or not file_id or files_api is None or fields.get("file_api") != files_api:
        return None
    holder = origin(block)
    return file_id if holder is not None and holder.endpoint is not None and holder.endpoint == endpoint else None


def file_ref(block: DataBlock, endpoint: str | None, files_api: str | None, index: int, protocol: str) -> str | None:
    """The id of the uploaded file a data block refers to (``model.upload_file``), to send by
    reference where ``endpoint`` holds it in its ``files_api`` (the protocol's Files API:
    OpenAI's Chat and Responses share one); None for a block that is no file reference. A
    file held elsewhere (its bytes were not sent instead: the block keeps no local copy) is
    a ``FormatError`` (code ``file-elsewhere``) saying what to do."""
    fields = block.__dict__
    file_id = fields.get("file_id") if fields else None
    if not isinstance(file_id, str) or not file_id:
        return None
    if held_file(block, endpoint, files_api) is not None:
        return file_id
    holder = origin(block)
    held_by = holder.endpoint if holder is not None else None
    holder_name = (holder.provider or holder.protocol) if holder is not None else "another provider"
    where = f" at {endpoint}" if endpoint else ""
    raise FormatError(
        index,
        f"data block {block.id!r} is the file {file_id} held by {holder_name} "
        f"({held_by or 'its endpoint'}), which {protocol}{where} cannot read;"
        " upload it there too (model.upload_file), or upload it from a path, whose bytes are "
        "then sent where the file is not held",
        protocol,
        code="file-elsewhere",
    )


def data_uri(block: DataBlock) -> str:
    """A data block as a URL: its own for a URL source, else a ``data:`` URI of its base64."""
    kind, payload, media_type = data_parts(block)
    return payload if kind == "url" else f"data:{media_type.split(';')[0]};base64,{payload}"


def is_raw_provider_block(block: Any) -> bool:
    """Whether a data block holds a provider's own item kept as it came (not media to send)."""
    return block.type == "data" and extra(block, "provider_block_type") is not None


class _Text:
    """A plain-string tool output as a text piece: what formatters read of a TextBlock
    (``type``, ``text``), without building and validating one per result."""

    __slots__ = ("text",)
    type = "text"

    def __init__(self, text: str) -> None:
        self.text = text


def result_blocks(result: ToolResultBlock) -> list[Any]:
    """A tool result's output as blocks (a plain string becomes one text piece)."""
    output = result.output
    if isinstance(output, str):
        return [_Text(output)] if output else []
    return list(output)
