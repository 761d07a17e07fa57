"""``modelwire cassette show``: what a cassette holds, in a few readable lines."""

from __future__ import annotations

from collections import Counter
from typing import Any

from ._cassette import Cassette

__all__ = ["summarize", "protocol_of", "cache_report", "prefix_change"]


def protocol_of(url: str) -> str | None:
    """The wire protocol of a request, from its URL (each protocol recognises its own)."""
    from ..protocols import protocol_for_url

    found = protocol_for_url(url)
    return found.name if found is not None else None


def summarize(cassette: Cassette, cache: bool = False) -> list[str]:
    from ..protocols import protocol_for_url

    lines = [f"{cassette.path}: {len(cassette.interactions)} interaction(s)"]
    decoded: dict[int, tuple[list[Any], str]] = {}  # interaction -> its events (the cache report reads them too)
    if cassette.notes:
        lines.append(f"  notes: {cassette.notes}")
    for n, interaction in enumerate(cassette.interactions):
        req, resp = interaction.request, interaction.response
        sent = req.get("json")
        body = sent if isinstance(sent, dict) else {}
        model = body.get("model", "-")
        lines.append(f"[{n}] {req['method']} {req['url']}  model={model}  -> HTTP {resp['status']}")
        wire = protocol_for_url(req["url"])
        content_type = resp.get("headers", {}).get("content-type", "")
        if (
            wire is None
            or resp["status"] >= 400
            or wire.content_type not in content_type
            and "data:" not in resp.get("body", "")[:200]
        ):
            continue
        events, problem = decoded[n] = _decoded(interaction, wire.name)
        counts = Counter(e.type for e in events)
        end = next((e for e in reversed(events) if e.type == "MODEL_CALL_END"), None)
        shown = ", ".join(f"{t} x{c}" for t, c in counts.most_common())
        lines.append(f"     events: {shown}")
        if end is not None:
            lines.append(
                f"     usage: input {end.input_tokens}, output {end.output_tokens}, cache read "
                f"{end.cache_input_tokens},"
                f" cache write {end.cache_creation_input_tokens}, reasoning {end.reasoning_tokens}; stop: "
                f"{end.stop_reason} ({end.provider_stop_reason})"
            )
            priced = _price(req["url"], wire, model if model != "-" else str(end.metadata.get("model") or ""), end)
            if priced is not None:
                lines.append(
                    "     cost: "
                    + (
                        f"${priced['total']:.6f} ({priced['source']})"
                        if priced.get("total") is not None
                        else priced["unknown"]
                    )
                )
        if problem:
            lines.append(problem)
    if cache:
        lines += cache_report(cassette, decoded)
    return lines


def _decoded(interaction: Any, protocol: str) -> tuple[list[Any], str]:
    """A recorded body's events (up to its error, if it broke) and what broke it."""
    from ..protocols import decode_sse
    from ..errors import ProviderError

    try:
        return decode_sse(protocol, interaction.body_bytes(), "show"), ""
    except ProviderError as err:
        return err.events, f"  error: {type(err).__name__}: {err.message}"


def _cache_usage(events: list[Any], url: str, wire: Any, body: dict[str, Any]) -> str:
    """A call's cache reads and writes, their share of its input, and what the cache saved."""
    end = next((e for e in reversed(events) if e.type == "MODEL_CALL_END"), None)
    if end is None:
        return ""
    total = end.input_tokens  # every prompt token, cache reads and writes included
    share = f" ({100 * end.cache_input_tokens / total:.0f}% of the input)" if total and end.cache_input_tokens else ""
    return f"read {end.cache_input_tokens}{share}, written {end.cache_creation_input_tokens}" + _cache_cost(
        url, wire, str(body.get("model") or end.metadata.get("model") or ""), end, total
    )


def cache_report(cassette: Cassette, decoded: dict[int, tuple[list[Any], str]] | None = None) -> list[str]:
    """Per call: the prompt-cache reads and writes, and between consecutive calls of one
    protocol what broke the cached prefix (a changed system prompt, tools changed or
    reordered, history rewritten), or how much of it was kept. ``decoded``: bodies already
    decoded, by interaction (what :func:`summarize` read)."""
    from ..protocols import protocol_for_url

    decoded = {} if decoded is None else decoded

    lines = ["prompt cache:"]
    previous: dict[str, tuple[str, list[tuple[str, Any]]]] = {}  # protocol -> (model, parts)
    for n, interaction in enumerate(cassette.interactions):
        req, resp = interaction.request, interaction.response
        wire = protocol_for_url(req["url"])
        body = req.get("json") if isinstance(req.get("json"), dict) else None
        if wire is None or body is None:
            if body is not None and req["url"].split("?")[0].endswith("/cachedContents"):
                lines.append(
                    (
                        f"[{n}] creates a prompt cache ({resp['status']}): "
                        f"{', '.join(k for k in body if k not in ('model', 'ttl'))}, ttl {body.get('ttl')}"
                    )
                )
            continue
        usage = ""
        if resp["status"] < 400:
            if n not in decoded:
                decoded[n] = _decoded(interaction, wire.name)
            usage = _cache_usage(decoded[n][0], req["url"], wire, body)
        model = str(body.get("model", ""))
        parts = wire.prompt_parts(body)
        before = previous.get(wire.name)
        previous[wire.name] = (model, parts)
        if before is None:
            change = f"first call ({len(parts)} prompt parts)"
        elif before[0] != model:
            change = f"prefix broken: the model changed ({before[0]} -> {model}); caches are per model"
        else:
            change = prefix_change(before[1], parts)
        lines.append(f"[{n}] {wire.name} {model}: " + (f"cache {usage}; " if usage else "") + change)
    return lines


