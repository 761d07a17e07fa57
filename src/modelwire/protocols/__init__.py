"""Wire protocols: each one defined in one place and registered once.

A protocol (:class:`WireProtocol`) knows its adapter (stream -> events), its formatter
(messages -> payload), how a request is built (URL, auth headers, where ``model`` and
``stream`` go), how options map onto it, how its error bodies map to typed errors, what it
can do (:class:`Capabilities`), how to recognise its URLs in a cassette, and how the test
server fakes it. Models, the agent, the CLI, cassettes and the test server ask this
registry and never name a protocol.

Built in: ``anthropic``, ``openai-chat``, ``openai-responses``, ``gemini``, ``bedrock-converse``, ``ollama``. Third parties add one
without editing modelwire through the ``modelwire.protocols`` entry-point group::

    [project.entry-points."modelwire.protocols"]
    myproto = "my_package.protocol:PROTOCOL"     # a WireProtocol instance

or, at run time, :func:`register`. A protocol may bring presets (``PROTOCOL.presets``),
so ``load_model("myprovider:model")`` works at once.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..errors import UnknownProtocolError
from ..message._provenance import add_claimer
from ._caps import ModelCapabilities
from ._protocol import Capabilities, ModelOptions, Preset, WireProtocol, deep_merge

__all__ = [
    "WireProtocol",
    "Capabilities",
    "ModelCapabilities",
    "Preset",
    "ModelOptions",
    "get_protocol",
    "protocol_names",
    "register",
    "plugin_presets",
    "protocol_for_url",
    "sniff",
    "deep_merge",
    "ENTRY_POINT_GROUP",
]

ENTRY_POINT_GROUP = "modelwire.protocols"

_BUILTIN = {
    "anthropic": "modelwire.protocols.anthropic:PROTOCOL",
    "openai-chat": "modelwire.protocols.openai_chat:PROTOCOL",
    "openai-responses": "modelwire.protocols.openai_responses:PROTOCOL",
    "gemini": "modelwire.protocols.gemini:PROTOCOL",
    "bedrock-converse": "modelwire.protocols.bedrock:PROTOCOL",
    "ollama": "modelwire.protocols.ollama:PROTOCOL",
}
_loaded: dict[str, WireProtocol] = {}
_registered: dict[str, WireProtocol] = {}
_entry_points: dict[str, Any] | None = None


def _plugins() -> dict[str, Any]:
    """Entry points of the ``modelwire.protocols`` group, read once (on first need)."""
    global _entry_points
    if _entry_points is None:
        from importlib.metadata import entry_points

        _entry_points = {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}
    return _entry_points


def register(protocol: WireProtocol) -> WireProtocol:
    """Register a protocol at run time (it wins over a built-in or plugin of the same name)."""
    if not isinstance(protocol, WireProtocol) or not protocol.name:
        raise TypeError("register() takes a WireProtocol instance with a name")
    _registered[protocol.name] = protocol
    return protocol


def get_protocol(name: str) -> WireProtocol:
    """The protocol of that name: registered, built in, or from an installed plugin."""
    found = _registered.get(name) or _loaded.get(name)
    if found is not None:
        return found
    if name in _BUILTIN:
        from ._protocol import _load

        found = _load(_BUILTIN[name])
    else:
        entry = _plugins().get(name)
        if entry is None:
            raise UnknownProtocolError(f"unknown protocol {name!r}; known: {', '.join(protocol_names())}")
        found = entry.load()
        if not isinstance(found, WireProtocol):
            raise UnknownProtocolError(f"the {ENTRY_POINT_GROUP} entry point {name!r} gives {type(found).__name__}, not a WireProtocol")
    _loaded[name] = found
    return found


def _claim(block_type: str, fields: Mapping[str, Any], block_id: str) -> str | None:
    """The protocol that says a block recording no origin is its own (``WireProtocol.claims``)."""
    for name in protocol_names():
        if get_protocol(name).claims(block_type, fields, block_id):
            return name
    return None


add_claimer(_claim)


def protocol_names() -> list[str]:
    """Every protocol that can be used: built in, registered and from installed plugins."""
    return list(dict.fromkeys([*_BUILTIN, *_plugins(), *_registered]))


def plugin_presets() -> dict[str, Preset]:
    """Presets brought by protocols other than the built-in ones."""
    out: dict[str, Preset] = {}
    for name in protocol_names():
        if name in _BUILTIN and name not in _registered:
            continue
        for preset in get_protocol(name).presets:
            out[preset.name] = preset
    return out


def sniff(body: bytes) -> str | None:
    """The protocol whose stream this body looks like (the first few KiB are enough), to
    name the mistake when a body is read with the wrong protocol."""
    head = body[:8192]
    for name in protocol_names():
        protocol = get_protocol(name)
        if any(mark in head for mark in protocol.signature):
            return name
    return None


def protocol_for_url(url: str) -> WireProtocol | None:
    """The protocol whose requests go to this URL, if one recognises it."""
    for name in protocol_names():
        protocol = get_protocol(name)
        if protocol.matches_url(url):
            return protocol
    return None
