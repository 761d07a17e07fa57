"""A model's capabilities, found in order: what its protocol implies, the table shipped
with modelwire (``capabilities.toml``, by model family, each entry with its sources), what
the provider publishes about the model (:mod:`._lookup`, only when an option depends on
it), and last what the user says (``capabilities={...}`` in a profile or ``load_model``).

Each field of the result records where it came from, which ``modelwire models
--capabilities MODEL`` shows.

The table is written in ``capabilities.toml`` and shipped beside it compiled to JSON
(``capabilities.json``, the same entries: ``python -m modelwire.models.capabilities``
writes it, and a test holds the two equal), which a first call reads in a tenth of the
time; only the entry a model matches is made a record then.
"""

from __future__ import annotations

import contextvars
import fnmatch
import re
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

from ..errors import ConfigError
from ..protocols import ModelCapabilities, model_id_prefixes

__all__ = [
    "ModelCapabilities",
    "normalize",
    "from_table",
    "assumed_from",
    "table_entries",
    "entries_of",
    "endpoint_entries",
    "endpoint_rules",
    "resolve_capabilities",
    "TODAY",
    "has_come",
]

_TABLE = Path(__file__).with_name("capabilities.toml")
_COMPILED = _TABLE.with_suffix(".json")  # the same entries, as JSON: read without a TOML parser
# A cloud's prefixes (each protocol's model_id_prefix) and suffixes around the model's own
# name: Bedrock's "-v1:0" (and a provisioned-throughput context after it: ":0:200k"), Vertex's
# "@20250805", a tag (":latest", ":1m").
_SUFFIX = re.compile(r"(?:-v\d+:\d+(?::\w+)?|@[\w.-]+|:\w+)$")
_DOT = re.compile(r"(?<=\d)\.(?=\d)")
# A model id's text before its first digit: a prefix holds no digit and ends in a dot, so an
# id with no dot there ("gpt-5.1", "gemini-2.5-pro") loads no protocol to find one.
_BEFORE_DIGITS = re.compile(r"\D*")


def normalize(model: str) -> str:
    """The form table patterns are written against: ``us.anthropic.claude-opus-4-7-v1:0``,
    ``claude-opus-4-7-v1``, ``anthropic/claude-opus-4.7`` and ``claude-opus-4-7@20260416``
    are all ``claude-opus-4-7``; ``gpt-5.1`` is ``gpt-5-1``."""
    name = model.strip().lower()
    name = name.rsplit("/", 1)[-1]  # gateways: "anthropic/claude-...", "models/gemini-..."
    if "." in _BEFORE_DIGITS.match(name).group():  # type: ignore[union-attr]  # it matches every text
        name = _prefix(model_id_prefixes()).sub("", name)
    name = _SUFFIX.sub("", name)
    if name.endswith("-v1") and any(c.isdigit() for c in name[:-3]):
        # Bedrock's id without its ":0", as users write it: the first version of a versioned
        # name is that model ("deepseek-v1" names no other; a "-v2" is a version of its own).
        name = name[:-3]
    return _DOT.sub("-", name)


