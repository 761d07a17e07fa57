"""Cassettes that notice when the provider changed: ``recheck`` sends each recorded request
again, decodes the live answer with the same adapter, and compares the two as modelwire
sees them. Text and ids may differ between two answers; their structure may not.

What is compared (:class:`Shape`): the HTTP status and error type; the kinds of the
blocks and their order; each tool call's name and the keys of its arguments; the stop
reason; which usage fields the provider reported; the model as answered and its
``system_fingerprint``; whether thinking came, and signed; whether the events pass the
stream grammar; the fields the provider's events carry and their event types; and what the
adapter did not read (``MODEL_CALL_END.metadata["unread_fields"]``). Each difference is a
:class:`Drift` with a severity: ``info`` (a new field, a new event type that carries no
content, a new model snapshot), ``warning`` (a changed stop reason, a usage field gone or
new, another block order, a new event type that carries content, a reply that decoded to
nothing or counted no tokens beside fields modelwire does not read), ``error`` (an HTTP
error, a missing block kind, a stream the grammar refuses).

A cassette also says where it came from (``provenance``: when it was recorded, by which
modelwire, from which endpoint, which models answered, and whether it is ``live``,
recorded, or ``derived``, written or edited by hand). ``update=True`` rewrites a live
cassette from the answers it got; a derived one is never overwritten.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Iterable, Sequence
from urllib.parse import urlsplit

from ._cassette import Cassette, Interaction, response_record

__all__ = [
    "Shape",
    "Drift",
    "RecheckReport",
    "answer_shape",
    "compare",
    "recheck",
    "recheck_async",
    "provenance_for",
    "SEVERITIES",
]

SEVERITIES = ("info", "warning", "error")
_FIELD_DEPTH = 3  # how deep the provider's fields are compared ("message.usage.input_tokens")
_FREE_KEYS = frozenset(
    {"args", "arguments", "input", "partialArgs", "functionCall.args"}
)  # a tool's own argument names vary


@dataclass(frozen=True)
class Shape:
    """One answer's structure, as modelwire decodes it (text and ids left out)."""

    status: int
    error: str | None = None  # the error's class and the provider's type, for a status >= 400 or a broken stream
    blocks: tuple[str, ...] = ()  # block kinds in order: text, thinking, data, tool_call
    tools: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (name, its argument keys) per call
    stop_reason: str | None = None
    usage_fields: tuple[str, ...] = ()
    model: str | None = None
    fingerprint: str | None = None
    thinking: bool = False
    signed: bool = False
    grammar: str | None = None  # what the grammar refused, or None
    fields: frozenset[str] = frozenset()
    # The provider's event types (a ``type`` field), and those of them that carried content
    # (a non-empty string beside their labels): a new one of these may carry the reply.
    event_types: frozenset[str] = frozenset()
    content_types: frozenset[str] = frozenset()
    unread: tuple[str, ...] = ()  # what the adapter noted it did not read, when it explains an empty reply


@dataclass(frozen=True)
class Drift:
    """One difference between a recorded answer and the live one."""

    cassette: str
    index: int  # the interaction
    severity: str
    what: str
    recorded: Any = None
    live: Any = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        both = (
            f": recorded {self.recorded!r}, live {self.live!r}"
            if self.recorded is not None or self.live is not None
            else ""
        )
        return f"{self.severity.upper():7} {self.cassette} [{self.index}] {self.what}{both}"


