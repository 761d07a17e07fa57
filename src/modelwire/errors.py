"""Typed errors raised by modelwire.

Every error modelwire raises on purpose derives from :class:`ModelwireError`.
Errors about bad data also derive from :class:`ValueError`, so code that already
catches ``ValueError`` keeps working. The whole tree (a built-in base besides, after
"also"; ``ConnectionError`` and ``TimeoutError`` are also the built-in ones)::

    ModelwireError
      AgentBusyError (also RuntimeError)
      AgentError (also RuntimeError)
      CassetteError (also AssertionError)
        CassetteMismatchError
        CassetteSecretError
        UnusedInteractionsError
      ConfigError (also ValueError)
        MissingKeyError
        UnknownProtocolError
        UntrustedHostError
      EventApplyError (also ValueError)
      EventDecodeError (also ValueError)
      FormatError (also ValueError)
      InvalidMessageError (also ValueError)
      PartialJSONError (also ValueError)
      ProviderError
        AuthenticationError
        ConnectionError (also ConnectionError)
          TimeoutError (also TimeoutError)
        IncompleteStreamError
        InternalError
        InvalidRequestError
          ContextTooLongError
          RefusedOptionError (also UnsupportedOptionError)
        PermissionDeniedError
        RateLimitError
          QuotaExceededError
        UpstreamError
          OverloadedError
          StreamProtocolError
            EventStreamError
            SSELineTooLongError
      SourceRefusedError (also ValueError)
      StreamGrammarError (also ValueError)
      StructuredOutputError (also ValueError)
      TokenCountUnavailableError (also LookupError)
      ToolArgumentsError (also ValueError)
      ToolError (also RuntimeError)
      ToolServerError (also RuntimeError)
      UnsupportedOptionError (also ValueError)
      UsageLimitExceeded (also RuntimeError)
      ValidationError (also ValueError)
        RoleError
"""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

if TYPE_CHECKING:
    from .event import AgentEvent

__all__ = [
    "ModelwireError",
    "MissingKeyError",
    "RoleError",
    "InvalidMessageError",
    "ValidationError",
    "AgentBusyError",
    "EventApplyError",
    "StreamGrammarError",
    "EventDecodeError",
    "PartialJSONError",
    "ProviderError",
    "AuthenticationError",
    "PermissionDeniedError",
    "RateLimitError",
    "QuotaExceededError",
    "InvalidRequestError",
    "ContextTooLongError",
    "UpstreamError",
    "OverloadedError",
    "StreamProtocolError",
    "IncompleteStreamError",
    "ConnectionError",
    "TimeoutError",
    "InternalError",
    "FormatError",
    "ConfigError",
    "AgentError",
    "TokenCountUnavailableError",
    "ToolArgumentsError",
    "CassetteError",
    "CassetteMismatchError",
    "UnusedInteractionsError",
    "CassetteSecretError",
    "SSELineTooLongError",
    "EventStreamError",
    "UnsupportedOptionError",
    "RefusedOptionError",
    "UnknownProtocolError",
    "UntrustedHostError",
    "UsageLimitExceeded",
    "StructuredOutputError",
    "ToolError",
    "ToolServerError",
    "SourceRefusedError",
    "error_class",
    "error_from_body",
    "use_error_tables",
]


class ModelwireError(Exception):
    """Base class of every error modelwire raises on purpose."""

    def __reduce__(self) -> Any:
        # Pickled as what it holds (its args and attributes), not by calling __init__ again:
        # most take other parameters than the message Exception keeps as args.
        return (_restore, (type(self), self.args, dict(self.__dict__)))


def _restore(cls: type[BaseException], args: tuple[Any, ...], state: dict[str, Any]) -> BaseException:
    err = cls.__new__(cls, *args)
    err.args = args
    err.__dict__.update(state)
    return err


