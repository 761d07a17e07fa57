"""modelwire: plug real LLM providers into agents.

``import modelwire`` is cheap: names are loaded on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._version import __version__

_LAZY = {
    "Msg": "modelwire.message",
    "UserMsg": "modelwire.message",
    "AssistantMsg": "modelwire.message",
    "SystemMsg": "modelwire.message",
    "check_stream": "modelwire.event",
    "load_model": "modelwire.models",
    "ModelOptions": "modelwire.models",
    "wrap": "modelwire.models",
    "Middleware": "modelwire.models",
    "Agent": "modelwire.agent",
    "tool": "modelwire.agent",
}

__all__ = ["__version__", *_LAZY]

if TYPE_CHECKING:  # pragma: no cover - what a type checker sees of the lazy names
    from .agent import Agent as Agent, tool as tool
    from .event import check_stream as check_stream
    from .message import AssistantMsg as AssistantMsg, Msg as Msg, SystemMsg as SystemMsg, UserMsg as UserMsg
    from .models import Middleware as Middleware, ModelOptions as ModelOptions, load_model as load_model, wrap as wrap


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'modelwire' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