@dataclass
class RecheckReport:
    """What a recheck found, over every cassette it read."""

    drifts: list[Drift] = field(default_factory=list)
    calls: int = 0  # requests sent
    checked: list[str] = field(default_factory=list)  # cassettes read
    updated: list[str] = field(default_factory=list)  # cassettes rewritten (update=True)
    skipped: list[str] = field(default_factory=list)  # why an interaction or a cassette was not checked
    refused: list[str] = field(default_factory=list)  # requests not sent: their host may not have the key
    stopped: str | None = None  # the budget or the call limit that ended the run early
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    cost_complete: bool = True  # every answer so far had a price (a cost limit needs it)

    @property
    def exit_status(self) -> int:
        """0: nothing above info; 1: warnings; 2: errors (or a run the budget ended)."""
        worst = max((SEVERITIES.index(d.severity) for d in self.drifts), default=0)
        return 2 if worst == 2 or self.stopped or self.refused else worst

    def to_dict(self) -> dict[str, Any]:
        return {
            "exit_status": self.exit_status,
            "calls": self.calls,
            "checked": self.checked,
            "updated": self.updated,
            "skipped": self.skipped,
            "refused": self.refused,
            "stopped": self.stopped,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost": self.cost,
            "drifts": [d.to_dict() for d in self.drifts],
        }

    def lines(self) -> list[str]:
        out = [str(d) for d in sorted(self.drifts, key=lambda d: (-SEVERITIES.index(d.severity), d.cassette, d.index))]
        out += [f"SKIPPED {why}" for why in self.skipped]
        out += [f"REFUSED {why}" for why in self.refused]
        if self.stopped:
            out.append(f"STOPPED {self.stopped}")
        counts = {s: sum(d.severity == s for d in self.drifts) for s in SEVERITIES}
        out.append(
            f"{len(self.checked)} cassette(s), {self.calls} call(s), {self.input_tokens} input and "
            f"{self.output_tokens} output tokens:"
            f" {counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} info"
        )
        return out


# -- the shape of an answer ----------------------------------------------------------------


def answer_shape(protocol: str, status: int, body: bytes) -> Shape:
    """The structure of one answer of ``protocol`` (its status and whole body)."""
    from ..protocols import get_protocol

    wire = get_protocol(protocol)
    if status >= 400:
        err = wire.error(_json_or_message(body, status), status=status)
        return Shape(status, error=_error_name(err))
    from ..protocols import decode_sse
    from ..errors import ProviderError

    error = None
    try:
        events = decode_sse(protocol, body, "recheck")
    except ProviderError as err:
        events, error = list(getattr(err, "events", []) or []), _error_name(err)
    payloads = _payloads(wire.framing, body)
    shape = _shape_of(status, events, error, _fields(payloads))
    types, content = _event_types(payloads)
    return replace(shape, event_types=types, content_types=content)


def _json_or_message(body: bytes, status: int) -> dict[str, Any]:
    try:
        data = json.loads(body or b"{}")
    except ValueError:
        data = None
    return (
        data
        if isinstance(data, dict) and data
        else {"error": {"message": body[:300].decode("utf-8", "replace") or f"HTTP {status}"}}
    )


def _error_name(err: Any) -> str:
    kind = getattr(err, "provider_type", None)
    return type(err).__name__ + (f" ({kind})" if kind else "")


def _shape_of(status: int, events: Sequence[Any], error: str | None, fields: frozenset[str]) -> Shape:
    blocks, tools, signed, end = _walked(events)
    meta = end.metadata if end is not None else {}
    usage = meta.get("usage")
    return Shape(
        status,
        error=error,
        blocks=blocks,
        tools=tools,
        stop_reason=(end.provider_stop_reason or end.stop_reason) if end is not None else None,
        usage_fields=tuple(sorted(k for k, v in usage.items() if v is not None)) if isinstance(usage, dict) else (),
        model=str(meta["model"]) if meta.get("model") else None,
        fingerprint=str(meta["system_fingerprint"]) if meta.get("system_fingerprint") else None,
        thinking="thinking" in blocks,
        signed=signed,
        grammar=_grammar_problem(events) if error is None else None,
        fields=fields,
        unread=tuple(sorted(meta.get("unread_fields") or ())),
    )


_KINDS = {
    "TEXT_BLOCK_START": "text",
    "THINKING_BLOCK_START": "thinking",
    "DATA_BLOCK_START": "data",
    "TOOL_CALL_START": "tool_call",
}