def debug_enabled() -> bool:
    """``MODELWIRE_DEBUG=1``: a bug inside modelwire surfaces as its own exception instead
    of a typed error (the tests run this way)."""
    import os

    return os.environ.get("MODELWIRE_DEBUG", "") not in ("", "0")


class ValidationError(ModelwireError, ValueError):
    """Data that does not fit a message, a block or an event: a missing field, a value of
    the wrong type, base64 that is not base64. Raised where the data enters (a
    constructor, ``from_dict``); ``errors()`` lists each problem with its location
    (``loc``, a tuple of field names and list indexes), a message (``msg``) and a short
    kind (``type``, such as ``missing`` or ``string_type``)."""

    def __init__(self, title: str | None, errors: list[dict[str, Any]]) -> None:
        self.title = title
        self._errors = errors
        super().__init__(self._text())

    def errors(self) -> list[dict[str, Any]]:
        """Each problem: ``{"loc": (...), "msg": "...", "type": "..."}``."""
        return [dict(e) for e in self._errors]

    def _text(self) -> str:
        head = f"invalid {self.title}" if self.title else "invalid value"
        parts = []
        for e in self._errors[:5]:
            loc = ".".join(str(p) for p in e["loc"])
            parts.append(f"{loc}: {e['msg']}" if loc else e["msg"])
        return f"{head}: " + "; ".join(parts)

    def under(self, *loc: Any) -> "ValidationError":
        """This error, its problems located inside ``loc`` (a field of the record that holds
        the one that failed); the title is left for that record to give."""
        self._errors = [{**e, "loc": (*loc, *e["loc"])} for e in self._errors]
        self.title = None
        self.args = (self._text(),)
        return self

    def named(self, title: str) -> "ValidationError":
        """This error, titled with the record it was raised for (unless it has a title)."""
        if not self.title:
            self.title = title
            self.args = (self._text(),)
        return self

    def __reduce__(self) -> Any:
        return (_rebuild, (type(self), self.title, self._errors))


def _rebuild(cls: type[ValidationError], title: str | None, errors: list[dict[str, Any]]) -> "ValidationError":
    err = ValidationError.__new__(cls)
    ValidationError.__init__(err, title, errors)
    return err


class RoleError(ValidationError):
    """A message holds a block its role does not allow.

    Raised when a message is built and on every later change of its role or content.
    """

    def __init__(self, role: str, block_type: str, where: str = "") -> None:
        self.role = role
        self.block_type = block_type
        self.where = where
        allowed = _ROLE_HELP.get(role, "")
        loc = f" ({where})" if where else ""
        super().__init__(
            None,
            [
                {
                    "loc": (),
                    "msg": f"a {role!r} message cannot hold a {block_type!r} block{loc}; {allowed}",
                    "type": "role",
                }
            ],
        )

    def _text(self) -> str:
        return self._errors[0]["msg"] if len(self._errors) == 1 and not self._errors[0]["loc"] else super()._text()

    def __reduce__(self) -> Any:
        return (RoleError, (self.role, self.block_type, self.where))


_ROLE_HELP = {
    "user": "user messages take only 'text' and 'data' blocks",
    "system": "system messages take only 'text' blocks",
    "assistant": "assistant messages take every block type",
}


class InvalidMessageError(ModelwireError, ValueError):
    """A message or block that could not be sent or saved later (not a block, a lone
    surrogate in a string, data nested absurdly deep): refused where it enters."""


class AgentBusyError(ModelwireError, RuntimeError):
    """An agent was asked for a second reply while one is running."""


class EventApplyError(ModelwireError, ValueError):
    """``Msg.append_event`` was given an event it cannot fold into the message.

    The message is left exactly as it was before the call.
    """

    def __init__(self, event: Any, reason: str) -> None:
        self.event = event
        self.reason = reason
        etype = getattr(event, "type", type(event).__name__)
        super().__init__(f"cannot apply {etype} event: {reason}")


