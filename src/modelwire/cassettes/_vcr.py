"""Import VCR.py / pytest-recording YAML cassettes (pydantic-ai's among them) into
modelwire's format, secrets filtered on the way."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ._cassette import Cassette, CassetteError, read_text, request_record, response_record

__all__ = ["import_vcr"]


def _headers(raw: dict[str, Any] | None) -> list[tuple[str, str]]:
    out = []
    for key, values in (raw or {}).items():
        for value in values if isinstance(values, list) else [values]:
            out.append((key, str(value)))
    return out


def _request_body(req: dict[str, Any]) -> bytes:
    """A VCR request's body: its ``parsed_body`` (pytest-recording) as JSON, else its string."""
    if "parsed_body" in req:
        return json.dumps(req["parsed_body"]).encode()
    body = req.get("body")
    if isinstance(body, dict):
        body = body.get("string")
    return body.encode() if isinstance(body, str) else (body or b"")


def _response_body(resp: dict[str, Any]) -> bytes:
    """A VCR response's body: its ``parsed_body`` as JSON, else its string (or bytes)."""
    body = resp.get("body", {})
    raw = body.get("string", "") if isinstance(body, dict) else body
    if "parsed_body" in resp:
        raw = json.dumps(resp["parsed_body"])
    return raw.encode("utf-8") if isinstance(raw, str) else bytes(raw or b"")


def import_vcr(source: str | Path, target: str | Path | None = None) -> Cassette:
    """Read a VCR.py YAML cassette; returns a :class:`Cassette` for ``target`` (not yet saved)."""
    try:
        import yaml
    except ImportError as exc:  # pragma: no cover - the dev extra has it
        raise CassetteError("importing VCR cassettes needs PyYAML (pip install pyyaml)") from exc
    source = Path(source)
    text = read_text(source, "a VCR.py cassette")
    try:
        return _import(source, text, target, yaml)
    except RecursionError:
        raise CassetteError(f"{source} is not a VCR.py cassette it can read (nested too deeply)") from None


def _import(source: Path, text: str, target: str | Path | None, yaml: Any) -> Cassette:
    try:
        as_json = json.loads(text)
    except ValueError:
        as_json = None
    if isinstance(as_json, dict) and as_json.get("version") == 1:
        raise CassetteError(f"{source} is a modelwire cassette already; nothing to import")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise CassetteError(f"{source} is not a VCR.py cassette (not YAML: {str(exc).splitlines()[0]})") from None
    if not isinstance(data, dict) or not isinstance(data.get("interactions"), list):
        raise CassetteError(f"{source} is not a VCR.py cassette (no `interactions` list)")
    out = Path(target) if target else source.with_suffix(".json")
    if out.resolve() == source.resolve():
        raise CassetteError(f"importing {source} would overwrite it; name another file with -o")
    cassette = Cassette(out, notes=f"imported from the VCR.py cassette {source.name}")
    for n, item in enumerate(data["interactions"]):
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("request"), dict)
            or not isinstance(item.get("response"), dict)
        ):
            raise CassetteError(f"{source}: interaction {n} needs a `request` and a `response`")
        req, resp = item["request"], item["response"]
        status = resp.get("status", {})
        code = status.get("code", 200) if isinstance(status, dict) else int(status)
        record = request_record(
            req.get("method", "GET"), req.get("uri", ""), _headers(req.get("headers")), _request_body(req)
        )
        cassette.add(record, response_record(code, _headers(resp.get("headers")), [(0.0, _response_body(resp))]))
    for interaction in cassette.interactions:
        interaction.played = False
    from ._drift import provenance_for

    # Recorded by VCR.py from a provider: live, recorded at a time the YAML does not say.
    cassette.provenance = {**provenance_for(cassette), "recorded_at": None, "imported_from": source.name}
    return cassette
