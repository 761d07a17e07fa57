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

from ._base import (
    AgentBusyError,
    AgentError,
    CassetteError,
    CassetteMismatchError,
    CassetteSecretError,
    ConfigError,
    EventApplyError,
    EventDecodeError,
    FormatError,
    InvalidMessageError,
    MissingKeyError,
    ModelwireError,
    PartialJSONError,
    RoleError,
    SourceRefusedError,
    StreamGrammarError,
    StructuredOutputError,
    TokenCountUnavailableError,
    ToolArgumentsError,
    ToolError,
    ToolServerError,
    UnknownProtocolError,
    UnsupportedOptionError,
    UntrustedHostError,
    UnusedInteractionsError,
    UsageLimitExceeded,
    ValidationError,
    debug_enabled as debug_enabled,  # not public: the adapters and models ask it whether a bug surfaces as itself
)
from ._provider import (
    AuthenticationError,
    ConnectionError,
    ContextTooLongError,
    EventStreamError,
    IncompleteStreamError,
    InternalError,
    InvalidRequestError,
    OverloadedError,
    PermissionDeniedError,
    ProviderError,
    QuotaExceededError,
    RateLimitError,
    RefusedOptionError,
    SSELineTooLongError,
    StreamProtocolError,
    TimeoutError,
    UpstreamError,
)
from ._mapping import (
    error_class,
    error_from_body,
    use_error_tables,
)

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


# Each error's home is this package, wherever its code sits: ``repr``, pickles and the API
# reference name ``modelwire.errors.RateLimitError``, the place a user imports it from.
def _homed_here() -> None:
    for name in __all__:
        value = globals()[name]
        if isinstance(value, type):
            value.__module__ = __name__


_homed_here()
del _homed_here