class StreamGrammarError(ModelwireError, ValueError):
    """An event stream breaks the grammar of one reply (see ``check_stream``)."""

    def __init__(self, index: int, event_type: str, rule: str) -> None:
        self.index = index
        self.event_type = event_type
        self.rule = rule
        super().__init__(f"event [{index}] {event_type}: {rule}")


class EventDecodeError(ModelwireError, ValueError):
    """A JSON (or JSON-lines) event could not be decoded."""

    def __init__(self, message: str, line: int | None = None) -> None:
        self.line = line
        prefix = f"line {line}: " if line is not None else ""
        super().__init__(prefix + message)


class PartialJSONError(ModelwireError, ValueError):
    """Text fed to a ``PartialJSON`` parser that cannot become one JSON value; ``position``
    is where in the whole text, ``value`` what was parsed before it."""

    def __init__(self, message: str, position: int, value: Any = None) -> None:
        self.position = position
        self.value = value
        super().__init__(message)


# -- provider errors ---------------------------------------------------------------------------
#
# ``error_type`` is one of the SPEC's error types (authentication, permission, rate_limit,
# invalid_request, upstream, connection, internal, setup, unknown), so an agent can put
# it straight into ``REPLY_END.error``.


class ProviderError(ModelwireError):
    """A provider reported an error, or its response could not be used.

    Attributes:
        error_type: the SPEC's error type for this error.
        provider_type: the provider's own error type or code (``overloaded_error``,
            ``tool_use_failed``, ``context_length_exceeded`` ...), when it gave one.
        message: the provider's message (or ours, when the provider gave none).
        status_code / request_id: from the HTTP response, when known.
        events: modelwire events that close what the stream had opened (block ENDs and
            ``MODEL_CALL_END``). A consumer should pass them on before handling the
            error, so that what was already received stays a valid, foldable stream.
    """

    error_type = "unknown"
    rate_limits: dict[str, Any] | None = None
    """What the response's headers said of the caller's rate limits (see
    ``WireProtocol.rate_limits``), when it came with any."""
    partial: Any = None
    """The reply as far as it got (a ``Msg``), when the error ended an agent's reply or a
    ``complete()``."""

    def __init__(
        self,
        message: str,
        *,
        provider_type: str | None = None,
        status_code: int | None = None,
        request_id: str | None = None,
        body: Any = None,
        events: list[AgentEvent] | None = None,
    ) -> None:
        self.message = message
        self.provider_type = provider_type
        self.status_code = status_code
        self.request_id = request_id
        self.body = body
        self.events: list[AgentEvent] = events or []
        super().__init__(message)

    def __str__(self) -> str:
        # Built when shown: the message and request id may be filled in after raising.
        bits = [self.message]
        if self.provider_type:
            bits.insert(0, f"[{self.provider_type}]")
        if self.status_code is not None:
            bits.insert(0, f"HTTP {self.status_code}")
        if self.request_id:
            bits.append(f"(request id {self.request_id})")
        return " ".join(bits)

    def to_error_info(self) -> dict[str, str]:
        """The ``{type, message}`` pair for ``Msg.error`` / ``REPLY_END.error``."""
        return {"type": self.error_type, "message": self.message}

    def mask(self, secrets: Any) -> None:
        """Replace each of ``secrets`` (the credentials the request carried) by ``***``
        wherever this error keeps text: its message, body and arguments, and the metadata of
        the events that close its call (a server that echoes a key, ``invalid x-api-key
        sk-...``, must not show it to whoever reads the error)."""
        from ._secrets import masked

        secrets = [s for s in secrets if s]
        if not secrets:
            return
        self.message = masked(self.message, secrets)
        self.body = masked(self.body, secrets)
        self.args = masked(self.args, secrets)
        for event in self.events:
            metadata = getattr(event, "metadata", None)
            if metadata:
                clean = masked(metadata, secrets)
                if clean != metadata:
                    metadata.clear()  # the dict the event holds (and the call's own metadata)
                    metadata.update(clean)


