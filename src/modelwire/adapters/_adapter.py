"""What every streaming adapter shares.

An adapter is a sans-I/O state machine for one model call: feed it the provider's
decoded stream events (plain dicts) with :meth:`BaseAdapter.feed`, tell it about the
``[DONE]`` marker with :meth:`BaseAdapter.done`, and call :meth:`BaseAdapter.close` at
end of input. Each call returns the modelwire events it produced, in order.

The first provider event opens the model call (``MODEL_CALL_START``); the provider's
terminal event closes it (open blocks get their END, then ``MODEL_CALL_END`` with usage
and stop reasons). When the provider reports an error, or the stream breaks (invalid
JSON, a delta for a block that never started, input ending before the terminal marker),
the adapter closes what is open and raises a :class:`~modelwire.errors.ProviderError`
whose ``events`` hold those closing events: pass them on, and everything received so
far still folds into a valid message.
"""

from __future__ import annotations

import base64
import json
import logging
import warnings
from typing import Any, Callable, ClassVar

from .._ids import coarse_now_iso, id_again, new_id
from ..message import provenance
from ..errors import IncompleteStreamError, ProviderError, StreamProtocolError, debug_enabled, error_from_body

from .. import event as E
from ._fast import Delta, FastPath, compile_fast_path
from ._makers import _DELTAS, _ENDS, _LAZY_ID, _STARTS, error_object
from ._shapes import unexpected_error
from ._state import _ENDED, DONE, FAILED, IDLE, STREAMING, AdapterState, Block

__all__ = ["BaseAdapter", "debug"]

_log = logging.getLogger("modelwire.adapters")
_STOP_REASONS = frozenset(E.StopReason)
debug = debug_enabled
_default_id = new_id
# Hooks BaseAdapter called by private names before they became public: a subclass that
# defines one is told (at class creation, and by the conformance suite).
_FORMER_HOOKS = frozenset(
    {"_handle", "_check_first", "_model_from", "_on_done", "_on_close", "_count_usage", "_fail", "_finish"}
)


