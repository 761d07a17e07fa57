"""An agent asking its model: the request of the next call (the conversation, the tools as
they are now, structured output as a schema or as a tool), sent through the agent's own
middleware, its events passed on with their tool-call ids kept distinct."""

from __future__ import annotations

from typing import Any, AsyncGenerator

from .. import event as E
from .. import telemetry
from ..errors import ConfigError, ProviderError
from ..formatters import ToolSpec
from ..message import Msg, SystemMsg, UserMsg
from ._limits import ReplyLimits
from ._reply import _TOOL_EVENTS, STRUCTURED_TOOL, _CallIds, _Parts, _ReplyState, _schema
from ._tools import Tool


class _Asking(_Parts):
    """The model calls of a reply (a part of ``Agent``)."""

    def _model_request(self, state: _ReplyState, last_call: bool) -> tuple[list[Msg], list[Any], Any, dict[str, Any]]:
        """What the next model call is sent: the messages, the tools, the tool choice and the
        options (structured output as a schema or as a tool; no tools on the last call)."""
        tools: list[Any] = [t.tool_spec() for t in self._active.values()]
        options: dict[str, Any] = {}  # the agent's model_options join them in _call_model
        tool_choice: Any = None
        hint: str | None = None
        if state.structured is not None:
            if self._native_structured():
                options["json_schema"] = _schema(state.structured)
                options["json_schema_name"] = state.structured.__name__
                state.native_structured = True
            else:
                tools.append(
                    ToolSpec(
                        STRUCTURED_TOOL,
                        "Give the final answer in this structure. Call it once, last.",
                        _schema(state.structured),
                    )
                )
                if state.forced_structured:
                    if self._can_force({**self.model_options, **options}):
                        tool_choice = STRUCTURED_TOOL
                    else:  # thinking that refuses a forced tool (Claude on a budget, DeepSeek): ask instead
                        hint = f"Give your final answer now by calling the {STRUCTURED_TOOL} tool."
        if last_call:
            tool_choice = "none" if tools else None
        elif self.server_tools:
            tools += self.server_tools
        messages = ([self._system_msg()] if self.system_prompt else []) + self.context
        if hint is not None:
            messages.append(UserMsg("user", hint))  # for this call only: never kept in the context
        return messages, tools, tool_choice, options

    def _system_msg(self) -> Msg:
        """The system prompt as a message, the same one while the prompt stays the same (the
        model then builds the next request on what it built for the last)."""
        prompt = self.system_prompt or ""
        kept = self._system
        if kept is None or kept[0] != prompt:
            kept = self._system = (prompt, SystemMsg("system", prompt))
        return kept[1]

    async def _ask_model(self, state: _ReplyState, last_call: bool) -> AsyncGenerator[E.AgentEvent, None]:
        """One model call, its events passed on; how it stopped is kept on ``state``."""
        messages, tools, tool_choice, options = self._model_request(state, last_call)
        stream = self._call_model(state).stream(
            messages, tools=tools or None, tool_choice=tool_choice, options=options or None, reply_id=state.reply.id
        )
        if state.span is not None:
            stream = telemetry.under(state.span, stream)
        ids = _CallIds(state.reply)
        try:
            async for ev in stream:
                if ev.type in _TOOL_EVENTS:
                    ev = ids.see(ev)
                elif ev.type == "MODEL_CALL_END":
                    stop = getattr(ev, "stop_reason", None)
                    state.refused = stop in ("refusal", "content_filter")
                    state.paused = stop in ("pause_turn", "compaction")
                yield self._emit(state, ev)
        except ProviderError as err:
            for ev in err.events:  # what closes the stream's call; _guarded ends the reply
                yield self._emit(state, ids.see(ev) if ev.type in _TOOL_EVENTS else ev)
            raise
        finally:
            close = getattr(stream, "aclose", None)
            if close is not None:
                await close()

    def _call_model(self, state: _ReplyState) -> Any:
        """The model as this reply's calls use it: inside the agent's own middleware, the
        outermost first (the reply's usage limits, then the agent's default options), or the
        model itself when there is none."""
        if self.limits is None and not self.model_options:
            return self.model
        from ..models._middleware import DefaultOptions, wrap

        layers: list[Any] = [ReplyLimits(self.limits, state)] if self.limits is not None else []
        if self.model_options:
            layers.append(DefaultOptions(**self.model_options))
        return wrap(self.model, *layers)

    async def _list_tools(self) -> dict[str, Tool]:
        """The agent's own tools and its toolsets' tools as they are now; a name given twice
        is refused (say which), since a call could not be routed."""
        active = dict(self.tools)
        owner = {name: "the agent's own tools" for name in active}
        for toolset in self.toolsets:
            for t in await toolset.list_tools():
                if t.name in active:
                    raise ConfigError(
                        (
                            f"the tool name {t.name!r} comes from both {owner[t.name]} and {toolset.name!r}; give the "
                            "toolset a prefix (MCPServer(..., prefix=...))"
                        )
                    )
                active[t.name] = t
                owner[t.name] = repr(toolset.name)
        return active

    def _can_force(self, options: dict[str, Any]) -> bool:
        """Whether the model can be made to call a tool with these options (a model that
        does not say is assumed to)."""
        check = getattr(self.model, "forced_tool_ok", None)
        return bool(check(options or None)) if callable(check) else True

    def _native_structured(self) -> bool:
        capabilities = getattr(self.model, "capabilities", None)
        return bool(getattr(capabilities, "native_structured_output", False))