class AuthenticationError(ProviderError):
    """The provider refused the key (HTTP 401): a missing, wrong or revoked key."""

    error_type = "authentication"


class PermissionDeniedError(ProviderError):
    """The key is good but may not do this (HTTP 403): a model or feature the account lacks."""

    error_type = "permission"


class RateLimitError(ProviderError):
    """The provider asked to slow down (HTTP 429); ``retry_after`` and ``rate_limits`` say how long."""

    error_type = "rate_limit"


class QuotaExceededError(RateLimitError):
    """A limit no wait within the call lifts (HTTP 429 all the same): a request larger than
    the per-minute budget itself, a daily quota or the account's credit spent. Never retried;
    a fallback model may still answer. The provider's words say which."""


class InvalidRequestError(ProviderError):
    """The provider refused the request as malformed (HTTP 400, 404, 422); its words are in the message."""

    error_type = "invalid_request"


class ContextTooLongError(InvalidRequestError):
    """The prompt (plus requested output) does not fit the model's context window."""


class UpstreamError(ProviderError):
    """The provider failed (5xx, overloaded, an error event in the stream)."""

    error_type = "upstream"


class OverloadedError(UpstreamError):
    """The provider is overloaded (Anthropic ``overloaded_error``, HTTP 529); worth retrying."""


class StreamProtocolError(UpstreamError):
    """The provider's stream broke its own protocol (invalid JSON, a delta for a block
    that never started, an event out of place)."""


class IncompleteStreamError(ProviderError):
    """The stream ended before the provider's terminal marker (a dropped connection)."""

    error_type = "connection"


class ConnectionError(ProviderError, builtins.ConnectionError):  # noqa: A001 - the name users expect, namespaced
    """The connection failed or broke; also a built-in ``ConnectionError``."""

    error_type = "connection"


class TimeoutError(ConnectionError, builtins.TimeoutError):  # noqa: A001
    """A timeout fired (``which``: connect, pool, first_byte, chunk, total); also a
    built-in ``TimeoutError``."""

    error_type = "connection"

    def __init__(self, message: str, *, which: str | None = None, seconds: float | None = None, **kw: Any) -> None:
        self.which = which
        self.seconds = seconds
        super().__init__(message, **kw)


class InternalError(ProviderError):
    """A bug in modelwire itself (an adapter met input it should have handled), not the
    provider's fault. With ``MODELWIRE_DEBUG=1`` the original exception is raised instead."""

    error_type = "internal"


class FormatError(ModelwireError, ValueError):
    """A conversation cannot be expressed in a provider's request format.

    Names the index of the offending message (in the list given to the formatter) and
    the rule, so the problem can be fixed before anything is sent. ``code`` is a stable
    name for the rule (``orphan-result``, ``unanswered-call``, ``cache-breakpoints``,
    ``unsupported-media`` ..., ``format`` for the rest), as ``modelwire check`` reports it.
    """

    def __init__(self, index: int | None, rule: str, protocol: str = "", code: str = "format") -> None:
        self.index = index
        self.rule = rule
        self.protocol = protocol
        self.code = code
        where = f"message [{index}]" if index is not None else "request"
        prefix = f"{protocol}: " if protocol else ""
        super().__init__(f"{prefix}{where}: {rule}")


class ConfigError(ModelwireError, ValueError):
    """A model string, profile or configuration file that cannot be used."""


class MissingKeyError(ConfigError):
    """The provider needs an API key and none was given or set (``variable`` names where to set it)."""

    def __init__(self, message: str, variable: str | None = None) -> None:
        super().__init__(message)
        self.variable = variable


class UnknownProtocolError(ConfigError):
    """No wire protocol of that name is built in or registered."""


class UntrustedHostError(ConfigError):
    """A request would carry credentials to a host the user's own configuration does not name
    (a cassette's URL is a file anyone may edit, not a reason to send a key), or across the
    network in plain http; ``host`` names it."""

    def __init__(self, message: str, host: str = "") -> None:
        super().__init__(message)
        self.host = host