class BaseAdapter:
    """Shared state machine; subclasses implement :meth:`handle`.

    ``state`` is one of ``IDLE`` -> ``STREAMING`` -> ``DONE`` or ``FAILED``. One rule for
    input once the call ended, whichever way: it is ignored (with a debug note), because
    nothing can change a reply whose ``MODEL_CALL_END`` was emitted. No exception other
    than a :class:`~modelwire.errors.ProviderError` leaves ``feed``, ``done`` or
    ``close``: a provider's malformed event is a :class:`StreamProtocolError`, anything
    else an :class:`InternalError` (raised as itself with ``MODELWIRE_DEBUG=1``).
    """

    protocol = ""
    # Whether the provider's own input count includes the tokens read from and written to
    # its prompt cache. Where it does not (Anthropic, Bedrock), they are added at the end:
    # ``input_tokens`` counts every prompt token on every protocol, cache reads and writes
    # being parts of it; the provider's own figures stay in the call's ``metadata["usage"]``.
    input_counts_cache = True
    # The adapter's most common events (a piece of an open block) as a table its short path
    # reads (see modelwire.adapters._fast); none: every event takes the full path.
    deltas: tuple[Delta, ...] = ()
    __fast: ClassVar[FastPath | None]  # each class's own deltas compiled, set by fast_path()
    # The provider-run tool calls the request left without their result (a paused turn goes
    # on in a new call, whose first result answers one of them): set by whoever sent the
    # request (the models layer, from the messages it sent). With it, a result naming a call
    # neither this stream nor the request left open is a broken stream; None (a decoder fed
    # on its own, the request unknown): such a result is left to whoever holds the reply.
    carried_calls: frozenset[str] | None = None
    # Fields and event types met in a dispatch's "unknown" branch (see note_unread): the
    # class's None until the first one, so a usual stream adds no attribute.
    unread: dict[str, Any] | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for old in _FORMER_HOOKS.intersection(cls.__dict__):
            warnings.warn(
                f"{cls.__qualname__} defines {old}, which BaseAdapter no longer calls: its hook is "
                f"{old[1:]} (rename it, or give it a name of its own)",
                DeprecationWarning,
                stacklevel=2,
            )
        if "_handle" in cls.__dict__ and "handle" not in cls.__dict__:
            # the one hook every adapter wrote, kept working: a method set on the class on purpose
            cls.handle = cls.__dict__["_handle"]  # type: ignore[method-assign]

    def __init__(
        self,
        reply_id: str,
        *,
        model_name: str | None = None,
        provider: str | None = None,
        new_id: Callable[[], str] = new_id,
        clock: Callable[[], str] = coarse_now_iso,
    ) -> None:
        if type(reply_id) is not str:  # every event carries it, unchecked (see _maker)
            raise TypeError(f"reply_id must be a string, not {type(reply_id).__name__}")
        self.reply_id = reply_id
        self.model_name = model_name
        self.new_id = new_id  # block and call ids
        # Event ids: left to each event, made on their first read (most events are folded
        # and dropped unread), unless ids are given (tests that want them counted).
        self.__event_id: Callable[[], str] = _LAZY_ID if new_id is _default_id else new_id
        self.__clock = clock
        self.__now = ""
        self.__out: list[E.AgentEvent] = []
        self.blocks: dict[Any, Block] = {}  # provider key -> open block, in opening order
        self.__ids: set[str] = set()  # every block id of this call: a provider that repeats one is refused
        self.__call_ids: dict[str, bool] = {}  # tool call id -> whether a result of the provider's answered it
        self.__call_renamed: dict[str, str] = {}  # a call id the provider gave twice -> the id of its last call
        # Tool names as sent -> the tools' own names, where the target refused a name (see
        # formatters._toolids); set by the models layer.
        self.tool_names: dict[str, str] = {}
        # The endpoint family this stream comes from (recorded on what it mints); set by the
        # models layer, None when not known.
        self.endpoint: str | None = None
        # The model signed thinking of this stream goes back to only (the model binds it to
        # itself: ``thinking_bound``); set by the models layer.
        self.bound_model: str | None = None
        self.bound_account: str | None = None  # the fingerprint of the account, where thinking is bound to it
        self.state: AdapterState = IDLE
        self.failed: ProviderError | None = None
        # usage, raw values as the provider reports them
        self.input_tokens = 0
        self.output_tokens = 0
        self.cache_input_tokens = 0
        self.cache_creation_input_tokens = 0
        self.reasoning_tokens = 0
        self.stop_reason: str | None = None
        self.provider_stop_reason: str | None = None
        # The provider (preset) this stream came from, recorded on the blocks it makes so a
        # formatter can tell whose signatures and reasoning they hold.
        self.provider = provider or self.protocol
        self.call_metadata: dict[str, Any] = {"provider": self.provider, "protocol": self.protocol}
        # Whether any block got content (read at the end, see adapters._unread). One attribute
        # only: two took Anthropic's and Responses' adapters past the 30 attributes CPython 3.11
        # shares an instance dict's keys for, and those two were the ones that measured slower.
        self.decoded = False

    @property
    def started(self) -> bool:
        return self.state is not IDLE

    @property
    def finished(self) -> bool:
        return self.state in _ENDED

    # -- public API ---------------------------------------------------------------------

    def feed(self, data: dict[str, Any], event: str | None = None) -> list[E.AgentEvent]:
        """Process one decoded provider event (``event`` is the SSE event name, if any)."""
        if self.state in _ENDED:
            return []  # trailing events after the terminal one (usage echoes, [DONE])
        self.__now = self.__clock()
        out = self.__out = []
        try:
            if self.state is IDLE:
                self.check_first(data, event)
                self.__start(data)
            if "error" in data and self.is_error_frame(data):
                # An error object where an event was expected (the protocol's adapter says
                # which are: a proxy's error object comes on any route). Every error object
                # has an "error" key: the other frames cost one lookup, not a call.
                raise error_from_body(data, self.protocol)
            self.handle(data, event)
        except ProviderError as err:
            self.__fail(err)
        except Exception as exc:  # noqa: BLE001 - classified below, never swallowed
            self.__fail(unexpected_error(self, exc, data, event))
        return out

    def feed_raw(self, raw: bytes, event: str | None = None) -> list[E.AgentEvent] | None:
        """The short path for an adapter's most common events, from an event's JSON bytes:
        its events, or None to send it the usual way (decoded to a dict, then :meth:`feed`).
        It reads the adapter's :attr:`deltas` table (see :mod:`modelwire.adapters._fast`);
        without one there is none, and decoders do not call it (:func:`short_path`)."""
        fast = type(self).fast_path()
        return fast.feed_raw(self, raw, event) if fast is not None else None

    @classmethod
    def fast_path(cls) -> FastPath | None:
        """This class's :attr:`deltas` compiled once (None without rows)."""
        if "_BaseAdapter__fast" not in cls.__dict__:
            cls.__fast = compile_fast_path(cls.deltas, cls.__name__, STREAMING) if cls.deltas else None
        fast: FastPath | None = cls.__dict__["_BaseAdapter__fast"]
        return fast

    def begin_feed(self) -> list[E.AgentEvent]:
        """Start a feed that does not go through :meth:`feed` (a short path's own entry):
        the list this feed's events go to, stamped now."""
        self.__now = self.__clock()
        out = self.__out = []
        return out

    def short_delta(self, block: Block, text: str) -> list[E.AgentEvent]:
        """A short path's one event: a delta of ``block`` (open, of a streamed kind), stamped
        now, as ``feed`` -> ``delta`` would make it; the events of this feed. (The stamp and
        the events are not kept on the adapter: every entry point sets both afresh.)"""
        block.has_delta = True
        return [_DELTAS[block.kind](self.__event_id(), self.__clock(), self.reply_id, block.id, text)]

    def done(self) -> list[E.AgentEvent]:
        """The ``data: [DONE]`` marker."""
        if self.state in _ENDED:
            return []
        self.__now = self.__clock()
        self.__out = []
        if self.state is IDLE:
            self.__fail(IncompleteStreamError(f"the {self.protocol} stream held nothing before [DONE]"))
        self.__guarded(self.on_done)
        return self.__out

    def close(self) -> list[E.AgentEvent]:
        """End of input. Raises :class:`IncompleteStreamError` if the call never ended."""
        if self.state in _ENDED:
            return []
        self.__now = self.__clock()
        self.__out = []
        if self.state is IDLE:
            self.__fail(IncompleteStreamError(f"the {self.protocol} stream ended before any event"))
        self.__guarded(self.on_close)
        return self.__out

    def fail(self, err: ProviderError) -> list[E.AgentEvent]:
        """Close what is open because of an error found outside the adapter (for example
        invalid JSON in a data line), and raise ``err`` with the closing events.

        Once the call ended, the one rule applies: ``err`` is ignored, with a debug note."""
        if self.state in _ENDED:
            self.ignore(err.message)
            return []
        self.__now = self.__clock()
        self.__out = []
        self.__fail(err)
        return []  # not reached

    def answered(self) -> bool:
        """The provider has said its answer is whole (its stop reason came); only trailers
        (usage, ``[DONE]``, the terminal event) may follow. Unreadable input from here on is
        ignored like input after the end: it cannot change the answer. Protocols whose stop
        reason comes before their terminal event say so."""
        return self.state in _ENDED

    def note_unread(self, name: str, value: Any) -> None:
        """A field or event type this adapter does not read (called from a dispatch's
        "unknown" branch only, never on the usual path): counted, and looked at when the
        call ends with nothing decoded or no tokens counted (see :mod:`._unread`)."""
        from ._unread import UnreadField

        unread = self.unread
        if unread is None:
            unread = self.unread = {}
        field = unread.get(name)
        if field is None:
            unread[name] = UnreadField(value)
        else:
            field.again(value)

    def ignore(self, what: str) -> None:
        """Input that came after the call ended: nothing can change the reply any more."""
        _log.debug("ignored after the end of a %s stream: %s", self.protocol, what)

    def __guarded(self, step: Callable[[], Any]) -> Any:
        """Run an end-of-input step with the same error sorting as ``feed``."""
        try:
            return step()
        except ProviderError as err:
            self.__fail(err)
        except Exception as exc:  # noqa: BLE001 - classified, never swallowed
            self.__fail(unexpected_error(self, exc, {}, None))

    @property
    def origin(self) -> dict[str, Any]:
        """A fresh ``provider_metadata`` value for a block this stream made."""
        return provenance(self.provider, self.protocol, self.endpoint)

    @property
    def thinking_origin(self) -> dict[str, Any]:
        """:attr:`origin` for signed thinking, with the model where the models layer says the
        model binds its thinking to itself (``bound_model``), and the account's fingerprint where
        it binds it to the account (``bound_account``)."""
        return provenance(self.provider, self.protocol, self.endpoint, self.bound_model, self.bound_account)

    # -- for subclasses -------------------------------------------------------------------
    # The hooks a protocol's adapter fills are public: handle (the one it must write),
    # check_first, shape_problem, model_from, on_done, on_close, on_fail, count_usage and
    # answered; it calls open_block, delta, close_block, close_all, whole_call,
    # provider_block, emit, begin_feed and finish. Everything else of the kit is
    # name-mangled (``__x``), so no name a subclass picks changes how the kit works.

    def handle(self, data: dict[str, Any], event: str | None) -> None:
        """Turn one decoded provider event into events (``open_block``, ``delta``,
        ``close_block``; ``finish`` at its terminal event); raise ``StreamProtocolError``
        on one it cannot read. The one hook every adapter writes."""
        raise NotImplementedError(f"{type(self).__name__} does not define handle(data, event)")

    @staticmethod
    def is_error_frame(data: dict[str, Any]) -> bool:
        """Whether a decoded frame with an ``error`` key (or a whole answer) is an error object
        rather than an event: then ``feed`` raises the typed error of its body and ``handle``
        never sees it. Each protocol writes its own (the conformance suite asks for it),
        knowing which of its frames carry an error beside content; the default is the kit's
        :func:`error_object`, the object a proxy sends on any route. An error event of the
        protocol's own without an ``error`` key is its ``handle``'s to raise."""
        return error_object(data)

    def check_first(self, data: dict[str, Any], event: str | None) -> None:
        """Raise :class:`StreamProtocolError` if ``data`` cannot open this protocol's stream
        (each protocol decides; the default takes anything)."""

    def shape_problem(self, data: dict[str, Any], event: str | None) -> str | None:
        """What is wrong with the shape of an event that made the adapter fail, or None if
        it looks right (then the failure is modelwire's own bug). Only called on failure."""
        return None

    def model_from(self, data: dict[str, Any]) -> str | None:
        """The model name the stream's first event gives (None: the one asked for)."""
        return None

    def on_done(self) -> None:
        """The ``data: [DONE]`` marker came: the default ends the call (:meth:`finish`); a
        protocol whose stream does not end there raises a ``ProviderError`` instead."""
        self.finish()

    def on_close(self) -> None:
        """The input ended before the call did: the default raises
        :class:`IncompleteStreamError`; a protocol whose stream may end without its terminal
        event (and still be whole) finishes here, and calls ``super().on_close()`` otherwise."""
        raise IncompleteStreamError(f"the {self.protocol} stream ended before its terminal event")

    def on_fail(self, err: ProviderError) -> None:
        """The call is about to end with ``err``: a protocol that keeps blocks of its own
        (calls it has not opened yet) closes them here; the kit then closes the open blocks
        and ends the call."""

    def emit(self, cls: type, **fields: Any) -> None:
        """One event of class ``cls``, stamped with this feed's id, time and reply."""
        fields["id"] = self.__event_id()
        fields["created_at"] = self.__now
        fields["reply_id"] = self.reply_id
        self.__out.append(cls(**fields))

    def __start(self, data: dict[str, Any]) -> None:
        model = self.model_from(data) or self.model_name or ""
        self.emit(E.ModelCallStartEvent, model_name=model)  # first: a model name that fails leaves the call IDLE
        self.call_metadata["model"] = model
        self.state = STREAMING

    # text-like blocks ------------------------------------------------------------------

    def open_block(self, key: Any, kind: str, name: str = "", **start: Any) -> Block:
        block_id = self.__block_id(kind, start.pop("block_id", None))
        if key in self.blocks:
            raise StreamProtocolError(f"{self.protocol}: a {kind} block started twice ({key!r})")
        if kind == "tool_call":
            block_id, name = self.__new_call(block_id, name)
        elif kind == "tool_result":
            block_id = self.__result_for(block_id)
        elif block_id in self.__ids:
            raise StreamProtocolError(f"{self.protocol}: the id {block_id!r} is used by two blocks of one call")
        block = Block(kind, block_id, name)
        self.__ids.add(block_id)
        # Emit the START first: a block is registered (and later closed) only once it started.
        self.__emit_start(block, kind, name, start)
        self.blocks[key] = block
        return block

    def whole_call(self, name: Any, call_id: Any, arguments: str, extras: dict[str, Any] | None = None) -> str:
        """A tool call that arrives whole, its name and arguments in one provider event: its
        START, its arguments (when there are any) and its END, as ``open_block``, ``delta``
        and ``close_block`` make them for a call that streams, with no block opened between
        them. Returns the id it streams with: the provider's (``call_id``; renamed when this
        call used it already) or, without one, a new one."""
        if type(arguments) is not str:  # refused before its START is out: a call never left open
            raise StreamProtocolError(f"{self.protocol}: tool call arguments of type {type(arguments).__name__}")
        block_id, name = self.__new_call(self.__block_id("tool_call", call_id), name)
        event_id, now, reply_id, out = self.__event_id, self.__now, self.reply_id, self.__out
        out.append(_STARTS["tool_call"](event_id(), now, reply_id, block_id, name))
        if arguments:
            out.append(_DELTAS["tool_call"](event_id(), now, reply_id, block_id, arguments))
        out.append(_ENDS["tool_call"](event_id(), now, reply_id, block_id, extras or None))
        self.decoded = True
        return block_id

    def __block_id(self, kind: str, given: Any) -> str:
        """A block's id: the provider's, a string, or a new one where it gave none."""
        block_id = given or self.new_id()
        if not isinstance(block_id, str):
            raise StreamProtocolError(
                f"{self.protocol}: a {kind} block whose id is {type(block_id).__name__}, not a string"
            )
        return block_id

    def __new_call(self, call_id: str, name: Any) -> tuple[str, str]:
        """A tool call's id and name, by the rules every call keeps, streamed or whole: it has
        a name; an id a block of this call has already is renamed (see :meth:`__call_again`);
        a tool called by the name it was sent as gets the tool's own name back."""
        if not isinstance(name, str) or not name:
            raise StreamProtocolError(f"{self.protocol}: a tool call without a name ({call_id!r})")
        if call_id in self.__ids:
            call_id = self.__call_again(call_id)
        self.__call_ids[call_id] = False
        self.__ids.add(call_id)
        if self.tool_names:
            name = self.tool_names.get(name, name)
        return call_id, name

    def __call_again(self, call_id: str) -> str:
        """A tool call whose id a block of this call has already (servers that number calls
        per turn, or give two parallel calls one id): the id it streams with, its own, made
        from the provider's; a result the provider names it by goes to this one from now on."""
        new_id = self.__call_renamed[call_id] = id_again(call_id, self.__ids)
        return new_id

    def __result_for(self, call_id: str) -> str:
        """The id a provider-run tool's result streams with: its call's (renamed, if the call
        was). The grammar puts a result after its call's END, once: a result for a call still
        streaming, for a block that is not a call, or for a call that has one already is a
        broken stream. A call this stream did not make is one of an earlier call of the same
        reply (a paused turn goes on in a new call): one the request left open
        (:attr:`carried_calls`) where the request is known, else left to whoever holds the reply."""
        call_id = self.__call_renamed.get(call_id, call_id)
        answered = self.__call_ids.get(call_id)
        if answered:
            raise StreamProtocolError(f"{self.protocol}: a second result for tool call {call_id!r}")
        if answered is None and call_id in self.__ids:
            raise StreamProtocolError(f"{self.protocol}: a tool result for {call_id!r}, which is not a tool call")
        carried = self.carried_calls
        if answered is None and carried is not None and call_id not in carried:
            raise StreamProtocolError(
                f"{self.protocol}: a result for tool call {call_id!r}, which no call of this stream or of the "
                "request left open"
            )
        if any(b.id == call_id and b.kind == "tool_call" for b in self.blocks.values()):
            # The call's stop is missing.
            raise StreamProtocolError(f"{self.protocol}: a result for tool call {call_id!r} before that call ended")
        self.__call_ids[call_id] = True
        return call_id

    def __emit_start(self, block: Block, kind: str, name: str, start: dict[str, Any]) -> None:
        if kind == "tool_call":
            self.__out.append(_STARTS[kind](self.__event_id(), self.__now, self.reply_id, block.id, name))
        elif kind in _STARTS.kinds:
            self.__out.append(_STARTS[kind](self.__event_id(), self.__now, self.reply_id, block.id))
        elif kind == "tool_result":
            self.emit(E.ToolResultStartEvent, tool_call_id=block.id, tool_call_name=name)
        elif kind == "data":
            block.parts = []
            self.emit(E.DataBlockStartEvent, block_id=block.id, media_type=start["media_type"], name=name or None)

    def delta(self, block: Block, text: str) -> None:
        if not text:
            return
        if block.closed:
            raise StreamProtocolError(f"{self.protocol}: a delta for block {block.id!r} after it ended")
        block.has_delta = True
        make = _DELTAS.get(block.kind)
        if make is not None:
            self.__out.append(make(self.__event_id(), self.__now, self.reply_id, block.id, text))
        elif block.kind == "data":
            assert block.parts is not None
            block.parts.append(text)

    def close_block(self, key: Any, *, state: str = "success", metadata: dict[str, Any] | None = None) -> None:
        block = self.blocks.pop(key, None)
        if block is None:
            return
        block.closed = True
        if block.has_delta:
            self.decoded = True
        extras = block.extras or None
        kind = block.kind
        if kind in _ENDS.kinds:
            self.__out.append(_ENDS[kind](self.__event_id(), self.__now, self.reply_id, block.id, extras))
        elif kind == "tool_result":
            self.emit(E.ToolResultEndEvent, tool_call_id=block.id, state=state, metadata=metadata or {})
        elif kind == "data":
            raw = "".join(block.parts or ()).encode()
            media_type = block.extras.pop("media_type", "application/json")
            if raw:
                data = base64.b64encode(raw).decode("ascii")
                self.emit(E.DataBlockDeltaEvent, block_id=block.id, media_type=media_type, data=data)
            self.emit(E.DataBlockEndEvent, block_id=block.id, extras=block.extras or None)

    def close_all(self) -> None:
        for key in list(self.blocks):
            self.close_block(key, state="interrupted" if self.blocks[key].kind == "tool_result" else "success")

    def provider_block(self, raw: dict[str, Any], name: str, summary: str | None = None) -> None:
        """Keep a provider item modelwire does not model, whole, as a JSON data block, so
        that a formatter for the same provider can send it back (``summary``: the text a
        compaction block stands for, sent where the block cannot go)."""
        key = ("raw", len(self.__out), id(raw))
        block = self.open_block(key, "data", name=name, media_type="application/json")
        block.extras = {"provider_metadata": self.origin, "provider_block_type": raw.get("type")}
        if summary:
            block.extras["summary"] = summary
        block.parts = [json.dumps(raw, ensure_ascii=False, separators=(",", ":"))]
        self.close_block(key)

    # the end ---------------------------------------------------------------------------

    def count_usage(self) -> None:
        """Set the token counts from usage kept raw while streaming (for a protocol that
        repeats its usage on every chunk: counting once at the end is cheaper)."""

    def finish(self, finished_reason: str = "completed") -> None:
        """End the call: close the open blocks, count the usage, emit ``MODEL_CALL_END``."""
        self.close_all()
        self.count_usage()
        if self.provider_stop_reason is not None and not isinstance(self.provider_stop_reason, str):
            self.call_metadata["provider_stop_reason_raw"] = self.provider_stop_reason
            self.provider_stop_reason = str(self.provider_stop_reason)[:200]
        if self.stop_reason is not None and self.stop_reason not in _STOP_REASONS:
            self.stop_reason = "other"
        for name in (
            "input_tokens",
            "output_tokens",
            "cache_input_tokens",
            "cache_creation_input_tokens",
            "reasoning_tokens",
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                setattr(self, name, 0)  # a provider's nonsense count is not passed on
        if not self.input_counts_cache:
            self.input_tokens += self.cache_input_tokens + self.cache_creation_input_tokens
        if self.failed is None and not (self.decoded and (self.input_tokens or self.output_tokens)):
            self.__review_unread()
        self.emit(
            E.ModelCallEndEvent,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cache_input_tokens=self.cache_input_tokens,
            cache_creation_input_tokens=self.cache_creation_input_tokens,
            reasoning_tokens=self.reasoning_tokens,
            finished_reason=finished_reason,
            stop_reason=self.stop_reason,
            provider_stop_reason=self.provider_stop_reason,
            metadata=self.call_metadata,
        )
        self.state = FAILED if self.failed is not None else DONE

    def __review_unread(self) -> None:
        """A call that decoded to nothing or counted no tokens: what it did not read that
        may explain it goes in the metadata (and a warning, once per field and process)."""
        from ._unread import review

        tokens = self.input_tokens or self.output_tokens or self.reasoning_tokens
        found = review(self.protocol, self.unread, self.decoded, bool(tokens), self.call_metadata.get("usage"))
        if found:
            self.call_metadata["unread_fields"] = found

    def __fail(self, err: ProviderError) -> None:
        if self.state in _ENDED:
            raise err
        if self.state is IDLE:
            self.__start({})  # a call that failed on its first event still opened
        self.on_fail(err)
        self.failed = err
        self.stop_reason = "error"
        if err.provider_type:
            self.call_metadata["error_type"] = err.provider_type
        self.call_metadata["error"] = err.message
        # AgentScope's MODEL_CALL_END knows only completed and interrupted: a call an error
        # cut short did not complete (its stop_reason says "error").
        self.finish("interrupted")
        err.events = list(self.__out)
        self.__out = []
        raise err