@lru_cache(maxsize=8)
def _prefix(prefixes: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("^(?:" + "|".join(prefixes) + ")" if prefixes else "(?!)")


def table_entries() -> tuple[tuple[tuple[str, ...], ModelCapabilities, str], ...]:
    """``(patterns, record, family)`` for every entry of the shipped table, in order."""
    return tuple(_shipped(n) for n in range(len(_raw_table())))


@lru_cache(maxsize=None)
def _shipped(n: int) -> tuple[tuple[str, ...], ModelCapabilities, str]:
    """The shipped table's entry ``n``, made a record once (when a model or a listing asks)."""
    return _entry(n, _raw_table()[n], _TABLE.name)


@lru_cache(maxsize=1)
def _raw_data() -> dict[str, Any]:
    """The shipped table as written, from its compiled JSON where it is there."""
    if _COMPILED.exists():
        import msgspec

        data: dict[str, Any] = msgspec.json.decode(_COMPILED.read_bytes())
        return data
    import tomllib

    return tomllib.loads(_TABLE.read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def _raw_table() -> tuple[dict[str, Any], ...]:
    """The shipped table's entries (``[[model]]``) as written."""
    return tuple(_raw_data().get("model", []))


@lru_cache(maxsize=1)
def _raw_endpoints() -> tuple[dict[str, Any], ...]:
    """The shipped table's endpoint entries (``[[endpoint]]``) as written."""
    return tuple(_raw_data().get("endpoint", []))


def endpoint_entries() -> tuple[tuple[tuple[str, ...], tuple[str, ...], ModelCapabilities, str], ...]:
    """``(providers, patterns, record, family)`` for every endpoint entry of the shipped table."""
    return tuple(_endpoint_entry(n) for n in range(len(_raw_endpoints())))


@lru_cache(maxsize=None)
def _endpoint_entry(n: int) -> tuple[tuple[str, ...], tuple[str, ...], ModelCapabilities, str]:
    """The shipped table's endpoint entry ``n``: the providers it holds for, then as an entry."""
    raw = dict(_raw_endpoints()[n])
    providers = raw.pop("providers", None)
    if not isinstance(providers, list) or not providers or not all(isinstance(p, str) for p in providers):
        raise ConfigError(f"{_TABLE.name}: endpoint entry {n} needs the providers it holds for")
    patterns, record, family = _entry(n, raw, _TABLE.name)
    return tuple(providers), patterns, record, family


def endpoint_rules(model: str, provider: str) -> ModelCapabilities | None:
    """What the shipped table says of ``model`` reached through ``provider`` only (its
    ``[[endpoint]]`` entries, each field from the first that states it: GPT-6 takes function
    tools with reasoning on the Responses API, not on OpenAI's Chat Completions), or None."""
    name = normalize(model)
    found: ModelCapabilities | None = None
    for n, raw in enumerate(_raw_endpoints()):
        if provider in raw.get("providers", ()) and any(
            fnmatch.fnmatchcase(name, pattern) for pattern in raw.get("match", ())
        ):
            entry = _endpoint_entry(n)[2]
            found = entry if found is None else found.over(entry)  # an earlier entry's field wins
    return found


def compile_table() -> bytes:
    """``capabilities.toml`` as the JSON shipped beside it (what ``python -m
    modelwire.models.capabilities`` writes)."""
    import json
    import tomllib

    data = tomllib.loads(_TABLE.read_text(encoding="utf-8"))
    return (json.dumps(data, ensure_ascii=False, indent=1) + "\n").encode()


def entries_of(text: str, name: str = "table") -> tuple[tuple[tuple[str, ...], ModelCapabilities, str], ...]:
    """The entries of a capability table written as ``capabilities.toml`` is, each field's
    value checked and its sources kept with it. An entry without match patterns, a field no
    ``[[model.source]]`` backs, or a source that backs a field the entry does not set is a
    :class:`ConfigError`: a fact in the table always says where it comes from."""
    import tomllib

    return tuple(_entry(n, raw, name) for n, raw in enumerate(tomllib.loads(text).get("model", [])))


def _entry(n: int, raw: Mapping[str, Any], name: str) -> tuple[tuple[str, ...], ModelCapabilities, str]:
    """One entry of a table: its patterns, its record (each field with its sources), its family."""
    entry = dict(raw)
    family = entry.pop("family", f"entry {n}")
    patterns = tuple(entry.pop("match", ()))
    cited = entry.pop("source", [])
    if not patterns:
        raise ConfigError(f"{name}: {family} needs match patterns")
    record = ModelCapabilities.from_mapping(entry, f"table: {family}")
    sources: dict[str, list[str]] = {}
    for source in cited:
        says, backs = source.get("says"), source.get("backs")
        if not isinstance(says, str) or not says or not isinstance(backs, list) or not backs:
            raise ConfigError(f"{name}: {family}: each source needs what it says and the fields it backs")
        for field_name in backs:
            if field_name not in entry:
                raise ConfigError(f"{name}: {family}: a source backs {field_name!r}, which the entry does not set")
            sources.setdefault(field_name, []).append(says)
    unsourced = sorted(set(entry) - set(sources))
    if unsourced:
        raise ConfigError(f"{name}: {family}: no source backs {', '.join(unsourced)}; name where each fact comes from")
    shown = {k: f"table: {family}: " + "; ".join(v) for k, v in sources.items() if k in record.known()}
    return patterns, replace(record, sources=shown), family


def from_table(model: str) -> ModelCapabilities | None:
    """The shipped table's record for ``model``, or None when no family matches (only the
    entry that matches is made a record)."""
    name = normalize(model)
    for n, raw in enumerate(_raw_table()):
        if any(fnmatch.fnmatchcase(name, pattern) for pattern in raw.get("match", ())):
            return _shipped(n)[1]
    return None


# What a pattern's wildcard may stand for and still name the same model: a date or a snapshot
# ("-20250929", "-2025-08-07", "-latest", "-preview"), not a version number of its own.
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}|\d{2}-\d{2}$")
_VERSION = re.compile(r"(?:^|[-.])v?\d{1,2}(?=$|[-.])")


@lru_cache(maxsize=512)
def assumed_from(model: str) -> str | None:
    """The family whose rules ``model`` is given without the table naming it, or None.

    A pattern names an id when its wildcards stand for a date, a snapshot or a variant
    (``claude-sonnet-5*`` names ``claude-sonnet-5-20260630``); where a wildcard stands for a
    version number of its own (``claude-sonnet-5*`` over ``claude-sonnet-5-7``, ``gpt-6*`` over
    ``gpt-6.2-sol``), the model is newer than the table and its rules are the family's,
    assumed."""
    name = normalize(model)
    for raw in _raw_table():
        for pattern in raw.get("match", ()):
            if fnmatch.fnmatchcase(name, pattern):
                return raw.get("family", pattern) if _stands_for_a_version(name, pattern) else None
    return None


def _stands_for_a_version(name: str, pattern: str) -> bool:
    """Whether a wildcard of ``pattern`` stands for a version number in ``name``."""
    parts = [re.escape(part) for part in pattern.split("*")]
    found = re.fullmatch("(.*?)".join(parts), name, re.DOTALL)
    if found is None:
        return False
    return any(_VERSION.search(_DATE.sub("", wild)) for wild in found.groups())


# The day a retirement is read against ("YYYY-MM-DD"); None: the date today. Set it (a test,
# a report written for another day) to read the table as of that day.
TODAY: contextvars.ContextVar[str | None] = contextvars.ContextVar("modelwire_today", default=None)


def has_come(day: str) -> bool:
    """Whether ``day`` (a ``retired`` field's "YYYY-MM-DD") is today or past: the model was
    retired, rather than retires on a day to come."""
    today = TODAY.get()
    if today is None:
        import datetime

        today = datetime.date.today().isoformat()
    return day <= today


def resolve_capabilities(
    defaults: ModelCapabilities,
    model: str,
    *,
    published: ModelCapabilities | None = None,
    learned: ModelCapabilities | None = None,
    overrides: Mapping[str, Any] | ModelCapabilities | None = None,
    provider: str | None = None,
) -> ModelCapabilities:
    """The record for ``model``: the protocol's ``defaults``, then the table (its row for the
    model, then what it says of the model on ``provider``'s own endpoint: None for a model
    reached elsewhere, a proxy or a local server), then what the provider
    published, then what its refusals taught (``learned``), then the user's ``overrides``
    (each laid over the last)."""
    caps = defaults
    table = from_table(model)
    if table is not None:
        caps = table.over(caps)
    endpoint = endpoint_rules(model, provider) if provider else None
    if endpoint is not None:
        caps = endpoint.over(caps)
    if published is not None:
        caps = published.over(caps)
    if learned is not None:
        caps = learned.over(caps)
    if overrides:
        if not isinstance(overrides, ModelCapabilities):
            overrides = ModelCapabilities.from_mapping(overrides, "override")
        caps = overrides.over(caps)
    return caps


if __name__ == "__main__":  # python -m modelwire.models.capabilities: refresh the compiled table
    _COMPILED.write_bytes(compile_table())
    print(f"wrote {_COMPILED} from {_TABLE.name}")


def near_names(model: str) -> list[str]:
    """Model names the table spells out (a pattern that is a name with at most a trailing
    ``*``) close to ``model``, closest first: what a misspelt model id (answered with a 404)
    probably meant. Empty when a row matches ``model`` as it is."""
    if from_table(model) is not None:
        return []
    import difflib

    names = {
        pattern.rstrip("*")
        for raw in _raw_table()
        for pattern in raw.get("match", ())
        if not any(c in pattern.rstrip("*") for c in "*?[")
    }
    near = difflib.get_close_matches(normalize(model), sorted(names), n=3, cutoff=0.8)
    if _DOT.search(model):  # written as the provider writes it ("gemini-2.5-flash", not "gemini-2-5-flash")
        near = [re.sub(r"(?<=\d)-(?=\d)", ".", name) for name in near]
    return near