def _walked(events: Sequence[Any]) -> tuple[tuple[str, ...], tuple[tuple[str, tuple[str, ...]], ...], bool, Any]:
    """The block kinds in order, each call's name and argument keys, whether anything came
    signed, and the MODEL_CALL_END (None when the call never ended)."""
    from ..event._calls import tool_calls_in
    from ..protocols import replay_keys

    signed_keys = replay_keys()
    blocks: list[str] = []
    signed = False
    end = None
    for event in events:
        etype = event.type
        if etype in _KINDS:
            blocks.append(_KINDS[etype])
        if etype.endswith("_END") and isinstance(getattr(event, "extras", None), dict):
            signed = signed or any(event.extras.get(key) for key in signed_keys)
        if etype == "MODEL_CALL_END":
            end = event
    return tuple(blocks), tuple((name, _keys(arguments)) for _, name, arguments in tool_calls_in(events)), signed, end


def _keys(arguments: str) -> tuple[str, ...]:
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        return ("<not JSON>",)
    return tuple(sorted(value)) if isinstance(value, dict) else (f"<{type(value).__name__}>",)


def _grammar_problem(events: Sequence[Any]) -> str | None:
    """What the stream grammar refuses in one model call's events (wrapped in a reply)."""
    from ..errors import StreamGrammarError
    from ..event import ReplyEndEvent, ReplyStartEvent, check_stream

    if not events:
        return "no events"
    reply = getattr(events[0], "reply_id", "recheck")
    try:
        check_stream(
            [
                ReplyStartEvent(session_id="recheck", reply_id=reply, name="recheck"),
                *events,
                ReplyEndEvent(session_id="recheck", reply_id=reply),
            ]
        )
    except StreamGrammarError as exc:
        return str(exc)
    return None


def _fields(payloads: Iterable[Any]) -> frozenset[str]:
    """Every field path the provider's events carry, to ``_FIELD_DEPTH`` (lists are
    transparent; a tool's own argument names are left out)."""
    paths: set[str] = set()
    for payload in payloads:
        _walk(payload, "", 0, paths)
    return frozenset(paths)


def _event_types(payloads: Iterable[Any]) -> tuple[frozenset[str], frozenset[str]]:
    """The events' types (their ``type`` field), and the types of those that carried content."""
    from ..adapters._unread import carries_text

    types: set[str] = set()
    content: set[str] = set()
    for payload in payloads:
        kind = payload.get("type") if isinstance(payload, dict) else None
        if isinstance(kind, str):
            types.add(kind)
            if kind not in content and carries_text({k: v for k, v in payload.items() if k != "type"}):
                content.add(kind)
    return frozenset(types), frozenset(content)


def _payloads(framing: str, body: bytes) -> list[Any]:
    if framing == "aws-eventstream":
        from ..adapters._eventstream import EventStreamDecoder

        try:
            frames = EventStreamDecoder().feed(body)
        except Exception:  # noqa: BLE001 - a broken stream has its finding from the decoder already
            return []
        raw = [frame.payload for frame in frames]
    elif framing == "ndjson":
        raw = [line for line in body.splitlines() if line.strip()]
    else:
        from ..adapters._sse import SSEDecoder

        decoder = SSEDecoder()
        try:
            raw = [
                event.data for event in decoder.feed(body) + decoder.close()
            ]  # multi-line data joined, as a client reads it
        except Exception:  # noqa: BLE001 - as above
            return []
    out = []
    for item in raw:
        try:
            out.append(json.loads(item))
        except ValueError:
            continue  # [DONE] and other markers
    return out


def _walk(value: Any, path: str, depth: int, paths: set[str]) -> None:
    if isinstance(value, list):
        for item in value:
            _walk(item, path, depth, paths)
        return
    if not isinstance(value, dict) or depth >= _FIELD_DEPTH:
        return
    for key, item in value.items():
        here = f"{path}.{key}" if path else str(key)
        if key in _FREE_KEYS or here in _FREE_KEYS:
            paths.add(here)
            continue
        paths.add(here)
        _walk(item, here, depth + 1, paths)


# -- comparing two shapes ----------------------------------------------------------------


