"""Wire protocols: each one defined in one place and registered once.

A protocol (:class:`WireProtocol`) knows its adapter (stream -> events), its formatter
(messages -> payload), how a request is built (URL, auth headers, where ``model`` and
``stream`` go), how options map onto it, how its error bodies map to typed errors, what it
can do (:class:`Capabilities`), how to recognise its URLs in a cassette, and how the test
server fakes it. Models, the agent, the CLI, cassettes and the test server ask this
registry and never name a protocol.

Every protocol is found the same way, through the ``modelwire.protocols`` entry-point group;
the built-in ones (``anthropic``, ``openai-chat``, ``openai-responses``, ``gemini``,
``bedrock-converse``, ``ollama``) are declared in modelwire's own ``pyproject.toml`` exactly as
a plugin declares its own::

    [project.entry-points."modelwire.protocols"]
    myproto = "my_package.protocol:PROTOCOL"     # a WireProtocol instance

    [project.entry-points."modelwire.presets"]
    myprovider = "my_package.protocol:PROTOCOL"  # a preset in PROTOCOL.presets, by its name

A protocol brings its providers (``PROTOCOL.presets``), so ``load_model("myprovider:model")``
works at once. The ``modelwire.presets`` group names which protocol brings each preset, so
resolving a model string loads only the protocol it uses; a plugin that leaves it out still
works (its protocol is loaded to look). :func:`register` adds one at run time.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Any, Iterator, Mapping

from ..errors import ConfigError, UnknownProtocolError, use_error_tables
from ..message._provenance import add_claimer
from ._caps import ModelCapabilities
from ._protocol import (
    BatchState,
    Capabilities,
    FileBody,
    HTTPCall,
    ModelOptions,
    Preset,
    UploadedFile,
    WireProtocol,
    deep_merge,
    multipart,
)

if TYPE_CHECKING:  # pragma: no cover
    from ..adapters import BaseAdapter, StreamDecoder
    from ..event import AgentEvent
    from ..formatters import Formatter

__all__ = [
    "WireProtocol",
    "Capabilities",
    "ModelCapabilities",
    "Preset",
    "ModelOptions",
    "get_protocol",
    "protocol_names",
    "credentials_for",
    "get_adapter",
    "get_formatter",
    "decode_sse",
    "register",
    "find_preset",
    "all_presets",
    "protocol_for_url",
    "reading_order",
    "sniff",
    "replay_keys",
    "deep_merge",
    "HTTPCall",
    "FileBody",
    "BatchState",
    "UploadedFile",
    "multipart",
    "ENTRY_POINT_GROUP",
    "PRESET_GROUP",
]

ENTRY_POINT_GROUP = "modelwire.protocols"
PRESET_GROUP = "modelwire.presets"
_DISTRIBUTION = "modelwire"

_loaded: dict[str, WireProtocol] = {}
_registered: dict[str, WireProtocol] = {}
# The entry points of the two groups: modelwire's own (read from its one distribution, which
# is cheap) and every installed distribution's (a scan of them all, done only when needed).
_own_entry_points: dict[str, dict[str, Any]] | None = None
_entry_points: dict[str, dict[str, Any]] | None = None
_presets: dict[str, Preset] = {}


def _own(group: str) -> dict[str, Any]:
    """modelwire's own entry points of a group: the built-in protocols and presets."""
    global _own_entry_points
    if _own_entry_points is None:
        from importlib.metadata import PackageNotFoundError, distribution

        try:
            found = distribution(_DISTRIBUTION).entry_points
        except PackageNotFoundError:
            raise UnknownProtocolError(
                "modelwire's entry points, which register its protocols, are missing: install it"
                " (pip install modelwire, or pip install -e . in a checkout) rather than adding its source to the path"
            ) from None
        _own_entry_points = {
            g: {ep.name: ep for ep in found if ep.group == g} for g in (ENTRY_POINT_GROUP, PRESET_GROUP)
        }
    return _own_entry_points[group]


def _installed(group: str) -> dict[str, Any]:
    """Every installed distribution's entry points of a group (modelwire's own included)."""
    global _entry_points
    if _entry_points is None:
        from importlib.metadata import entry_points

        _entry_points = {g: {ep.name: ep for ep in entry_points(group=g)} for g in (ENTRY_POINT_GROUP, PRESET_GROUP)}
    return _entry_points[group]


def _plugins() -> dict[str, Any]:
    """The protocols other distributions bring (a built-in name is never taken over)."""
    own = _own(ENTRY_POINT_GROUP)
    return {name: ep for name, ep in _installed(ENTRY_POINT_GROUP).items() if name not in own}


def register(protocol: WireProtocol) -> WireProtocol:
    """Register a protocol at run time (it wins over a built-in or plugin of the same name)."""
    if not isinstance(protocol, WireProtocol) or not protocol.name:
        raise TypeError("register() takes a WireProtocol instance with a name")
    _registered[protocol.name] = protocol
    _presets.clear()
    return protocol