class UnsupportedOptionError(ModelwireError, ValueError):
    """An option the chosen provider cannot honour (never dropped silently)."""

    def __init__(self, option: str, provider: str, hint: str = "", model: str | None = None) -> None:
        self.option = option
        self.provider = provider
        self.model = model
        who = f"{provider}:{model}" if model else provider
        super().__init__(f"{who} does not take {option!r}" + (f": {hint}" if hint else ""))


class RefusedOptionError(InvalidRequestError, UnsupportedOptionError):
    """The provider refused an option for this model and said why in words modelwire reads
    (``"thinking.type.disabled" is not supported for this model``): the rule is kept for
    this endpoint and model, so the next such call is refused before it is sent
    (``modelwire models --forget MODEL`` forgets it). Both an :class:`InvalidRequestError`
    (the provider's answer) and an :class:`UnsupportedOptionError` (``option``, ``provider``,
    ``model``)."""

    def __init__(
        self,
        option: str,
        provider: str,
        model: str,
        said: str,
        *,
        provider_type: str | None = None,
        status_code: int | None = None,
        request_id: str | None = None,
        body: Any = None,
    ) -> None:
        message = (
            f"{provider}:{model} does not take {option!r}, the provider says: {said} (kept: the next "
            "such call is refused before it is sent)"
        )
        # Both bases' fields, set here: each base's __init__ takes other arguments.
        self.message, self.provider_type, self.status_code, self.request_id, self.body = (
            message,
            provider_type,
            status_code,
            request_id,
            body,
        )
        self.events: list[AgentEvent] = []
        self.option, self.provider, self.model = option, provider, model
        Exception.__init__(self, message)


# -- errors of the agent, cassettes and decoders ------------------------------------------------


class AgentError(ModelwireError, RuntimeError):
    """The agent was used in a way it cannot follow (resuming a reply that is not parked ...)."""


class TokenCountUnavailableError(ModelwireError, LookupError):
    """The provider has no endpoint that counts a request's input tokens (OpenAI Chat
    Completions, Ollama ...): ``count_tokens(..., estimate=True)`` gives an estimate, marked
    as one."""


class UsageLimitExceeded(ModelwireError, RuntimeError):
    """A reply reached one of its :class:`~modelwire.agent.UsageLimits` before its next model
    call; ``limit`` names it, ``allowed`` and ``used`` say how far."""

    def __init__(self, limit: str, allowed: float, used: float) -> None:
        self.limit = limit
        self.allowed = allowed
        self.used = used
        super().__init__(f"the reply reached its {limit} limit ({used:g} of {allowed:g}) before the next model call")


class StructuredOutputError(ModelwireError, ValueError):
    """A reply asked for a structure (``structured_model=``) whose answer did not validate.
    The reply ends with the error on its message; ``partial`` is that message."""

    partial: Any = None


class ToolArgumentsError(ModelwireError, ValueError):
    """The model's arguments for a tool are not valid JSON or do not fit its schema."""


class ToolError(ModelwireError, RuntimeError):
    """Raised by a tool to end its call as an error result the model reads: ``output`` (a
    string, or a list of strings and data blocks) is the result as it is, with no
    exception name before it."""

    def __init__(self, output: Any) -> None:
        self.output = output
        super().__init__(output if isinstance(output, str) else "the tool failed")


class ToolServerError(ModelwireError, RuntimeError):
    """A tool server (an MCP server) could not be started or reached, or stopped answering:
    ``server`` names it. A reply that needs its tools ends with this error rather than
    going on without them."""

    def __init__(self, server: str, message: str) -> None:
        self.server = server
        super().__init__(f"tool server {server!r}: {message}")