def compare(recorded: Shape, live: Shape) -> list[tuple[str, str, Any, Any]]:
    """``(severity, what, recorded, live)`` for each way ``live`` differs from ``recorded``."""
    out: list[tuple[str, str, Any, Any]] = []
    if live.status != recorded.status or live.error != recorded.error:
        severity = "error" if live.status >= 400 or live.error else "info"
        out.append(
            (
                severity,
                "the answer's status changed" if live.status != recorded.status else "the answer's error changed",
                _status(recorded),
                _status(live),
            )
        )
        if live.status >= 400:
            return out  # nothing else to compare with an error
    if live.grammar and not recorded.grammar:
        out.append(("error", "the stream grammar refuses the live answer", None, live.grammar))
    missing = sorted(set(recorded.blocks) - set(live.blocks))
    if missing:
        out.append(("error", f"block kind(s) gone: {', '.join(missing)}", list(recorded.blocks), list(live.blocks)))
    new = sorted(set(live.blocks) - set(recorded.blocks))
    if new:
        out.append(("error", f"new block kind(s): {', '.join(new)}", list(recorded.blocks), list(live.blocks)))
    if not missing and not new and _order(live.blocks) != _order(recorded.blocks):
        out.append(("warning", "the blocks come in another order", list(recorded.blocks), list(live.blocks)))
    out += _tool_drift(recorded, live)
    out += _call_drift(recorded, live)
    out += _reading_drift(recorded, live)
    added, gone = sorted(live.fields - recorded.fields), sorted(recorded.fields - live.fields)
    if added:
        out.append(("info", f"new field(s) in the provider's events: {', '.join(added[:12])}", None, None))
    if gone:
        out.append(("info", f"field(s) no longer in the provider's events: {', '.join(gone[:12])}", None, None))
    return out


def _reading_drift(recorded: Shape, live: Shape) -> list[tuple[str, str, Any, Any]]:
    """New event types (a warning where they carry content: the reply may travel in them now)
    and fields the adapter did not read where they explain an empty reply or zero usage."""
    out: list[tuple[str, str, Any, Any]] = []
    new = sorted(live.event_types - recorded.event_types)
    carrying = [t for t in new if t in live.content_types]
    if carrying:
        out.append(("warning", f"new event type(s) that carry content: {', '.join(carrying[:12])}", None, carrying))
    quiet = [t for t in new if t not in live.content_types]
    if quiet:
        out.append(("info", f"new event type(s): {', '.join(quiet[:12])}", None, quiet))
    unread = sorted(set(live.unread) - set(recorded.unread))
    if unread:
        out.append(
            (
                "warning",
                f"the reply decoded to nothing or counted no tokens beside field(s) modelwire does not read: "
                f"{', '.join(unread[:12])}",
                list(recorded.unread),
                list(live.unread),
            )
        )
    return out


def _status(shape: Shape) -> str:
    return f"HTTP {shape.status}" + (f" {shape.error}" if shape.error else "")


def _order(blocks: Sequence[str]) -> tuple[str, ...]:
    """The kinds in order, a run of one kind counted once (two text blocks or one are alike)."""
    return tuple(kind for n, kind in enumerate(blocks) if n == 0 or blocks[n - 1] != kind)


def _tool_drift(recorded: Shape, live: Shape) -> list[tuple[str, str, Any, Any]]:
    out: list[tuple[str, str, Any, Any]] = []
    if [n for n, _ in recorded.tools] != [n for n, _ in live.tools]:
        out.append(
            ("warning", "the model calls other tools", [n for n, _ in recorded.tools], [n for n, _ in live.tools])
        )
    else:
        for (name, before), (_, now) in zip(recorded.tools, live.tools):
            if before != now:
                out.append(("warning", f"the arguments of {name} have other keys", list(before), list(now)))
    return out


