"""``modelwire conform``: probe a server that says it speaks a provider's protocol, then talk
to it as it is.

Servers that call themselves "OpenAI-compatible" differ: one ignores
``max_completion_tokens``, one refuses ``"content": null``, one sends no usage in a stream,
one refuses ``response_format``. :func:`probe` sends a bounded set of small requests (at most
``max_requests``, ``max_tokens`` small, within ``total`` seconds; a tool is never run: its
result is made up) and reports one :class:`Row` per check: ``ok``, ``quirk`` (it works in
another form, named) or ``unsupported``, each with its evidence (the status and the
server's words, or what came back). :meth:`ConformReport.profile` turns the rows into a
profile for ``modelwire.toml`` (the preset, the base URL, the dialect keys and capabilities
the probe found) so that ``load_model(NAME)`` sends what this server takes.

What is checked, and how, belongs to the protocol: a protocol that can be probed names
its :class:`Checks` (``WireProtocol.conform``; the parts a probe is made of live in
``modelwire.protocols._probe``, below the protocols); this module runs them, within the budget,
and writes what they found. :func:`probe_profile` probes again through a written profile, then
talks to the server through modelwire itself with it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from .errors import ConfigError, ProviderError
from .protocols._probe import STATUSES, Checks, ProbeBudget, ProbeFailed, Row, Server

__all__ = [
    "Row",
    "Checks",
    "Server",
    "ConformReport",
    "ProbeFailed",
    "probe",
    "probe_async",
    "probe_profile",
    "probe_profile_async",
    "probeable",
    "profile_toml",
]


@dataclass
class ConformReport:
    base_url: str
    model: str
    protocol: str
    preset: str  # the preset a written profile names
    rows: list[Row] = field(default_factory=list)
    requests: int = 0
    stopped: str | None = None  # the request or time budget that ended the probe early
    key_env: str | None = None  # the variable the key was read from: the profile reads it there too
    profile_name: str | None = None  # the profile probed through (probe_profile)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "profile": self.profile()}

    def lines(self) -> list[str]:
        width = max((len(r.check) for r in self.rows), default=10)
        through = f", through the profile {self.profile_name!r}" if self.profile_name else ""
        out = [f"{self.protocol} at {self.base_url}, model {self.model}{through}: {self.requests} request(s)"]
        out += [f"  {r.check.ljust(width)}  {r.status.ljust(11)}  {r.evidence}" for r in self.rows]
        if self.stopped:
            out.append(f"  stopped: {self.stopped}")
        counts = {s: sum(r.status == s for r in self.rows) for s in STATUSES}
        out.append(f"{counts['ok']} ok, {counts['quirk']} quirk(s), {counts['unsupported']} unsupported")
        return out

    def profile(self) -> dict[str, Any]:
        """A profile's table (see :func:`profile_toml`): the model, the base URL, and the
        dialect keys and capabilities the probe found."""
        dialect: dict[str, Any] = {}
        capabilities: dict[str, Any] = {}
        for row in self.rows:
            dialect.update(row.dialect)
            capabilities.update(row.capabilities)
        if self.key_env:
            dialect["key_envs"] = [self.key_env]
        out: dict[str, Any] = {"model": f"{self.preset}:{self.model}", "base_url": self.base_url}
        if dialect:
            out["dialect"] = dialect
        if capabilities:
            out["capabilities"] = capabilities
        return out


# -- running the probe ---------------------------------------------------------------------


def probe(base_url: str, model: str, **options: Any) -> ConformReport:
    """Probe the server at ``base_url`` for ``model`` (see :func:`probe_async`)."""
    from ._sync import run_sync

    return run_sync(probe_async(base_url, model, **options), "probe() (use await probe_async(...))")


def probeable() -> list[str]:
    """The protocols ``conform`` can probe, the one probed by default first."""
    from .protocols import get_protocol, protocol_names

    found = [(get_protocol(name).conform_checks(), name) for name in protocol_names() if get_protocol(name).conform]
    return [name for checks, name in sorted(found, key=lambda pair: (pair[0].rank, pair[1]))]


async def probe_async(
    base_url: str,
    model: str,
    *,
    protocol: str | None = None,
    api_key: str | None = None,
    api_key_env: str | None = None,
    max_requests: int = 40,
    total: float = 300.0,
    transport: Any = None,
) -> ConformReport:
    """The report of a bounded probe (``protocol``: the first that can be probed, when not
    given): at most ``max_requests`` requests within ``total`` seconds. The key is
    ``api_key``, or read from the variable ``api_key_env`` (which a written profile then
    names, so that the key never lands in a file). A server that cannot
    be probed at all (nothing answers, HTML, an unknown model, a refused key) is a
    :class:`~modelwire.errors.ConfigError` or a :class:`~modelwire.errors.ProviderError` that
    says so in one line."""
    from .models.config import _check_base_url
    from .models.transport import HTTPTransport, Timeouts
    from .protocols import get_protocol

    can = probeable()
    protocol = protocol or can[0]
    if protocol not in can:
        raise ConfigError(f"conform probes {', '.join(can)} so far, not {protocol!r}")
    spec: Checks = get_protocol(protocol).conform_checks()
    _check_base_url(base_url)
    if api_key is None and api_key_env:
        import os

        api_key = os.environ.get(api_key_env) or None
        if api_key is None:
            raise ConfigError(f"the key variable {api_key_env} is not set")
    owned = transport is None
    transport = transport or HTTPTransport(timeouts=Timeouts(total=total, first_byte=60.0))
    server = Server(base_url, model, api_key, transport, max_requests, total, spec)
    report = ConformReport(base_url.rstrip("/"), model, protocol, spec.preset, key_env=api_key_env)
    try:
        for check in spec.checks:
            try:
                rows = await check(server)
            except ProbeBudget as exc:
                report.stopped = str(exc)
                break
            report.rows += rows
    except ProbeFailed as exc:
        raise ProviderError(f"{base_url}: {exc}") from None
    finally:
        report.requests = server.sent
        if owned:
            await transport.aclose()
    return report


# -- probing again through a profile -----------------------------------------------------------


def probe_profile(name: str, **options: Any) -> ConformReport:
    """Probe the server a profile points at, through the profile (see :func:`probe_profile_async`)."""
    from ._sync import run_sync

    return run_sync(probe_profile_async(name, **options), "probe_profile() (use await probe_profile_async(...))")


async def probe_profile_async(name: str, *, max_requests: int = 40, total: float = 300.0) -> ConformReport:
    """The probe of the server profile ``name`` points at (its base URL, model, protocol and
    key), with each row judged against the profile: a quirk or refusal that the profile's
    dialect keys and capabilities already handle is ``ok`` (the evidence says which key).
    Then the same server through modelwire with the profile (``modelwire:`` rows): a streamed
    reply, a tool round trip through :class:`~modelwire.agent.Agent` (the tool is never run:
    its result is made up), and structured output as the agent's ``structured_model`` asks for it."""
    from .models.config import resolve

    spec = resolve(name)  # found as load_model finds it: the nearest modelwire.toml
    can = probeable()
    if spec.protocol not in can:
        raise ConfigError(f"the profile {name!r} speaks {spec.protocol}; conform probes {', '.join(can)} so far")
    report = await probe_async(
        spec.base_url or "",
        spec.model,
        protocol=spec.protocol,
        api_key=spec.api_key,
        max_requests=max_requests,
        total=total,
    )
    report.preset, report.profile_name = spec.preset.name, name
    dialect, caps = dict(spec.preset.dialect), dict(spec.options.get("capabilities") or {})
    for row in report.rows:
        handled = [f"{k} = {v!r}" for k, v in row.dialect.items() if _same(dialect.get(k), v)] + [
            f"{k} = {v!r}" for k, v in row.capabilities.items() if _same(caps.get(k), v)
        ]
        if row.status != "ok" and handled and len(handled) == len(row.dialect) + len(row.capabilities):
            row.status, row.evidence = "ok", f"{row.evidence} (the profile sets {', '.join(handled)})"
    report.rows += await _through_modelwire(name)
    return report


