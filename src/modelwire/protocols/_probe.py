"""What a protocol's ``modelwire conform`` probe is made of: its :class:`Checks`, the
:class:`Row` each check reports, the :class:`Server` it sends through (counted and bounded),
and :class:`ProbeFailed`. Data and a bounded sender only: a protocol package imports these
to declare its probe; :mod:`modelwire.conform` runs it."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = [
    "Row",
    "Checks",
    "Server",
    "Answer",
    "ProbeFailed",
    "ProbeBudget",
    "STATUSES",
    "ONE_PIXEL_PNG",
    "server_words",
    "said",
    "is_json_object",
    "schema_problem",
    "structured_row",
    "json_object_row",
    "model_list",
    "read_answer",
    "error_shape",
    "forced_row",
    "arguments_row",
    "empty_arguments_row",
    "ids_row",
    "stops_row",
    "taken_row",
    "within",
    "length",
    "definitions_row",
]

STATUSES = ("ok", "quirk", "unsupported")


@dataclass
class Row:
    """One check: its name, ``ok`` / ``quirk`` / ``unsupported``, what showed it, and the
    dialect keys or capabilities a profile sets because of it."""

    __module__ = "modelwire.conform"  # its public home, which repr, pickles and the reference name

    check: str
    status: str
    evidence: str
    dialect: dict[str, Any] = field(default_factory=dict)
    capabilities: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Checks:
    """What a protocol's probe is: its checks in order (each ``async (server) -> [Row]``),
    the preset a written profile names, and how a request is authorised."""

    __module__ = "modelwire.conform"  # its public home, which repr, pickles and the reference name

    checks: tuple[Callable[..., Any], ...]
    preset: str
    auth: Callable[[str], dict[str, str]] = field(default=lambda key: {"authorization": f"Bearer {key}"})
    headers: dict[str, str] = field(default_factory=dict)  # sent with every request (a version header)
    rank: int = 10  # which protocol is probed when none is named: the lowest (the most servers speak it)
    protocol: str = ""  # whose adapter reads the answers (``read_answer``)


class ProbeFailed(Exception):
    """Raised by a check: the server cannot be probed further (nothing it answers can be read,
    the model is unknown, the key is refused). It ends the probe with one line."""

    __module__ = "modelwire.conform"  # its public home, which repr, pickles and the reference name


class ProbeBudget(Exception):
    """The probe's requests or time ran out (the report says so; what was found is kept)."""


class Server:
    """The requests of one probe, counted and bounded; what a check sends through."""

    __module__ = "modelwire.conform"  # its public home, which repr, pickles and the reference name

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None,
        transport: Any,
        max_requests: int,
        total: float,
        spec: Checks,
    ) -> None:
        self.base_url, self.model, self.api_key = base_url.rstrip("/"), model, api_key
        self.transport, self.max_requests, self.spec = transport, max_requests, spec
        self.deadline = time.monotonic() + total
        self.sent = 0
        self.answers: list[Any] = []  # what the checks read so far, for the rows about every answer

    def headers(self) -> dict[str, str]:
        headers = {
            "content-type": "application/json",
            "accept": "text/event-stream, application/json",
            **self.spec.headers,
        }
        if self.api_key:
            headers.update(self.spec.auth(self.api_key))
        return headers

    async def send(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, str, bytes]:
        """The status, content type and body of one request (a ProviderError when none came)."""
        if self.sent >= self.max_requests:
            raise ProbeBudget(f"{self.max_requests} requests sent")
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise ProbeBudget("the total time ran out")
        self.sent += 1
        content = json.dumps(body).encode() if body is not None else b""
        loop = asyncio.get_running_loop()
        response = await self.transport.open(
            method, self.base_url + path, self.headers(), content, min(left, 60.0), loop.time() + left
        )
        try:
            raw = await asyncio.wait_for(response.aread(), left)
        finally:
            await response.aclose()
        return response.status_code, response.headers.get("content-type", ""), raw


# -- what every protocol's checks share -----------------------------------------------------

ONE_PIXEL_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


