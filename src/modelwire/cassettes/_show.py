"""``modelwire cassette show``: what a cassette holds, in a few readable lines."""

from __future__ import annotations

from collections import Counter
from typing import Any

from ._cassette import Cassette

__all__ = ["summarize", "protocol_of"]


def protocol_of(url: str) -> str | None:
    """The wire protocol of a request, from its URL (each protocol recognises its own)."""
    from ..protocols import protocol_for_url

    found = protocol_for_url(url)
    return found.name if found is not None else None


def summarize(cassette: Cassette) -> list[str]:
    from ..adapters import decode_sse
    from ..protocols import protocol_for_url
    from ..errors import ProviderError

    lines = [f"{cassette.path}: {len(cassette.interactions)} interaction(s)"]
    if cassette.notes:
        lines.append(f"  notes: {cassette.notes}")
    for n, interaction in enumerate(cassette.interactions):
        req, resp = interaction.request, interaction.response
        body = req.get("json") if isinstance(req.get("json"), dict) else {}
        model = body.get("model", "-")
        lines.append(f"[{n}] {req['method']} {req['url']}  model={model}  -> HTTP {resp['status']}")
        wire = protocol_for_url(req["url"])
        content_type = resp.get("headers", {}).get("content-type", "")
        if wire is None or resp["status"] >= 400 or wire.content_type not in content_type and "data:" not in resp.get("body", "")[:200]:
            continue
        protocol = wire.name
        try:
            events: list[Any] = decode_sse(protocol, interaction.body_bytes(), "show")
            problem = ""
        except ProviderError as err:
            events, problem = err.events, f"  error: {type(err).__name__}: {err.message}"
        counts = Counter(e.type for e in events)
        end = next((e for e in reversed(events) if e.type == "MODEL_CALL_END"), None)
        shown = ", ".join(f"{t} x{c}" for t, c in counts.most_common())
        lines.append(f"     events: {shown}")
        if end is not None:
            lines.append(
                f"     usage: input {end.input_tokens}, output {end.output_tokens}, cache read {end.cache_input_tokens},"
                f" cache write {end.cache_creation_input_tokens}, reasoning {end.reasoning_tokens}; stop: {end.stop_reason} ({end.provider_stop_reason})"
            )
            priced = _price(req["url"], wire, model if model != "-" else str(end.metadata.get("model") or ""), end)
            if priced is not None:
                lines.append("     cost: " + (f"${priced['total']:.6f} ({priced['source']})" if priced.get("total") is not None else priced["unknown"]))
        if problem:
            lines.append(problem)
    return lines


def _price(url: str, wire: Any, model: str, end: Any) -> dict | None:
    """The price of a recorded call: the provider is the preset whose base URL the request
    went to (or, for a test server, the protocol's own); None without genai-prices."""
    from urllib.parse import urlsplit

    from .. import cost
    from ..models.config import all_presets

    if not cost.available() or not model:
        return None
    host = urlsplit(url).hostname or ""
    provider = next((p.name for p in all_presets().values() if p.protocol == wire.name and p.base_url and urlsplit(p.base_url.replace("{region}", "x")).hostname == host), None)
    if provider is None:
        provider = next((p.name for p in all_presets().values() if p.protocol == wire.name), wire.name)
    return cost.price(end, provider=provider, model=model, input_includes_cache=wire.input_includes_cache)