def _same(have: Any, want: Any) -> bool:
    if isinstance(have, (list, tuple)) and isinstance(want, (list, tuple)):
        return list(have) == list(want)
    return have == want and have is not None


async def _through_modelwire(name: str) -> list[Row]:
    """What the profile makes of the server, through modelwire's own request path."""
    from .agent import Agent
    from .message import UserMsg
    from .models import load_model

    model = load_model(name)
    rows: list[Row] = []
    try:
        reply = await model.complete([UserMsg("user", "Say OK.")])
        rows.append(Row("modelwire: streamed reply", "ok", f"text {_text(reply)!r}"))
    except ProviderError as err:
        return [Row("modelwire: streamed reply", "unsupported", f"{type(err).__name__}: {err}")]

    def get_weather(city: str) -> str:
        """The weather in a city."""
        return "sunny, 21 C"  # made up: the probe runs no tool

    answer = await Agent("probe", model, tools=[get_weather], max_iters=3).reply(
        UserMsg("user", "What is the weather in Paris? Use the tool.")
    )
    kinds = [b.type for b in answer.content if b.type in ("tool_call", "tool_result")]
    if answer.error is not None:
        rows.append(Row("modelwire: tool round trip", "unsupported", f"{answer.error.type}: {answer.error.message}"))
    elif "tool_result" in kinds:
        rows.append(
            Row(
                "modelwire: tool round trip",
                "ok",
                f"{kinds.count('tool_call')} call(s) and result(s), then {_text(answer)!r}",
            )
        )
    else:
        rows.append(
            Row(
                "modelwire: tool round trip", "quirk", f"the model answered without calling the tool: {_text(answer)!r}"
            )
        )
    rows.append(await _history_turn(model))
    rows.append(await _structured(model))
    return rows