def _cache_cost(url: str, wire: Any, model: str, end: Any, total_input: int) -> str:
    """The call's cost, and what it would have cost with nothing read from or written to
    the cache (the same tokens, all at the input price); empty without prices."""
    from types import SimpleNamespace

    if not model or not (end.cache_input_tokens or end.cache_creation_input_tokens):
        return ""
    actual = _price(url, wire, model, end)
    uncached = SimpleNamespace(
        input_tokens=total_input, output_tokens=end.output_tokens, cache_input_tokens=0, cache_creation_input_tokens=0
    )
    plain = _price(url, wire, model, uncached)
    if not actual or not plain or actual.get("total") is None or plain.get("total") is None:
        return ""
    return f"; cost ${actual['total']:.6f}, ${plain['total']:.6f} without the cache"


def prefix_change(before: list[tuple[str, Any]], after: list[tuple[str, Any]]) -> str:
    """What happened to the cached prefix from one call's prompt parts to the next."""
    same = 0
    while same < len(before) and same < len(after) and before[same] == after[same]:
        same += 1
    if same == len(before):
        return f"prefix kept ({same} parts, {len(after) - same} new)"
    label, old = before[same]
    new_label, new = after[same] if same < len(after) else (None, None)
    if new_label != label:
        kind = _kind(label)
        if kind == "history" and new_label is None:
            return f"prefix broken at {label}: the history is shorter than before (rewritten)"
        return f"prefix broken at {label}: {'it is gone' if new_label is None else f'{new_label} is in its place'}"
    kind = _kind(label)
    if kind == "tools":
        return f"prefix broken at {label}: " + _tools_change(old, new)
    if kind == "history":
        return f"prefix broken at {label}: the history was rewritten there ({_first_difference(old, new)})"
    return (
        f"prefix broken at {label}: the {'system prompt' if kind == 'system' else label} changed "
        f"({_first_difference(old, new)})"
    )


def _kind(label: str) -> str:
    if label.endswith("]"):
        return "history"
    if label.lower().startswith("tool"):
        return "tools"
    if "system" in label.lower() or label == "instructions":
        return "system"
    return "other"


def _tool_name(tool: Any) -> str:
    if not isinstance(tool, dict):
        return repr(tool)[:40]
    for holder in (tool, tool.get("function"), tool.get("toolSpec")):
        if isinstance(holder, dict):
            name = holder.get("name")
            if isinstance(name, str):
                return name
    declarations = tool.get("functionDeclarations")
    if isinstance(declarations, list):
        return "+".join(str(d.get("name")) for d in declarations if isinstance(d, dict))
    return next(iter(tool), "?")


def _tools_change(old: Any, new: Any) -> str:
    if isinstance(old, dict) and isinstance(new, dict):  # a holder of the list (toolConfig)
        old, new = old.get("tools", old), new.get("tools", new)
    if not isinstance(old, list) or not isinstance(new, list):
        return "the tools changed"
    names_old, names_new = [_tool_name(t) for t in old], [_tool_name(t) for t in new]
    if sorted(names_old) == sorted(names_new) and names_old != names_new:
        if sorted(map(_canonical, old)) == sorted(map(_canonical, new)):
            return f"the tools were reordered ({', '.join(names_old)} -> {', '.join(names_new)})"
    added = [n for n in names_new if n not in names_old]
    removed = [n for n in names_old if n not in names_new]
    if added or removed:
        return "the tools changed: " + _added_removed(added, removed)
    changed = [a for a, x, y in zip(names_old, old, new) if x != y]
    return f"the definition of {', '.join(changed)} changed" if changed else "the tools changed"


def _added_removed(added: list[str], removed: list[str]) -> str:
    said = []
    if added:
        said.append(f"added {', '.join(added)}")
    if removed:
        said.append(f"removed {', '.join(removed)}")
    return "; ".join(said)


def _canonical(value: Any) -> str:
    import json

    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _first_difference(old: Any, new: Any, path: str = "") -> str:
    """Where two JSON values first differ, as a short path."""
    if type(old) is not type(new):
        return f"{path or 'the value'} is now a {type(new).__name__}"
    if isinstance(old, dict):
        for key in list(old) + [k for k in new if k not in old]:
            if key not in new:
                return f"{path}.{key} removed".lstrip(".")
            if key not in old:
                return f"{path}.{key} added".lstrip(".")
            if old[key] != new[key]:
                return _first_difference(old[key], new[key], f"{path}.{key}")
        return path or "the order of its fields"
    if isinstance(old, list):
        for i, (x, y) in enumerate(zip(old, new)):
            if x != y:
                return _first_difference(x, y, f"{path}[{i}]")
        return f"{path} has {len(new)} items, not {len(old)}"
    return f"{path.lstrip('.') or 'the value'} changed"


def _price(url: str, wire: Any, model: str, end: Any) -> dict[str, Any] | None:
    """The price of a recorded call: the provider is the preset whose base URL the request
    went to (or, for a test server, the protocol's own); None without genai-prices."""
    from urllib.parse import urlsplit

    from .. import cost
    from ..protocols import all_presets

    if not cost.available() or not model:
        return None
    host = urlsplit(url).hostname or ""
    provider = next(
        (
            p.name
            for p in all_presets().values()
            if p.protocol == wire.name and p.base_url and urlsplit(p.base_url.replace("{region}", "x")).hostname == host
        ),
        None,
    )
    if provider is None:
        provider = next((p.name for p in all_presets().values() if p.protocol == wire.name), wire.name)
    return cost.price(end, provider=provider, model=model)
