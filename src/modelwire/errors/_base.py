"""The errors of data, configuration, the agent, tools and cassettes: :class:`ModelwireError`
and every error but a provider's (see the package's docstring for the tree)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..message import Msg


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

    args: tuple[Any, ...]  # rewritten when the error is located or titled after it was raised

    def __init__(self, title: str | None, errors: list[dict[str, Any]]) -> None:
        self.title: str | None = title
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
        self.option: str = option
        self.provider: str = provider
        self.model: str | None = model
        who = f"{provider}:{model}" if model else provider
        super().__init__(f"{who} does not take {option!r}" + (f": {hint}" if hint else ""))


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

    partial: Msg | None = None


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

    index: int | None
    block: str
    url: str
    rule: str

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
