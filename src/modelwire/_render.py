"""Rendering a reply's events in a terminal, as a person wants to read them.

- text as it arrives;
- thinking dimmed (or collapsed to one line with ``show_thinking=False``);
- each tool call as one line with its arguments, then its result;
- a closing line: stop reason, token usage (cache tokens included), time to first token, and
  the cost where genai-prices knows the model.

``EventLog`` prints the raw stream instead (``[00] REPLY_START ...``), and ``JsonLines``
prints one JSON object per event, for piping.
"""

from __future__ import annotations

import os
import time
from typing import IO, Any

DIM, RESET, BOLD, CYAN, RED = "\x1b[2m", "\x1b[0m", "\x1b[1m", "\x1b[36m", "\x1b[31m"


def describe(event: Any) -> str:
    """The most telling field of an event (as in the seed's chapter 2)."""
    for name in ("delta", "tool_call_name", "state", "finished_reason"):
        value = getattr(event, name, None)
        if value is not None:
            return f"{name}={value!r}"
    return ""


class EventLog:
    def __init__(self, out: IO[str]) -> None:
        self.out = out
        self.n = 0

    def __call__(self, event: Any) -> None:
        self.out.write(f"[{self.n:02d}] {event.type:<26} {describe(event)}".rstrip() + "\n")
        self.out.flush()
        self.n += 1

    def close(self) -> None:
        pass


class JsonLines:
    def __init__(self, out: IO[str]) -> None:
        self.out = out

    def __call__(self, event: Any) -> None:
        self.out.write(event.to_json() + "\n")
        self.out.flush()

    def close(self) -> None:
        pass


_STOPS = {
    "max_tokens": "stopped: the max_tokens limit was reached (--max-tokens raises it)",
    "refusal": "the model refused to answer",
    "content_filter": "stopped by the provider's content filter",
    "pause_turn": "the provider paused a long server-side turn",
    "compaction": "the provider compacted the conversation and paused",
}


def no_color() -> bool:
    """``NO_COLOR`` set (to anything but empty): no colour or style, whatever the terminal
    (https://no-color.org)."""
    return bool(os.environ.get("NO_COLOR"))


