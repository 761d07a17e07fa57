"""What every formatter shares: tool specs and tool choice, server tools, the guard that makes
what a conversation breaks a :class:`FormatError`; and, from the modules beside this one, the
turn splitter (``_turns``), what a formatter reads of a block (``_blocks``) and the provenance
rules (``_replay``), all importable from here."""

from __future__ import annotations

import contextlib
import re
from typing import Any, Iterable, Iterator, Sequence

from msgspec.json import decode as from_json

from ..errors import FormatError, debug_enabled
from ..message import Msg, Origin, ToolCallBlock, origin, provenance
from ._blocks import (
    BadDataError,
    data_parts,
    data_uri,
    extra,
    file_ref,
    held_file,
    is_raw_provider_block,
    located,
    result_blocks,
    sent_source,
)
from ._replay import (
    COMPACTION_PREAMBLE,
    compaction_stand_in,
    CompactionCut,
    origin_replays,
    raw_provider_block,
    replays_natively,
    ReplayScope,
)
from ._turns import (
    EFFORT_KEY,
    EffortChange,
    merge_turn,
    Segment,
    SegmentKind,
    segments,
    Walk,
)
from ._spec import ToolSpec

__all__ = [
    "ServerTool",
    "EffortChange",
    "EFFORT_KEY",
    "split_server_tools",
    "refuse_server_tool",
    "raw_server_tools",
    "guarded",
    "provenance",
    "ToolSpec",
    "Segment",
    "segments",
    "tool_specs",
    "extra",
    "tool_choice_name",
    "parse_arguments",
    "data_parts",
    "sent_source",
    "FormatError",
    "Origin",
    "origin",
    "replays_natively",
    "origin_replays",
    "compaction_stand_in",
    "COMPACTION_PREAMBLE",
    "CompactionCut",
    "merge_turn",
    "BadDataError",
    "located",
    "held_file",
    "file_ref",
    "data_uri",
    "is_raw_provider_block",
    "result_blocks",
    "ReplayScope",
    "raw_provider_block",
    "SegmentKind",
    "Walk",
]


class ServerTool:
    """A tool the provider runs itself, declared beside the function tools, in one vocabulary:
    ``ServerTool("web_search", max_uses=3)``, ``ServerTool("code_execution")``,
    ``ServerTool("web_fetch")``. Each protocol maps it onto its own tool (Anthropic's
    ``web_search_20250305``, the Responses ``web_search`` tool, Gemini's ``googleSearch``
    ...) or refuses it, naming it; ``ServerTool(raw={...})`` sends a provider's own
    definition as given. ``ServerTool("mcp", url=..., name=...)`` (or
    ``MCPServer.http(url).via_provider()``) is a remote MCP server the provider calls
    itself. Their calls and results stream as provider blocks, as before."""

    __slots__ = ("kind", "config", "raw")

    def __init__(self, kind: str = "", *, raw: dict[str, Any] | None = None, **config: Any) -> None:
        if not kind and raw is None:
            raise ValueError(
                "a ServerTool needs a kind (web_search, code_execution, web_fetch) or the provider's raw definition"
            )
        self.kind: str = kind or "raw"
        self.config: dict[str, Any] = config
        self.raw: dict[str, Any] | None = raw

    def __repr__(self) -> str:
        raw = ", raw" if self.raw is not None else ""
        config = "".join(f", {k}={v!r}" for k, v in self.config.items())
        return f"ServerTool({self.kind!r}{raw}{config})"


def split_server_tools(tools: Iterable[Any] | None) -> tuple[list["ServerTool"], list[Any]]:
    """The server tools of a tool list, and the rest (function tools)."""
    server: list[ServerTool] = []
    rest: list[Any] = []
    for tool in tools or ():
        (server if isinstance(tool, ServerTool) else rest).append(tool)
    return server, rest


def refuse_server_tool(tool: "ServerTool", protocol: str, hint: str = "") -> FormatError:
    """The ``FormatError`` for a server tool ``protocol`` has no form of (an MCP server gets the way round)."""
    if tool.kind == "mcp":  # the agent can always be the MCP client itself
        hint = (hint + "; " if hint else "") + "an MCP server can be run from the agent instead: MCPServer.http(url)"
    return FormatError(
        None,
        f"{protocol} runs no server tool {tool.kind!r}" + (f"; {hint}" if hint else ""),
        protocol,
        code="unsupported-option",
    )


