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
and writes what they found. The OpenAI Chat protocol has them (llama.cpp, vLLM, LM Studio,
LiteLLM, Ollama's ``/v1``, aimock ...), and the Anthropic Messages protocol (the Anthropic
routes of DeepSeek, MiniMax, Moonshot, llama.cpp, LiteLLM ...).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from .errors import ConfigError, ProviderError
from .protocols._probe import STATUSES, Checks, ProbeBudget, ProbeFailed, Row, Server

__all__ = ["Row", "Checks", "Server", "ConformReport", "ProbeFailed", "probe", "probe_async", "probeable", "profile_toml"]


@dataclass
class ConformReport:
    base_url: str
    model: str
    protocol: str
    preset: str  # the preset a written profile names
    rows: list[Row] = field(default_factory=list)
    requests: int = 0
    stopped: str | None = None  # the request or time budget that ended the probe early

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "profile": self.profile()}

    def lines(self) -> list[str]:
        width = max((len(r.check) for r in self.rows), default=10)
        out = [f"{self.protocol} at {self.base_url}, model {self.model}: {self.requests} request(s)"]
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
    base_url: str, model: str, *, protocol: str | None = None, api_key: str | None = None, max_requests: int = 40, total: float = 300.0, transport: Any = None
) -> ConformReport:
    """The report of a bounded probe (``protocol``: the first that can be probed, when not
    given): at most ``max_requests`` requests within ``total`` seconds. A server that cannot
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
    owned = transport is None
    transport = transport or HTTPTransport(timeouts=Timeouts(total=total, first_byte=60.0))
    server = Server(base_url, model, api_key, transport, max_requests, total, spec)
    report = ConformReport(base_url.rstrip("/"), model, protocol, spec.preset)
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


def profile_toml(name: str, profile: dict[str, Any]) -> str:
    """A ``[profiles.NAME]`` table in TOML, for ``modelwire.toml``."""

    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{k} = {value(x)}" for k, x in v.items()) + " }"
        return json.dumps(v)

    lines = [f"[profiles.{name}]"] + [f"{k} = {value(v)}" for k, v in profile.items()]
    return "\n".join(lines) + "\n"