def _call_drift(recorded: Shape, live: Shape) -> list[tuple[str, str, Any, Any]]:
    out: list[tuple[str, str, Any, Any]] = []
    if live.stop_reason != recorded.stop_reason:
        out.append(("warning", "the stop reason changed", recorded.stop_reason, live.stop_reason))
    if live.usage_fields != recorded.usage_fields:
        gone, new = (
            sorted(set(recorded.usage_fields) - set(live.usage_fields)),
            sorted(set(live.usage_fields) - set(recorded.usage_fields)),
        )
        what = "; ".join(
            filter(None, (f"gone: {', '.join(gone)}" if gone else "", f"new: {', '.join(new)}" if new else ""))
        )
        out.append(
            ("warning", f"the usage fields changed ({what})", list(recorded.usage_fields), list(live.usage_fields))
        )
    if live.model != recorded.model:
        out.append(("info", "the model answered as another snapshot", recorded.model, live.model))
    if live.fingerprint != recorded.fingerprint and recorded.fingerprint is not None:
        out.append(("info", "the system_fingerprint changed", recorded.fingerprint, live.fingerprint))
    if recorded.signed != live.signed:  # (thinking itself is a block kind, compared above)
        out.append(
            (
                "warning",
                f"a signature or encrypted reasoning {'no longer comes' if recorded.signed else 'now comes'}",
                recorded.signed,
                live.signed,
            )
        )
    return out


# -- provenance --------------------------------------------------------------------------


def provenance_for(cassette: Cassette, kind: str = "live") -> dict[str, Any]:
    """Where ``cassette``'s answers came from: when (now), which modelwire, the endpoints
    asked (scheme and host only), the models that answered, and ``kind``."""
    from .._version import __version__

    endpoints, models = [], []
    for interaction in cassette.interactions:
        parts = urlsplit(interaction.request["url"])
        origin = f"{parts.scheme}://{parts.hostname or ''}" + (f":{parts.port}" if parts.port else "")
        if origin not in endpoints:
            endpoints.append(origin)
        answered = _answered_model(interaction)
        if answered and answered not in models:
            models.append(answered)
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return {"kind": kind, "recorded_at": when, "modelwire": __version__, "endpoints": endpoints, "models": models}


def provenance_after_recording(cassette: Cassette) -> dict[str, Any] | None:
    """The provenance a cassette gets when it was recorded: a derived one stays derived; a
    recording that wrote what the file already held keeps the file's provenance (recording
    the same conversation again leaves the file as it was); else a fresh one."""
    kept = cassette.provenance
    if (kept or {}).get("kind") == "derived":
        return kept
    if cassette.path.is_file():
        try:
            on_disk = Cassette.load(cassette.path)
        except Exception:  # noqa: BLE001 - an unreadable file is replaced; its provenance with it
            on_disk = None
        if (
            on_disk is not None
            and on_disk.provenance
            and [i.fingerprint() for i in on_disk.interactions] == [i.fingerprint() for i in cassette.interactions]
        ):
            return on_disk.provenance
    return provenance_for(cassette)


def _answered_model(interaction: Interaction) -> str | None:
    protocol = _protocol_of(interaction)
    if protocol is None or interaction.response["status"] >= 400:
        return None
    try:
        return answer_shape(protocol, interaction.response["status"], interaction.body_bytes()).model
    except Exception:  # noqa: BLE001 - provenance never stops a recording
        return None


def _protocol_of(interaction: Interaction) -> str | None:
    from ..protocols import protocol_for_url

    request = interaction.request
    if request.get("method", "").upper() != "POST" or not isinstance(request.get("json"), dict):
        return None
    wire = protocol_for_url(request["url"])
    return wire.name if wire is not None else None


# -- rechecking --------------------------------------------------------------------------


def recheck(paths: Sequence[str | Path], **options: Any) -> RecheckReport:
    """Send each recorded request of the cassettes at ``paths`` again and compare the live
    answers with the recorded ones (see :func:`recheck_async` for the options)."""
    from .._sync import run_sync

    return run_sync(recheck_async(paths, **options), "recheck() (use await recheck_async(...))")