def raw_server_tools(tools: Iterable[Any] | None, protocol: str, hint: str) -> tuple[list[dict[str, Any]], list[Any]]:
    """For a protocol with no server tools of its own: the raw definitions given (sent as
    they are) and the function tools; a ServerTool by kind is refused with ``hint``."""
    server, rest = split_server_tools(tools)
    for tool in server:
        if tool.raw is None:
            raise refuse_server_tool(tool, protocol, hint)
    return [dict(t.raw) for t in server if t.raw is not None], rest


def guarded(format: Any) -> Any:
    """Formatters raise only :class:`FormatError`: anything else a conversation makes one
    raise (a wrong-typed extra, say) becomes one, naming what broke; with
    ``MODELWIRE_DEBUG=1`` it surfaces as itself, since it may be a bug here. Before
    formatting, tool-call ids and tool names go through the formatter's
    ``tool_id_rules`` / ``tool_name_rules`` (None: taken as they are)."""
    import functools

    @functools.wraps(format)
    def run(self: Any, messages: Sequence[Msg], tools: Any = None, tool_choice: Any = None) -> dict[str, Any]:
        with format_errors(getattr(self, "protocol", ""), messages):
            ids, names = getattr(self, "tool_id_rules", None), getattr(self, "tool_name_rules", None)
            if ids is not None or names is not None:
                # Ids and names the target refuses, rewritten (see _toolids).
                from ._toolids import conform

                messages, tools, tool_choice = conform(messages, tools, tool_choice, ids, names)
            return format(self, messages, tools, tool_choice)  # type: ignore[no-any-return]

    return run


# What a conversation makes a formatter raise besides FormatError (a wrong-typed extra, say):
# format_errors turns these into FormatError.
REFUSED = (TypeError, ValueError, KeyError, AttributeError, IndexError)


@contextlib.contextmanager
def format_errors(protocol: str, messages: Sequence[Msg] | None = None) -> Iterator[None]:
    """Inside, what a conversation makes a formatter raise is a :class:`FormatError` (see
    :func:`guarded`); one that names only a block names its message too (in ``messages``)."""
    try:
        yield
    except BadDataError as exc:
        raise (located(exc, messages, protocol) if messages is not None else exc) from None
    except FormatError:
        raise
    except REFUSED as exc:
        if debug_enabled():
            raise
        raise FormatError(None, f"cannot format this conversation ({type(exc).__name__}: {exc})", protocol) from exc


def tool_specs(tools: Iterable[Any] | None) -> list[ToolSpec]:
    """Every tool given (a function, a ``Tool``, a dict in any provider's shape) as a ``ToolSpec``; two of one name are
    refused."""
    specs = [ToolSpec.coerce(t) for t in tools or ()]
    names = [s.name for s in specs]
    if len(set(names)) < len(names):  # one pass; the repeated ones counted only when there are some
        from collections import Counter

        dupes = sorted(n for n, k in Counter(names).items() if k > 1)
        raise FormatError(None, f"tool names must be unique; repeated: {dupes}")
    return specs


def tool_choice_name(choice: Any, specs: Sequence[ToolSpec]) -> tuple[str | None, str | None]:
    """Normalize a tool choice to (mode, tool name): mode is auto | none | required | tool."""
    if choice is None:
        return None, None
    if isinstance(choice, dict):
        name = choice.get("name") or (choice.get("function") or {}).get("name")
        if not name:
            raise FormatError(None, f"tool_choice {choice!r} names no tool")
        choice = name
    elif choice in ("auto", "none", "required", "any"):
        return ("required" if choice == "any" else choice), None
    if choice not in {s.name for s in specs}:
        raise FormatError(None, f"tool_choice names {choice!r}, which is not among the tools given")
    return "tool", choice


def parse_arguments(call: ToolCallBlock) -> dict[str, Any]:
    """The arguments of a call as a dict. Arguments cut off mid-JSON (a call truncated by
    max_tokens) give their longest valid prefix; an empty string gives ``{}``."""
    text = call.input
    if not text or text.isspace():
        return {}
    try:
        value = from_json(text)
    except (ValueError, RecursionError):
        from pydantic_core import from_json as partial  # reads the longest valid prefix

        try:
            value = partial(text.strip(), allow_partial=True)
        except ValueError:
            value = {}
    return value if isinstance(value, dict) else {"value": value}


_NAME_RE = re.compile(r"[^a-zA-Z0-9_-]+")


def sanitize_name(name: str) -> str:
    """A speaker name as OpenAI accepts it (``^[a-zA-Z0-9_-]{1,64}$``)."""
    clean = _NAME_RE.sub("_", name).strip("_")[:64]
    return clean or "user"
