"""The shipped capability table beside what a provider's Models API publishes now
(``modelwire models --verify PROVIDER``), or beside another library's catalog
(``--crosscheck``, :mod:`._crosscheck`).

For every listed model: whether a row of the table names it exactly, or only a family glob
whose rules it is given by assumption, or nothing; each field the list states that the row
states otherwise; each field the list states and the row does not. The differences are
written as a TOML patch in the table's own form (:func:`patch_text`): one entry per model id,
each published fact backed by a ``[[model.source]]`` naming where it was read and when.

The protocol reads its provider's list (``model_list_url`` and ``models_listed``); this
module knows no provider.
"""

from __future__ import annotations

import fnmatch
import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from ..errors import ConfigError, ProviderError, StreamProtocolError
from ..protocols import ModelCapabilities
from .capabilities import _raw_table, assumed_from, normalize

__all__ = ["Finding", "Verification", "compare", "list_models", "patch_text", "report_lines", "row_of"]

PAGES = 50  # the most pages of a model list read (Anthropic and Gemini page 1000 at a time)
LIST_SECONDS = 30.0
_NOT_FIELDS = ("family", "match", "source")


@dataclass(frozen=True)
class Finding:
    """One listed model beside the table."""

    model: str
    published: ModelCapabilities
    row: str | None = None  # the family of the row that names the model exactly
    assumed: str | None = None  # the family whose rules the model is given, only its pattern covering it
    differs: Mapping[str, tuple[Any, Any]] = field(default_factory=dict)  # field -> (table, published)
    new: Mapping[str, Any] = field(default_factory=dict)  # what is published where the row says nothing

    @property
    def named(self) -> bool:
        return self.row is not None

    @property
    def differing(self) -> bool:
        """Whether the table falls short of what was published: the model is not named, a
        field disagrees, or a published fact is missing from the row."""
        return not self.named or bool(self.differs) or bool(self.new)


@dataclass(frozen=True)
class Verification:
    """What one source (a provider's list, a library's catalog) says beside the table."""

    source: str  # what each published fact cites: the list's URL and the date, or the library and version
    findings: tuple[Finding, ...]
    left_out: tuple[str, ...] = ()  # listed ids outside the provider's chat models, not compared

    @property
    def differing(self) -> list[Finding]:
        return [f for f in self.findings if f.differing]


def row_of(model: str) -> Mapping[str, Any] | None:
    """The table's entry, as written, that ``model`` falls under (the first match), or None."""
    name = normalize(model)
    for raw in _raw_table():
        if any(fnmatch.fnmatchcase(name, pattern) for pattern in raw.get("match", ())):
            return raw
    return None


def compare(
    model: str, published: ModelCapabilities, listed_names: Mapping[str, Iterable[str]] | None = None
) -> Finding:
    """``model`` as ``published`` beside the table. ``listed_names``: for a list field, the
    names the source can speak of (the table's others are not compared)."""
    listed_names = listed_names or {}
    raw = row_of(model)
    if raw is None:
        return Finding(model, published, new=published.known())
    table = {k: v for k, v in raw.items() if k not in _NOT_FIELDS}
    differs: dict[str, tuple[Any, Any]] = {}
    new: dict[str, Any] = {}
    for name, said in published.known().items():
        if name not in table:
            new[name] = said
        elif _disagree(table[name], said, listed_names.get(name)):
            differs[name] = (table[name], said)
    family = raw.get("family", model)
    if not names_exactly(normalize(model), raw.get("match", ())):
        return Finding(model, published, assumed=family, differs=differs, new=new)
    return Finding(model, published, row=family, differs=differs, new=new)


# What a pattern's wildcard may stand for and the pattern still name the model exactly: a
# snapshot of it ("-20250929", "-2025-08-07", "-latest", "-preview-05-06", "-001",
# "-exp-1206"), not a variant ("-lite", "-mini") or a version of its own ("-7").
_SNAPSHOT = re.compile(r"(?:-(?:\d{8}|\d{4}-\d{2}-\d{2}|\d{2}-\d{2}|\d{3,4}|latest|preview|exp|experimental))*")