class SourceRefusedError(ModelwireError, ValueError):
    """A media source the request may not use under the :class:`~modelwire.sources.SourcePolicy`
    in effect (a ``file:`` URL, a private address, a redirect there, a source over the size
    limit ...), refused before anything of it was read or sent.

    Attributes:
        index / block: where the source is (the message's index in the request, the block's
            index in it, and ``.k`` for a block inside a tool result or hint).
        url: the source's URL, as the request gave it.
        rule: a stable name for the rule (``files``, ``scheme``, ``host``, ``address``,
            ``redirects``, ``size``, ``timeout``, ``provider-files``).
    """

    def __init__(self, index: int | None, block: str, url: str, rule: str, reason: str) -> None:
        self.index, self.block, self.url, self.rule = index, block, url, rule
        where = f"message [{index}] block [{block}]" if index is not None else f"block [{block}]"
        shown = url if len(url) <= 200 else url[:200] + "..."
        super().__init__(f"{where}: the source {shown} was refused ({rule}): {reason}")


class CassetteError(ModelwireError, AssertionError):
    """A cassette was used wrongly (missing file in replay mode, bad record mode ...)."""


class CassetteMismatchError(CassetteError):
    """A request matched no recorded interaction. The message shows a diff against the nearest one."""


class UnusedInteractionsError(CassetteError):
    """Recorded interactions were never played: the code under test no longer makes them."""


class CassetteSecretError(CassetteError):
    """Recording refused to write a file that still holds a secret."""


class SSELineTooLongError(StreamProtocolError):
    """A line (or an event's data) longer than the decoder's limit: a broken or hostile server."""


class EventStreamError(StreamProtocolError):
    """A frame that breaks AWS's event-stream format (bad CRC, impossible lengths, a cut frame).

    ``frames`` holds the whole frames the same ``feed`` read before the broken one: they
    arrived intact, and the caller passes them on before the error."""

    frames: Sequence[Any] = ()  # set per error by the frame parser (its parts, or its Frame objects)


# -- provider error bodies -> typed errors ------------------------------------------------------
#
# Used for errors inside a stream (Anthropic ``event: error``, an OpenAI chunk with an
# ``error`` object, a Responses ``error`` event) and for HTTP error responses.

# Provider error types and codes -> error class: each protocol declares its provider's
# (``WireProtocol.error_types``, keys in lower case). A body is read first by the table of
# the protocol it came in, then by every registered protocol's (a gateway in front of one
# provider may answer in another's words).

_BY_STATUS: dict[int, type[ProviderError]] = {
    400: InvalidRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: InvalidRequestError,
    407: AuthenticationError,  # the proxy's, not the provider's
    408: TimeoutError,
    413: InvalidRequestError,
    422: InvalidRequestError,
    429: RateLimitError,
    529: OverloadedError,
}

_CONTEXT_WORDS = ("context length", "context window", "maximum context", "prompt is too long", "too many tokens")


# The error tables of the protocols, in the order a body of ``protocol`` reads them (its own
# first): handed over by the protocol registry when it loads (:func:`use_error_tables`), so
# this module never imports it. Each item has ``error_types`` and ``error_phrases``.
_error_tables: Callable[[str | None], Iterable[Any]] | None = None


def use_error_tables(tables: Callable[[str | None], Iterable[Any]]) -> None:
    """Where :func:`error_class` finds the protocols' error types and phrases: ``tables(protocol)``
    yields each protocol's tables, that protocol's first (the registry calls this)."""
    global _error_tables
    _error_tables = tables


def _by_type(code: str, protocol: str | None) -> type[ProviderError] | None:
    for tables in _error_tables(protocol) if _error_tables is not None else ():
        found = tables.error_types.get(code)
        if found is not None:
            return found  # type: ignore[no-any-return]
    return None


def _by_phrase(lowered: str, protocol: str | None) -> type[ProviderError] | None:
    for tables in _error_tables(protocol) if _error_tables is not None else ():
        for phrase, cls in tables.error_phrases.items():
            if phrase in lowered:
                return cls  # type: ignore[no-any-return]
    return None


def _by_status(status: int | None) -> type[ProviderError] | None:
    if status is None:
        return None
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    if status >= 500:
        return UpstreamError
    return InvalidRequestError if status >= 400 else None