async def recheck_async(
    paths: Sequence[str | Path],
    *,
    base_url: str | None = None,
    allow_hosts: Sequence[str] = (),
    max_calls: int | None = None,
    limits: Any = None,
    timeout: float = 60.0,
    update: bool = False,
    transport: Any = None,
    config: str | Path | None = None,
) -> RecheckReport:
    """Recheck the cassettes at ``paths``.

    ``base_url`` sends every request to that origin instead of the recorded one (the path
    kept); credentials come from the environment, as when the cassette was recorded, and go
    only to an endpoint a preset, a profile of ``config`` (a ``modelwire.toml`` the caller
    names: one found in the working directory is not trusted) or ``base_url`` names, or a host of
    ``allow_hosts`` (``HOST`` or ``HOST:PORT``): a request to any other host, or in plain
    http to a host that is not loopback, is not sent and is listed in ``refused`` (see
    :mod:`modelwire.cassettes._bound`). ``max_calls`` bounds the requests sent; ``limits`` (a
    :class:`~modelwire.agent.UsageLimits`: requests, tokens, cost) is checked before each
    one, so a run never spends past it; ``timeout`` bounds each call. No tool is ever run:
    a request is sent as recorded, tool results included. ``update`` rewrites each live
    cassette from the answers it got (never a derived one, and never with an error)."""
    from ..models.transport import HTTPTransport, Timeouts
    from ._bound import Destinations

    report = RecheckReport()
    destinations = Destinations(base_url, allow_hosts, config_path=Path(config) if config is not None else None)
    owned = transport is None
    transport = transport or HTTPTransport(timeouts=Timeouts(total=timeout))
    try:
        for path in paths:
            cassette = Cassette.load(path)
            report.checked.append(str(path))
            answers = await _recheck_one(
                cassette, report, transport, destinations, max_calls=max_calls, limits=limits, timeout=timeout
            )
            if update and answers:
                _update(cassette, answers, report, destinations.sent)
            if report.stopped:
                break
    finally:
        if owned:
            await transport.aclose()
    return report


async def _recheck_one(
    cassette: Cassette,
    report: RecheckReport,
    transport: Any,
    destinations: Any,
    *,
    max_calls: int | None,
    limits: Any,
    timeout: float,
) -> dict[int, dict[str, Any]]:
    """Each model call of ``cassette`` sent again; the live answers, by interaction."""
    from ..errors import ProviderError, UntrustedHostError, UsageLimitExceeded

    answers: dict[int, dict[str, Any]] = {}
    for index, interaction in enumerate(cassette.interactions):
        protocol = _protocol_of(interaction)
        if protocol is None:
            report.skipped.append(
                (
                    f"{cassette.path} [{index}]: not a model call modelwire knows "
                    f"({interaction.request['method']} {interaction.request['url']})"
                )
            )
            continue
        if max_calls is not None and report.calls >= max_calls:
            report.stopped = f"--max-calls {max_calls} reached"
            return answers
        try:
            if limits is not None:
                spent = {"total": report.cost, "complete": report.cost_complete}
                limits.check(
                    report.calls,
                    SimpleNamespace(input_tokens=report.input_tokens, output_tokens=report.output_tokens),
                    spent,
                )
            status, headers, body = await _send(interaction, protocol, transport, destinations, timeout)
        except UsageLimitExceeded as exc:
            report.stopped = f"the budget: {exc}"
            return answers
        except UntrustedHostError as exc:
            report.refused.append(f"{cassette.path} [{index}]: {exc}")
            continue
        except ProviderError as exc:  # no answer at all (refused connection, timeout)
            report.calls += 1
            report.drifts.append(Drift(str(cassette.path), index, "error", f"no answer: {exc.message}"))
            continue
        report.calls += 1
        live = answer_shape(protocol, status, body)
        recorded = answer_shape(protocol, interaction.response["status"], interaction.body_bytes())
        _count(report, interaction, protocol, status, body)
        for severity, what, before, now in compare(recorded, live):
            report.drifts.append(Drift(str(cassette.path), index, severity, what, before, now))
        if status < 400 and live.error is None:  # an error is reported, never written over a recorded answer
            answers[index] = response_record(status, headers, [(0.0, body)], keep_chunks=False)
    return answers