def names_exactly(name: str, patterns: Iterable[str]) -> bool:
    """Whether one of ``patterns`` names the normalised model ``name`` itself: the name
    written out, or its wildcards standing only for a snapshot of it."""
    for pattern in patterns:
        if not fnmatch.fnmatchcase(name, pattern):
            continue
        parts = [re.escape(part) for part in pattern.split("*")]
        found = re.fullmatch("(.*?)".join(parts), name, re.DOTALL)
        if found is not None and all(_SNAPSHOT.fullmatch(wild) for wild in found.groups()):
            return True
    return False


def _disagree(ours: Any, said: Any, speakable: Iterable[str] | None) -> bool:
    if isinstance(said, tuple):  # names: in any order, and only those the source can speak of
        held = set(ours) & set(speakable) if speakable is not None else set(ours)
        return held != set(said)
    return bool(ours != said)


# -- reading a provider's list -------------------------------------------------------------


async def list_models(
    wire: Any, preset: Any, base_url: str, headers: dict[str, str], transport: Any, *, timeout: float = LIST_SECONDS
) -> tuple[str, list[tuple[str, ModelCapabilities]]]:
    """Every model the provider lists at ``base_url`` (page after page), with what the list
    says of each, and the list's URL (without its query). A refusal is the protocol's typed
    error; an answer not in the list's shape a :class:`StreamProtocolError`."""
    first = wire.model_list_url(base_url, preset)
    if first is None:
        raise ConfigError(f"{preset.name}: modelwire reads no model list of this provider")
    listed: list[tuple[str, ModelCapabilities]] = []
    url: str | None = first
    for _ in range(PAGES):
        assert url is not None
        data = await _get_json(wire, url, headers, transport, timeout)
        try:
            rows, page = wire.models_listed(data, preset)
        except (ValueError, TypeError, KeyError) as exc:
            raise StreamProtocolError(f"GET {url.split('?')[0]}: an answer modelwire cannot read: {exc}") from None
        listed += rows
        if page is None:
            break
        url = wire.model_list_url(base_url, preset, page)
    return first.split("?")[0], listed


async def _get_json(wire: Any, url: str, headers: dict[str, str], transport: Any, timeout: float) -> Any:
    response = await transport.open("GET", url, {**headers, "accept": "application/json"}, b"", timeout)
    try:
        raw = await response.aread()
    finally:
        await response.aclose()
    try:
        data = json.loads(raw) if raw.strip() else None
    except ValueError:
        data = None
        if response.status_code == 200:
            raise StreamProtocolError(f"GET {url.split('?')[0]}: not JSON: {raw[:80]!r}") from None
    if response.status_code != 200:
        raise wire.error(data if data is not None else raw.decode("utf-8", "replace"), response.status_code)
    return data


# -- the report and the patch -------------------------------------------------------------


def _shown(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value)) if value else "none"
    return str(value).lower() if isinstance(value, bool) else str(value)


def report_lines(check: Verification, what: str) -> list[str]:
    """The report of ``check``, a line per fact; ``what`` names the source for a person
    (``anthropic``, ``LiteLLM 1.80.0``)."""
    lines = [f"{what}: {len(check.findings)} model(s), from {check.source}"]
    if check.left_out:
        shown = ", ".join(check.left_out[:5]) + (", ..." if len(check.left_out) > 5 else "")
        lines.append(f"  ({len(check.left_out)} listed id(s) not of its chat models left out: {shown})")
    for f in check.findings:
        if not f.differing:
            continue
        if f.row is not None:
            lines.append(f"  {f.model}: the table's {f.row} row")
        elif f.assumed is not None and assumed_from(f.model):
            lines.append(f"  {f.model}: no row names it; assumed from {f.assumed}")
        elif f.assumed is not None:
            lines.append(f"  {f.model}: no row names it; only the pattern of {f.assumed} covers it")
        else:
            lines.append(f"  {f.model}: no row names it, nor a family")
        for name, (ours, said) in f.differs.items():
            lines.append(f"      {name}: the table says {_shown(ours)}, {what} says {_shown(said)}")
        for name, said in f.new.items():
            lines.append(f"      {name}: not in the table; {what} says {_shown(said)}")
    differing = check.differing
    unnamed = sum(not f.named for f in differing)
    lines.append(
        f"{len(differing)} model(s) differ from the table ({unnamed} not named by a row)"
        if differing
        else "the table names every model and agrees on every field"
    )
    return lines


