"""What an Anthropic request body holds beyond the formatted conversation: its cache
breakpoints and the betas it needs. Below both the formatter and the protocol, which read it."""

from __future__ import annotations

from typing import Any

from ...errors import FormatError
from .._protocol import cache_marks_problem

MAX_CACHE_BREAKPOINTS = 4  # https://docs.claude.com/en/docs/build-with-claude/prompt-caching
IMAGE_TYPES = {"image/jpeg", "image/png", "image/gif", "image/webp"}
# The MCP connector's beta, which a request with ``mcp_servers`` needs (see betas_for).
MCP_BETA = "mcp-client-2025-11-20"
# Server-side compaction's beta: "Include the beta header compact-2026-01-12 in your API
# requests" (https://platform.claude.com/docs/en/build-with-claude/compaction).
COMPACT_EDIT = "compact_20260112"
COMPACT_BETA = "compact-2026-01-12"
# "Default trigger is 150,000 tokens, minimum 50,000" (the compaction page above).
COMPACT_MIN_TRIGGER = 50_000
# "Add task_budget to output_config and include the beta header" task-budgets-2026-03-13
# (https://platform.claude.com/docs/en/build-with-claude/task-budgets).
TASK_BUDGET_BETA = "task-budgets-2026-03-13"
# Context editing: "use the beta header context-management-2025-06-27"
# (https://platform.claude.com/docs/en/build-with-claude/context-editing).
CLEAR_TOOL_USES_EDIT = "clear_tool_uses_20250919"
CONTEXT_EDITING_BETA = "context-management-2025-06-27"
# An effort change in mid-conversation: "Send the mid-conversation-output-config-2026-07-01
# beta header" (https://platform.claude.com/docs/en/build-with-claude/effort-per-message).
MESSAGE_EFFORT_BETA = "mid-conversation-output-config-2026-07-01"


_UNMARKABLE = ("thinking", "redacted_thinking")  # blocks cache_control cannot go on


def place_cache(
    body: dict[str, Any], ttl: str, protocol: str, system: bool = True, tools: bool = True, history: bool = True
) -> None:
    """Cache breakpoints on the last tool, the last system block and the last markable block
    of the conversation (the rolling end: each call reads what the one before wrote), with
    the breakpoints already there checked against Anthropic's rules: at most
    :data:`MAX_CACHE_BREAKPOINTS`, and no 1-hour breakpoint after a 5-minute one."""
    mark = {"type": "ephemeral", **({"ttl": ttl} if ttl != "5m" else {})}
    # Each mark goes on a copy of its block, put in the body's own list: the turns and system
    # parts may be a draft's, shared with the next request (see Formatter.finish).
    if tools and body.get("tools"):
        body["tools"] = _with_mark(body["tools"], len(body["tools"]) - 1, mark)
    if system and isinstance(body.get("system"), list) and body["system"]:
        body["system"] = _with_mark(body["system"], len(body["system"]) - 1, mark)
    turns = body.get("messages") or []
    if history:
        for at in range(len(turns) - 1, -1, -1):
            content = turns[at].get("content")
            where = (
                next(
                    (
                        k
                        for k in range(len(content) - 1, -1, -1)
                        if isinstance(content[k], dict) and content[k].get("type") not in _UNMARKABLE
                    ),
                    None,
                )
                if isinstance(content, list)
                else None
            )
            if where is not None:
                if "cache_control" not in content[where]:
                    turns[at] = {**turns[at], "content": _with_mark(content, where, mark)}
                break
    marks = [
        item["cache_control"] for item in _in_prompt_order(body) if isinstance(item, dict) and "cache_control" in item
    ]
    problem = cache_marks_problem(marks, MAX_CACHE_BREAKPOINTS, "cache breakpoint", "Anthropic")
    if problem is not None:
        raise FormatError(None, problem[1], protocol, code=problem[0])


def _with_mark(items: list[Any], at: int, mark: dict[str, Any]) -> list[Any]:
    """``items`` with a cache mark on a copy of item ``at`` (a new list; as it was when the
    item has a mark already)."""
    if "cache_control" in items[at]:
        return items
    out = list(items)
    out[at] = {**items[at], "cache_control": dict(mark)}
    return out


def _in_prompt_order(body: dict[str, Any]) -> list[Any]:
    items: list[Any] = list(body.get("tools") or ())
    items += body["system"] if isinstance(body.get("system"), list) else []
    for turn in body.get("messages") or ():
        items += turn["content"] if isinstance(turn.get("content"), list) else []
    return items


def betas_for(body: dict[str, Any]) -> list[str]:
    """The betas a request needs for what its body holds."""
    needed = [MCP_BETA] if body.get("mcp_servers") else []
    context = body.get("context_management")
    edits = context.get("edits") if isinstance(context, dict) else None
    if isinstance(edits, list):
        kinds = {e.get("type") for e in edits if isinstance(e, dict)}
        if COMPACT_EDIT in kinds:
            needed.append(COMPACT_BETA)
        if kinds - {COMPACT_EDIT}:  # clear_tool_uses and clear_thinking: context editing
            needed.append(CONTEXT_EDITING_BETA)
    output = body.get("output_config")
    if isinstance(output, dict) and output.get("task_budget") is not None:
        needed.append(TASK_BUDGET_BETA)
    turns = body.get("messages")
    # A turn is role and content, but an effort change: its length finds one at C speed (a
    # long loop's request holds a thousand turns), and only then is it looked for by name.
    if (
        isinstance(turns, list)
        and turns
        and max(map(len, turns)) > 2
        and any(t.get("role") == "system" and "output_config" in t for t in turns)
    ):
        needed.append(MESSAGE_EFFORT_BETA)
    return needed