async def _send(
    interaction: Interaction, protocol: str, transport: Any, destinations: Any, timeout: float
) -> tuple[int, list[tuple[str, str]], bytes]:
    """The recorded request sent again (to the ``base_url`` of ``destinations`` when given),
    with the credentials the environment holds for the endpoint it goes to; the status,
    headers and body. A host no endpoint of the user's names raises before anything is sent."""
    request = interaction.request
    url = destinations.target(request["url"])
    endpoint = destinations.endpoint(url, protocol)
    body = json.dumps(request["json"]).encode()
    headers = {**request.get("headers", {}), **await _credentials(endpoint, url, protocol, body)}
    destinations.remember(url, headers)
    response = await transport.open("POST", url, headers, body, timeout, asyncio.get_running_loop().time() + timeout)
    try:
        raw = await asyncio.wait_for(response.aread(), timeout)
    finally:
        await response.aclose()
    return response.status_code, list(response.headers.items()), raw


async def _credentials(endpoint: Any, url: str, protocol: str, body: bytes) -> dict[str, str]:
    """The auth headers for ``url``, which ``endpoint`` names: its profile's key, else its
    preset's key from the environment, else its cloud credentials."""
    import os

    from ..protocols import get_protocol

    wire = get_protocol(protocol)
    preset = endpoint.preset
    names = [preset.key_env, *(preset.dialect.get("key_envs") or ())]
    key = endpoint.api_key or next((os.environ[n] for n in names if n and os.environ.get(n)), None)
    headers = {k: v for k, v in wire.headers(key, preset).items() if k not in ("content-type", "accept", "user-agent")}
    kind = preset.dialect.get("credentials")
    if kind and key is None:
        from ..protocols import credentials_for

        signed = await asyncio.to_thread(credentials_for(kind).apply, "POST", url, dict(headers), body)
        headers.update({k: v for k, v in signed.items() if k.lower() not in ("content-type", "accept", "user-agent")})
    return headers


def _count(report: RecheckReport, interaction: Interaction, protocol: str, status: int, body: bytes) -> None:
    """What a live answer used, toward the budget (its price where it is known)."""
    if status >= 400:
        return
    from ..protocols import decode_sse
    from ..protocols import get_protocol
    from ._show import _price

    try:
        events = decode_sse(protocol, body, "recheck")
    except Exception as exc:  # noqa: BLE001 - what came before the break still counts
        events = list(getattr(exc, "events", []) or [])
    end = next((e for e in reversed(events) if e.type == "MODEL_CALL_END"), None)
    if end is not None:
        report.input_tokens += end.input_tokens
        report.output_tokens += end.output_tokens
        request = interaction.request
        model = str(request["json"].get("model") or end.metadata.get("model") or "")
        priced = _price(request["url"], get_protocol(protocol), model, end)
        total = priced.get("total") if priced else None
        if isinstance(total, (int, float)):
            report.cost += float(total)
        else:
            report.cost_complete = False


def _update(cassette: Cassette, answers: dict[int, dict[str, Any]], report: RecheckReport, sent: Iterable[str]) -> None:
    """``cassette`` rewritten from the live answers, when it is a live one (never when an
    answer echoed one of the credentials ``sent``: see :meth:`Cassette.save`)."""
    kind = (cassette.provenance or {}).get("kind")
    if kind != "live":
        why = (
            "it is derived (written or edited by hand)"
            if kind == "derived"
            else 'it says nothing of where it came from (add "provenance": {"kind": "live"} if it was recorded)'
        )
        report.skipped.append(f"{cassette.path}: not updated: {why}")
        return
    for index, response in answers.items():
        cassette.interactions[index].response = response
        cassette.interactions[index].recorded = True
    cassette.provenance = provenance_for(cassette)
    from ..errors import CassetteSecretError

    try:
        cassette.save(sent)
    except CassetteSecretError as exc:  # a live answer echoed a credential: the file stays as it was
        report.skipped.append(f"{cassette.path}: not updated: {exc}")
        return
    report.updated.append(str(cassette.path))
