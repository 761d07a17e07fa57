"""Messages -> provider request payloads: one pure, synchronous module per wire protocol.

    from modelwire.formatters import get_formatter

    payload = get_formatter("anthropic")(cache_system=True).format(messages, tools, tool_choice="auto")

Each formatter returns a plain dict (no ``model`` and no sampling options: the models
layer adds those). A conversation a provider cannot take raises
:class:`~modelwire.errors.FormatError`, naming the message index and the rule.
"""

from __future__ import annotations

import importlib
from typing import Any

from ._common import ToolSpec

__all__ = ["ToolSpec", "PROTOCOLS", "get_formatter"]

PROTOCOLS = {
    "anthropic": ("modelwire.formatters.anthropic", "AnthropicFormatter"),
    "openai-chat": ("modelwire.formatters.openai_chat", "OpenAIChatFormatter"),
    "openai-responses": ("modelwire.formatters.openai_responses", "OpenAIResponsesFormatter"),
}


def get_formatter(protocol: str) -> Any:
    """The formatter class for a wire protocol name."""
    try:
        module, name = PROTOCOLS[protocol]
    except KeyError:
        raise ValueError(f"unknown protocol {protocol!r}; known: {', '.join(PROTOCOLS)}") from None
    return getattr(importlib.import_module(module), name)