def _entry_protocol(entry: Any) -> WireProtocol:
    found = entry.load()
    if not isinstance(found, WireProtocol):
        raise UnknownProtocolError(
            f"the {entry.group} entry point {entry.name!r} gives {type(found).__name__}, not a WireProtocol"
        )
    return found


def get_protocol(name: str) -> WireProtocol:
    """The protocol of that name: registered, built in, or from an installed plugin."""
    found = _registered.get(name) or _loaded.get(name)
    if found is not None:
        return found
    entry = _own(ENTRY_POINT_GROUP).get(name) or _plugins().get(name)
    if entry is None:
        raise UnknownProtocolError(f"unknown protocol {name!r}; known: {', '.join(protocol_names())}")
    found = _entry_protocol(entry)
    if found.name != name:
        raise UnknownProtocolError(
            (
                f"the {ENTRY_POINT_GROUP} entry point {name!r} gives a protocol named {found.name!r}: the "
                "two names must be the same"
            )
        )
    _loaded[name] = found
    return found


def find_preset(name: str) -> Preset | None:
    """The preset of that name, loading only the protocol that brings it (None: no such preset).

    A preset is looked for among the protocols registered at run time, then through the
    ``modelwire.presets`` entry points (modelwire's own, then every distribution's), and last
    in the protocols of plugins that do not list their presets there.
    """
    found = _presets.get(name)
    if found is not None:
        return found
    for protocol in _registered.values():
        found = _preset_of(protocol, name)
        if found is not None:
            return found
    entry = _own(PRESET_GROUP).get(name) or _installed(PRESET_GROUP).get(name)
    if entry is not None:
        found = _preset_of(_entry_protocol(entry), name)
        if found is None:
            raise UnknownProtocolError(
                f"the {PRESET_GROUP} entry point {name!r} names {entry.value}, which brings no preset of that name"
            )
        return found
    return all_presets().get(name)


def _preset_of(protocol: WireProtocol, name: str) -> Preset | None:
    preset = next((p for p in protocol.presets if p.name == name), None)
    return _checked(protocol, preset) if preset is not None else None


def _checked(protocol: WireProtocol, preset: Preset) -> Preset:
    """A preset its protocol brings, checked once (its protocol's name, its dialect: a
    typo is an error at its first use), then known."""
    if _presets.get(preset.name) is not preset:
        if preset.protocol != protocol.name:
            raise UnknownProtocolError(
                f"the preset {preset.name!r} says its protocol is {preset.protocol!r}, but {protocol.name!r} brings it"
            )
        protocol.check_dialect(preset)
        _presets[preset.name] = preset
    return preset


def all_presets() -> dict[str, Preset]:
    """Every preset, by name: those of every protocol (loaded to list them), in protocol order."""
    out: dict[str, Preset] = {}
    for protocol in _protocols():
        for preset in protocol.presets:
            out[preset.name] = _checked(protocol, preset)
    return out


def _claim(block_type: str, fields: Mapping[str, Any], block_id: str) -> str | None:
    """The protocol that says a block recording no origin is its own (``WireProtocol.claims``)."""
    for name, claims in _claimants().get(block_type, ()):
        if claims(block_type, fields, block_id):
            return name
    return None


_claims_of: tuple[Any, dict[str, list[tuple[str, Any]]]] = (
    None,
    {},
)  # (the protocols, those that claim blocks, by type)


def _claimants() -> dict[str, list[tuple[str, Any]]]:
    """The protocols that claim blocks (their own ``claims``), as (name, claims) by the block
    types they claim (``claimed_types``): asked for every call and thinking block a formatter
    meets without an origin."""
    global _claims_of
    loaded = _protocols()
    if _claims_of[0] is not loaded:
        by_type: dict[str, list[tuple[str, Any]]] = {}
        for p in loaded:
            if type(p).claims is not WireProtocol.claims:
                for block_type in p.claimed_types:
                    by_type.setdefault(block_type, []).append((p.name, p.claims))
        _claims_of = (loaded, by_type)
    return _claims_of[1]


add_claimer(_claim)


# (what they were read from, the names, the protocols once loaded): read again only when a
# protocol is registered or the entry points are read again. Formatters ask for each block
# whose origin a protocol may claim.
_names: tuple[Any, list[str], list[WireProtocol] | None] = (None, [], None)


def _current() -> tuple[Any, list[str], list[WireProtocol] | None]:
    global _names
    source = (_entry_points, *_registered.values())
    if _names[0] != source or _entry_points is None:
        names = list(dict.fromkeys([*_own(ENTRY_POINT_GROUP), *_plugins(), *_registered]))
        _names = ((_entry_points, *_registered.values()), names, None)
    return _names


def protocol_names() -> list[str]:
    """Every protocol that can be used: built in, from installed plugins, and registered."""
    return list(_current()[1])