def patch_entry(f: Finding, says: str) -> dict[str, Any]:
    """The table entry ``f`` asks for: the row it falls under (its facts and their sources;
    where the row is only a family's, each source marked as assumed) with what was published
    laid over it, and one source, ``says``, backing what was published."""
    raw = row_of(f.model) if f.named or f.assumed else None
    taken = {**{k: said for k, (_, said) in f.differs.items()}, **f.new}
    fields = {k: v for k, v in (raw or {}).items() if k not in _NOT_FIELDS}
    fields.update({k: list(v) if isinstance(v, tuple) else v for k, v in taken.items()})
    sources = []
    for source in (raw or {}).get("source", []):
        backs = [b for b in source["backs"] if b not in taken]
        if backs:
            cited = source["says"] if f.named else f"assumed from the table's {f.assumed} row: {source['says']}"
            sources.append({"says": cited, "backs": backs})
    if taken:
        sources.append({"says": says, "backs": [k for k in fields if k in taken]})
    return {"family": f.model, "match": [normalize(f.model)], **fields, "source": sources}


def patch_text(check: Verification, header: str) -> str:
    """A TOML patch for ``capabilities.toml`` (read by the table's own reader): an entry per
    model that differs, to go before the row that matches it now (the first match wins)."""
    out = [
        f"# {header}",
        "# Each entry names one model id; put it before the entry that matches the id now (the first match wins).",
    ]
    for f in check.differing:
        why = (
            f"the table's {f.row} row differs"
            if f.named
            else f"no row names it; its other facts are {f.assumed}'s, assumed: check them"
            if f.assumed
            else "no row names it"
        )
        entry = patch_entry(f, check.source)
        out += ["", f"# {f.model}: {why}", "[[model]]"]
        out += [f"{k} = {_toml(v)}" for k, v in entry.items() if k != "source"]
        for source in entry["source"]:
            out += ["[[model.source]]", f"says = {_toml(source['says'])}", f"backs = {_toml(source['backs'])}"]
    return "\n".join(out) + "\n"


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a TOML basic string: the same escapes
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    raise TypeError(f"no TOML for {value!r}")


def verify_provider(provider: str, today: str) -> Verification:
    """``provider``'s list (a preset name, or ``PROVIDER:MODEL``: its base URL and key as a
    model of it would use them) beside the table; ``today`` dates the source."""
    import asyncio

    from . import load_model
    from ..protocols import find_preset

    name = provider.split(":", 1)[0]
    preset = find_preset(name)
    if preset is None:
        raise ConfigError(f"no provider named {name!r} (modelwire models lists them)")
    model = load_model(provider if ":" in provider else f"{name}:{preset.example or 'model'}")
    headers = model.wire.headers(model.spec.api_key, model.spec.preset)
    headers.pop("content-type", None)

    async def listed() -> tuple[str, list[tuple[str, ModelCapabilities]]]:
        try:
            return await list_models(model.wire, model.spec.preset, model.spec.base_url or "", headers, model.transport)
        finally:
            await model.aclose()

    try:
        url, models = asyncio.run(listed())
    except ProviderError as err:  # what a server echoes is shown to people: never the key
        raise model._mask(err, headers, model.wire.model_list_url(model.spec.base_url or "", model.spec.preset))
    prefixes = tuple(model.spec.preset.model_prefixes or ())
    names = model.wire.listed_names
    chat = [(m, caps) for m, caps in models if not prefixes or m.startswith(prefixes)]
    left_out = tuple(m for m, _ in models if prefixes and not m.startswith(prefixes))
    return Verification(f"{url} (GET, {today})", tuple(compare(m, c, names) for m, c in chat), left_out)