def server_words(raw: bytes) -> str:
    """The server's own words in an error body (its ``error.message`` where it has one), short
    and on one line (a server may put a traceback in its message)."""
    text = raw.decode("utf-8", "replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        return _one_line(text)
    error = data.get("error", data) if isinstance(data, dict) else data
    message = error.get("message") if isinstance(error, dict) else error
    return _one_line(str(message if message else text))


def _one_line(text: str) -> str:
    line = next((part.strip() for part in text.splitlines() if part.strip()), "")
    return line[:160] + (" ..." if len(text.strip()) > len(line) else "")


def said(answer: Any) -> str:
    """What a read answer (with ``status`` and ``error``) had to say against it."""
    return f"HTTP {answer.status}: {answer.error}" if answer.status >= 400 else answer.error


def is_json_object(text: str) -> bool:
    """Whether ``text`` (a call's arguments; empty is ``{}``) is a JSON object."""
    try:
        return isinstance(json.loads(text or "{}"), dict)
    except ValueError:
        return False


_JSON_TYPES: dict[str, Any] = {
    "object": dict,
    "array": list,
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
    "null": type(None),
}


def schema_problem(text: str, schema: dict[str, Any]) -> str | None:
    """What keeps ``text`` from being an answer in ``schema`` (not JSON, or where it departs
    from the schema's types, properties, required keys, ``additionalProperties: false`` and
    enums), or None where it is one."""
    try:
        value = json.loads(text)
    except ValueError:
        return "the answer is not JSON"
    return _departs(value, schema, "the answer")


def _departs(value: Any, schema: dict[str, Any], where: str) -> str | None:
    kind = schema.get("type")
    wanted = _JSON_TYPES.get(kind) if isinstance(kind, str) else None
    if wanted is not None and (not isinstance(value, wanted) or (isinstance(value, bool) and kind != "boolean")):
        return f"{where} is not a JSON {kind}"
    if "enum" in schema and value not in schema["enum"]:
        return f"{where} is none of {schema['enum']}"
    if isinstance(value, dict):
        return _object_departs(value, schema, where)
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return next(
            (p for i, item in enumerate(value) if (p := _departs(item, schema["items"], f"{where}[{i}]"))), None
        )
    return None


def _object_departs(value: dict[str, Any], schema: dict[str, Any], where: str) -> str | None:
    properties = schema.get("properties") or {}
    missing = [k for k in schema.get("required") or () if k not in value]
    if missing:
        return f"{where} lacks {', '.join(missing)}"
    extra = sorted(set(value) - set(properties))
    if schema.get("additionalProperties") is False and extra:
        return f"{where} has keys the schema does not: {', '.join(extra)}"
    found = (_departs(value[k], sub, f"{where}.{k}") for k, sub in properties.items() if k in value)
    return next((p for p in found if p), None)


def structured_row(check: str, answer: Any, schema: dict[str, Any], off: dict[str, Any]) -> Row:
    """A request for an answer in ``schema``: ``ok`` only where the answer's text is JSON that
    fits it. A server that takes the request and answers otherwise gives a caller no more than
    one that refuses it: both are ``unsupported``, and the profile asks through a tool instead
    (``off``: the row's dialect keys or capabilities that say so)."""
    if not answer.good:
        return Row(check, "unsupported", said(answer), **off)
    problem = schema_problem(answer.text, schema)
    if problem is None:
        return Row(check, "ok", f"the answer is JSON in the schema: {answer.text[:60]!r}")
    if _cut(answer):  # the probe's small token limit ended it: what it would have been is not known
        return Row(check, "quirk", f"taken, but the answer was cut at the probe's token limit: {answer.text[:60]!r}")
    return Row(check, "unsupported", f"taken, but {problem}: {answer.text[:60]!r}", **off)


def _cut(answer: Any) -> bool:
    """Whether an answer ended at its token limit (each protocol's word for it)."""
    stops = list(getattr(answer, "finish", None) or ()) + [getattr(answer, "stop", None)]
    return any(stop in ("length", "max_tokens", "max_output_tokens") for stop in stops)


def json_object_row(check: str, answer: Any) -> Row:
    """A request for any JSON object: ``ok`` where the answer is one."""
    if not answer.good:
        return Row(check, "unsupported", said(answer))
    try:
        is_object = isinstance(json.loads(answer.text), dict)
    except ValueError:
        is_object = False
    if is_object:
        return Row(check, "ok", f"a JSON object: {answer.text[:60]!r}")
    return Row(check, "quirk", f"taken, but the answer is not a JSON object: {answer.text[:60]!r}")


async def model_list(server: Server, path: str) -> list[Row]:
    """The "model list" row: ``GET path`` answers ``{"data": [{"id": ...}]}`` naming the model."""
    status, _, raw = await server.send("GET", path)
    if status >= 400:
        return [Row("model list", "unsupported", f"GET {path}: HTTP {status}: {server_words(raw)}")]
    try:
        ids = [m.get("id") for m in json.loads(raw).get("data", [])]
    except (ValueError, AttributeError):
        return [Row("model list", "quirk", f"GET {path} answered, but not a list of models: {raw[:80]!r}")]
    if server.model in ids:
        return [Row("model list", "ok", f"{len(ids)} model(s), {server.model} among them")]
    return [
        Row("model list", "quirk", f"{server.model} is not among the {len(ids)} listed: {', '.join(map(str, ids[:5]))}")
    ]


async def error_shape(server: Server, path: str, body: dict[str, Any]) -> Row:
    """The "error shape (4xx)" row: a malformed ``body`` should be answered 4xx with a JSON error."""
    status, _, raw = await server.send("POST", path, body)
    try:
        shaped = isinstance(json.loads(raw), dict)
    except ValueError:
        shaped = False
    if status < 400 or status >= 500:
        return Row("error shape (4xx)", "quirk", f"a malformed request was answered HTTP {status}: {server_words(raw)}")
    return Row(
        "error shape (4xx)",
        "ok" if shaped else "quirk",
        f"HTTP {status}: {server_words(raw)}" + ("" if shaped else " (not JSON)"),
    )


# -- answers read by the protocol's own adapter ----------------------------------------------


@dataclass
class Answer:
    """What one answer held, as modelwire's own adapter for the protocol read it (so an answer
    the adapter cannot decode is itself a finding, in ``error``)."""

    status: int
    content_type: str
    raw: bytes
    text: str = ""
    calls: list[tuple[str, str, str]] = field(default_factory=list)  # (id, name, arguments)
    thinking: bool = False
    stop: str | None = None
    usage: tuple[int, int] | None = None  # (input, output) tokens, when any were counted
    streamed: bool = False
    error: str = ""

    @property
    def good(self) -> bool:
        return self.status < 400 and not self.error


def read_answer(protocol: str, status: int, content_type: str, raw: bytes) -> Answer:
    """The answer to one request: an error's words, or what the ``protocol``'s adapter read
    from the stream (or from a whole JSON answer, through the protocol's ``answer_events``)."""
    from ..adapters import decode_answer
    from . import decode_sse
    from ..errors import ProviderError
    from . import get_protocol

    answer = Answer(status, content_type, raw)
    if status >= 400:
        answer.error = server_words(raw)
        return answer
    whole = _json(raw) if "json" in content_type and "ndjson" not in content_type else None
    wire = get_protocol(protocol)
    try:
        if isinstance(whole, dict):
            events = decode_answer(wire.adapter_class()("probe"), wire.answer_events(whole))
        else:
            answer.streamed = True
            events = decode_sse(protocol, raw, "probe")
    except ProviderError as err:
        events, answer.error = list(getattr(err, "events", None) or []), f"{type(err).__name__}: {err.message}"
    except (NotImplementedError, ValueError, KeyError, TypeError, AttributeError) as err:
        events, answer.error = (
            [],
            f"not an answer the {protocol} adapter can read ({type(err).__name__}): {raw[:120]!r}",
        )
    _fold(answer, events)
    if not events and not answer.error:
        answer.error = f"nothing the {protocol} adapter can read: {raw[:120]!r}"
    return answer


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return None


def _fold(answer: Answer, events: list[Any]) -> None:
    from ..event._calls import tool_calls_in

    for event in events:
        if event.type == "TEXT_BLOCK_DELTA":
            answer.text += event.delta
        elif event.type == "THINKING_BLOCK_START":
            answer.thinking = True
        elif event.type == "MODEL_CALL_END":
            answer.stop = event.provider_stop_reason
            if event.input_tokens or event.output_tokens:
                answer.usage = (event.input_tokens, event.output_tokens)
    answer.calls = tool_calls_in(events)


# -- rows every protocol's tool checks make from read answers ---------------------------------


def taken_row(check: str, answer: Any, capabilities: dict[str, Any] | None = None) -> Row:
    """A form the server takes (``ok``) or refuses (``unsupported``, in its words; a profile
    then sets ``capabilities``)."""
    return (
        Row(check, "ok", "taken")
        if answer.good
        else Row(check, "unsupported", said(answer), capabilities=dict(capabilities or {}))
    )


def within(answer: Answer, limit: int) -> bool:
    """Whether the answer's output stayed within ``limit`` tokens (in words where none were counted)."""
    return answer.usage[1] <= limit if answer.usage else len(answer.text.split()) <= limit + 1


def length(answer: Answer) -> str:
    """How long the answer's output was, as counted."""
    return f"{answer.usage[1]} output tokens" if answer.usage else f"{len(answer.text.split())} words"


def definitions_row(answer: Any) -> Row:
    """Whether tool definitions are taken, and whether a call came for them unforced (a
    server that refuses them cannot force one either)."""
    if not answer.good:
        return Row("tool definitions", "unsupported", said(answer), capabilities={"forced_tool": False})
    return Row("tool definitions", "ok", f"taken; {'a call came' if answer.calls else 'answered in text'}")


def forced_row(check: str, answer: Any) -> Row:
    """A forced tool choice: refused, ignored (text came), or a call."""
    if not answer.good:
        return Row(check, "unsupported", said(answer), capabilities={"forced_tool": False})
    if not answer.calls:
        return Row(
            check, "quirk", "taken, but answered in text: forcing is ignored", capabilities={"forced_tool": False}
        )
    return Row(check, "ok", f"{answer.calls[0][1]}({answer.calls[0][2][:40]})")


def arguments_row(check: str, calls: list[tuple[str, str, str]]) -> Row:
    """Whether each call's streamed arguments join into a JSON object."""
    if not calls:
        return Row(check, "unsupported", "no call came to read")
    bad = [c for c in calls if not is_json_object(c[2])]
    if bad:
        return Row(check, "quirk", f"{len(bad)} of {len(calls)} call(s) not a JSON object: {bad[0][2][:60]!r}")
    return Row(check, "ok", f"{len(calls)} call(s), each a JSON object")


def empty_arguments_row(check: str, answer: Any) -> Row:
    """A call to a tool that takes nothing: its arguments should read as ``{}``."""
    if not answer.good:
        return Row(check, "unsupported", said(answer))
    if not answer.calls:
        return Row(check, "quirk", "answered in text")
    args = answer.calls[0][2]
    return Row(
        check,
        "ok" if is_json_object(args) else "quirk",
        f"arguments {args!r}" + ("" if args.strip() else " (empty: read as {})"),
    )


def ids_row(calls: list[tuple[str, str, str]]) -> Row:
    """Whether the calls' ids differ (modelwire renames repeats, so this is a quirk at worst)."""
    ids = [c[0] for c in calls if c[0]]
    if not ids:
        return Row("ids unique per call", "unsupported", "no call came to compare")
    if len(set(ids)) == len(ids):
        return Row("ids unique per call", "ok", f"{len(ids)} id(s), all different")
    return Row("ids unique per call", "quirk", f"ids repeat: {ids}; modelwire renames repeats")


def stops_row(server: Server, field_name: str) -> Row:
    """The stop reasons seen in every answer so far."""
    stops = sorted({a.stop for a in server.answers if getattr(a, "stop", None)})
    return Row(
        "stop reasons", "ok" if stops else "quirk", ", ".join(stops) if stops else f"no {field_name} in any answer"
    )