def credentials_for(kind: str, protocol: str | None = None) -> Any:
    """New credentials of ``kind`` (a preset's ``dialect["credentials"]``), from the protocol
    that declares it in its ``credential_kinds``: the preset's own ``protocol`` first, then the
    built-in protocols, then plugins (a plugin never takes a built-in kind, nor the headers
    and body it signs). A protocol that cannot be loaded declares nothing."""
    from ._records import _load

    declared: set[str] = set()
    names = [protocol] if protocol else []
    names += [*_own(ENTRY_POINT_GROUP), *protocol_names()]
    for name in dict.fromkeys(names):
        try:
            wire = get_protocol(name)
        except Exception:  # noqa: BLE001 - a broken plugin must not break another's signing
            continue
        path = wire.credential_kinds.get(kind)
        if path is not None:
            return _load(path)()
        declared.update(wire.credential_kinds)
    known = ", ".join(sorted(declared)) or "none"
    raise ConfigError(f"unknown credential kind {kind!r}; the protocols declare: {known}")


def _protocols() -> list[WireProtocol]:
    """Every protocol, loaded."""
    global _names
    source, names, loaded = _current()
    if loaded is None:
        loaded = [get_protocol(name) for name in names]
        _names = (source, names, loaded)
    return loaded


def reading_order(protocol: str | None) -> Iterator[WireProtocol]:
    """Every protocol, ``protocol`` first: the order a provider's words (its error types and
    phrases, its refusals) are read in, since a gateway in front of one provider may answer in
    another's words. One that cannot be loaded has none to read."""
    names = [protocol] if protocol else []
    names += [n for n in protocol_names() if n != protocol]
    for name in names:
        try:
            yield get_protocol(name)
        except Exception:  # noqa: BLE001 - an unknown or broken protocol has no words to read
            continue


use_error_tables(reading_order)


def replay_keys() -> frozenset[str]:
    """Every protocol's ``replay_keys``: the block extras that only their maker can check."""
    return frozenset(key for protocol in _protocols() for key in protocol.replay_keys)


def environ_prefixes() -> tuple[str, ...]:
    """Every protocol's ``environ_prefixes``: the variables a provider's own sign-in reads,
    which a test meant to reach only a local server runs without."""
    return tuple(dict.fromkeys(prefix for protocol in _protocols() for prefix in protocol.environ_prefixes))


def model_id_prefixes() -> tuple[str, ...]:
    """Every protocol's ``model_id_prefix`` (a regular expression), those that can be loaded."""
    return tuple(dict.fromkeys(p.model_id_prefix for p in reading_order(None) if p.model_id_prefix))


def signed_schemes() -> dict[str, re.Pattern[str]]:
    """Every protocol's ``signed_schemes`` (those that can be loaded), each scheme prefix
    upper-cased with its pattern compiled: what :func:`modelwire._secrets.sent_secrets`
    reads in an ``Authorization`` header of a scheme it does not know."""
    declared = tuple((k.upper(), v) for p in reading_order(None) for k, v in p.signed_schemes.items())
    return _compiled_schemes(declared)


@functools.lru_cache(maxsize=8)
def _compiled_schemes(declared: tuple[tuple[str, str], ...]) -> dict[str, re.Pattern[str]]:
    return {scheme: re.compile(pattern) for scheme, pattern in declared}


def sniff(body: bytes) -> str | None:
    """The protocol whose stream this body looks like (the first few KiB are enough), to
    name the mistake when a body is read with the wrong protocol."""
    head = body[:8192]
    for protocol in _protocols():
        if any(mark in head for mark in protocol.signature):
            return protocol.name
    return None


def protocol_for_url(url: str) -> WireProtocol | None:
    """The protocol whose requests go to this URL, if one recognises it."""
    for protocol in _protocols():
        if protocol.matches_url(url):
            return protocol
    return None


def get_adapter(protocol: str) -> type[BaseAdapter]:
    """The adapter class of a wire protocol."""
    return get_protocol(protocol).adapter_class()


def get_formatter(protocol: str) -> type[Formatter]:
    """The formatter class of a wire protocol."""
    return get_protocol(protocol).formatter_class()


def decode_sse(protocol: str, body: bytes, reply_id: str, **adapter_options: Any) -> list[AgentEvent]:
    """Decode a whole response body into modelwire events (one model call), in the framing
    the protocol streams (SSE, AWS event stream or NDJSON).

    On a provider or stream error the :class:`~modelwire.errors.ProviderError` is raised
    with ``events`` holding every event produced, closing events included.
    """
    proto = get_protocol(protocol)
    decoder: StreamDecoder = proto.decoder(proto.adapter_class()(reply_id, **adapter_options), keep=True)
    try:
        decoder.feed(body)
        decoder.close()
    except Exception as err:
        if hasattr(err, "events"):
            setattr(err, "events", decoder.events)  # noqa: B010 - any error that carries events
        raise
    return decoder.events
