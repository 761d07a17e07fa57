"""A call's request: checked against what the model accepts, its media checked, built on the
conversation's last draft, named to a cache resource, encoded and signed (the mixin
:class:`Building` of :class:`~modelwire.models.HTTPModel`)."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Sequence

from ..errors import UnsupportedOptionError, debug_enabled
from ..formatters import ToolSpec
from ..formatters._common import CompactionCut
from ..formatters._toolids import name_map
from ..message import Msg, MsgInput, UserMsg, as_messages
from ..protocols import ModelCapabilities, ModelOptions, WireProtocol
from ..protocols._protocol import thinking_requested
from ._body import encode_body
from ._media import has_media, plain_prefix, refused_media, without_media
from ._request import check_strict_tools, same_as_full

if TYPE_CHECKING:
    import collections

    from ..formatters import Formatter
    from .config import ModelSpec
    from .transport import HTTPTransport, Timeouts

__all__ = ["Building"]


class Building:
    """How :class:`~modelwire.models.HTTPModel` builds a call's request."""

    if TYPE_CHECKING:  # what it reads of the model
        spec: ModelSpec
        wire: WireProtocol
        name: str
        provider: str
        options: ModelOptions
        formatter: Formatter
        transport: HTTPTransport
        timeouts: Timeouts
        _credentials: Any
        _cache_resources: Any
        _names: Any
        _drafts: collections.OrderedDict[int, tuple[Any, Any, int]]

        @property
        def capabilities(self) -> ModelCapabilities: ...

    def preflight(
        self,
        messages: MsgInput,
        tools: Sequence[Any] | None = None,
        tool_choice: Any = None,
        options: ModelOptions | dict[str, Any] | None = None,
    ) -> list[Any]:
        """Every reason the next request for these messages would be refused or would lose
        something, found offline (see :mod:`._preflight`): an empty list when none."""
        from ._preflight import preflight

        return preflight(self, as_messages(messages), tools, tool_choice, options)

    def forced_tool_ok(self, options: ModelOptions | dict[str, Any] | None = None) -> bool:
        """Whether a forced tool choice can go with these options on this model (Claude
        thinking on a budget, DeepSeek thinking, and some models refuse any forcing)."""
        probe = [ToolSpec("probe", "", {"type": "object", "properties": {}})]
        try:
            self.build_request([UserMsg("user", "probe")], probe, "required", options)
        except UnsupportedOptionError as exc:
            return exc.option != "tool_choice"
        return True

    @property
    def _compaction_cut(self) -> CompactionCut:
        """Where the history starts past a compaction window this model cannot read."""
        cut = self.__dict__.get("_cut")
        if cut is None:
            cut = self.__dict__["_cut"] = CompactionCut()
        return cut

    def url(self, opts: ModelOptions | None = None) -> str:
        """Where a request goes: the streamed endpoint, or the whole-answer one when ``opts``
        ask for ``stream=False``."""
        url = self.wire.url(self.spec.base_url or "", self.name, self.spec.preset)
        return self.wire.whole_url(url, self.spec.preset) if opts is not None and opts.stream is False else url

    def headers(self, extra: dict[str, str]) -> dict[str, str]:
        return self.wire.headers(self.spec.api_key, self.spec.preset, extra)

    def _signs_body(self) -> bool:
        """Whether the request's signature covers its bytes (cloud credentials, no plain key)."""
        return not self.spec.api_key and self.spec.preset.dialect.get("credentials") is not None

    async def _signed(self, url: str, headers: dict[str, str], body: bytes) -> dict[str, str]:
        """The headers with cloud credentials applied, where the provider's key is not a
        plain key (``dialect["credentials"]``: Google application default credentials, AWS
        SigV4). Resolving and refreshing them may touch the network: off the event loop."""
        kind = self.spec.preset.dialect.get("credentials")
        if self.spec.api_key or kind is None:
            return headers
        if self._credentials is None:
            from ..protocols import credentials_for

            self._credentials = credentials_for(kind, self.spec.preset.protocol)
        return await asyncio.to_thread(self._credentials.apply, "POST", url, headers, body)

    # How many conversations' drafts a model keeps (the most recently used).
    drafts_kept = 8

    def build_request(
        self,
        messages: Sequence[Msg],
        tools: Sequence[Any] | None = None,
        tool_choice: Any = None,
        options: ModelOptions | dict[str, Any] | None = None,
        *,
        drafts: list[Any] | None = None,
    ) -> tuple[dict[str, Any], ModelOptions]:
        """The request body for these messages (the messages' sources already resolved).
        With ``drafts`` (a list, filled in), what was built for the conversation's last
        request is built on, and kept for its next one."""
        opts = self.options.merged(options)
        caps = self.capabilities
        if tools:
            self._check_tool_use(caps, opts, tools)
        if tools and tool_choice not in (None, "auto", "none"):
            if caps.forced_tool is False:
                raise UnsupportedOptionError(
                    "tool_choice",
                    self.provider,
                    "the model cannot be made to call a tool; use tool_choice='auto'",
                    model=self.name,
                )
            if caps.forced_tool_thinking is False and opts.thinking is None and caps.thinking_default:
                # A model that thinks unless told not to (DeepSeek V4): told not to, where it can be.
                opts = replace(opts, thinking=False) if caps.thinking_off is not False else opts
            if caps.forced_tool_thinking is False and thinking_requested(opts, caps):
                raise UnsupportedOptionError(
                    "tool_choice",
                    self.provider,
                    (
                        "the model cannot be made to call a tool while it thinks; use tool_choice='auto', or "
                        "thinking=False"
                    ),
                    model=self.name,
                )
        if caps.strict_refused and tools:
            check_strict_tools(tools, caps.strict_refused, self.provider, self.name)
        messages = self._compaction_cut.apply(messages, self.formatter.compaction_stand_in)  # see CompactionCut
        refused = refused_media(caps)
        if drafts is None or self.formatter.payload_turns is None or not messages:
            payload = self.formatter.format(self._media_checked(messages, refused), tools, tool_choice)
        else:
            payload = self._drafted(messages, tools, tool_choice, refused, drafts)
        return self.wire.body(self.name, payload, opts, self.spec.preset, caps), opts

    def _check_tool_use(self, caps: ModelCapabilities, opts: ModelOptions, tools: Sequence[Any]) -> None:
        """Refuse tools the model does not take: at all, in a streamed request, more of them
        than a request may hold, or a provider-defined tool type it refuses."""
        count = len(tools)
        if caps.refused_tool_types:
            _check_tool_types(tools, caps, self.provider, self.name)
        if caps.max_tools is not None and count > caps.max_tools:
            raise UnsupportedOptionError(
                "tools",
                self.provider,
                f"a request holds at most {caps.max_tools} tools, and {count} were given; send those this turn needs",
                model=self.name,
            )
        if caps.tool_use is False:
            raise UnsupportedOptionError(
                "tools",
                self.provider,
                "the model takes no tools; leave them out, or choose one that does",
                model=self.name,
            )
        if caps.streamed_tool_use is False and opts.stream is not False:
            raise UnsupportedOptionError(
                "stream",
                self.provider,
                "the model takes tools only in a request that is not streamed; set stream=False",
                model=self.name,
            )

    def _drafted(
        self,
        messages: Sequence[Msg],
        tools: Sequence[Any] | None,
        tool_choice: Any,
        refused: frozenset[str],
        drafted: list[Any],
    ) -> dict[str, Any]:
        """The payload, built on what was built for this conversation's last request when
        its messages are still there and unchanged (only the new ones are media-checked and
        formatted), else afresh; the draft is kept for the next one and put in ``drafted``
        with its turns."""
        from ..formatters import format_errors
        from ..formatters._incremental import tools_key

        fmt, drafts = self.formatter, self._drafts
        slot = id(messages[0])
        given = tools_key(tools, tool_choice)
        key = None if given is None else (given, refused)
        kept = self._kept_draft(messages, key)
        draft = kept[1] if kept is not None else self._new_draft(tools, tool_choice, given)
        # The messages the draft holds passed this check, unchanged, with the same refusals.
        messages = self._media_checked(messages, refused, start=len(draft.fed))
        with format_errors(fmt.protocol, messages):
            payload: dict[str, Any] = draft.extend(messages).payload()  # a draft that raised is not kept
        if debug_enabled():
            same_as_full(payload, fmt, messages, tools, tool_choice)
        self._keep_tool_fields(given, draft)
        if key is not None:
            plain = kept[2] if kept is not None and kept[1] is draft else 0
            drafts[slot] = (key, draft, plain_prefix(draft.fed, plain))
            while len(drafts) > self.drafts_kept:
                drafts.popitem(last=False)
        drafted[:] = [draft, payload[draft.key], given]  # the tools' key too: computed once per call
        return payload

    # How many sets of tools a model keeps converted for a new conversation (the most recently used).
    tool_fields_kept = 4

    def _new_draft(self, tools: Sequence[Any] | None, tool_choice: Any, given: Any) -> Any:
        """A draft for a conversation not seen before, given the tools as sent, their name map
        and their fields (and bytes) a draft of another conversation made of the same tools
        (the same key, ``given``: see ``tools_key``), so a new conversation converts and
        checks no tool the model has converted lately."""
        if given is not None and tools:
            made = self._tool_fields
            for k, (other, kept) in enumerate(made):
                if other == given and kept[5] == self.formatter.tool_name_rules:  # rules a lookup may change
                    draft = self.formatter.draft()
                    draft.tools, draft.tool_choice, draft.names, draft.fields, draft.fields_raw = kept[:5]
                    made.append(made.pop(k))
                    return draft
        return self.formatter.draft(tools, tool_choice)

    def _keep_tool_fields(self, given: Any, draft: Any) -> None:
        """The tools as ``draft`` sends them (its first payload made their fields), kept by the
        tools' key for the model's next new conversation (see :meth:`_new_draft`), and its
        name map for this call's (see :meth:`_name_map`)."""
        if given is None or draft.fields is None:
            return
        if draft.names is not None and (self._names is None or self._names[1] is not draft.names):
            self._names = ((given, self.formatter.tool_name_rules), draft.names)
        made = self._tool_fields
        if any(kept[3] is draft.fields for _, kept in made):
            return
        rules = self.formatter.tool_name_rules
        made.append((given, (draft.tools, draft.tool_choice, draft.names, draft.fields, draft.fields_raw, rules)))
        del made[: -self.tool_fields_kept]

    @property
    def _tool_fields(self) -> list[tuple[Any, tuple[Any, ...]]]:
        """The tools' fields the model's drafts made lately, by the tools' key, the most
        recently used last."""
        made = self.__dict__.get("_tools_made")
        if made is None:
            made = self.__dict__["_tools_made"] = []
        return made

    def _kept_draft(self, messages: Sequence[Msg], key: Any) -> tuple[Any, Any, int] | None:
        """The draft kept for this conversation, with these tools and refusals, taken out (a
        draft has one user at a time): found by its first message, the same objects
        unchanged; else one whose messages ``messages`` begin with as other objects of the
        same content (see ``Draft.recognise``); else None."""
        drafts = self._drafts
        kept = drafts.pop(id(messages[0]), None)
        if key is None:
            return None
        if kept is not None and kept[0] == key and kept[1].matches(messages):
            return kept
        slot = self._recognising(messages, key)
        return drafts.pop(slot) if slot is not None else None

    def _recognising(self, messages: Sequence[Msg], key: Any = None) -> int | None:
        """The slot of a kept draft (with the tools and refusals ``key``, where given) whose
        messages ``messages`` begin with as other objects of the same content; that draft
        then holds them (see ``Draft.recognise``). None: no draft does."""
        for slot, other in list(self._drafts.items()):
            if (key is None or other[0] == key) and other[1].recognise(messages):
                return slot
        return None

    def _name_map(self, tools: Sequence[Any] | None, tool_choice: Any, given: Any = None) -> dict[str, str]:
        """``name_map`` of the tools, kept while the tools and the name rules are the same
        (an agent gives the same tools on every call). ``given``: the tools' key this call's
        draft took (``tools_key(tools, tool_choice)``), so they are not encoded twice."""
        rules = getattr(self.formatter, "tool_name_rules", None)
        if rules is None or not tools:
            return {}
        from ..formatters._incremental import tools_key

        key = (given if given is not None else tools_key(tools, tool_choice), rules)
        kept = self._names
        if key[0] is None or kept is None or kept[0] != key:
            kept = self._names = (key, name_map(tools, rules))
        return dict(kept[1])

    def _plain(self, messages: Sequence[Msg]) -> int:
        """How many of the first messages need no walk for sources: ones this conversation's
        last request sent that held no URL source, the same objects and unchanged (its draft
        matches), or other objects of the same content (a history loaded from JSON: the
        draft that recognises them is kept under their first message from here on, so the
        build takes it as it takes one that matches, keyed once)."""
        if not messages:
            return 0
        drafts = self._drafts
        kept = drafts.get(id(messages[0]))
        if kept is not None and kept[1].matches(messages):
            return kept[2]
        slot = self._recognising(messages)
        if slot is None:
            return 0
        other = drafts[id(messages[0])] = drafts.pop(slot)
        self._compaction_cut.recognised(messages, other[2])  # (the objects sent as given)
        return other[2]

    async def _with_cache_resource(self, payload: dict[str, Any], opts: ModelOptions) -> dict[str, Any]:
        """``payload`` naming a prompt cache created for it first, where the provider's
        caches are resources (see :mod:`._cache`); as it was otherwise."""
        from ..protocols._protocol import CachePlan

        plan = CachePlan.of(opts.cache)
        found = self.wire.cache_resource(payload, plan, self.url()) if plan is not None else None
        if found is None:
            return payload
        from ._cache import CacheResources

        if self._cache_resources is None:
            self._cache_resources = CacheResources()

        async def send(url: str, body: bytes) -> tuple[int, bytes]:
            headers = await self._signed(url, self.headers(opts.extra_headers), body)
            headers["accept"] = "application/json"
            response = await self.transport.open("POST", url, headers, body, self.timeouts.first_byte)
            try:
                return response.status_code, await response.aread()
            finally:
                await response.aclose()

        name = await self._cache_resources.name_for(found[0], found[1], send)
        return payload if name is None else self.wire.with_cache_resource(payload, name)

    def _media_checked(self, messages: Sequence[Msg], refused: frozenset[str], start: int = 0) -> Sequence[Msg]:
        """Media the model cannot take in (``refused``, from its capabilities), from message
        ``start`` on: a ``FormatError`` naming the message, or with
        ``on_unsupported_media="note"`` a short text note in its place."""
        if not refused:
            return messages
        out: list[Msg] | None = None
        for index in range(start, len(messages)):
            msg = messages[index]
            if not any(map(has_media, msg.content)):
                continue
            content = without_media(msg.content, refused, index, self)
            if content is not None:
                if out is None:
                    out = list(messages)
                out[index] = msg.replace(content=content)
        return messages if out is None else out

    async def _encoded(
        self, payload: dict[str, Any], opts: ModelOptions, drafted: tuple[Any, list[Any]] | None = None
    ) -> tuple[bytes, dict[str, str]]:
        """A request's body bytes and its headers: the protocol's for what the body holds,
        the call's extra ones, cloud credentials applied. The finished turns of a draft are
        encoded once, for every request that sends them."""
        body = self._drafted_body(payload, opts, drafted) if drafted is not None else None
        if body is None:
            body = encode_body(payload)
        headers = self.wire.request_headers(payload, self.headers(opts.extra_headers), self.spec.preset)
        if opts.stream is False:
            headers["accept"] = "application/json"
        return body, (await self._signed(self.url(opts), headers, body) if self._signs_body() else headers)

    def _drafted_body(
        self, payload: dict[str, Any], opts: ModelOptions, drafted: tuple[Any, list[Any]]
    ) -> bytes | None:
        """The body with the draft's finished turns as their bytes, where the turns are the
        ones the draft made and not given in ``extra_body``, and the tools' lists the draft
        made as theirs (see ``Draft.fields_encoded``); None where neither is (the plain
        encoding then). (What the protocol adds to the body, cache marks included, goes on
        copies in the body's own lists, never on a draft's turns or tools.)"""
        draft, turns = drafted
        key = self.formatter.payload_turns
        body = draft.fields_encoded(payload)
        if key is not None and payload.get(key) is turns and key not in (opts.extra_body or {}):
            body = {**body, key: draft.turns_encoded(turns)}
        if body is payload:
            return None
        encoded = encode_body(body)
        if debug_enabled() and encoded != encode_body(payload):
            raise AssertionError("a draft's encoded turns or tools differ from the payload's")  # a bug here
        return encoded


def _check_tool_types(tools: Sequence[Any], caps: ModelCapabilities, provider: str, model: str) -> None:
    """A raw tool definition (``ServerTool(raw=...)`` or a dict) whose ``type`` the model
    refuses, refused before sending, with what the table's source says to send instead."""
    refused = caps.refused_tool_types or ()
    for tool in tools:
        raw = tool if isinstance(tool, dict) else getattr(tool, "raw", None)
        kind = raw.get("type") if isinstance(raw, dict) else None
        if kind in refused:
            source = caps.sources.get("refused_tool_types", "")
            raise UnsupportedOptionError(
                "tools",
                provider,
                f"the model refuses the tool type {kind!r}" + (f"; its provider says: {source}" if source else ""),
                model=model,
            )