class Pretty:
    def __init__(
        self,
        out: IO[str],
        *,
        color: bool | None = None,
        show_thinking: bool = True,
        stats: IO[str] | None = None,
        side: IO[str] | None = None,
    ) -> None:
        self.out = out  # the answer
        self.stats = stats or out  # the closing line and errors (stderr in the chat)
        # Thinking, tool lines and notes: beside the answer on a terminal; elsewhere when the
        # answer goes to a pipe or a file, so that only the answer is there.
        self.side = side or out
        self.color = out.isatty() and not no_color() if color is None else color
        self._line_start: dict[int, bool] = {}
        self.last_kind = ""  # the kind of the block written last (text after text goes on)
        self.refs: list[str] = []  # citations, listed after the reply
        self.show_thinking = show_thinking
        self.t0 = time.monotonic()
        self.first_token: float | None = None
        self.usage = [0, 0, 0, 0]  # input, output, cache read, cache write
        self.cost: dict[str, Any] | None = None
        self.stop: list[str] = []
        self.calls: dict[str, dict[str, Any]] = {}
        self.results: dict[str, list[str]] = {}
        self.thinking_chars = 0
        self.thinking_started = False
        self.finished_reason: str | None = None
        self.error: Any = None

    def _style(self, text: str, *styles: str) -> str:
        return "".join(styles) + text + RESET if self.color and styles else text

    def _write(self, text: str, side: bool = False) -> None:
        stream = self.side if side else self.out
        if text:
            stream.write(text)
            self._line_start[id(stream)] = text.endswith("\n")
            stream.flush()

    def _newline(self, side: bool = False) -> None:
        stream = self.side if side else self.out
        if not self._line_start.get(id(stream), True):
            self._write("\n", side)

    def __call__(self, event: Any) -> None:
        if event.type in ("TEXT_BLOCK_DELTA", "THINKING_BLOCK_DELTA") and self.first_token is None:
            self.first_token = time.monotonic() - self.t0
        handler = getattr(self, "_on_" + event.type.lower(), None)
        if handler is not None:
            handler(event)

    def _on_text_block_start(self, event: Any) -> None:
        if self.last_kind != "text":  # cited pieces of one answer are several text blocks
            self._newline()
        self.last_kind = "text"

    def _on_text_block_delta(self, event: Any) -> None:
        self._write(event.delta)

    def _on_text_block_end(self, event: Any) -> None:
        extras = event.extras or {}
        for citation in list(extras.get("citations") or []) + list(extras.get("annotations") or []):
            self.refs.append(_citation(citation))
            self._write(self._style(f"[{len(self.refs)}]", DIM))
        if extras.get("refusal"):
            self._write(self._style(" (the model refused)", RED))

    def _on_thinking_block_start(self, event: Any) -> None:
        self._newline(True)
        self.last_kind = "thinking"
        self.thinking_chars = 0
        self.thinking_started = False

    def _on_thinking_block_delta(self, event: Any) -> None:
        self.thinking_chars += len(event.delta)
        if self.show_thinking:
            if not self.thinking_started:
                self._write(self._style("thinking: ", DIM), True)
                self.thinking_started = True
            self._write(self._style(event.delta, DIM), True)

    def _on_thinking_block_end(self, event: Any) -> None:
        extras = event.extras or {}
        if extras.get("redacted_thinking_data") and not self.thinking_chars:
            self._write(self._style("(redacted thinking: the provider keeps it encrypted)", DIM), True)
        elif not self.show_thinking and self.thinking_chars:
            self._write(
                self._style(f"(thought for {self.thinking_chars} characters; --show-thinking to read it)", DIM), True
            )
        self._newline(True)

    def _on_tool_call_start(self, event: Any) -> None:
        self.calls[event.tool_call_id] = {"name": event.tool_call_name, "args": []}

    def _on_tool_call_delta(self, event: Any) -> None:
        self.calls[event.tool_call_id]["args"].append(event.delta)

    def _on_tool_call_end(self, event: Any) -> None:
        call = self.calls[event.tool_call_id]
        self.last_kind = "tool"
        self._newline(True)
        self._write(self._style(f"-> {call['name']}({''.join(call['args'])})", CYAN) + "\n", True)

    def _on_tool_result_start(self, event: Any) -> None:
        self.results[event.tool_call_id] = []

    def _on_tool_result_text_delta(self, event: Any) -> None:
        self.results[event.tool_call_id].append(event.delta)

    def _on_tool_result_data_delta(self, event: Any) -> None:
        self.results[event.tool_call_id].append(f"[{event.media_type}]")

    def _on_tool_result_end(self, event: Any) -> None:
        name = self.calls.get(event.tool_call_id, {}).get("name") or event.tool_call_id
        text = "".join(self.results.get(event.tool_call_id, [])).strip().replace("\n", " ")
        if len(text) > 300:
            text = text[:297] + "..."
        style = (RED,) if event.state != "success" else (DIM,)
        self._newline(True)
        self._write(self._style(f"<- {name} [{event.state}] {text}", *style) + "\n", True)

    def _on_require_user_confirm(self, event: Any) -> None:
        self._newline(True)
        self._write(
            self._style("waiting for your confirmation of: " + ", ".join(c.name for c in event.tool_calls), BOLD)
            + "\n",
            True,
        )

    def _on_model_call_end(self, event: Any) -> None:
        self.usage[0] += event.input_tokens
        self.usage[1] += event.output_tokens
        self.usage[2] += event.cache_input_tokens
        self.usage[3] += event.cache_creation_input_tokens
        if event.stop_reason:
            self.stop.append(event.stop_reason)
            if event.stop_reason in _STOPS:
                self._newline(True)
                self._write(
                    self._style(
                        f"({_STOPS[event.stop_reason]})",
                        RED if event.stop_reason not in ("pause_turn", "compaction") else DIM,
                    )
                    + "\n",
                    True,
                )
        if event.cost is not None:
            from .message._types import add_costs

            self.cost = add_costs(self.cost, event.cost)

    def _on_reply_end(self, event: Any) -> None:
        self.finished_reason = event.finished_reason
        self.error = event.error

    def close(self) -> None:
        self._newline()
        for n, ref in enumerate(self.refs, 1):
            self._write(self._style(f"[{n}] {ref}", DIM) + "\n")
        ttft = f"{self.first_token:.2f}s" if self.first_token is not None else "-"
        stop = self.stop[-1] if self.stop else "-"
        line = (
            f"[{self.finished_reason or 'paused'} | stop: {stop} | tokens in {self.usage[0]} (cache "
            f"read {self.usage[2]},"
            f" cache write {self.usage[3]}) out {self.usage[1]} | first token {ttft} | "
            f"{time.monotonic() - self.t0:.2f}s{cost_text(self.cost)}]"
        )
        self.stats.write(self._style(line, DIM) + "\n")
        if self.error is not None:
            hint = (
                "; check the provider's key variable (`modelwire models` lists them)"
                if self.error.type == "authentication"
                else ""
            )
            self.stats.write(self._style(f"error ({self.error.type}): {self.error.message}{hint}", RED) + "\n")
        self.stats.flush()


def renderer(kind: str, out: IO[str], **options: Any) -> Any:
    if kind == "events":
        return EventLog(out)
    if kind == "json":
        return JsonLines(out)
    return Pretty(out, **options)


def cost_text(cost: dict[str, Any] | None) -> str:
    """`` | $0.0012`` (or how much is unknown), for closing lines; empty without a price list."""
    if not cost:
        return ""
    if cost.get("total") is None:
        return " | cost unknown (no price for this model)"
    partial = "" if cost.get("complete", True) else f", {len(cost.get('unpriced', []))} call(s) unpriced"
    return f" | ${cost['total']:.6f}{partial}"


def _citation(citation: Any) -> str:
    """One reference line from an Anthropic citation or an OpenAI annotation."""
    if not isinstance(citation, dict):
        return str(citation)
    title = citation.get("title") or citation.get("document_title") or ""
    url = citation.get("url") or ""
    quoted = citation.get("cited_text") or ""
    text = " ".join(x for x in (title, f"<{url}>" if url else "") if x)
    if quoted and not text:
        text = f'"{quoted[:80]}"'
    return text or citation.get("type", "source")