def _by_words(lowered: str, protocol: str | None) -> type[ProviderError] | None:
    if not lowered:
        return None
    found = _by_phrase(lowered, protocol)
    if found is None and any(w in lowered for w in _CONTEXT_WORDS):
        found = ContextTooLongError
    return found


def error_class(
    provider_type: str | None, status: int | None, message: str = "", protocol: str | None = None
) -> type[ProviderError]:
    """The error class for a provider error type / code and HTTP status (``protocol``: the
    one the body came in, whose table is read first).

    The provider's own type is read first, then its words, then the status. The words only
    narrow what the type (or, without one, a client-error status) says: a throttle that
    says "Too many tokens" stays a rate limit, a rate limit that can never pass becomes a
    :class:`QuotaExceededError`, an invalid request about the context window a
    :class:`ContextTooLongError`. A type meaning a server failure on a 4xx status is not
    believed (Ollama answers a model without tools 400 ``api_error``): the status says whose
    fault it is."""
    lowered = message.lower()
    by_status = _by_status(status)
    found = _by_type(provider_type.lower(), protocol) if provider_type else None
    if found is UpstreamError and status is not None and 400 <= status < 500:
        found = None
    worded = _by_words(lowered, protocol)
    if found is not None:
        return worded if worded is not None and issubclass(worded, found) else found
    if worded is not None and (
        by_status is None or issubclass(worded, by_status) or not issubclass(by_status, (RateLimitError, TimeoutError))
    ):
        return worded
    return by_status or UpstreamError


def _error_object(body: Any) -> Any:
    """The object that describes the error: ``body["error"]``, or the body itself (with
    ``{"error": "some text"}``, as Ollama's native API and several proxies send, read as its
    message)."""
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return body["error"]
    if isinstance(body, dict) and isinstance(body.get("error"), str) and body["error"]:
        err = {**body, "message": body.get("message") or body["error"]}
        err.pop("error")
        return err
    return body


def _status_in(err: dict[str, Any]) -> int | None:
    """An HTTP status the error object carries (LiteLLM and others send it as a string: "429")."""
    for key in ("status_code", "status", "code"):
        value = err.get(key)
        if isinstance(value, str) and value.isdigit() and 100 <= int(value) <= 599:
            value = int(value)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def error_from_body(
    body: Any, protocol: str, status: int | None = None, request_id: str | None = None
) -> ProviderError:
    """Build the typed error for a provider's error body.

    Understands ``{"type": "error", "error": {"type", "message"}}`` (Anthropic),
    ``{"error": {"message", "type", "code"}}`` (OpenAI and compatibles, whose ``code``
    may be a number, as OpenRouter sends), and a Responses ``error`` event
    (``{"type": "error", "code", "message"}``).
    """
    err = _error_object(body)
    if not isinstance(err, dict):
        return UpstreamError(str(body)[:500], status_code=status, request_id=request_id, body=body)
    message = str(err.get("message") or err.get("detail") or "the provider reported an error")
    if status == 407:
        message = (
            "the HTTP proxy wants credentials (HTTP 407; put them in the proxy URL, "
            f"HTTPS_PROXY=http://user:password@host:port): {message}"
        )
    code = err.get("code")
    ptype = err.get("type")
    if isinstance(err.get("status"), str) and err["status"]:
        ptype = err["status"]  # Google: {"code": 429, "status": "RESOURCE_EXHAUSTED"}
    provider_type = (
        str(code)
        if isinstance(code, str) and code
        else (ptype if isinstance(ptype, str) and ptype != "error" else None)
    )
    if provider_type is None and code is not None:
        provider_type = str(code)
    if status is None:
        status = _status_in(err)
    cls = error_class(provider_type if not str(provider_type).isdigit() else None, status, message, protocol)
    return cls(message, provider_type=provider_type, status_code=status, request_id=request_id, body=body)
