"""``recheck``: each recorded request of a cassette sent again, its live answer decoded with
the same adapter and compared with the recorded one (see :mod:`modelwire.cassettes._drift`
for what is compared), within the user's budget and only to the endpoints the user names."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Iterable, Sequence

from ._cassette import Cassette, Interaction, response_record
from ._drift import Drift, RecheckReport, _protocol_of, answer_shape, compare, provenance_for

__all__ = ["recheck", "recheck_async"]


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

        signed = await asyncio.to_thread(credentials_for(kind, protocol).apply, "POST", url, dict(headers), body)
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
