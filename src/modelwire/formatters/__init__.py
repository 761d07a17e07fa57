"""Messages -> provider request payloads: the shared kit every protocol's formatter uses.

    from modelwire.protocols import get_formatter

    payload = get_formatter("anthropic")(cache_system=True).format(messages, tools, tool_choice="auto")

Each formatter lives with its wire protocol (``modelwire.protocols.<name>.formatter``) and
returns a plain dict (no ``model`` and no sampling options: the models layer adds those).
A conversation a provider cannot take raises :class:`~modelwire.errors.FormatError`,
naming the message index and the rule. This package holds what formatters share: tool
specs, tool choice, the turn splitter, data sources, and the provenance rules that decide
which provider-specific blocks may be replayed where.
"""

from __future__ import annotations

from ._base import Formatter, MessagesFormatter
from ._common import (
    ServerTool,
    raw_server_tools,
    refuse_server_tool,
    split_server_tools,
    ReplayScope,
    Segment,
    SegmentKind,
    ToolSpec,
    data_parts,
    data_uri,
    file_ref,
    extra,
    format_errors,
    guarded,
    is_raw_provider_block,
    merge_turn,
    origin_replays,
    compaction_stand_in,
    COMPACTION_PREAMBLE,
    parse_arguments,
    raw_provider_block,
    replays_natively,
    result_blocks,
    sanitize_name,
    segments,
    sent_source,
    tool_choice_name,
    tool_specs,
    Walk,
)
from ._incremental import Draft, Turns
from ._spec import function_tool, sent_undeferred

__all__ = [
    "Formatter",
    "MessagesFormatter",
    "function_tool",
    "sent_undeferred",
    "Draft",
    "Turns",
    "Walk",
    "format_errors",
    "ToolSpec",
    "ServerTool",
    "split_server_tools",
    "refuse_server_tool",
    "raw_server_tools",
    "Segment",
    "SegmentKind",
    "ReplayScope",
    "data_parts",
    "data_uri",
    "file_ref",
    "extra",
    "guarded",
    "is_raw_provider_block",
    "merge_turn",
    "origin_replays",
    "compaction_stand_in",
    "COMPACTION_PREAMBLE",
    "parse_arguments",
    "raw_provider_block",
    "replays_natively",
    "result_blocks",
    "sanitize_name",
    "segments",
    "sent_source",
    "tool_choice_name",
    "tool_specs",
]
