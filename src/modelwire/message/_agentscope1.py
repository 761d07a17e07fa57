"""AgentScope 1.x JSON (``Msg.to_dict()`` of ``agentscope==1.*``) read into modelwire's
messages and written back.

AgentScope 1.x keeps ``name``, ``role``, ``content`` (a string or a list of typed dicts:
``text``, ``thinking``, ``image``, ``audio``, ``video``, ``tool_use``, ``tool_result``),
``metadata``, ``id`` and a ``timestamp`` (local time, ``YYYY-MM-DD HH:MM:SS.mmm``); a tool's
result is a message of its own, of role ``system``. modelwire (AgentScope 2.x's form) keeps
a tool's result in the assistant message that holds its call, and has one data block for
every medium. What 1.x holds that the 2.x form has no field for (a string content, the role,
name, id and time of a tool-result message) travels under the ``"agentscope1"`` key of the
message's metadata (or of the result block's metadata), so that writing back gives the
message AgentScope 1.x stored; nothing else is added.

Pure data: no I/O, no import of AgentScope.
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterable, Mapping
from urllib.parse import quote, unquote

from ..errors import InvalidMessageError, RoleError, ValidationError
from .._record import extras_of
from ._blocks import (
    Base64Source,
    DataBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    URLSource,
    loose_base64,
    loose_media_type,
)
from ._msg import Msg
from ._types import check_role

__all__ = ["from_agentscope1", "from_agentscope1_history", "to_agentscope1", "to_agentscope1_memory", "KEY"]

KEY = "agentscope1"
"""The metadata key under which what only AgentScope 1.x holds is kept."""

MEDIA_KINDS = ("image", "audio", "video")
_ROLES = ("user", "assistant", "system")
_FIELDS = {"id", "name", "role", "content", "metadata", "timestamp", "invocation_id"}  # Msg.to_dict / from_dict
_STAMP_1X = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)?$")
_STAMP_ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?$")
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:\S+$")
# What a URL source's medium is where its path does not say (1.x names no media type there).
_EXTENSIONS = {
    "jpg": "image/jpeg",
    "jpeg": "image/jpeg",
    "png": "image/png",
    "gif": "image/gif",
    "webp": "image/webp",
    "mp3": "audio/mpeg",
    "wav": "audio/wav",
    "ogg": "audio/ogg",
    "flac": "audio/flac",
    "m4a": "audio/mp4",
    "mp4": "video/mp4",
    "webm": "video/webm",
    "mov": "video/quicktime",
}


def _refused(where: str, why: str) -> InvalidMessageError:
    return InvalidMessageError(f"AgentScope 1.x message {where}: {why}")


# -- reading ---------------------------------------------------------------------------


def from_agentscope1(data: Mapping[str, Any]) -> Msg:
    """One AgentScope 1.x message (its ``to_dict()`` JSON) as a modelwire message.

    Image, audio and video blocks become data blocks; a ``tool_use`` block a tool call whose
    ``input`` is its arguments as JSON; a message of tool results (role ``system`` in 1.x)
    an ``assistant`` message holding the results (modelwire's roles allow tool results
    there only): :func:`from_agentscope1_history` puts them beside their calls. The
    ``timestamp`` becomes ``created_at`` (both local time). A block modelwire cannot hold
    raises :class:`~modelwire.errors.InvalidMessageError` naming the message and the block;
    a block its role does not allow, :class:`~modelwire.errors.RoleError`."""
    if not isinstance(data, Mapping):
        raise InvalidMessageError(f"an AgentScope 1.x message is a JSON object, not {type(data).__name__}")
    where = f"{data.get('id', '?')!r}"
    for name in ("name", "role", "content"):
        if name not in data:
            raise _refused(where, f"it has no {name!r}")
    unknown = set(data) - _FIELDS
    if unknown:
        raise _refused(where, f"it holds fields AgentScope 1.x's Msg does not: {', '.join(sorted(map(str, unknown)))}")
    role, content = data["role"], data["content"]
    if role not in _ROLES:
        raise _refused(where, f"role {role!r:.40} is none of {', '.join(_ROLES)}")
    blocks, kept = _content(content, where)
    if role != "assistant" and blocks and all(b.type == "tool_result" for b in blocks):
        kept["role"] = role
        role = "assistant"
    elif role == "assistant":
        for block in blocks:
            if block.type == "tool_result":  # 1.x kept it in the assistant's message: written back there
                block.metadata[KEY] = {"inline": True}
    metadata = _metadata(data, kept, where)
    try:
        check_role(role, blocks)
    except RoleError as exc:
        raise RoleError(exc.role, exc.block_type, f"AgentScope 1.x message {where} {exc.where}") from None
    fields: dict[str, Any] = {"name": data["name"], "role": role, "content": blocks, "metadata": metadata}
    if data.get("id") is not None:
        fields["id"] = data["id"]
    stamp = data.get("timestamp")
    if isinstance(stamp, str):
        fields["created_at"] = stamp.replace(" ", "T", 1) if _STAMP_1X.match(stamp) else stamp
    try:
        return Msg(**fields)
    except ValidationError as exc:
        raise _refused(where, str(exc)) from None


def _content(content: Any, where: str) -> tuple[list[Any], dict[str, Any]]:
    if isinstance(content, str):
        return [TextBlock(text=content)], {"content": "str"}
    if isinstance(content, list):
        return [_block(b, f"{where} content[{i}]") for i, b in enumerate(content)], {}
    raise _refused(where, f"content is a string or a list of blocks, not {type(content).__name__}")


def _metadata(data: Mapping[str, Any], kept: dict[str, Any], where: str) -> dict[str, Any]:
    metadata = data.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise _refused(where, f"metadata is an object, not {type(metadata).__name__}")
    if data.get("invocation_id") is not None:
        kept["invocation_id"] = data["invocation_id"]
    return {**metadata, KEY: kept} if kept else dict(metadata)  # a copy: the caller's JSON stays as it was


def _block(block: Any, where: str) -> Any:
    if not isinstance(block, Mapping):
        raise _refused(where, f"a block is an object, not {type(block).__name__}")
    kind = block.get("type")
    reader = _READERS.get(kind)  # type: ignore[arg-type]
    if reader is None:
        raise _refused(where, f"block type {kind!r:.40} is none of AgentScope 1.x's ({', '.join(_READERS)})")
    try:
        return reader(dict(block), where)
    except KeyError as exc:
        raise _refused(where, f"the {kind} block has no {exc.args[0]!r}") from None
    except (ValidationError, TypeError, ValueError) as exc:
        raise _refused(where, f"not a valid {kind} block: {exc}") from None


def _text(block: dict[str, Any], where: str) -> TextBlock:
    del block["type"]
    return TextBlock(text=_string(block.pop("text"), "text"), **block)


def _thinking(block: dict[str, Any], where: str) -> ThinkingBlock:
    del block["type"]
    return ThinkingBlock(thinking=_string(block.pop("thinking"), "thinking"), **block)


def _string(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"its {name!r} is a string, not {type(value).__name__}")
    return value


def _media(block: dict[str, Any], where: str) -> DataBlock:
    kind = block.pop("type")
    source = block.pop("source")
    if not isinstance(source, Mapping):
        raise TypeError(f"its source is an object, not {type(source).__name__}")
    if source.get("type") == "base64":
        made: Any = Base64Source(
            data=_string(source["data"], "data"), media_type=_string(source["media_type"], "media_type")
        )
    elif source.get("type") == "url":
        made = URLSource(url=_url(_string(source["url"], "url")), media_type=_url_media_type(source["url"], kind))
    else:
        raise ValueError(f"its source type {source.get('type')!r:.40} is neither 'base64' nor 'url'")
    extra = {k: v for k, v in source.items() if k not in ("type", "data", "media_type", "url")}
    if extra:
        raise ValueError(f"its source holds fields modelwire has no place for: {', '.join(sorted(extra))}")
    kept = _as_given(kind, source, made)
    if kept:
        block[KEY] = kept
    return DataBlock(source=made, **block)


def _as_given(kind: str, source: Mapping[str, Any], made: Any) -> dict[str, Any]:
    """What modelwire made standard in a 1.x source (``image/jpg`` -> ``image/jpeg``, a
    ``data:`` prefix or line breaks in base64), and a medium its block type does not say,
    kept so that writing back gives the block as 1.x stored it."""
    kept: dict[str, Any] = {}
    if made.media_type.split("/", 1)[0] != kind:
        kept["type"] = kind
    if source["type"] == "base64":
        if made.media_type != source["media_type"]:
            kept["media_type"] = source["media_type"]
        data = source["data"]
        if made.data != data:
            if data.endswith(made.data):
                kept["data_prefix"] = data[: len(data) - len(made.data)]
            else:
                kept["data"] = data
    return kept


def _url(url: str) -> str:
    """A URL as modelwire holds it: 1.x also takes a local file's path here (its formatters
    open it, relative to the working directory), which becomes a ``file:`` URL, relative where
    the path is (modelwire reads it, when it sends it, from the working directory too)."""
    if _URL.match(url) and not re.match(r"^[A-Za-z]:[\\/]", url):
        return url
    if url.startswith("/"):
        from pathlib import PurePosixPath

        return PurePosixPath(url).as_uri()
    return "file:" + quote(url)


def _url_media_type(url: str, kind: str) -> str:
    path = url.split("?", 1)[0].split("#", 1)[0]
    extension = path.rsplit(".", 1)[-1].lower() if "." in path.rsplit("/", 1)[-1] else ""
    media_type = _EXTENSIONS.get(extension, "")
    return media_type if media_type.startswith(kind + "/") else f"{kind}/*"


def _tool_use(block: dict[str, Any], where: str) -> ToolCallBlock:
    del block["type"]
    arguments = block.pop("input")
    call_id, name = _string(block.pop("id"), "id"), _string(block.pop("name"), "name")
    return ToolCallBlock(id=call_id, name=name, input=json.dumps(arguments, ensure_ascii=False), **block)


def _tool_result(block: dict[str, Any], where: str) -> ToolResultBlock:
    output = block["output"]
    if isinstance(output, list):
        output = [_result_part(part, f"{where} output[{i}]") for i, part in enumerate(output)]
    elif not isinstance(output, str):
        raise TypeError(f"its output is a string or a list of blocks, not {type(output).__name__}")
    extra = {k for k in block if k not in ("type", "id", "name", "output")}
    if extra:
        raise ValueError(f"it holds fields modelwire has no place for: {', '.join(sorted(extra))}")
    return ToolResultBlock(
        id=_string(block["id"], "id"), name=_string(block["name"], "name"), output=output, state="success"
    )


def _result_part(part: Any, where: str) -> Any:
    block = _block(part, where)
    if block.type not in ("text", "data"):
        raise _refused(where, f"a tool's output holds text, image, audio and video blocks, not {block.type}")
    return block


_READERS: dict[str, Any] = {
    "text": _text,
    "thinking": _thinking,
    "image": _media,
    "audio": _media,
    "video": _media,
    "tool_use": _tool_use,
    "tool_result": _tool_result,
}


def from_agentscope1_history(items: Iterable[Any] | Mapping[str, Any]) -> list[Msg]:
    """A 1.x history as modelwire messages: a list of messages' JSON, in order, or a 1.x
    memory's ``state_dict()`` (``{"content": [[message, marks], ...]}``; a message's marks, such
    as ``"hint"``, are kept in ``metadata["agentscope1"]["marks"]`` for
    :func:`to_agentscope1_memory`). Each message is read as
    :func:`from_agentscope1` reads it, and a message of tool results put into the assistant
    message before it that holds their calls (as AgentScope 2.x and modelwire keep them), the
    calls then ``finished``. A result whose call no earlier message holds stays a message of
    its own. The result message's own name, role, id, time and metadata are kept on each
    result (``metadata["agentscope1"]``), so :func:`to_agentscope1` gives the history back."""
    if isinstance(items, Mapping):
        items = items.get("content", ())  # a memory's state_dict()
    out: list[Msg] = []
    calls: dict[str, tuple[Msg, ToolCallBlock]] = {}
    for item in items:
        msg = _marked(item)
        if msg.role == "assistant" and (msg.metadata.get(KEY) or {}).get("role"):
            owner = _owner(msg, calls)
            if owner is not None:
                _merge(owner, msg, calls)
                continue
        out.append(msg)
        for block in msg.content:
            if block.type == "tool_call":
                calls[block.id] = (msg, block)
    return out


def _marked(item: Any) -> Msg:
    """A memory's item: a message's JSON, or (1.0.21's memories) ``[message, marks]``."""
    if isinstance(item, Mapping):
        return from_agentscope1(item)
    if isinstance(item, (list, tuple)) and len(item) == 2 and isinstance(item[0], Mapping):
        data, marks = item
        msg = from_agentscope1(data)
        if marks:
            msg.metadata = {**msg.metadata, KEY: {**msg.metadata.get(KEY, {}), "marks": list(marks)}}
        return msg
    raise InvalidMessageError(f"a 1.x memory holds messages or [message, marks] pairs, not {type(item).__name__}")


def _owner(results: Msg, calls: dict[str, tuple[Msg, ToolCallBlock]]) -> Msg | None:
    owners = {id(calls[b.id][0]): calls[b.id][0] for b in results.content if b.id in calls}
    if len(owners) != 1 or any(b.id not in calls for b in results.content):
        return None
    return next(iter(owners.values()))


def _merge(owner: Msg, results: Msg, calls: dict[str, tuple[Msg, ToolCallBlock]]) -> None:
    own = dict(results.metadata)
    kept = dict(own.pop(KEY))
    origin = {"id": results.id, "name": results.name, "created_at": results.created_at, **kept}
    if own:
        origin["metadata"] = own
    for block in results.content:
        if isinstance(block, ToolResultBlock):  # all of them: _owner found a call for each
            block.metadata[KEY] = origin
            calls[block.id][1].state = "finished"
    owner.content.extend(results.content)


# -- writing ---------------------------------------------------------------------------


def to_agentscope1(messages: Msg | Iterable[Msg]) -> list[dict[str, Any]]:
    """Messages (one, or a history) as AgentScope 1.x JSON, in order, which 1.x's
    ``Msg.from_dict`` reads. A message that holds tool results becomes the messages 1.x
    keeps: the assistant's, and after its calls one ``system`` message per result (or the
    message a result was read from, see :func:`from_agentscope1_history`). What 1.x cannot
    hold raises :class:`~modelwire.errors.InvalidMessageError` naming the message and the
    block: a hint block, or data that is not an image, audio or video. Fields 1.x has no
    place for are not written: block ids and times, a tool result's state and metadata."""
    items = [messages] if isinstance(messages, Msg) else list(messages)
    out: list[dict[str, Any]] = []
    for msg in items:
        if not isinstance(msg, Msg):
            raise InvalidMessageError(f"to_agentscope1 writes modelwire messages, not {type(msg).__name__}")
        out.extend(message for message, _ in _write(msg))
    return out


def to_agentscope1_memory(messages: Iterable[Msg]) -> dict[str, Any]:
    """Messages as the ``state_dict()`` of an AgentScope 1.x memory (``InMemoryMemory``'s
    ``load_state_dict`` reads it): :func:`to_agentscope1`'s messages, each with the marks it
    was read with (none for a message made in modelwire)."""
    content: list[list[Any]] = []
    for msg in messages:
        if not isinstance(msg, Msg):
            raise InvalidMessageError(f"to_agentscope1_memory writes modelwire messages, not {type(msg).__name__}")
        content.extend([message, marks] for message, marks in _write(msg))
    return {"content": content}


def _write(msg: Msg) -> list[tuple[dict[str, Any], list[Any]]]:
    metadata = dict(msg.metadata)
    kept = metadata.pop(KEY, None) or {}
    head = {"id": msg.id, "name": msg.name, "role": kept.get("role", msg.role)}
    parts: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
    current: list[dict[str, Any]] | None = None
    for i, block in enumerate(msg.content):
        where = f"{msg.id!r} content[{i}]"
        if block.type == "tool_result" and not kept.get("role") and not block.metadata.get(KEY, {}).get("inline"):
            origin = block.metadata.get(KEY)
            written = _written(block, where)
            if parts and parts[-1][0].get("origin") is not None and parts[-1][0]["origin"] == origin:
                parts[-1][1].append(written)
            else:
                parts.append(({"result": block, "origin": origin}, [written]))
            current = None
            continue
        if current is None:
            current = []
            parts.append(({}, current))
        current.append(_written(block, where))
    if not parts:
        parts.append(({}, []))
    first = next((n for n, (info, _) in enumerate(parts) if "result" not in info), None)
    return [
        (
            _message(msg, head, kept, metadata, "" if n == first else f"-{n}", info, blocks),
            list((info["origin"] or {}).get("marks", ()) if "result" in info else kept.get("marks", ())),
        )
        for n, (info, blocks) in enumerate(parts)
    ]


def _message(
    msg: Msg,
    head: dict[str, Any],
    kept: dict[str, Any],
    metadata: dict[str, Any],
    suffix: str,
    info: dict[str, Any],
    blocks: list[dict[str, Any]],
) -> dict[str, Any]:
    if "result" in info:
        return _result_message(msg, suffix, info["origin"] or {}, blocks)
    content: Any = blocks
    if kept.get("content") == "str" and len(blocks) == 1 and set(blocks[0]) == {"type", "text"}:
        content = blocks[0]["text"]
    out = {
        **head,
        "id": msg.id + suffix,
        "content": content,
        "metadata": metadata,
        "timestamp": _stamp(msg.created_at),
    }
    if kept.get("invocation_id") is not None:
        out["invocation_id"] = kept["invocation_id"]
    return out


def _result_message(msg: Msg, suffix: str, origin: dict[str, Any], blocks: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": origin.get("id", msg.id + suffix),
        "name": origin.get("name", "system"),
        "role": origin.get("role", "system"),
        "content": blocks,
        "metadata": origin.get("metadata", {}),
        "timestamp": _stamp(origin.get("created_at", msg.created_at)),
    }


def _stamp(created_at: str) -> str:
    return created_at.replace("T", " ", 1) if _STAMP_ISO.match(created_at) else created_at


def _written(block: Any, where: str) -> dict[str, Any]:
    kind = block.type
    if kind == "text":
        return {"type": "text", "text": block.text, **_extras(block)}
    if kind == "thinking":
        return {"type": "thinking", "thinking": block.thinking, **_extras(block)}
    if kind == "data":
        return _media_written(block, where)
    if kind == "tool_call":
        return _call_written(block)
    if kind == "tool_result":
        return _result_written(block, where)
    raise _refused(where, f"AgentScope 1.x has no {kind} block (modelwire sends a hint as the user's text)")


def _extras(block: Any) -> dict[str, Any]:
    return dict(extras_of(block))


def _media_written(block: DataBlock, where: str) -> dict[str, Any]:
    extras = _extras(block)
    source = block.source
    given = extras.pop(KEY, None) or {}
    kind = given.get("type") or source.media_type.split("/", 1)[0]
    if kind not in MEDIA_KINDS:
        raise _refused(
            where, f"AgentScope 1.x holds images, audio and video, not {source.media_type!r} (it has no file block)"
        )
    if block.name is not None:
        extras["name"] = block.name
    if source.type == "base64":
        written: dict[str, Any] = {"type": "base64", **_source_as_given(source, given)}
    elif source.url.startswith("file:"):  # a local file: 1.x names it by its path
        path = source.url[len("file://") :] if source.url.startswith("file://") else source.url[len("file:") :]
        written = {"type": "url", "url": unquote(path)}
    else:
        written = {"type": "url", "url": source.url}
    return {"type": kind, "source": written, **extras}


def _source_as_given(source: Base64Source, given: dict[str, Any]) -> dict[str, str]:
    """The media type and data as 1.x stored them, where the block still holds what they
    stand for (a block changed since it was read is written as it now is)."""
    media_type, data = source.media_type, source.data
    if "media_type" in given and loose_media_type(given["media_type"]) == media_type:
        media_type = given["media_type"]
    if "data" in given and loose_base64(given["data"]) == data:
        data = given["data"]
    elif "data_prefix" in given and loose_base64(given["data_prefix"] + data) == data:
        data = given["data_prefix"] + data
    return {"media_type": media_type, "data": data}


def _call_written(block: ToolCallBlock) -> dict[str, Any]:
    extras = _extras(block)
    try:
        arguments = json.loads(block.input) if block.input else {}
    except ValueError:
        # 1.x's own models keep arguments they cannot parse as an empty input and the raw text
        arguments = {}
        extras.setdefault("raw_input", block.input)
    return {"type": "tool_use", "id": block.id, "name": block.name, "input": arguments, **extras}


def _result_written(block: ToolResultBlock, where: str) -> dict[str, Any]:
    output: Any = block.output
    if not isinstance(output, str):
        output = [_written(part, f"{where} output[{i}]") for i, part in enumerate(output)]
    return {"type": "tool_result", "id": block.id, "name": block.name, "output": output}