async def _structured(model: Any) -> Row:
    """Structured output as the agent asks for it through this profile (``structured_model``:
    natively, with the schema, where the profile's capabilities say the model takes it, else
    with a final-answer tool), judged by the agent's own reading: the answer parsed as JSON and
    validated against the schema."""
    from pydantic import BaseModel, ConfigDict

    from .agent import Agent
    from .message import UserMsg

    class Reply(BaseModel):
        model_config = ConfigDict(extra="forbid")
        answer: str

    native = bool(getattr(getattr(model, "capabilities", None), "native_structured_output", False))
    how = "with the JSON schema" if native else "with a final-answer tool"
    reply = await Agent("probe", model, max_iters=3).reply(
        UserMsg("user", "Reply with a JSON object whose answer is OK."), structured_model=Reply, raise_errors=False
    )
    if reply.structured_output is not None:
        return Row("modelwire: structured output", "ok", f"asked {how}: {reply.to_dict()['structured_output']}")
    why = f"{reply.error.type}: {reply.error.message}" if reply.error is not None else f"text {_text(reply)!r}"
    return Row("modelwire: structured output", "unsupported", f"asked {how}: no structured answer ({why})")


async def _history_turn(model: Any) -> Row:
    """A history with a call and its (made-up) result, sent the way the profile formats it:
    the half of a round trip the server decides, whether or not its model calls tools."""
    from .message import AssistantMsg, ToolCallBlock, ToolResultBlock, UserMsg

    call = ToolCallBlock(id="call_probe0001", name="get_weather", input='{"city": "Paris"}', state="finished")
    result = ToolResultBlock(id="call_probe0001", name="get_weather", output="sunny, 21 C", state="success")
    history = [
        UserMsg("user", "What is the weather in Paris? Use the tool."),
        AssistantMsg("assistant", [call, result]),
    ]
    tool = {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    }
    try:
        reply = await model.complete(history, tools=[tool])
    except ProviderError as err:
        return Row("modelwire: tool-result turn", "unsupported", f"{type(err).__name__}: {err}")
    return Row("modelwire: tool-result turn", "ok", f"text {_text(reply)!r}")


def _text(msg: Any) -> str:
    return (msg.get_text_content() or "")[:40]


def profile_toml(name: str, profile: dict[str, Any]) -> str:
    """A ``[profiles.NAME]`` table in TOML, for ``modelwire.toml`` (``name`` checked: see
    :func:`~modelwire.models.config.check_profile_name`)."""
    from .models.config import check_profile_name

    check_profile_name(name)

    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{k} = {value(x)}" for k, x in v.items()) + " }"
        return json.dumps(v)

    lines = [f"[profiles.{name}]"] + [f"{k} = {value(v)}" for k, v in profile.items()]
    return "\n".join(lines) + "\n"
